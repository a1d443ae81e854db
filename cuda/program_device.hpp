#pragma once
// Internal to the CUDA back end: the fused per-chunk Program (src/array/program.hpp) encoded for
// the device evaluator of "tessera.array.blockwise" (program.cu), and how it is launched.
//
// Split in two translation units because nvcc builds this project's .cu files as C++17 while
// Tessera's headers need C++20: program_op.cpp (C++20) decodes and checks the Program, encodes it
// into the plain structs below and registers the device op; program.cu (C++17, this header only)
// holds the kernels.
//
// Encoding (see encode_program in program_op.cpp):
// - The chunk's axes are normalised first: axes of length 1 are dropped and neighbouring axes are
//   merged when every leaf (and the arg-reduction index) walks them as one axis, so most programs
//   end with one or two axes. At most kMaxDims remain; axes are stored right-aligned (the unused
//   leading ones have length 1 and coefficient 0), and a kernel built for ND axes reads the last ND.
// - The iteration space is split into slots (the product of the axes a reduction keeps; 1 when the
//   program does not reduce) and, per slot, the elements of the iterated axes (the reduced ones;
//   every axis when not reducing), numbered row-major: element r of slot s. Without a reduction
//   r is the output's linear index.
// - Every instruction becomes a DevInstr with a flat opcode (XOp) that already fixes the register
//   types, so the device never sees an invalid combination (the host's error messages are raised
//   while encoding). Instructions write "slots" of a small register file kept in shared memory
//   (kMaxSlots words per thread), assigned by liveness; constant instructions are evaluated once
//   per thread, before the element loop.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/core/stream.hpp"

namespace tessera {
class Block;
namespace detail {
struct Program;
}
}  // namespace tessera

