#pragma once
// The hot kernels (random generation, fused programs) are compiled once per x86-64 ISA level
// (baseline, v3 = AVX2/FMA, v4 = AVX-512) into namespaces named by TESSERA_ISA, and
// kernels/dispatch.cpp picks the best one the CPU supports at load time. This keeps one
// portable binary (CI, the GPU machine's host) while using AVX-512 where it exists: the
// Philox + Box-Muller loop is about 3x faster with it than with baseline SSE2.
#ifndef TESSERA_ISA
#define TESSERA_ISA isa_base
#endif

#include <cstdint>
#include <vector>

#include "tessera/core/block.hpp"

namespace tessera::detail {
struct Program;

#define TESSERA_DECLARE_KERNELS(ns)                                                                        \
  namespace ns {                                                                                           \
  void generate_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start,         \
                    std::int64_t delta, std::int64_t n, double* out);                                      \
  void generate_i64(std::uint8_t gen, std::uint64_t key, std::int64_t lo, std::int64_t hi, double p0,      \
                    double p1, std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out); \
  bool generate_f64_row_pair(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start, \
                             std::int64_t delta, std::int64_t n, double* row0, double* row1);               \
  Block run_program(const Program& program, const std::vector<const Block*>& inputs);                     \
  }
TESSERA_DECLARE_KERNELS(isa_base)
TESSERA_DECLARE_KERNELS(isa_v3)
TESSERA_DECLARE_KERNELS(isa_v4)
#undef TESSERA_DECLARE_KERNELS
}  // namespace tessera::detail
