// Named .cc, not .cpp, on purpose: tests/CMakeLists.txt globs tests/**/*.cpp into the
// GoogleTest binary, and this file (with its own main) must stay out of it.
// Consumer of an installed Tessera: registers a user function, builds a Block, runs the
// function through the op registry and prints both. Prints "install_consumer: OK" on success.
#include <cstdio>
#include <vector>

#include <tessera/core/block.hpp>
#include <tessera/ops/function.hpp>

double add(double a, double b) { return a + b; }
TESSERA_REGISTER_FUNCTION(add);

int main() {
  using namespace tessera;
  Block b = Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::printf("block %s of %zu bytes:", shape_to_string(b.shape()).c_str(), b.nbytes());
  for (double v : b.to_doubles()) std::printf(" %g", v);
  std::printf("\n");

  if (!OpRegistry::global().contains("add")) {
    std::fprintf(stderr, "install_consumer: function 'add' is not registered\n");
    return 1;
  }
  std::vector<Value> args{Value(to_object(2.0)), Value(to_object(40.0))};
  double r = from_value<double>(run_op("add", OpContext{}, args));
  std::printf("add(2, 40) = %g\n", r);
  if (r != 42.0 || b.size() != 6) return 1;
  std::printf("install_consumer: OK\n");
  return 0;
}