namespace tessera::cuda::prog {

inline constexpr int kMaxDims = 8;     // axes after normalisation
inline constexpr int kMaxInstrs = 48;  // instructions of one program
inline constexpr int kMaxSlots = 16;   // live registers (shared-memory words per thread)
inline constexpr int kThreads = 256;   // threads per block of the program kernel

/** Flat device opcodes: instruction code, operation and register types in one. */
enum XOp : std::uint16_t {
  kConst,  // value bits in i0
  // Generators: linear index idx = base + sum_a o[a] * coef[a].
  kGenNormalF, kGenUniformF, kGenIntegersF, kGenArangeF,  // F64 registers
  kGenNormalI, kGenUniformI, kGenIntegersI, kGenArangeI,  // I64 registers (integers: i0, i1 = low, high)
  // Input leaves: register type F or I, block dtype.
  kInF_F64, kInF_F32, kInF_I64, kInF_I32, kInF_Bool,
  kInI_F64, kInI_F32, kInI_I64, kInI_I32, kInI_Bool,
  // Casts (and isnan / isfinite).
  kCopy, kI2F, kF2I, kF2Bool, kIsNanF, kIsFiniteF,
  // Unary on F64 registers.
  kNegF, kAbsF, kExpF, kLogF, kLog1pF, kSqrtF, kSquareF, kSinF, kCosF, kTanF, kTanhF, kFloorF, kCeilF, kSignF,
  // Unary on I64 registers.
  kNegI, kAbsI, kSquareI, kSignI, kNotI,
  // Binary on F64 registers.
  kAddF, kSubF, kMulF, kDivF, kFloorDivF, kModF, kPowF, kMinF, kMaxF,
  // Binary on I64 registers.
  kAddI, kSubI, kMulI, kFloorDivI, kModI, kPowI, kMinI, kMaxI, kAndI, kOrI,
  // Comparisons of F64 or I64 registers (result: I64 0/1).
  kLtF, kLeF, kGtF, kGeF, kEqF, kNeF,
  kLtI, kLeI, kGtI, kGeI, kEqI, kNeI,
  kWhere,  // a (I64) ? b : c
  // F64 registers holding float32 values: floor division, modulo and power computed in float.
  kFloorDivF32, kModF32, kPowF32,
  kF2I32,  // cast of an F64 register to int32 (NaN and out of range: INT32_MIN, as NumPy on x86-64)
  // Distributions of random_semantics.hpp (gamma, poisson, ...): code in gen, parameters p0, p1.
  kGenDistF, kGenDistI,
  // The narrow, unsigned and float16 dtypes: inputs (float16 into F64 registers, integers into
  // I64 registers; uint64 registers hold its bits), uint64 conversions and the operations whose
  // result differs for uint64 bits, and the exact comparison with a uint64 side (i0: the
  // comparison as Lt..Ne = 0..5; i1 bit 0: a is uint64, bit 1: b is).
  kInF_F16, kInI_I8, kInI_I16, kInI_U8, kInI_U16, kInI_U32, kInI_U64,
  kU2F, kF2U64,
  kFloorDivU, kModU, kMinU, kMaxU, kAbsU, kSignU,
  kCmpU,
  // Appended later: more unary and binary float functions, integer fmod, bitwise ops and shifts.
  kTruncF, kRintF, kArcsinF, kArccosF, kArctanF, kArcsinhF, kArccoshF, kArctanhF, kSinhF, kCoshF, kLog2F,
  kLog10F, kExp2F, kExpm1F, kCbrtF,
  kInvertI,
  kArctan2F, kHypotF, kLogAddExpF, kLogAddExp2F, kCopySignF, kFMinF, kFMaxF, kFModF,
  kFModI, kBitAndI, kBitOrI, kBitXorI, kLeftShiftI, kRightShiftI,
  // i1: the float format of the result (elem::float_kind) for spacing and nextafter.
  kI0F, kSpacingF, kFrexpMantissaF, kFrexpExponentF, kNextAfterF,
  kNumXOps
};

/** Rounding of a result to its declared dtype (as the host's round_to_dtype). */
enum Round : std::uint8_t { kRoundNone, kRoundF32, kRoundI32, kRoundBool, kRoundF16, kRoundI8, kRoundI16, kRoundU8, kRoundU16, kRoundU32 };

struct DevInstr {
  std::uint16_t xop = kConst;
  std::uint8_t round = kRoundNone;
  std::uint8_t gen = 0;  // kGenDist*: the distribution's code (random_semantics.hpp)
  // Shared-memory word offsets (slot * kThreads) of the result and the operands.
  std::uint16_t dst = 0, a = 0, b = 0, c = 0;
  std::uint32_t reserved2 = 0;
  double p0 = 0, p1 = 0;            // normal: mean, stddev; uniform: low, high; arange: start, step
  std::int64_t i0 = 0, i1 = 0;      // constant bits; integers: low, high; integer arange: start, step
  std::uint64_t key = 0;            // Philox key of a random generator
  std::int64_t base = 0;            // leaf index: base + sum_a o[a] * coef[a]
  const void* ptr = nullptr;        // input block data (device memory)
  std::int64_t coef[kMaxDims] = {};
};

/** The encoded program: passed by value as a kernel parameter (CUDA 12.1+ allows 32 KB). */
struct DeviceProgram {
  std::int32_t ninstr = 0;   // instructions in instrs
  std::int32_t nconst = 0;   // instrs[0, nconst) are constants, evaluated once per thread
  std::int32_t nslots = 0;   // register slots used
  std::int32_t root = 0;     // word offset of the root's slot
  std::int32_t nd = 0;       // normalised axes (right-aligned in the arrays below)
  std::uint8_t root_f64 = 1;     // root register type
  std::uint8_t out_dtype = 0;    // DType of the stored chunk (not reducing)
  std::uint8_t reducing = 0;
  std::uint8_t kind = 0;         // ReduceKind
  std::uint8_t partial_f64 = 1;  // partial dtype: float64 or int64
  std::uint8_t comps = 1;        // partial components per slot
  std::uint32_t iter_mask = 0;   // bit A: axis A is iterated within a slot
  std::int64_t S = 1;            // slots
  std::int64_t R = 0;            // elements per slot
  std::int64_t shape[kMaxDims] = {};
  std::int64_t rstride[kMaxDims] = {};  // iterated axes: stride in r
  std::int64_t sstride[kMaxDims] = {};  // other axes: stride in the slot index
  std::int64_t arg_base = 0;             // arg reductions: index = arg_base + sum_a o[a] * arg_coef[a]
  std::int64_t arg_coef[kMaxDims] = {};
  // Where an element raises in NumPy (an integer power with a negative exponent), the kernel
  // stores its elem::ElementError here; null when the program cannot raise (encode_program sets
  // raises, the launching op provides the word and reads it back).
  std::uint32_t* error = nullptr;
  std::uint8_t raises = 0;
  DevInstr instrs[kMaxInstrs];
};

/** How one program is launched on one device (plan_launch). */
struct LaunchPlan {
  int nd_kernel = 2;             // the kernel instance: 2 or kMaxDims axes
  int team = kThreads;           // threads per slot (a power of two)
  int team_shift = 8;            // log2(team)
  std::int64_t grid_x = 1;       // blocks across slots (kThreads / team slots each)
  std::int64_t grid_y = 1;       // blocks per slot, each over per_block consecutive elements
  std::int64_t per_block = 0;
  std::int64_t step[kMaxDims] = {};  // team, as digits over the iterated axes
  // Tiled walk (full 2-d reductions reading a transposed input): each step of a block covers
  // a kTileRows x kTileCols tile, a warp one row of it, instead of kThreads elements of one row;
  // the tiles follow each other along the rows; the domain is padded to whole tiles
  // (tiled_cols columns, tiled_r elements) and elements in the padding are skipped. Off (0)
  // unless plan_for sets it.
  int tiled = 0;
  std::int64_t tiled_cols = 0;
  std::int64_t tiled_r = 0;
  std::size_t smem_bytes = 0;
  std::size_t temp_bytes = 0;    // block partials, when grid_y > 1
  int blocks_per_sm = 0;         // occupancy of the kernel (for messages and tests)
  int sms = 0;
};

/** Block-partial record of a reduction (and its per-thread accumulator). */
struct Acc {
  double a0, a1, a2;  // sum/prod/min/max (float), mean: sum, count; var: count, mean, M2; arg: value
  std::int64_t q;     // sum/prod/min/max (int), any/all 0/1, arg: index (-1: empty)
};

/** Output of encode_program: the device program and the block it produces. */
struct EncodedProgram {
  DeviceProgram dev;
  DType out_dtype = DType::Float64;  // the chunk's dtype, or the partial dtype when reducing
  std::vector<std::int64_t> out_shape;
  std::int64_t out_elements = 0;
};

/**
 * Encodes a program for the device evaluator (host only, no CUDA call). `inputs` are the
 * argument blocks (their data pointers are stored; any memory). Throws tessera::Error for what
 * the host evaluator rejects too (bad operands, unsupported op/type pairs, wrong inputs) and
 * tessera::DeviceError for what only the device evaluator cannot run (more than kMaxInstrs
 * instructions, kMaxDims axes after normalisation or kMaxSlots live registers).
 */
EncodedProgram encode_program(const detail::Program& program, const std::vector<const Block*>& inputs);

/** Chooses team size and grid for the program on `device` (queries SM count and occupancy). */
LaunchPlan plan_launch(const DeviceProgram& program, int device);

/**
 * Queues the program on `stream`: writes the chunk or the partial block to
 * `out` (device memory of out_elements values). `temp` must hold plan.temp_bytes when that is
 * nonzero and stay allocated until the queued work finished. Throws std::runtime_error on a
 * launch failure.
 */
void launch_program(const DeviceProgram& program, const LaunchPlan& plan, void* out, void* temp, StreamView stream);

}  // namespace tessera::cuda::prog
