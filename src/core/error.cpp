#include "tessera/core/error.hpp"

namespace tessera {

std::string describe_exception(std::exception_ptr e) {
  if (!e) return "closed";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace tessera
