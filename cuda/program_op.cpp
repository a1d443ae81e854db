// The device variant of "tessera.array.blockwise", host side: decodes the Program, checks it and
// encodes it for the device evaluator (program_device.hpp), allocates the result from the device
// pool and queues program.cu's kernels on the task's stream. The reference semantics are the host
// evaluator's (src/array/kernels/program_eval.cpp); every choice below mirrors it.
#include <algorithm>
#include <optional>
#include <bit>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "../src/array/array_ops.hpp"
#include "../src/array/element_semantics.hpp"
#include "check.hpp"
#include "program_device.hpp"
#include "runtime.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda::prog {

using detail::CType;
using detail::EwOp;
using detail::GenKind;
using detail::Instr;
using detail::InstrCode;
using detail::Program;
using detail::ReduceKind;

namespace {

std::uint8_t round_of(const Instr& in) {
  if (in.ctype == CType::F64 && in.dtype == DType::Float32) return kRoundF32;
  if (in.ctype == CType::I64 && in.dtype == DType::Int32) return kRoundI32;
  if (in.ctype == CType::I64 && in.dtype == DType::Bool) return kRoundBool;
  if (in.ctype == CType::F64 && in.dtype == DType::Float16) return kRoundF16;
  if (in.ctype == CType::I64) {
    switch (in.dtype) {
      case DType::Int8: return kRoundI8;
      case DType::Int16: return kRoundI16;
      case DType::UInt8: return kRoundU8;
      case DType::UInt16: return kRoundU16;
      case DType::UInt32: return kRoundU32;
      default: break;
    }
  }
  return kRoundNone;
}

// round_to_dtype on one value (for instructions folded into constants).
std::int64_t round_bits(std::uint8_t round, std::int64_t bits) {
  switch (round) {
    case kRoundF32: return std::bit_cast<std::int64_t>(static_cast<double>(static_cast<float>(std::bit_cast<double>(bits))));
    case kRoundI32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
    case kRoundBool: return bits != 0;
    case kRoundF16: return std::bit_cast<std::int64_t>(static_cast<double>(float16(std::bit_cast<double>(bits))));
    case kRoundI8: return detail::elem::wrap_int(bits, DType::Int8);
    case kRoundI16: return detail::elem::wrap_int(bits, DType::Int16);
    case kRoundU8: return detail::elem::wrap_int(bits, DType::UInt8);
    case kRoundU16: return detail::elem::wrap_int(bits, DType::UInt16);
    case kRoundU32: return detail::elem::wrap_int(bits, DType::UInt32);
    default: return bits;
  }
}

bool is_comparison(EwOp op) { return op >= EwOp::Lt && op <= EwOp::Ne; }

std::uint16_t unary_xop(EwOp op, CType t) {
  if (t == CType::F64) {
    switch (op) {
      case EwOp::Neg: return kNegF;
      case EwOp::Abs: return kAbsF;
      case EwOp::Exp: return kExpF;
      case EwOp::Log: return kLogF;
      case EwOp::Log1p: return kLog1pF;
      case EwOp::Sqrt: return kSqrtF;
      case EwOp::Square: return kSquareF;
      case EwOp::Sin: return kSinF;
      case EwOp::Cos: return kCosF;
      case EwOp::Tan: return kTanF;
      case EwOp::Tanh: return kTanhF;
      case EwOp::Floor: return kFloorF;
      case EwOp::Ceil: return kCeilF;
      case EwOp::Sign: return kSignF;
      case EwOp::Trunc: return kTruncF;
      case EwOp::Rint: return kRintF;
      case EwOp::Arcsin: return kArcsinF;
      case EwOp::Arccos: return kArccosF;
      case EwOp::Arctan: return kArctanF;
      case EwOp::Arcsinh: return kArcsinhF;
      case EwOp::Arccosh: return kArccoshF;
      case EwOp::Arctanh: return kArctanhF;
      case EwOp::Sinh: return kSinhF;
      case EwOp::Cosh: return kCoshF;
      case EwOp::Log2: return kLog2F;
      case EwOp::Log10: return kLog10F;
      case EwOp::Exp2: return kExp2F;
      case EwOp::Expm1: return kExpm1F;
      case EwOp::Cbrt: return kCbrtF;
      case EwOp::I0: return kI0F;
      case EwOp::Spacing: return kSpacingF;
      case EwOp::FrexpMantissa: return kFrexpMantissaF;
      case EwOp::FrexpExponent: return kFrexpExponentF;
      default: throw Error(std::string("unary op ") + detail::ew_name(op) + " has no float kernel");
    }
  }
  switch (op) {
    case EwOp::Neg: return kNegI;
    case EwOp::Abs: return kAbsI;
    case EwOp::Square: return kSquareI;
    case EwOp::Sign: return kSignI;
    case EwOp::LogicalNot: return kNotI;
    case EwOp::Floor: case EwOp::Ceil: case EwOp::Trunc: return kCopy;
    case EwOp::Invert: return kInvertI;
    default: throw Error(std::string("unary op ") + detail::ew_name(op) + " has no integer kernel");
  }
}

std::uint16_t binary_xop(EwOp op, CType t) {
  if (t == CType::F64) {
    switch (op) {
      case EwOp::Add: return kAddF;
      case EwOp::Sub: return kSubF;
      case EwOp::Mul: return kMulF;
      case EwOp::Div: return kDivF;
      case EwOp::FloorDiv: return kFloorDivF;
      case EwOp::Mod: return kModF;
      case EwOp::Pow: return kPowF;
      case EwOp::Minimum: return kMinF;
      case EwOp::Maximum: return kMaxF;
      case EwOp::Arctan2: return kArctan2F;
      case EwOp::Hypot: return kHypotF;
      case EwOp::LogAddExp: return kLogAddExpF;
      case EwOp::LogAddExp2: return kLogAddExp2F;
      case EwOp::CopySign: return kCopySignF;
      case EwOp::FMin: return kFMinF;
      case EwOp::FMax: return kFMaxF;
      case EwOp::FMod: return kFModF;
      case EwOp::NextAfter: return kNextAfterF;
      default: throw Error(std::string("binary op ") + detail::ew_name(op) + " has no float kernel");
    }
  }
  switch (op) {
    case EwOp::Add: return kAddI;
    case EwOp::Sub: return kSubI;
    case EwOp::Mul: return kMulI;
    case EwOp::FloorDiv: return kFloorDivI;
    case EwOp::Mod: return kModI;
    case EwOp::Pow: return kPowI;
    case EwOp::Minimum: return kMinI;
    case EwOp::Maximum: return kMaxI;
    case EwOp::LogicalAnd: return kAndI;
    case EwOp::LogicalOr: return kOrI;
    case EwOp::FMod: return kFModI;
    case EwOp::BitAnd: return kBitAndI;
    case EwOp::BitOr: return kBitOrI;
    case EwOp::BitXor: return kBitXorI;
    case EwOp::LeftShift: return kLeftShiftI;
    case EwOp::RightShift: return kRightShiftI;
    default: throw Error(std::string("binary op ") + detail::ew_name(op) + " has no integer kernel");
  }
}

std::uint16_t compare_xop(EwOp op, CType t) {
  const int k = static_cast<int>(op) - static_cast<int>(EwOp::Lt);
  return static_cast<std::uint16_t>((t == CType::F64 ? kLtF : kLtI) + k);
}

std::uint16_t input_xop(CType t, DType d) {
  int k = 0;
  switch (d) {
    case DType::Float64: k = 0; break;
    case DType::Float32: k = 1; break;
    case DType::Int64: k = 2; break;
    case DType::Int32: k = 3; break;
    case DType::Bool: k = 4; break;
    default: {
      // The dtypes added later have their own opcodes, for the register type lowering gives them.
      if (t == CType::F64 && d == DType::Float16) return kInF_F16;
      if (t == CType::I64) {
        switch (d) {
          case DType::Int8: return kInI_I8;
          case DType::Int16: return kInI_I16;
          case DType::UInt8: return kInI_U8;
          case DType::UInt16: return kInI_U16;
          case DType::UInt32: return kInI_U32;
          case DType::UInt64: return kInI_U64;
          default: break;
        }
      }
      throw DTypeError(std::string("blockwise (device): a ") + std::string(dtype_name(d)) +
                       " input has no device evaluator; compute it on the host");
    }
  }
  return static_cast<std::uint16_t>((t == CType::F64 ? kInF_F64 : kInI_F64) + k);
}

bool is_leaf(const Instr& in) {
  return in.code == InstrCode::Input ||
         (in.code == InstrCode::Generator && static_cast<GenKind>(in.sub) != GenKind::Full);
}

std::int64_t coef_at(const Instr& in, int a) {
  return a < static_cast<int>(in.coef.size()) ? in.coef[a] : 0;
}

/** One normalised axis: a run of original axes walked as one (outermost first). */
struct Group {
  std::int64_t len = 1;
  bool reduced = false;
  std::vector<int> axes;  // original axes, outermost first
};

}  // namespace

