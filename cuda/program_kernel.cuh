#pragma once
// The body of the blockwise program kernels (program.cu), per thread and per phase, written once
// for two compilers: nvcc builds it as device code for the kernels, and a host translation unit
// that defines TESSERA_CUDA_HOST_EMULATION builds it as host code and runs the same grid on the
// CPU (emulate_launch, for tests on machines without a GPU). The emulation executes exactly this
// indexing, slot, fold, merge and layout logic; only the CUDA specifics (launch, shared memory,
// barriers, CUDA's libm) are left to the GPU tests.
//
// A kernel launch runs, for every block (bx, by) of plan.grid_x x plan.grid_y:
//   phase 1  every thread: acc = run_thread(...)    (stores the chunk, or folds into acc)
//   phase 2  reductions only: red[tid] = acc; then for s = team/2 ... 1: tree_step(red, ..., s),
//            with a barrier before each step and after the last
//   phase 3  reductions only: finish_thread(...)    (lane 0 writes the slot's partial)
// and, for reductions with plan.grid_y > 1, merge blocks (one per slot) of the same shape:
// merge_thread, tree over kThreads, thread 0 write_partial.
#include <math.h>

#include <climits>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include "array/element_semantics.hpp"
#include "array/random_semantics.hpp"
#include "program_device.hpp"
#include "tessera/cuda/random.hpp"

#if defined(__CUDACC__)
#define TESSERA_PK __device__ __forceinline__
#define TESSERA_PK_UNROLL _Pragma("unroll")
#define TESSERA_PK_NO_UNROLL _Pragma("unroll 1")
#else
#include <vector>
#define TESSERA_PK inline
#define TESSERA_PK_UNROLL
#define TESSERA_PK_NO_UNROLL
#endif

