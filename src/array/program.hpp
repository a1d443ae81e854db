#pragma once
// Internal: the fused per-chunk program run by the op "tessera.array.blockwise".
//
// A program evaluates a tree of element-wise operations over one output chunk, tile by tile
// along the last axis, reading leaves that are generators (a pure function of the global
// element index) or strided views of input blocks. It ends by storing the chunk or by folding
// it into a partial reduction, so a whole chain like (x + 1)[::2, ::2].sum() is one task per
// chunk that never materialises x.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/block.hpp"

namespace tessera::detail {

enum class GenKind : std::uint8_t {
  Normal, Uniform, Integers, Full, Arange,
  // Distributions drawn element by element (random_semantics.hpp; p0, p1 as listed there).
  Exponential, Gamma, Beta, Poisson, Binomial, StandardT, Geometric, Permutation,
  NegativeBinomial, NoncentralChisquare, VonMises, Zipf, Logseries, Hypergeometric,
};
/** A distribution evaluated by random_semantics.hpp (rather than the vectorised kernels). */
constexpr bool is_distribution(GenKind g) { return g >= GenKind::Exponential; }

// Element-wise operation codes. Unary first, then binary, then where; Cast converts dtype.
enum class EwOp : std::uint8_t {
  Neg, Abs, Exp, Log, Log1p, Sqrt, Square, Sin, Cos, Tan, Tanh, Floor, Ceil, Sign, IsNan, IsFinite,
  LogicalNot, Cast,
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Minimum, Maximum,
  Lt, Le, Gt, Ge, Eq, Ne, LogicalAnd, LogicalOr,
  Where,
  // Appended later (the codes above keep their values): unary, then binary.
  Trunc, Rint, Arcsin, Arccos, Arctan, Arcsinh, Arccosh, Arctanh, Sinh, Cosh, Log2, Log10, Exp2, Expm1, Cbrt,
  Invert,
  Arctan2, Hypot, LogAddExp, LogAddExp2, CopySign, FMin, FMax, FMod, BitAnd, BitOr, BitXor, LeftShift, RightShift,
  // Appended later still: unary, then binary. Spacing and NextAfter step in the float format of
  // the instruction's dtype (float64, float32 or float16: elem::float_format).
  I0, Spacing, FrexpMantissa, FrexpExponent,
  NextAfter,
};
constexpr bool is_unary(EwOp op) {
  return op <= EwOp::Cast || (op >= EwOp::Trunc && op <= EwOp::Invert) || (op >= EwOp::I0 && op <= EwOp::FrexpExponent);
}
constexpr bool is_binary(EwOp op) {
  return (op >= EwOp::Add && op <= EwOp::LogicalOr) || (op >= EwOp::Arctan2 && op <= EwOp::RightShift) ||
         op == EwOp::NextAfter;
}
const char* ew_name(EwOp op);

// NanMean: the mean of the non-NaN elements (sum and count of those), one pass; host programs
// only (the device evaluator stops at ArgMax; nanmean of device arrays takes two reductions).
enum class ReduceKind : std::uint8_t { Sum, Prod, Min, Max, Mean, Var, Std, Any, All, ArgMin, ArgMax, NanMean };


/** Register types: every value is computed as double or int64 (bool as 0/1). */
enum class CType : std::uint8_t { F64, I64 };

enum class InstrCode : std::uint8_t { Generator, Input, Scalar, Op };

struct Instr {
  InstrCode code = InstrCode::Scalar;
  std::uint8_t sub = 0;     // GenKind or EwOp
  CType ctype = CType::F64; // register type of the result
  DType dtype = DType::Float64;  // declared dtype: results are rounded/wrapped to it
  std::int32_t a = -1, b = -1, c = -1;  // operand registers
  std::int32_t input = -1;  // argument index (Input)
  double p0 = 0, p1 = 0;    // generator or scalar parameters
  std::int64_t i0 = 0, i1 = 0;
  std::uint64_t key = 0;
  // Linear element index of a leaf at output-chunk coordinate o: base + sum_a o[a] * coef[a].
  std::int64_t base = 0;
  std::vector<std::int64_t> coef;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(code, sub, ctype, dtype, a, b, c, input, p0, p1, i0, i1, key, base, coef);
  }
};

/** What the program does with the evaluated root. */
struct ReduceSpec {
  bool enabled = false;
  std::uint8_t kind = 0;            // ReduceKind
  std::vector<std::uint8_t> axes;   // per output axis: 1 when reduced
  // For arg reductions: global index of chunk element o = arg_base + sum_a o[a] * arg_coef[a].
  std::int64_t arg_base = 0;
  std::vector<std::int64_t> arg_coef;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(enabled, kind, axes, arg_base, arg_coef);
  }
};

struct Program {
  std::vector<Instr> instrs;  // in evaluation order; the last one is the root
  Shape shape;                // output chunk shape
  DType out_dtype = DType::Float64;
  ReduceSpec reduce;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(instrs, shape, out_dtype, reduce);
  }
};

/** Number of components a partial of this reduction holds per output element. */
int partial_components(std::uint8_t reduce_kind);
/** dtype of partials: Float64, or Int64 for integer sums/products/min/max. */
DType partial_dtype(std::uint8_t reduce_kind, DType input_dtype);

/** Runs a program over its input blocks (host). */
Block run_program(const Program& program, const std::vector<const Block*>& inputs);

/** Fills out[j] for j < n with the generator's values at linear indices start + j*delta. */
void generate_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start,
                  std::int64_t delta, std::int64_t n, double* out);
void generate_i64(std::uint8_t gen, std::uint64_t key, std::int64_t lo, std::int64_t hi, double p0,
                  double p1, std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out);
/**
 * generate_f64 / generate_i64 of a distribution (is_distribution), one element at a time; n0 is
 * the instruction's i0, the integer parameter of those that take one (hypergeometric's sample).
 */
void sample_distribution_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t n0,
                             std::int64_t start, std::int64_t delta, std::int64_t n, double* out);
void sample_distribution_i64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t n0,
                             std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out);

}  // namespace tessera::detail
