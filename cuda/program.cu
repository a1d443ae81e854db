// Device evaluator of the fused per-chunk Program: the GPU variant of "tessera.array.blockwise".
// program_op.cpp decodes and encodes the Program (program_device.hpp explains the encoding); this
// file holds the kernels. The reference semantics are the host evaluator's
// (src/array/kernels/program_eval.cpp): same layout, dtypes and values (random normals and
// transcendental functions within an ulp or two of glibc's, reductions in a different but fixed
// order).
//
// program_kernel<ND, REDUCE>: blocks of kThreads threads split into teams of `team` threads
// (a power of two); a team owns one slot (the elements a reduction folds into one output
// element; the whole chunk when the program does not reduce), and block (x, y) covers the slots
// x * (kThreads / team) + t and, of each, the elements [y * per_block, (y + 1) * per_block).
// Thread `lane` of a team evaluates elements lane, lane + team, ... of that range, so neighbouring
// threads read neighbouring input elements and write neighbouring outputs. Coordinates are
// computed once per thread (divisions) and then advanced by `team` as a mixed-radix addition.
// The per-thread body lives in program_kernel.cuh, shared with a host emulation that tests run
// without a GPU. Per element the instruction loop runs over the encoded instructions (an indirect branch on a
// flat opcode that already fixes the register types); results live in a small register file in
// shared memory (slot * kThreads + thread, so a warp's accesses hit distinct banks), never in
// local memory. With REDUCE each thread folds its elements into an accumulator; the team merges
// them with a shared-memory tree; lane 0 writes the partial block (one block per slot) or a block
// partial that merge_kernel folds, in block order, into the partial block. Every order is fixed
// by the plan (which depends only on the program and the GPU model), so results are identical
// from run to run.
//
// Cost of the seed headline, (x + 1)[::2, ::2].sum() of normal(10, 1) 500000^2 in chunks of 10000
// (2500 tasks, each 5000 x 5000 generated elements, 6.25e10 in all): per element one Philox4x32-10
// (about 100 integer instructions), log + sqrt + cos in double (about 100 FP64 instructions),
// the add, the fold and about 60 instructions of interpreter, coordinate and loop overhead, so
// roughly 300 instructions: 1.9e13 thread-instructions. An H100 SXM issues about 132 SMs x 128
// lanes x 1.75e9/s = 3e13 per second, and its FP64 pipes take 6.25e12 / (132 x 64 x 1.75e9) =
// 0.4 s, so the kernels need about 1-2 s; launches, the merge and the stream sync add some
// 20-40 us per task (0.1 s). Well under the 10 s target if the estimate holds within 3x.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "check.hpp"
#include "program_device.hpp"
#include "program_kernel.cuh"
#include "stream.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda::prog {
namespace {

// Both structs travel as kernel parameters (CUDA 12.1+ on Volta+: up to 32764 bytes), read with
// warp-uniform constant-bank loads; no device buffer, copy or staging per task.
static_assert(sizeof(DeviceProgram) + sizeof(LaunchPlan) + 2 * sizeof(void*) <= 32764,
              "the program no longer fits in kernel parameters");

// Registers per thread (ptxas, sm_90, CUDA 13.0): 48 / 58 for the two-axis kernels (store /
// reduce), 58 / 67 for the eight-axis ones, no spills; 40 bytes of stack belong to the double
// cos/sin slow path (Payne-Hanek, only for huge arguments). The bounds below keep the two-axis
// kernels at four blocks (1024 threads) per SM.
template <int ND, bool REDUCE>
__global__ void __launch_bounds__(kThreads, ND == 2 ? 4 : 2)
    program_kernel(const __grid_constant__ DeviceProgram P, const __grid_constant__ LaunchPlan L, void* out,
                   Acc* partials) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  u64* const words = reinterpret_cast<u64*>(smem_raw);
  const int tid = threadIdx.x;
  const Acc acc = run_thread<ND, REDUCE>(P, L, out, words, tid, blockIdx.x, blockIdx.y);
  if constexpr (REDUCE) {
    Acc* red = reinterpret_cast<Acc*>(words + static_cast<i64>(P.nslots) * kThreads);
    red[tid] = acc;
    __syncthreads();
    const int lane = tid & (L.team - 1);
    for (int s = L.team >> 1; s > 0; s >>= 1) {
      tree_step(red, tid, lane, s, P.kind);
      __syncthreads();
    }
    finish_thread(P, L, out, partials, red, tid, blockIdx.x, blockIdx.y);
  }
}

