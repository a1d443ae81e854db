// Kernels behind the device variants of the array ops (see array_ops.cpp). Each one mirrors its
// host twin in src/array/array_ops.cpp / structural.cpp statement by statement, so that the
// device result is bit-for-bit the host one: the same combine order (inputs in argument order),
// the same double / int64 arithmetic, the same conversions. Kernels are deliberately plain: one
// thread per output slot or element, in a grid-stride loop.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "array_kernels.hpp"
#include "check.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 20;  // grid-stride loops cover the rest

unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// ---- reduce_combine -----------------------------------------------------------------------------

// One combine step a <- combine(a, b), as combine_into in src/array/array_ops.cpp.
template <typename A>
__device__ void combine_one(std::uint8_t kind, A* a, const A* b) {
  switch (kind) {
    case reduce::Sum: a[0] = a[0] + b[0]; break;
    case reduce::Any: a[0] = static_cast<A>(a[0] || b[0]); break;
    case reduce::Prod: a[0] *= b[0]; break;
    case reduce::All: a[0] = static_cast<A>(a[0] && b[0]); break;
    case reduce::Min: if (b[0] < a[0] || b[0] != b[0]) a[0] = b[0]; break;
    case reduce::Max: if (b[0] > a[0] || b[0] != b[0]) a[0] = b[0]; break;
    case reduce::Mean: a[0] += b[0]; a[1] += b[1]; break;
    case reduce::Var: case reduce::Std: {
      // Chan et al.'s parallel update, with the host's operation order; the _rn intrinsics keep
      // nvcc from contracting a multiply and an add into one FMA (the host rounds each step).
      const double na = static_cast<double>(a[0]), nb = static_cast<double>(b[0]);
      if (nb == 0) break;
      const double total = __dadd_rn(na, nb);
      const double delta = __dsub_rn(static_cast<double>(b[1]), static_cast<double>(a[1]));
      const double mean_step = __ddiv_rn(__dmul_rn(delta, nb), total);
      a[1] = static_cast<A>(__dadd_rn(static_cast<double>(a[1]), mean_step));
      const double m2_step = __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(delta, delta), na), nb), total);
      a[2] = static_cast<A>(__dadd_rn(__dadd_rn(static_cast<double>(a[2]), static_cast<double>(b[2])), m2_step));
      a[0] = static_cast<A>(total);
      break;
    }
    case reduce::ArgMin: case reduce::ArgMax: {
      // Partials arrive in chunk order, so on ties the earlier (lower index) one is kept.
      if (b[1] < 0) break;
      const double v = static_cast<double>(b[0]), cur = static_cast<double>(a[0]);
      bool take = a[1] < 0;
      if (!take && cur == cur) {
        if (v != v) take = true;
        else take = kind == reduce::ArgMin ? v < cur : v > cur;
        if (!take && v == cur && b[1] < a[1]) take = true;
      }
      if (take) { a[0] = b[0]; a[1] = b[1]; }
      break;
    }
    default: break;
  }
}

// The accumulator of slot s after folding in every input of this launch, in order.
template <typename A>
__device__ void accumulate_slot(std::uint8_t kind, int comps, std::int64_t s, const A* acc_in,
                                const CombineInputs& in, A (&a)[3]) {
  int next = 0;
  const A* start = acc_in;
  if (start == nullptr) {
    start = static_cast<const A*>(in.data[0]);
    next = 1;
  }
  for (int c = 0; c < comps; ++c) a[c] = start[s * comps + c];
  for (int i = next; i < in.count; ++i) {
    const A* x = static_cast<const A*>(in.data[i]) + s * comps;
    A b[3] = {};
    for (int c = 0; c < comps; ++c) b[c] = x[c];
    combine_one(kind, a, b);
  }
}

// acc_out may alias acc_in: each thread reads its whole slot before writing it.
template <typename A>
__global__ void combine_kernel(std::uint8_t kind, int comps, std::int64_t slots, const A* acc_in, CombineInputs in,
                               A* acc_out) {
  for (std::int64_t s = first_index(); s < slots; s += grid_stride()) {
    A a[3] = {};
    accumulate_slot(kind, comps, s, acc_in, in, a);
    for (int c = 0; c < comps; ++c) acc_out[s * comps + c] = a[c];
  }
}

// As the finalising loop of reduce_combine in src/array/array_ops.cpp.
template <typename A, typename T>
__global__ void finalize_kernel(std::uint8_t kind, int comps, std::int64_t slots, const A* acc_in, CombineInputs in,
                                int ddof, T* out) {
  constexpr bool f64 = std::is_same<A, double>::value;
  const bool exact_int = !f64 && kind != reduce::Mean && kind != reduce::Var && kind != reduce::Std;
  for (std::int64_t s = first_index(); s < slots; s += grid_stride()) {
    A a[3] = {};
    accumulate_slot(kind, comps, s, acc_in, in, a);
    double v = static_cast<double>(a[0]);
    switch (kind) {
      case reduce::Mean: v = static_cast<double>(a[0]) / static_cast<double>(a[1]); break;
      case reduce::Var: v = static_cast<double>(a[2]) / (static_cast<double>(a[0]) - ddof); break;
      case reduce::Std: v = sqrt(static_cast<double>(a[2]) / (static_cast<double>(a[0]) - ddof)); break;
      case reduce::ArgMin: case reduce::ArgMax: v = static_cast<double>(a[1]); break;
      default: break;
    }
    // Integer partials are exact: the host converts the int64 itself, not a double of it.
    out[s] = exact_int ? static_cast<T>(static_cast<std::int64_t>(a[0])) : static_cast<T>(v);
  }
}

