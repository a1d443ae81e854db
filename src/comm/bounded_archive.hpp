#pragma once
// The bounded archive is public (tessera/ops/bounded_archive.hpp): from_object decodes with it too.
#include "tessera/ops/bounded_archive.hpp"

namespace tessera::comm::detail {
using tessera::detail::BoundedInputArchive;
}  // namespace tessera::comm::detail