/** Folds each slot's block partials (block order per thread, then a fixed tree) into the partial block. */
__global__ void __launch_bounds__(kThreads)
    merge_kernel(const Acc* __restrict__ partials, i64 nparts, int kind, int partial_f64, int comps, void* out) {
  __shared__ Acc red[kThreads];
  const int tid = threadIdx.x;
  const i64 slot = blockIdx.x;
  red[tid] = merge_thread(partials, nparts, kind, slot, tid);
  __syncthreads();
  for (int s = kThreads >> 1; s > 0; s >>= 1) {
    tree_step(red, tid, tid, s, kind);
    __syncthreads();
  }
  if (tid == 0) write_partial(out, slot, red[0], kind, partial_f64 != 0, comps);
}

const void* kernel_for(int nd_kernel, bool reduce) {
  if (nd_kernel == 2)
    return reduce ? reinterpret_cast<const void*>(&program_kernel<2, true>)
                  : reinterpret_cast<const void*>(&program_kernel<2, false>);
  return reduce ? reinterpret_cast<const void*>(&program_kernel<kMaxDims, true>)
                : reinterpret_cast<const void*>(&program_kernel<kMaxDims, false>);
}

int sm_count(int device) {
  static std::mutex mu;
  static std::vector<int> cache;
  std::lock_guard lock(mu);
  if (static_cast<int>(cache.size()) <= device) cache.resize(device + 1, 0);
  if (!cache[device]) check(cudaDeviceGetAttribute(&cache[device], cudaDevAttrMultiProcessorCount, device),
                            "cudaDeviceGetAttribute(MultiProcessorCount)", device);
  return cache[device];
}

/** Resident blocks per SM of a kernel instance with `smem` bytes of shared memory (cached). */
int blocks_per_sm(int device, int nd_kernel, bool reduce, std::size_t smem) {
  struct Entry {
    int device, nd;
    bool reduce;
    std::size_t smem;
    int blocks;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  std::lock_guard lock(mu);
  for (const Entry& e : cache)
    if (e.device == device && e.nd == nd_kernel && e.reduce == reduce && e.smem == smem) return e.blocks;
  int blocks = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_for(nd_kernel, reduce), kThreads, smem),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor", device);
  cache.push_back(Entry{device, nd_kernel, reduce, smem, blocks});
  return blocks;
}

}  // namespace

LaunchPlan plan_launch(const DeviceProgram& p, int device) {
  if (device < 0) check(cudaGetDevice(&device), "cudaGetDevice", -1);
  const int nd_kernel = p.nd <= 2 ? 2 : kMaxDims;
  const std::size_t smem = static_cast<std::size_t>(p.nslots) * kThreads * sizeof(u64) +
                           (p.reducing ? kThreads * sizeof(Acc) : 0);
  const LaunchPlan L = plan_for(p, sm_count(device), blocks_per_sm(device, nd_kernel, p.reducing, smem));
  if (L.grid_x > INT_MAX || L.grid_y > 65535)
    throw Error("blockwise program: grid " + std::to_string(L.grid_x) + " x " +
                             std::to_string(L.grid_y) + " is too large");
  return L;
}

void launch_program(const DeviceProgram& p, const LaunchPlan& L, void* out, void* temp, StreamView stream) {
  const cudaStream_t s = as_cuda(stream);
  if (p.reducing && L.grid_y > 1 && !temp) throw Error("blockwise program: no buffer for block partials");
  const dim3 grid(static_cast<unsigned>(L.grid_x), static_cast<unsigned>(L.grid_y));
  auto* parts = static_cast<Acc*>(temp);
  if (L.nd_kernel == 2) {
    if (p.reducing) program_kernel<2, true><<<grid, kThreads, L.smem_bytes, s>>>(p, L, out, parts);
    else program_kernel<2, false><<<grid, kThreads, L.smem_bytes, s>>>(p, L, out, parts);
  } else {
    if (p.reducing) program_kernel<kMaxDims, true><<<grid, kThreads, L.smem_bytes, s>>>(p, L, out, parts);
    else program_kernel<kMaxDims, false><<<grid, kThreads, L.smem_bytes, s>>>(p, L, out, parts);
  }
  check_launch("blockwise program kernel launch", -1);
  if (p.reducing && L.grid_y > 1) {
    merge_kernel<<<static_cast<unsigned>(p.S), kThreads, 0, s>>>(parts, L.grid_y, p.kind, p.partial_f64, p.comps, out);
    check_launch("blockwise merge kernel launch", -1);
  }
}

}  // namespace tessera::cuda::prog
