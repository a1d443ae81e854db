#pragma once
/** @file
 * The chunked Array and every operation on it: the class (tessera/array/array.hpp) and one
 * header per kind of operation. Include a single header of tessera/array/ instead to compile
 * less; each one includes the class. */
#include "tessera/array/array.hpp"          // IWYU pragma: export
#include "tessera/array/blockwise.hpp"      // IWYU pragma: export
#include "tessera/array/chunks.hpp"         // IWYU pragma: export
#include "tessera/array/complex.hpp"        // IWYU pragma: export
#include "tessera/array/creation.hpp"       // IWYU pragma: export
#include "tessera/array/creation_more.hpp"  // IWYU pragma: export
#include "tessera/array/elementwise.hpp"    // IWYU pragma: export
#include "tessera/array/fft.hpp"            // IWYU pragma: export
#include "tessera/array/indexing.hpp"       // IWYU pragma: export
#include "tessera/array/io.hpp"             // IWYU pragma: export
#include "tessera/array/linalg.hpp"         // IWYU pragma: export
#include "tessera/array/matmul.hpp"         // IWYU pragma: export
#include "tessera/array/numpy_names.hpp"    // IWYU pragma: export
#include "tessera/array/overlap.hpp"        // IWYU pragma: export
#include "tessera/array/random.hpp"         // IWYU pragma: export
#include "tessera/array/reductions.hpp"     // IWYU pragma: export
#include "tessera/array/scalar.hpp"         // IWYU pragma: export
#include "tessera/array/scan.hpp"           // IWYU pragma: export
#include "tessera/array/shape.hpp"          // IWYU pragma: export
#include "tessera/array/sort.hpp"           // IWYU pragma: export
#include "tessera/array/statistics.hpp"     // IWYU pragma: export
#include "tessera/array/structural.hpp"     // IWYU pragma: export
