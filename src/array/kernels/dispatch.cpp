// Picks the kernel build for this CPU once (see isa.hpp) and forwards to it.
#include <cstdlib>
#include <cstring>

#include "../program.hpp"
#include "isa.hpp"

namespace tessera::detail {
namespace {

struct KernelTable {
  decltype(&isa_base::generate_f64) gen_f64;
  decltype(&isa_base::generate_i64) gen_i64;
  decltype(&isa_base::run_program) run;
  const char* name;
};

KernelTable pick() {
  // TESSERA_ISA=base|v3|v4 forces a level (for tests and for comparing builds).
  const char* forced = std::getenv("TESSERA_ISA");
  __builtin_cpu_init();
  const bool v4 = __builtin_cpu_supports("x86-64-v4");
  const bool v3 = __builtin_cpu_supports("x86-64-v3");
  auto want = [&](const char* n) { return forced && std::strcmp(forced, n) == 0; };
  if ((v4 && !forced) || (v4 && want("v4")))
    return {isa_v4::generate_f64, isa_v4::generate_i64, isa_v4::run_program, "x86-64-v4"};
  if ((v3 && (!forced || want("v3") || want("v4"))))
    return {isa_v3::generate_f64, isa_v3::generate_i64, isa_v3::run_program, "x86-64-v3"};
  return {isa_base::generate_f64, isa_base::generate_i64, isa_base::run_program, "x86-64"};
}

const KernelTable& table() {
  static const KernelTable t = pick();
  return t;
}

}  // namespace

const char* kernel_isa() { return table().name; }

void generate_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start, std::int64_t delta,
                  std::int64_t n, double* out) {
  table().gen_f64(gen, key, p0, p1, start, delta, n, out);
}

void generate_i64(std::uint8_t gen, std::uint64_t key, std::int64_t lo, std::int64_t hi, double p0, double p1,
                  std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out) {
  table().gen_i64(gen, key, lo, hi, p0, p1, start, delta, n, out);
}

Block run_program(const Program& program, const std::vector<const Block*>& inputs) {
  return table().run(program, inputs);
}

}  // namespace tessera::detail