EncodedProgram encode_program(const Program& p, const std::vector<const Block*>& inputs) {
  const int n = static_cast<int>(p.instrs.size());
  if (n == 0) throw Error("empty blockwise program");
  if (is_complex(p.out_dtype) ||
      std::any_of(p.instrs.begin(), p.instrs.end(), [](const Instr& in) { return is_complex(in.dtype); }))
    throw DTypeError("blockwise (device): complex values have no device evaluator (a view of a complex "
                     "array runs as a view of its parts; complex arithmetic runs on the host)");
  for (const Instr& in : p.instrs)
    if (in.code == InstrCode::Input && (in.input < 0 || in.input >= static_cast<int>(inputs.size())))
      throw Error("blockwise program reads input " + std::to_string(in.input) + " of " +
                  std::to_string(inputs.size()));
  if (n > kMaxInstrs)
    throw DeviceError("blockwise program of " + std::to_string(n) +
                      " instructions is too long for the device evaluator (at most " + std::to_string(kMaxInstrs) +
                      "); split the expression (e.g. persist an intermediate) or compute it on the host");

  const int d = static_cast<int>(p.shape.size());
  const bool reducing = p.reduce.enabled;
  if (reducing) {
    if (p.reduce.kind > static_cast<std::uint8_t>(ReduceKind::ArgMax))
      throw Error("blockwise program: unknown reduction " + std::to_string(p.reduce.kind));
    if (static_cast<int>(p.reduce.axes.size()) != d || static_cast<int>(p.reduce.arg_coef.size()) != d)
      throw Error("blockwise program: reduction axes do not match the chunk's " + std::to_string(d) + " axes");
  }
  for (auto s : p.shape)
    if (s < 0) throw ShapeError("blockwise program: negative chunk shape " + shape_to_string(p.shape));

  // Operands must be earlier registers (the host trusts this; a device fault would be fatal).
  for (int k = 0; k < n; ++k) {
    const Instr& in = p.instrs[k];
    if (in.ctype != CType::F64 && in.ctype != CType::I64)
      throw Error("blockwise program: instruction " + std::to_string(k) + " has an unknown register type");
    if (in.code != InstrCode::Op) continue;
    const auto op = static_cast<EwOp>(in.sub);
    const int needed = op == EwOp::Where ? 3 : (is_comparison(op) || detail::is_binary(op)) ? 2 : 1;
    const int regs[3] = {in.a, in.b, in.c};
    for (int j = 0; j < needed; ++j)
      if (regs[j] < 0 || regs[j] >= k)
        throw Error("blockwise program: instruction " + std::to_string(k) + " reads register " +
                    std::to_string(regs[j]));
  }

  EncodedProgram enc;
  DeviceProgram& dev = enc.dev;
  const Instr& root = p.instrs.back();

  // ---- output block ----
  std::int64_t S = 1, R = 1;
  if (reducing) {
    const int comps = detail::partial_components(p.reduce.kind);
    const bool pf64 = root.ctype == CType::F64 ||
                      detail::partial_dtype(p.reduce.kind, DType::Int64) == DType::Float64;
    enc.out_dtype = pf64 ? DType::Float64 : DType::Int64;
    for (int a = 0; a < d; ++a) {
      enc.out_shape.push_back(p.reduce.axes[a] ? 1 : p.shape[a]);
      (p.reduce.axes[a] ? R : S) *= p.shape[a];
    }
    if (comps > 1) enc.out_shape.push_back(comps);
    enc.out_elements = S * comps;
    dev.reducing = 1;
    dev.kind = p.reduce.kind;
    dev.partial_f64 = pf64;
    dev.comps = static_cast<std::uint8_t>(comps);
  } else {
    enc.out_dtype = p.out_dtype;
    enc.out_shape = p.shape;
    for (auto s : p.shape) R *= s;
    enc.out_elements = R;
  }
  dev.S = S;
  dev.R = R;
  dev.root_f64 = root.ctype == CType::F64;
  dev.out_dtype = static_cast<std::uint8_t>(p.out_dtype);

  // ---- axes: drop length-1 axes, merge neighbours every leaf walks as one ----
  std::vector<int> leaves;
  for (int k = 0; k < n; ++k)
    if (is_leaf(p.instrs[k])) leaves.push_back(k);
  const bool arg = reducing && (p.reduce.kind == static_cast<std::uint8_t>(ReduceKind::ArgMin) ||
                                p.reduce.kind == static_cast<std::uint8_t>(ReduceKind::ArgMax));
  std::vector<Group> groups;  // built innermost first, reversed below
  for (int a = d - 1; a >= 0; --a) {
    if (p.shape[a] == 1) continue;
    const bool red = reducing && p.reduce.axes[a];
    bool merge = !groups.empty() && groups.back().reduced == red;
    if (merge) {
      const Group& g = groups.back();
      const int inner = g.axes.back();  // innermost axis of the group: its coefficient is the group's
      auto walks_as_one = [&](std::int64_t outer_coef, std::int64_t inner_coef) {
        std::int64_t want = 0;
        return !__builtin_mul_overflow(inner_coef, g.len, &want) && want == outer_coef;
      };
      for (int k : leaves)
        if (!walks_as_one(coef_at(p.instrs[k], a), coef_at(p.instrs[k], inner))) merge = false;
      if (arg && !walks_as_one(p.reduce.arg_coef[a], p.reduce.arg_coef[inner])) merge = false;
      std::int64_t len = 0;
      if (__builtin_mul_overflow(g.len, p.shape[a], &len)) merge = false;
    }
    if (merge) {
      groups.back().len *= p.shape[a];
      groups.back().axes.insert(groups.back().axes.begin(), a);
    } else {
      groups.push_back(Group{p.shape[a], red, {a}});
    }
  }
  std::reverse(groups.begin(), groups.end());
  const int nd = static_cast<int>(groups.size());
  if (nd > kMaxDims)
    throw DeviceError("blockwise program over a chunk of shape " + shape_to_string(p.shape) + " walks " +
                      std::to_string(nd) + " independent axes; the device evaluator handles at most " +
                      std::to_string(kMaxDims));
  dev.nd = nd;
  const int off = kMaxDims - nd;
  for (int A = 0; A < kMaxDims; ++A) {
    dev.shape[A] = 1;
    dev.rstride[A] = 1;
    dev.sstride[A] = 1;
  }
  {
    std::int64_t rs = 1, ss = 1;
    for (int g = nd - 1; g >= 0; --g) {
      const int A = off + g;
      dev.shape[A] = groups[g].len;
      const bool iterated = !reducing || groups[g].reduced;
      if (iterated) {
        dev.iter_mask |= 1u << A;
        dev.rstride[A] = rs;
        rs *= std::max<std::int64_t>(groups[g].len, 1);
      } else {
        dev.sstride[A] = ss;
        ss *= std::max<std::int64_t>(groups[g].len, 1);
      }
    }
  }
  auto inner_axis = [&](int g) { return groups[g].axes.back(); };
  if (reducing) {
    dev.arg_base = p.reduce.arg_base;
    for (int g = 0; g < nd; ++g) dev.arg_coef[off + g] = p.reduce.arg_coef[inner_axis(g)];
  }

  // ---- instructions ----
  std::vector<DevInstr> code(n);
  std::vector<bool> constant(n, false);
  for (int k = 0; k < n; ++k) {
    const Instr& in = p.instrs[k];
    DevInstr& x = code[k];
    switch (in.code) {
      case InstrCode::Scalar:
        x.xop = kConst;
        x.i0 = in.ctype == CType::F64 ? std::bit_cast<std::int64_t>(in.p0) : in.i0;
        constant[k] = true;
        break;
      case InstrCode::Generator: {
        const auto gen = static_cast<GenKind>(in.sub);
        x.p0 = in.p0;
        x.p1 = in.p1;
        x.key = in.key;
        x.round = round_of(in);
        if (gen == GenKind::Full) {  // the host fills it once, unrounded
          x.xop = kConst;
          x.round = kRoundNone;
          x.i0 = in.ctype == CType::F64 ? std::bit_cast<std::int64_t>(in.p0) : detail::elem::float_to_int(in.p0, in.dtype);
          constant[k] = true;
          break;
        }
        const bool f = in.ctype == CType::F64;
        switch (gen) {
          case GenKind::Normal: x.xop = f ? kGenNormalF : kGenNormalI; break;
          case GenKind::Uniform: x.xop = f ? kGenUniformF : kGenUniformI; break;
          case GenKind::Integers:
            x.xop = f ? kGenIntegersF : kGenIntegersI;
            // generate_f64 takes the bounds from p0/p1, generate_i64 from i0/i1.
            x.i0 = f ? static_cast<std::int64_t>(in.p0) : in.i0;
            x.i1 = f ? static_cast<std::int64_t>(in.p1) : in.i1;
            break;
          case GenKind::Arange:
            x.xop = f ? kGenArangeF : kGenArangeI;
            x.i0 = static_cast<std::int64_t>(in.p0);  // integer aranges stay exact
            x.i1 = static_cast<std::int64_t>(in.p1);
            break;
          default:
            if (!detail::is_distribution(gen))
              throw Error("blockwise program: unknown generator " + std::to_string(in.sub));
            x.xop = f ? kGenDistF : kGenDistI;
            x.gen = in.sub;
            x.i0 = in.i0;  // the integer parameter (hypergeometric's sample)
            break;
        }
        break;
      }
      case InstrCode::Input: {
        const Block& blk = *inputs[in.input];
        x.xop = input_xop(in.ctype, blk.dtype());
        x.ptr = blk.raw();  // the host does not round what it reads
        break;
      }
      case InstrCode::Op: {
        const auto op = static_cast<EwOp>(in.sub);
        const CType at = p.instrs[in.a].ctype;
        x.round = round_of(in);
        if (op == EwOp::Cast || op == EwOp::IsNan || op == EwOp::IsFinite) {
          if (op != EwOp::Cast && at == CType::I64) {
            // isnan/isfinite of an integer: a constant 0 or 1 (rounded like any result).
            x.xop = kConst;
            x.i0 = round_bits(x.round, op == EwOp::IsFinite ? 1 : 0);
            x.round = kRoundNone;
            constant[k] = true;
          } else if (at == in.ctype) {
            x.xop = kCopy;
          } else if (at == CType::I64) {
            x.xop = p.instrs[in.a].dtype == DType::UInt64 ? kU2F : kI2F;
          } else if (op == EwOp::IsNan) {
            x.xop = kIsNanF;
          } else if (op == EwOp::IsFinite) {
            x.xop = kIsFiniteF;
          } else {
            // Narrow integers go through int32 (int8, int16, uint8, uint16) or int64 (uint32),
            // then wrap by x.round, as the host's float_to_int.
            switch (in.dtype) {
              case DType::Bool: x.xop = kF2Bool; break;
              case DType::Int32: case DType::Int8: case DType::Int16: case DType::UInt8: case DType::UInt16:
                x.xop = kF2I32;
                break;
              case DType::UInt64: x.xop = kF2U64; break;
              default: x.xop = kF2I; break;
            }
          }
        } else if (detail::is_unary(op)) {
          x.xop = unary_xop(op, in.ctype);
          if (op == EwOp::Spacing) x.i1 = detail::elem::float_kind(in.dtype);
          if (in.ctype == CType::I64 && is_unsigned(in.dtype) && op == EwOp::Abs) x.xop = kAbsU;
          if (in.ctype == CType::I64 && is_unsigned(in.dtype) && op == EwOp::Sign) x.xop = kSignU;
        } else if (is_comparison(op)) {
          x.xop = compare_xop(op, at);
          const bool au = p.instrs[in.a].dtype == DType::UInt64, bu = p.instrs[in.b].dtype == DType::UInt64;
          if (at == CType::I64 && (au || bu)) {
            x.xop = kCmpU;
            x.i0 = static_cast<int>(op) - static_cast<int>(EwOp::Lt);
            x.i1 = (au ? 1 : 0) | (bu ? 2 : 0);
          }
        } else if (detail::is_binary(op)) {
          x.xop = binary_xop(op, in.ctype);
          if (op == EwOp::NextAfter) x.i1 = detail::elem::float_kind(in.dtype);
          // A constant negative exponent was refused when the expression was built; only an
          // exponent read from data can make the kernel raise.
          if (x.xop == kPowI && !constant[in.b]) dev.raises = 1;
          if (in.ctype == CType::I64 && in.dtype == DType::UInt64) {  // the bits compare and divide unsigned
            if (op == EwOp::FloorDiv) x.xop = kFloorDivU;
            if (op == EwOp::Mod) x.xop = kModU;
            if (op == EwOp::Minimum) x.xop = kMinU;
            if (op == EwOp::Maximum) x.xop = kMaxU;
          }
          if (in.ctype == CType::F64 && (in.dtype == DType::Float32 || in.dtype == DType::Float16)) {  // as the host: in float
            if (op == EwOp::FloorDiv) x.xop = kFloorDivF32;
            if (op == EwOp::Mod) x.xop = kModF32;
            if (op == EwOp::Pow) x.xop = kPowF32;
          }
        } else if (op == EwOp::Where) {
          x.xop = kWhere;
        } else {
          throw Error("blockwise program: unknown operation " + std::to_string(in.sub));
        }
        break;
      }
      default: throw Error("blockwise program: unknown instruction code " + std::to_string(static_cast<int>(in.code)));
    }
    if (is_leaf(in)) {
      x.base = in.base;
      for (int g = 0; g < nd; ++g) x.coef[off + g] = coef_at(in, inner_axis(g));
    }
  }

  // Inputs are read at base + sum_a o[a] * coef[a]: every index the chunk touches must lie
  // inside the block (a stray device read would end the CUDA context, not just this task).
  const bool evaluates = S > 0 && R > 0;
  if (evaluates)
    for (int k : leaves) {
      const Instr& in = p.instrs[k];
      if (in.code != InstrCode::Input) continue;
      __int128 lo = in.base, hi = in.base;
      for (int a = 0; a < d; ++a) {
        const __int128 span = static_cast<__int128>(coef_at(in, a)) * (p.shape[a] - 1);
        (span < 0 ? lo : hi) += span;
      }
      const std::int64_t size = inputs[in.input]->size();
      if (lo < 0 || hi >= size)
        throw Error("blockwise program reads input " + std::to_string(in.input) + " (shape " +
                    shape_to_string(inputs[in.input]->shape()) + ") outside its bounds");
    }

  // ---- register slots, by liveness; constants once per thread when the slots allow ----
  std::vector<int> last_use(n, -1);
  for (int k = 0; k < n; ++k) {
    if (constant[k] || p.instrs[k].code != InstrCode::Op) continue;
    const auto op = static_cast<EwOp>(p.instrs[k].sub);
    const int needed = op == EwOp::Where ? 3 : (is_comparison(op) || detail::is_binary(op)) ? 2 : 1;
    const int regs[3] = {p.instrs[k].a, p.instrs[k].b, p.instrs[k].c};
    for (int j = 0; j < needed; ++j) last_use[regs[j]] = std::max(last_use[regs[j]], k);
  }
  last_use[n - 1] = n;  // the root is read after the last instruction
  std::vector<int> slot(n, -1);
  int used = 0;
  auto allocate = [&](bool hoist) {
    std::vector<int> busy_until(kMaxSlots * 4, -1);  // slot -> last use of its value (-1: free)
    int top = 0;
    auto take = [&](int k) {
      int s = 0;
      while (busy_until[s] >= 0) ++s;
      busy_until[s] = last_use[k] > k ? last_use[k] : -1;  // a dead value frees its slot at once
      if (last_use[k] == n) busy_until[s] = n;
      top = std::max(top, s + 1);
      return s;
    };
    if (hoist)
      for (int k = 0; k < n; ++k)
        if (constant[k]) {
          slot[k] = take(k);
          busy_until[slot[k]] = n + 1;  // reserved for the whole run
        }
    for (int k = 0; k < n && top <= kMaxSlots; ++k) {
      if (hoist && constant[k]) continue;
      // Operands whose last use is this instruction free their slots first, so the result may
      // reuse one (operands are read before the result is written).
      for (int s = 0; s < static_cast<int>(busy_until.size()); ++s)
        if (busy_until[s] == k) busy_until[s] = -1;
      slot[k] = take(k);
    }
    return top;
  };
  bool hoisted = true;
  used = allocate(true);
  if (used > kMaxSlots) {
    hoisted = false;
    used = allocate(false);
  }
  if (used > kMaxSlots)
    throw DeviceError("blockwise program needs " + std::to_string(used) +
                      " live registers; the device evaluator holds at most " + std::to_string(kMaxSlots) +
                      " (split the expression or compute it on the host)");

  // Constants first (evaluated once per thread), then the per-element instructions in order.
  int w = 0;
  auto emit = [&](int k) {
    DevInstr x = code[k];
    const Instr& in = p.instrs[k];
    x.dst = static_cast<std::uint16_t>(slot[k] * kThreads);
    if (in.code == InstrCode::Op) {
      x.a = static_cast<std::uint16_t>(slot[in.a] * kThreads);
      if (in.b >= 0 && in.b < n && slot[in.b] >= 0) x.b = static_cast<std::uint16_t>(slot[in.b] * kThreads);
      if (in.c >= 0 && in.c < n && slot[in.c] >= 0) x.c = static_cast<std::uint16_t>(slot[in.c] * kThreads);
    }
    dev.instrs[w++] = x;
  };
  if (hoisted)
    for (int k = 0; k < n; ++k)
      if (constant[k]) emit(k);
  dev.nconst = w;
  for (int k = 0; k < n; ++k)
    if (!hoisted || !constant[k]) emit(k);
  dev.ninstr = w;
  dev.nslots = used;
  dev.root = slot[n - 1] * kThreads;
  return enc;
}