namespace tessera::cuda::prog {

using u64 = std::uint64_t;
using i64 = std::int64_t;

// ReduceKind (src/array/program.hpp), spelled here because that header needs C++20.
enum : int { kSum, kProd, kMin, kMax, kMean, kVar, kStd, kAny, kAll, kArgMin, kArgMax };

TESSERA_PK double as_f(u64 b) {
#if defined(__CUDACC__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
#endif
}
TESSERA_PK u64 as_u(double x) {
#if defined(__CUDACC__)
  return static_cast<u64>(__double_as_longlong(x));
#else
  u64 b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
TESSERA_PK u64 as_u(i64 x) { return static_cast<u64>(x); }
TESSERA_PK float to_float(double x) {
#if defined(__CUDACC__)
  return __double2float_rn(x);
#else
  return static_cast<float>(x);
#endif
}
/** float16 bits to double and back (round to nearest even), as the host's tessera::float16. */
TESSERA_PK double half_to_double(std::uint16_t b) {
#if defined(__CUDACC__)
  return static_cast<double>(__half2float(__ushort_as_half(b)));
#else
  return ::tessera::float16::to_double(b);
#endif
}
TESSERA_PK std::uint16_t double_to_half(double x) {
#if defined(__CUDACC__)
  return __half_as_ushort(__double2half(x));
#else
  return ::tessera::float16::from_double(x);
#endif
}
TESSERA_PK double inf() { return as_f(0x7ff0000000000000ULL); }
TESSERA_PK i64 imin(i64 a, i64 b) { return a < b ? a : b; }

// NumPy's element semantics (floor division, modulo, integer power, float-to-int conversion),
// shared with the host evaluator.
namespace elem = ::tessera::detail::elem;
TESSERA_PK i64 f2i(double x) { return elem::to_int64(x); }
TESSERA_PK int f2i32(double x) { return elem::to_int32(x); }

/** Linear index of a leaf at chunk coordinate o: base + sum_a o[a] * coef[a] (wrapping). */
template <int ND>
TESSERA_PK u64 leaf_index(const DevInstr& I, const i64 (&o)[ND]) {
  u64 idx = static_cast<u64>(I.base);
TESSERA_PK_UNROLL
  for (int a = 0; a < ND; ++a) idx += static_cast<u64>(o[a]) * static_cast<u64>(I.coef[kMaxDims - ND + a]);
  return idx;
}

template <typename T>
TESSERA_PK T load(const DevInstr& I, u64 idx) {
  return static_cast<const T*>(I.ptr)[idx];
}

/**
 * Evaluates the per-element instructions at coordinate o. Results go to reg[slot offset]: the
 * register file in shared memory, slot * kThreads + thread (reg points at this thread's column).
 */
template <int ND>
TESSERA_PK void eval(const DeviceProgram& P, const i64 (&o)[ND], u64* reg) {
TESSERA_PK_NO_UNROLL
  for (int k = P.nconst; k < P.ninstr; ++k) {
    const DevInstr& I = P.instrs[k];
#define FA as_f(reg[I.a])
#define FB as_f(reg[I.b])
#define IA static_cast<i64>(reg[I.a])
#define IB static_cast<i64>(reg[I.b])
    u64 r = 0;
    switch (I.xop) {
      case kConst: r = static_cast<u64>(I.i0); break;
      // Generators (tessera/cuda/random.hpp holds the shared definitions).
      case kGenNormalF: r = as_u(device::normal_at(I.key, I.p0, I.p1, leaf_index(I, o))); break;
      case kGenUniformF: r = as_u(device::uniform_at(I.key, I.p0, I.p1, leaf_index(I, o))); break;
      case kGenIntegersF: r = as_u(static_cast<double>(device::integers_at(I.key, I.i0, I.i1, leaf_index(I, o)))); break;
      case kGenArangeF: r = as_u(I.p0 + I.p1 * static_cast<double>(static_cast<i64>(leaf_index(I, o)))); break;
      case kGenNormalI: r = as_u(f2i(device::normal_at(I.key, I.p0, I.p1, leaf_index(I, o)))); break;
      case kGenUniformI: r = as_u(f2i(device::uniform_at(I.key, I.p0, I.p1, leaf_index(I, o)))); break;
      case kGenIntegersI: r = as_u(device::integers_at(I.key, I.i0, I.i1, leaf_index(I, o))); break;
      case kGenArangeI: r = static_cast<u64>(I.i0) + static_cast<u64>(I.i1) * leaf_index(I, o); break;
      case kGenDistF: r = as_u(::tessera::detail::rng::sample_f64(I.gen, I.key, I.p0, I.p1, I.i0, leaf_index(I, o))); break;
      case kGenDistI: r = as_u(::tessera::detail::rng::sample_i64(I.gen, I.key, I.p0, I.p1, I.i0, leaf_index(I, o))); break;
      // Inputs (not rounded, as on the host).
      case kInF_F64: r = as_u(load<double>(I, leaf_index(I, o))); break;
      case kInF_F32: r = as_u(static_cast<double>(load<float>(I, leaf_index(I, o)))); break;
      case kInF_I64: r = as_u(static_cast<double>(load<i64>(I, leaf_index(I, o)))); break;
      case kInF_I32: r = as_u(static_cast<double>(load<int>(I, leaf_index(I, o)))); break;
      case kInF_Bool: r = as_u(load<unsigned char>(I, leaf_index(I, o)) ? 1.0 : 0.0); break;
      case kInI_F64: r = as_u(f2i(load<double>(I, leaf_index(I, o)))); break;
      case kInI_F32: r = as_u(f2i(static_cast<double>(load<float>(I, leaf_index(I, o))))); break;
      case kInI_I64: r = as_u(load<i64>(I, leaf_index(I, o))); break;
      case kInI_I32: r = as_u(static_cast<i64>(load<int>(I, leaf_index(I, o)))); break;
      case kInI_Bool: r = load<unsigned char>(I, leaf_index(I, o)) ? 1 : 0; break;
      // Casts.
      case kCopy: r = reg[I.a]; break;
      case kI2F: r = as_u(static_cast<double>(IA)); break;
      case kF2I: r = as_u(f2i(FA)); break;
      case kF2Bool: r = FA != 0; break;
      case kIsNanF: { const double x = FA; r = x != x; break; }
      case kIsFiniteF: r = isfinite(FA) ? 1 : 0; break;
      // Unary, float.
      case kNegF: r = as_u(-FA); break;
      case kAbsF: r = as_u(fabs(FA)); break;
      case kExpF: r = as_u(exp(FA)); break;
      case kLogF: r = as_u(log(FA)); break;
      case kLog1pF: r = as_u(log1p(FA)); break;
      case kSqrtF: r = as_u(sqrt(FA)); break;
      case kSquareF: { const double x = FA; r = as_u(x * x); break; }
      case kSinF: r = as_u(sin(FA)); break;
      case kCosF: r = as_u(cos(FA)); break;
      case kTanF: r = as_u(tan(FA)); break;
      case kTanhF: r = as_u(tanh(FA)); break;
      case kFloorF: r = as_u(floor(FA)); break;
      case kCeilF: r = as_u(ceil(FA)); break;
      case kSignF: {
        const double x = FA;
        r = as_u(x > 0 ? 1.0 : (x < 0 ? -1.0 : (x == 0 ? 0.0 : x)));
        break;
      }
      // Unary, integer (wrapping, as NumPy integers).
      case kNegI: r = 0ULL - reg[I.a]; break;
      case kAbsI: { const i64 x = IA; r = x < 0 ? 0ULL - static_cast<u64>(x) : static_cast<u64>(x); break; }
      case kSquareI: r = reg[I.a] * reg[I.a]; break;
      case kSignI: { const i64 x = IA; r = as_u(static_cast<i64>((x > 0) - (x < 0))); break; }
      case kNotI: r = IA == 0; break;
      // Binary, float.
      case kAddF: r = as_u(FA + FB); break;
      case kSubF: r = as_u(FA - FB); break;
      case kMulF: r = as_u(FA * FB); break;
      case kDivF: r = as_u(FA / FB); break;
      case kFloorDivF: r = as_u(elem::floor_divide_f(FA, FB)); break;
      case kModF: r = as_u(elem::mod_f(FA, FB)); break;
      case kPowF: r = as_u(pow(FA, FB)); break;
      case kMinF: { const double x = FA, y = FB; r = as_u((x != x || x < y) ? x : y); break; }
      case kMaxF: { const double x = FA, y = FB; r = as_u((x != x || x > y) ? x : y); break; }
      // Binary, integer.
      case kAddI: r = reg[I.a] + reg[I.b]; break;
      case kSubI: r = reg[I.a] - reg[I.b]; break;
      case kMulI: r = reg[I.a] * reg[I.b]; break;
      case kFloorDivI: r = as_u(elem::floor_divide(IA, IB)); break;
      case kModI: r = as_u(elem::mod(IA, IB)); break;
      case kPowI: {
        const i64 e = IB;
        // Every raising element stores the same code, so the unordered stores need no atomics.
        if (elem::negative_power(e) && P.error) *P.error = elem::kNegativePowerError;
        r = as_u(elem::power(IA, e));
        break;
      }
      case kMinI: { const i64 x = IA, y = IB; r = as_u(y < x ? y : x); break; }
      case kMaxI: { const i64 x = IA, y = IB; r = as_u(x < y ? y : x); break; }
      case kAndI: r = (IA != 0) & (IB != 0); break;
      case kOrI: r = (IA != 0) | (IB != 0); break;
      // Comparisons.
      case kLtF: r = FA < FB; break;
      case kLeF: r = FA <= FB; break;
      case kGtF: r = FA > FB; break;
      case kGeF: r = FA >= FB; break;
      case kEqF: r = FA == FB; break;
      case kNeF: r = FA != FB; break;
      case kLtI: r = IA < IB; break;
      case kLeI: r = IA <= IB; break;
      case kGtI: r = IA > IB; break;
      case kGeI: r = IA >= IB; break;
      case kEqI: r = IA == IB; break;
      case kNeI: r = IA != IB; break;
      case kWhere: r = reg[I.a] != 0 ? reg[I.b] : reg[I.c]; break;
      // float32 results: what is not exactly rounded runs in float, as on the host.
      case kFloorDivF32: r = as_u(static_cast<double>(elem::floor_divide_f(to_float(FA), to_float(FB)))); break;
      case kModF32: r = as_u(static_cast<double>(elem::mod_f(to_float(FA), to_float(FB)))); break;
      case kPowF32: r = as_u(static_cast<double>(powf(to_float(FA), to_float(FB)))); break;
      case kF2I32: r = as_u(static_cast<i64>(f2i32(FA))); break;
      case kInF_F16: r = as_u(half_to_double(load<std::uint16_t>(I, leaf_index(I, o)))); break;
      case kInI_I8: r = as_u(static_cast<i64>(load<std::int8_t>(I, leaf_index(I, o)))); break;
      case kInI_I16: r = as_u(static_cast<i64>(load<std::int16_t>(I, leaf_index(I, o)))); break;
      case kInI_U8: r = load<std::uint8_t>(I, leaf_index(I, o)); break;
      case kInI_U16: r = load<std::uint16_t>(I, leaf_index(I, o)); break;
      case kInI_U32: r = load<std::uint32_t>(I, leaf_index(I, o)); break;
      case kInI_U64: r = load<u64>(I, leaf_index(I, o)); break;
      case kU2F: r = as_u(static_cast<double>(reg[I.a])); break;
      case kF2U64: r = as_u(elem::to_uint64_bits(FA)); break;
      case kFloorDivU: { const u64 y = reg[I.b]; r = y ? reg[I.a] / y : 0; break; }
      case kModU: { const u64 y = reg[I.b]; r = y ? reg[I.a] % y : 0; break; }
      case kMinU: { const u64 x = reg[I.a], y = reg[I.b]; r = y < x ? y : x; break; }
      case kMaxU: { const u64 x = reg[I.a], y = reg[I.b]; r = x < y ? y : x; break; }
      case kAbsU: r = reg[I.a]; break;
      case kSignU: r = reg[I.a] != 0; break;
      case kCmpU: {
        const bool au = I.i1 & 1, bu = (I.i1 >> 1) & 1;
        int c;  // a against b: -1, 0, 1 (a negative signed side is below every unsigned value)
        if (!au && IA < 0) c = -1;
        else if (!bu && IB < 0) c = 1;
        else c = reg[I.a] < reg[I.b] ? -1 : (reg[I.a] > reg[I.b] ? 1 : 0);
        switch (I.i0) {
          case 0: r = c < 0; break;
          case 1: r = c <= 0; break;
          case 2: r = c > 0; break;
          case 3: r = c >= 0; break;
          case 4: r = c == 0; break;
          default: r = c != 0; break;
        }
        break;
      }
      // Appended ops: their element semantics are element_semantics.hpp's, shared with the host.
      case kTruncF: r = as_u(elem::trunc_f(FA)); break;
      case kRintF: r = as_u(elem::rint_f(FA)); break;
      case kArcsinF: r = as_u(elem::arcsin_f(FA)); break;
      case kArccosF: r = as_u(elem::arccos_f(FA)); break;
      case kArctanF: r = as_u(elem::arctan_f(FA)); break;
      case kArcsinhF: r = as_u(elem::arcsinh_f(FA)); break;
      case kArccoshF: r = as_u(elem::arccosh_f(FA)); break;
      case kArctanhF: r = as_u(elem::arctanh_f(FA)); break;
      case kSinhF: r = as_u(elem::sinh_f(FA)); break;
      case kCoshF: r = as_u(elem::cosh_f(FA)); break;
      case kLog2F: r = as_u(elem::log2_f(FA)); break;
      case kLog10F: r = as_u(elem::log10_f(FA)); break;
      case kExp2F: r = as_u(elem::exp2_f(FA)); break;
      case kExpm1F: r = as_u(elem::expm1_f(FA)); break;
      case kCbrtF: r = as_u(elem::cbrt_f(FA)); break;
      case kI0F: r = as_u(elem::i0_f(FA)); break;
      case kSpacingF: r = as_u(elem::spacing_f(FA, static_cast<int>(I.i1))); break;
      case kFrexpMantissaF: r = as_u(elem::frexp_mantissa_f(FA)); break;
      case kFrexpExponentF: r = as_u(elem::frexp_exponent_f(FA)); break;
      case kNextAfterF: r = as_u(elem::nextafter_f(FA, FB, static_cast<int>(I.i1))); break;
      case kInvertI: r = ~reg[I.a]; break;
      case kArctan2F: r = as_u(elem::arctan2_f(FA, FB)); break;
      case kHypotF: r = as_u(elem::hypot_f(FA, FB)); break;
      case kLogAddExpF: r = as_u(elem::logaddexp_f(FA, FB)); break;
      case kLogAddExp2F: r = as_u(elem::logaddexp2_f(FA, FB)); break;
      case kCopySignF: r = as_u(elem::copysign_f(FA, FB)); break;
      case kFMinF: r = as_u(elem::fmin_f(FA, FB)); break;
      case kFMaxF: r = as_u(elem::fmax_f(FA, FB)); break;
      case kFModF: r = as_u(elem::fmod_f(FA, FB)); break;
      case kFModI: r = as_u(elem::fmod_i(IA, IB)); break;
      case kBitAndI: r = reg[I.a] & reg[I.b]; break;
      case kBitOrI: r = reg[I.a] | reg[I.b]; break;
      case kBitXorI: r = reg[I.a] ^ reg[I.b]; break;
      case kLeftShiftI: r = as_u(elem::left_shift(IA, IB)); break;
      case kRightShiftI: r = as_u(elem::right_shift(IA, IB)); break;
      default: break;
    }
#undef FA
#undef FB
#undef IA
#undef IB
    switch (I.round) {
      case kRoundF32: r = as_u(static_cast<double>(to_float(as_f(r)))); break;
      case kRoundI32: r = as_u(static_cast<i64>(static_cast<int>(static_cast<unsigned>(r)))); break;
      case kRoundBool: r = r != 0; break;
      case kRoundF16: r = as_u(half_to_double(double_to_half(as_f(r)))); break;
      case kRoundI8: r = as_u(static_cast<i64>(static_cast<std::int8_t>(static_cast<std::uint8_t>(r)))); break;
      case kRoundI16: r = as_u(static_cast<i64>(static_cast<std::int16_t>(static_cast<std::uint16_t>(r)))); break;
      case kRoundU8: r = static_cast<std::uint8_t>(r); break;
      case kRoundU16: r = static_cast<std::uint16_t>(r); break;
      case kRoundU32: r = static_cast<std::uint32_t>(r); break;
      default: break;
    }
    reg[I.dst] = r;
  }
}

/** Moves coordinate o on by `team` elements of its slot (mixed radix over the iterated axes). */
template <int ND>
TESSERA_PK void advance(i64 (&o)[ND], const DeviceProgram& P, const LaunchPlan& L) {
  i64 carry = 0;
TESSERA_PK_UNROLL
  for (int a = ND - 1; a >= 0; --a) {
    const int A = kMaxDims - ND + a;
    if ((P.iter_mask >> A) & 1u) {
      const i64 x = o[a] + L.step[A] + carry;
      carry = x >= P.shape[A];
      o[a] = carry ? x - P.shape[A] : x;
    }
  }
}

/** Writes element r of the chunk in the output dtype (as the host's store<T>). */
TESSERA_PK void store(void* out, i64 r, u64 v, bool root_f64, int dtype) {
  const double x = as_f(v);
  const i64 xi = static_cast<i64>(v);
  switch (static_cast<DType>(dtype)) {
    case DType::Bool: static_cast<unsigned char*>(out)[r] = root_f64 ? (x != 0) : (xi != 0); break;
    case DType::Int32: static_cast<int*>(out)[r] = root_f64 ? f2i32(x) : static_cast<int>(xi); break;
    case DType::Int64: static_cast<i64*>(out)[r] = root_f64 ? f2i(x) : xi; break;
    case DType::Float32: static_cast<float*>(out)[r] = root_f64 ? to_float(x) : static_cast<float>(xi); break;
    case DType::Float64: static_cast<double*>(out)[r] = root_f64 ? x : static_cast<double>(xi); break;
    // Narrow integers wrap (a float goes through int32 or int64 first, as NumPy on x86-64).
    case DType::Int8: static_cast<std::int8_t*>(out)[r] = static_cast<std::int8_t>(root_f64 ? elem::float_to_int(x, DType::Int8) : xi); break;
    case DType::Int16: static_cast<std::int16_t*>(out)[r] = static_cast<std::int16_t>(root_f64 ? elem::float_to_int(x, DType::Int16) : xi); break;
    case DType::UInt8: static_cast<std::uint8_t*>(out)[r] = static_cast<std::uint8_t>(root_f64 ? elem::float_to_int(x, DType::UInt8) : xi); break;
    case DType::UInt16: static_cast<std::uint16_t*>(out)[r] = static_cast<std::uint16_t>(root_f64 ? elem::float_to_int(x, DType::UInt16) : xi); break;
    case DType::UInt32: static_cast<std::uint32_t*>(out)[r] = static_cast<std::uint32_t>(root_f64 ? elem::float_to_int(x, DType::UInt32) : xi); break;
    case DType::UInt64: static_cast<u64*>(out)[r] = static_cast<u64>(root_f64 ? elem::to_uint64_bits(x) : xi); break;
    case DType::Float16: static_cast<std::uint16_t*>(out)[r] = double_to_half(root_f64 ? x : static_cast<double>(xi)); break;
    default: break;  // complex chunks never reach the device evaluator (encode_program refuses them)
  }
}

// ---- reductions ---------------------------------------------------------------------------------

TESSERA_PK void acc_init(Acc& a, int kind) {
  a.a0 = 0;
  a.a1 = 0;
  a.a2 = 0;
  a.q = 0;
  switch (kind) {
    case kProd: a.a0 = 1; a.q = 1; break;
    case kMin: a.a0 = inf(); a.q = LLONG_MAX; break;
    case kMax: a.a0 = -inf(); a.q = LLONG_MIN; break;
    case kAll: a.q = 1; break;
    case kArgMin: a.a0 = inf(); a.q = -1; break;
    case kArgMax: a.a0 = -inf(); a.q = -1; break;
    default: break;
  }
}

/** The host's Reducer::better: NaN wins (the first one), then the strictly better value. */
TESSERA_PK bool arg_better(bool is_min, double v, double cur, bool empty) {
  if (empty) return true;
  if (cur != cur) return false;
  if (v != v) return true;
  return is_min ? v < cur : v > cur;
}

/** Folds one element (root register bits v, at coordinate o) into a thread's accumulator. */
template <int ND>
TESSERA_PK void fold(Acc& a, u64 v, const DeviceProgram& P, const i64 (&o)[ND]) {
  const bool f = P.root_f64;
  const i64 xi = static_cast<i64>(v);
  const double x = f ? as_f(v) : static_cast<double>(xi);
  switch (P.kind) {
    case kSum:
      if (P.partial_f64) a.a0 += x;
      else a.q = static_cast<i64>(static_cast<u64>(a.q) + static_cast<u64>(xi));
      break;
    case kProd:
      if (P.partial_f64) a.a0 *= x;
      else a.q = static_cast<i64>(static_cast<u64>(a.q) * static_cast<u64>(xi));
      break;
    case kMin:
      if (P.partial_f64) {
        if (x < a.a0 || x != x) a.a0 = x;
      } else if (xi < a.q) {
        a.q = xi;
      }
      break;
    case kMax:
      if (P.partial_f64) {
        if (x > a.a0 || x != x) a.a0 = x;
      } else if (xi > a.q) {
        a.q = xi;
      }
      break;
    case kMean: a.a0 += x; a.a1 += 1.0; break;
    case kVar: case kStd: {  // Welford per thread; partials merge Chan-style like the host's tiles
      a.a0 += 1.0;
      const double delta = x - a.a1;
      a.a1 += delta / a.a0;
      a.a2 += delta * (x - a.a1);
      break;
    }
    case kAny: a.q |= f ? (x != 0) : (xi != 0); break;
    case kAll: a.q &= f ? (x != 0) : (xi != 0); break;
    case kArgMin: case kArgMax:
      // A thread sees its elements in increasing index order, so strict comparison keeps the first.
      if (arg_better(P.kind == kArgMin, x, a.a0, a.q < 0)) {
        u64 idx = static_cast<u64>(P.arg_base);
TESSERA_PK_UNROLL
        for (int d = 0; d < ND; ++d) idx += static_cast<u64>(o[d]) * static_cast<u64>(P.arg_coef[kMaxDims - ND + d]);
        a.a0 = x;
        a.q = static_cast<i64>(idx);
      }
      break;
    default: break;
  }
}

/** a <- a (+) b for two partials of the same slot. */
TESSERA_PK void acc_merge(Acc& a, const Acc& b, int kind) {
  switch (kind) {
    case kSum: a.a0 += b.a0; a.q = static_cast<i64>(static_cast<u64>(a.q) + static_cast<u64>(b.q)); break;
    case kProd: a.a0 *= b.a0; a.q = static_cast<i64>(static_cast<u64>(a.q) * static_cast<u64>(b.q)); break;
    case kMin:
      if (b.a0 < a.a0 || b.a0 != b.a0) a.a0 = b.a0;
      if (b.q < a.q) a.q = b.q;
      break;
    case kMax:
      if (b.a0 > a.a0 || b.a0 != b.a0) a.a0 = b.a0;
      if (b.q > a.q) a.q = b.q;
      break;
    case kMean: a.a0 += b.a0; a.a1 += b.a1; break;
    case kVar: case kStd: {
      if (b.a0 == 0) break;
      if (a.a0 == 0) {
        a = b;
        break;
      }
      const double na = a.a0, nb = b.a0, total = na + nb;
      const double delta = b.a1 - a.a1;
      a.a1 += delta * nb / total;
      a.a2 += b.a2 + delta * delta * na * nb / total;
      a.a0 = total;
      break;
    }
    case kAny: a.q |= b.q; break;
    case kAll: a.q &= b.q; break;
    case kArgMin: case kArgMax: {
      // The first NaN, else the best value, ties to the lower index: an order on (value, index),
      // so merging in any grouping picks the element the host's sequential scan picks.
      if (b.q < 0) break;
      bool take = a.q < 0;
      if (!take) {
        const bool an = a.a0 != a.a0, bn = b.a0 != b.a0;
        if (an || bn) take = (an && bn) ? b.q < a.q : bn;
        else if (b.a0 == a.a0) take = b.q < a.q;
        else take = kind == kArgMin ? b.a0 < a.a0 : b.a0 > a.a0;
      }
      if (take) a = b;
      break;
    }
    default: break;
  }
}

/** Writes a slot's partial as the host lays it out (comps values of float64, or one int64). */
TESSERA_PK void write_partial(void* out, i64 slot, const Acc& a, int kind, bool partial_f64, int comps) {
  if (!partial_f64) {  // integer sum, prod, min, max, any, all
    static_cast<i64*>(out)[slot] = a.q;
    return;
  }
  double* o = static_cast<double*>(out) + slot * comps;
  switch (kind) {
    case kMean: o[0] = a.a0; o[1] = a.a1; break;
    case kVar: case kStd: o[0] = a.a0; o[1] = a.a1; o[2] = a.a2; break;
    case kAny: case kAll: o[0] = static_cast<double>(a.q); break;
    case kArgMin: case kArgMax: o[0] = a.a0; o[1] = static_cast<double>(a.q); break;
    default: o[0] = a.a0; break;
  }
}

// ---- per-thread phases ------------------------------------------------------------------------------

/** The tiled walk's tile (LaunchPlan::tiled): kTileRows rows of kTileCols, one warp per row. */
constexpr int kTileCols = 32;
constexpr int kTileRows = kThreads / kTileCols;

/**
 * Coordinates of element r in the tiled walk of a 2-d domain (the last two axes) padded to
 * whole tiles: tile r / kThreads in row-major order of tiles, then lane r % kThreads within it,
 * row-major. A bijection of [0, L.tiled_r) onto the padded domain.
 */
template <int ND>
TESSERA_PK void tile_coords(i64 (&o)[ND], const LaunchPlan& L, i64 r) {
  const i64 t = r / kThreads, e = r % kThreads, tiles_per_row = L.tiled_cols / kTileCols;
  o[ND - 2] = (t / tiles_per_row) * kTileRows + e / kTileCols;
  o[ND - 1] = (t % tiles_per_row) * kTileCols + e % kTileCols;
}

/** The next element of a thread in the tiled walk: the same place in the next tile. */
template <int ND>
TESSERA_PK void tile_advance(i64 (&o)[ND], const LaunchPlan& L) {
  o[ND - 1] += kTileCols;
  if (o[ND - 1] >= L.tiled_cols) {
    o[ND - 1] -= L.tiled_cols;
    o[ND - 2] += kTileRows;
  }
}

/** Whether o is inside the domain (not in the tiled walk's padding). */
template <int ND>
TESSERA_PK bool in_domain(const i64 (&o)[ND], const DeviceProgram& P) {
  return o[ND - 2] < P.shape[kMaxDims - 2] && o[ND - 1] < P.shape[kMaxDims - 1];
}

/** The slot a thread works on (may be >= P.S: such threads only take part in the tree). */
TESSERA_PK i64 slot_of(const LaunchPlan& L, int tid, i64 bx) {
  return bx * (kThreads >> L.team_shift) + (tid >> L.team_shift);
}

/**
 * Phase 1 of program_kernel for thread `tid` of block (bx, by): evaluates the thread's elements
 * (lane, lane + team, ... of the block's range of its slot), stores them (not reducing) or folds
 * them into the returned accumulator. `words` is the block's register file.
 */
template <int ND, bool REDUCE>
TESSERA_PK Acc run_thread(const DeviceProgram& P, const LaunchPlan& L, void* out, u64* words, int tid, i64 bx,
                          i64 by) {
  u64* const reg = words + tid;
  const int lane = tid & (L.team - 1);
  const i64 slot = slot_of(L, tid, bx);
TESSERA_PK_NO_UNROLL
  for (int k = 0; k < P.nconst; ++k) reg[P.instrs[k].dst] = static_cast<u64>(P.instrs[k].i0);

  Acc acc;
  acc_init(acc, P.kind);
  if (slot < P.S) {
    const bool tiled = REDUCE && L.tiled;
    const i64 r0 = by * L.per_block;
    const i64 r1 = imin(tiled ? L.tiled_r : P.R, r0 + L.per_block);
    i64 r = r0 + lane;
    if (r < r1) {
      i64 o[ND];
      if (tiled) {
        tile_coords<ND>(o, L, r);
      } else {
TESSERA_PK_UNROLL
        for (int a = 0; a < ND; ++a) {
          const int A = kMaxDims - ND + a;
          o[a] = ((P.iter_mask >> A) & 1u) ? (r / P.rstride[A]) % P.shape[A] : (slot / P.sstride[A]) % P.shape[A];
        }
      }
      for (; r < r1; r += L.team) {
        if constexpr (REDUCE) {
          if (tiled) {
            if (in_domain<ND>(o, P)) {
              eval<ND>(P, o, reg);
              fold<ND>(acc, words[P.root + tid], P, o);
            }
            tile_advance<ND>(o, L);
            continue;
          }
        }
        eval<ND>(P, o, reg);
        const u64 v = words[P.root + tid];
        if constexpr (REDUCE) fold<ND>(acc, v, P, o);
        else store(out, r, v, P.root_f64, P.out_dtype);
        advance<ND>(o, P, L);
      }
    }
  }
  return acc;
}

/** One step of a tree over `red` in teams of `team` threads: lane < s takes in red[tid + s]. */
TESSERA_PK void tree_step(Acc* red, int tid, int lane, int s, int kind) {
  if (lane < s) {
    Acc a = red[tid];
    acc_merge(a, red[tid + s], kind);
    red[tid] = a;
  }
}

/** Phase 3: lane 0 of a team writes its slot's partial, or the block partial when grid_y > 1. */
TESSERA_PK void finish_thread(const DeviceProgram& P, const LaunchPlan& L, void* out, Acc* partials, const Acc* red,
                              int tid, i64 bx, i64 by) {
  const i64 slot = slot_of(L, tid, bx);
  if ((tid & (L.team - 1)) != 0 || slot >= P.S) return;
  if (L.grid_y == 1) write_partial(out, slot, red[tid], P.kind, P.partial_f64, P.comps);
  else partials[slot * L.grid_y + by] = red[tid];
}

/** Merge phase 1, thread `tid` of the block of `slot`: folds block partials tid, tid + kThreads, ... */
TESSERA_PK Acc merge_thread(const Acc* partials, i64 nparts, int kind, i64 slot, int tid) {
  Acc a;
  acc_init(a, kind);
  for (i64 b = tid; b < nparts; b += kThreads) acc_merge(a, partials[slot * nparts + b], kind);
  return a;
}

// ---- plan (host) ----------------------------------------------------------------------------------

/**
 * Team size and grid for a program on a GPU with `sms` multiprocessors that hold
 * `blocks_per_sm` blocks of the kernel each (plan_launch queries both).
 */
inline LaunchPlan plan_for(const DeviceProgram& p, int sms, int blocks_per_sm) {
  auto ceil_div = [](i64 a, i64 b) { return (a + b - 1) / b; };
  auto clamp = [](i64 v, i64 lo, i64 hi) { return v < lo ? lo : (v > hi ? hi : v); };
  LaunchPlan L;
  L.nd_kernel = p.nd <= 2 ? 2 : kMaxDims;
  int team = kThreads;
  if (p.reducing) {  // at least about four elements per thread, else fewer threads per slot
    const i64 want = (p.R + 3) / 4;
    team = 1;
    while (team < kThreads && team < want) team <<= 1;
  }
  L.team = team;
  L.team_shift = 0;
  while ((1 << L.team_shift) < team) ++L.team_shift;
  const i64 slots_per_block = kThreads / team;
  L.grid_x = clamp(ceil_div(p.S, slots_per_block), 1, INT64_MAX);
  L.smem_bytes = static_cast<std::size_t>(p.nslots) * kThreads * sizeof(u64) +
                 (p.reducing ? kThreads * sizeof(Acc) : 0);
  L.sms = sms;
  L.blocks_per_sm = blocks_per_sm;
  const i64 wave = clamp(static_cast<i64>(sms) * (blocks_per_sm > 0 ? blocks_per_sm : 1), 1, INT64_MAX);

  // Blocks per slot: one resident wave in all, but at least 16 elements per thread.
  i64 gy = 1;
  if (!p.reducing) gy = clamp(ceil_div(p.R, kThreads), 1, wave);
  else if (L.grid_x < wave) {
    const i64 by_wave = ceil_div(wave, L.grid_x), by_work = p.R / (static_cast<i64>(team) * 16);
    gy = clamp(by_wave < by_work ? by_wave : by_work, 1, 65535);
  }
  L.per_block = p.R > 0 ? ceil_div(p.R, gy) : 1;

  // The tiled walk, for a whole 2-d chunk reduced to one value where an input is read across
  // its rows (x.T: the row axis walks memory faster than the column axis). A team walking one
  // row reads such an input one element per row, a 32-byte sector for 8 bytes, and the rest of
  // each sector is wanted only a row later, long evicted; a tile's 8 rows use it at once.
  // Blocks then take whole tiles.
  {
    const int A0 = kMaxDims - 2, A1 = kMaxDims - 1;
    bool transposed = false;
    for (int k = p.nconst; k < p.ninstr; ++k) {
      const DevInstr& in = p.instrs[k];
      const i64 c0 = in.coef[A0] < 0 ? -in.coef[A0] : in.coef[A0], c1 = in.coef[A1] < 0 ? -in.coef[A1] : in.coef[A1];
      if (in.ptr != nullptr && c0 != 0 && c0 < c1) transposed = true;
    }
    if (transposed && p.reducing && p.S == 1 && p.nd == 2 && p.R > 0 && team == kThreads &&
        ((p.iter_mask >> A0) & 1u) && ((p.iter_mask >> A1) & 1u)) {
      L.tiled = 1;
      L.tiled_cols = ceil_div(p.shape[A1], kTileCols) * kTileCols;
      L.tiled_r = ceil_div(p.shape[A0], kTileRows) * kTileRows * L.tiled_cols;
      L.per_block = ceil_div(ceil_div(L.tiled_r, gy), kThreads) * kThreads;
    }
  }
  L.grid_y = p.R > 0 ? ceil_div(L.tiled ? L.tiled_r : p.R, L.per_block) : 1;

  // `team` as digits over the iterated axes (innermost first; the outermost takes the rest).
  if (p.R > 0) {
    int top = -1;
    for (int A = 0; A < kMaxDims && top < 0; ++A)
      if ((p.iter_mask >> A) & 1u) top = A;
    i64 rem = team;
    for (int A = kMaxDims - 1; A >= 0; --A) {
      if (!((p.iter_mask >> A) & 1u)) continue;
      if (A == top) {
        L.step[A] = rem;
      } else {
        L.step[A] = rem % p.shape[A];
        rem /= p.shape[A];
      }
    }
  }
  L.temp_bytes = p.reducing && L.grid_y > 1 ? static_cast<std::size_t>(p.S * L.grid_y) * sizeof(Acc) : 0;
  return L;
}

// ---- host emulation of a launch (tests) ---------------------------------------------------------------

#if defined(TESSERA_CUDA_HOST_EMULATION) && !defined(__CUDACC__)
/**
 * Runs what launch_program queues, on the CPU, one thread after another within each phase:
 * the same phases in the same order, so the results are the kernels' bit for bit up to the
 * host's libm. `out` and `temp` are host memory.
 */
inline void emulate_launch(const DeviceProgram& P, const LaunchPlan& L, void* out, void* temp) {
  std::vector<u64> words(static_cast<std::size_t>(P.nslots) * kThreads, 0xdeadbeefdeadbeefULL);
  std::vector<Acc> red(kThreads);
  auto* parts = static_cast<Acc*>(temp);
  for (i64 by = 0; by < L.grid_y; ++by)
    for (i64 bx = 0; bx < L.grid_x; ++bx) {
      for (int tid = 0; tid < kThreads; ++tid) {
        if (L.nd_kernel == 2)
          red[tid] = P.reducing ? run_thread<2, true>(P, L, out, words.data(), tid, bx, by)
                                : run_thread<2, false>(P, L, out, words.data(), tid, bx, by);
        else
          red[tid] = P.reducing ? run_thread<kMaxDims, true>(P, L, out, words.data(), tid, bx, by)
                                : run_thread<kMaxDims, false>(P, L, out, words.data(), tid, bx, by);
      }
      if (!P.reducing) continue;
      for (int s = L.team >> 1; s > 0; s >>= 1)
        for (int tid = 0; tid < kThreads; ++tid) tree_step(red.data(), tid, tid & (L.team - 1), s, P.kind);
      for (int tid = 0; tid < kThreads; ++tid) finish_thread(P, L, out, parts, red.data(), tid, bx, by);
    }
  if (!P.reducing || L.grid_y == 1) return;
  for (i64 slot = 0; slot < P.S; ++slot) {
    for (int tid = 0; tid < kThreads; ++tid) red[tid] = merge_thread(parts, L.grid_y, P.kind, slot, tid);
    for (int s = kThreads >> 1; s > 0; s >>= 1)
      for (int tid = 0; tid < kThreads; ++tid) tree_step(red.data(), tid, tid, s, P.kind);
    write_partial(out, slot, red[0], P.kind, P.partial_f64, P.comps);
  }
}
#endif

}  // namespace tessera::cuda::prog

#undef TESSERA_PK
#undef TESSERA_PK_UNROLL
#undef TESSERA_PK_NO_UNROLL
