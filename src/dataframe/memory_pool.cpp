// Arrow's default memory pool for everything the dataframe layer allocates: jemalloc, unless
// the environment chose one (ARROW_DEFAULT_MEMORY_POOL: jemalloc, mimalloc or system).
//
// The pyarrow wheel's default is mimalloc. Under a shuffle that spills (packs of tens of KB made
// and freed while partitions of MBs come and go) mimalloc's heap grew about 500 MB past what the
// worker held: the issue-30 benchmark (5 GB, 2 workers limited to 1 GB) peaked at 1030 MiB
// resident and took 96.9 s with it; with jemalloc, 763 MiB and 63.4 s
// (docs/dataframe-shuffle.md, "Measured"). Arrow reads the variable once, when its default pool
// is first asked for; this library's static initialiser runs before any of its code does, and
// before the program's own (it is a dependency of it).
#include <cstdlib>

namespace tessera::dataframe::detail {
namespace {

const bool arrow_pool_chosen = [] {
  ::setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  return true;
}();

}  // namespace
}  // namespace tessera::dataframe::detail