namespace {

Value blockwise_device(const OpContext& ctx, std::span<const Value> args) {
  // run_op has placed every block argument on ctx.device and will wait for ctx.stream.
  if (args.empty()) throw Error("blockwise: missing program");
  auto program = from_value<Program>(args[0]);
  std::vector<const Block*> inputs;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!args[i].is_block()) throw Error("blockwise: argument " + std::to_string(i) + " is not a block");
    inputs.push_back(&args[i].block());
  }
  // A view of a complex array (the only complex program lowering makes: one input leaf) is the
  // same view of its real and imaginary parts: one more innermost axis of two floats, stride 1,
  // every other coefficient doubled. The chunk's bytes are then exactly the complex result's.
  const DType want_dtype = program.out_dtype;
  const Shape want_shape = program.shape;
  std::optional<Block> parts;
  if (is_complex(want_dtype) && program.instrs.size() == 1 && program.instrs[0].code == InstrCode::Input &&
      !program.reduce.enabled && program.instrs[0].dtype == want_dtype) {
    Instr& in = program.instrs[0];
    if (in.input < 0 || in.input >= static_cast<int>(inputs.size())) throw Error("blockwise program reads a missing input");
    const Block& src = *inputs[in.input];
    if (src.dtype() != want_dtype) throw DTypeError("blockwise (device): a complex view of a " + std::string(dtype_name(src.dtype())) + " block");
    const DType part = real_dtype(want_dtype);
    in.dtype = part;
    in.ctype = CType::F64;
    in.base *= 2;
    in.coef.resize(program.shape.size(), 0);
    for (auto& c : in.coef) c *= 2;
    in.coef.push_back(1);
    program.shape.push_back(2);
    program.out_dtype = part;
    if (src.size() > 0) {
      parts.emplace(part, Shape{src.size() * 2}, src.buffer());
      inputs[in.input] = &*parts;
    }
  }
  auto result = [&](Block b) {
    if (!is_complex(want_dtype)) return Value(std::move(b));
    if (!b.buffer()) return Value(device_block(want_dtype, want_shape, ctx.device, ctx.stream));
    return Value(Block(want_dtype, want_shape, b.buffer()));
  };
  const auto enc = std::make_unique<EncodedProgram>(encode_program(program, inputs));
  Block out = device_block(enc->out_dtype, enc->out_shape, ctx.device, ctx.stream);
  if (enc->out_elements == 0) return result(std::move(out));
  const LaunchPlan plan = plan_launch(enc->dev, ctx.device);
  const cudaStream_t stream = as_cuda(ctx.stream);
  // The block partials are freed on the stream, after the kernels that use them.
  const std::shared_ptr<Buffer> temp = plan.temp_bytes ? allocate_scratch(plan.temp_bytes, ctx.device, stream) : nullptr;
  // NumPy raises for some elements (negative integer powers): the kernels flag them in a word
  // that is read back here (a scratch word, a memset and a copy back), so only programs that can
  // raise get one.
  std::shared_ptr<Buffer> flag;
  if (enc->dev.raises) {
    flag = allocate_scratch(sizeof(std::uint32_t), ctx.device, stream);
    enc->dev.error = static_cast<std::uint32_t*>(flag->data());
    check(cudaMemsetAsync(enc->dev.error, 0, sizeof(std::uint32_t), stream), "cudaMemsetAsync", ctx.device);
  }
  launch_program(enc->dev, plan, out.raw(), temp ? temp->data() : nullptr, ctx.stream);
  if (flag) {
    std::uint32_t error = detail::elem::kNoElementError;
    check(cudaMemcpyAsync(&error, enc->dev.error, sizeof error, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync",
          ctx.device);
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", ctx.device);
    if (error == detail::elem::kNegativePowerError) throw Error(std::string("power: ") + detail::elem::kNegativePowerMessage);
  }
  return result(std::move(out));
}

const bool registered = [] {
  register_device_op(detail::kBlockwiseOp, blockwise_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda::prog