void check_combine_args(int comps, const void* acc_in, const CombineInputs& inputs) {
  if (comps < 1 || comps > 3) throw Error("reduce_combine (device): " + std::to_string(comps) + " components per slot");
  if (inputs.count < 0 || inputs.count > kCombineMaxInputs || (acc_in == nullptr && inputs.count == 0))
    throw Error("reduce_combine (device): " + std::to_string(inputs.count) + " inputs in one launch");
}

template <typename A, typename T>
void launch_finalize(std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in, const CombineInputs& in,
                     int ddof, void* out, cudaStream_t stream) {
  finalize_kernel<A, T><<<blocks_for(slots), kThreads, 0, stream>>>(kind, comps, slots, static_cast<const A*>(acc_in),
                                                                    in, ddof, static_cast<T*>(out));
}

template <typename A>
void finalize_as(DType out_dtype, std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in,
                 const CombineInputs& in, int ddof, void* out, cudaStream_t stream) {
  switch (out_dtype) {
    case DType::Bool: launch_finalize<A, bool>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Int32: launch_finalize<A, std::int32_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Int64: launch_finalize<A, std::int64_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Float32: launch_finalize<A, float>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Float64: launch_finalize<A, double>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Int8: launch_finalize<A, std::int8_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Int16: launch_finalize<A, std::int16_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::UInt8: launch_finalize<A, std::uint8_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::UInt16: launch_finalize<A, std::uint16_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::UInt32: launch_finalize<A, std::uint32_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::UInt64: launch_finalize<A, std::uint64_t>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    case DType::Float16: launch_finalize<A, __half>(kind, comps, slots, acc_in, in, ddof, out, stream); break;
    default: throw DTypeError("reduce_combine (device): no " + std::string(dtype_name(out_dtype)) + " result");
  }
}

// ---- matmul (integers) --------------------------------------------------------------------------

// C += A * B for one output element per thread. Arithmetic in the unsigned type of the same
// width: wraps modulo 2^bits like the host's loop, without signed-overflow undefined behaviour.
template <typename T, typename U>
__global__ void matmul_int_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  const std::int64_t total = m * n;
  for (std::int64_t idx = first_index(); idx < total; idx += grid_stride()) {
    const std::int64_t i = idx / n, j = idx - (idx / n) * n;
    U acc = static_cast<U>(c[idx]);
    for (std::int64_t p = 0; p < k; ++p) acc += static_cast<U>(a[i * k + p]) * static_cast<U>(b[p * n + j]);
    c[idx] = static_cast<T>(acc);
  }
}

}  // namespace

void combine_partials(bool float64, std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in,
                      const CombineInputs& inputs, void* acc_out, int device, cudaStream_t stream) {
  check_combine_args(comps, acc_in, inputs);
  if (slots <= 0) return;
  if (float64)
    combine_kernel<double><<<blocks_for(slots), kThreads, 0, stream>>>(
        kind, comps, slots, static_cast<const double*>(acc_in), inputs, static_cast<double*>(acc_out));
  else
    combine_kernel<std::int64_t><<<blocks_for(slots), kThreads, 0, stream>>>(
        kind, comps, slots, static_cast<const std::int64_t*>(acc_in), inputs, static_cast<std::int64_t*>(acc_out));
  check_launch("reduce_combine kernel launch", device);
}

void combine_finalize(bool float64, std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in,
                      const CombineInputs& inputs, int ddof, DType out_dtype, void* out, int device,
                      cudaStream_t stream) {
  check_combine_args(comps, acc_in, inputs);
  if (slots <= 0) return;
  if (float64) finalize_as<double>(out_dtype, kind, comps, slots, acc_in, inputs, ddof, out, stream);
  else finalize_as<std::int64_t>(out_dtype, kind, comps, slots, acc_in, inputs, ddof, out, stream);
  check_launch("reduce_combine finalize kernel launch", device);
}

void matmul_accumulate_int(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b,
                           void* c, int device, cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  switch (dtype) {
    case DType::Int32:
      matmul_int_kernel<std::int32_t, std::uint32_t><<<blocks_for(m * n), kThreads, 0, stream>>>(
          m, n, k, static_cast<const std::int32_t*>(a), static_cast<const std::int32_t*>(b), static_cast<std::int32_t*>(c));
      break;
    case DType::Int64:
      matmul_int_kernel<std::int64_t, std::uint64_t><<<blocks_for(m * n), kThreads, 0, stream>>>(
          m, n, k, static_cast<const std::int64_t*>(a), static_cast<const std::int64_t*>(b), static_cast<std::int64_t*>(c));
      break;
    default:
      throw DTypeError("matmul (device): integer kernel called for " + std::string(dtype_name(dtype)));
  }
  check_launch("matmul integer kernel launch", device);
}

}  // namespace tessera::cuda
