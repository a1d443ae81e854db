// Task functions of the examples, in a shared library so that both ways of running them work:
// the example programs link it (and, with tessera::init, serve as their own workers), and the
// generic worker loads it: tessera-worker ADDRESS --preload libtessera_example_tasks.so
#include <tessera/ops/function.hpp>

namespace {

int add_one(int x) { return x + 1; }
double square(double x) { return x * x; }

}  // namespace

TESSERA_REGISTER_FUNCTION(add_one);
TESSERA_REGISTER_FUNCTION(square);
