// The device variant of "tessera.array.blockwise" (cuda/program.cu, cuda/program_op.cpp) against
// the host evaluator (src/array/kernels/program_eval.cpp). Arrays are built with the public API
// and lowered; every blockwise task of the graph then runs on the host and on GPU 0 with the same
// arguments and the two blocks must agree: same dtype, same shape, equal values (within a stated
// tolerance for transcendental functions, random normals and floating-point reductions, whose
// order differs). Reduction tasks also run twice on the GPU and must be bit-identical. The rest of
// the graph (combines, assembles) then runs on the host over the device partials, so the final
// results are compared too.
//
// Each BlockwiseDevice test also exists as BlockwiseEmulated, which needs no GPU: there the
// "device" run is the host emulation of the kernels (cuda/program_kernel.cuh, the same source as
// the kernels' body, run block by block and thread by thread on a small pretend GPU), so the
// encoding, indexing, reduction order and partial layouts are checked on any machine; the
// BlockwiseDevice versions add CUDA itself. The BlockwiseEncode tests check the encoding (limits,
// axis normalisation, register slots, errors) directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#define TESSERA_CUDA_HOST_EMULATION 1
#include "../../cuda/program_device.hpp"
#include "../../cuda/program_kernel.cuh"
#include "../array/element_semantics_cases.hpp"
#include "array/array_ops.hpp"
#include "gpu_test_util.hpp"
#include "array/program.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/serialize.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;
using detail::CType;
using detail::EwOp;
using detail::GenKind;
using detail::Instr;
using detail::InstrCode;
using detail::Program;
using detail::ReduceKind;
namespace prog = tessera::cuda::prog;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/** |device - host| <= abs + rel * |host|; both zero: exact (NaN equals NaN). */
struct Tol {
  double rel = 0;
  double abs = 0;
};
const Tol kExact{};
const Tol kUlps{1e-13, 1e-300};      // transcendental functions: an ulp or two
const Tol kNormal{1e-12, 1e-13};     // random normals (log/cos of CUDA vs glibc)
const Tol kSums{1e-11, 1e-9};        // floating sums in a different order
const Tol kFn{1e-12, 1e-13};         // functions of generated values (an ulp apart in their input)
// float32 results: the double values may differ by an ulp, which can (rarely) move the float
// rounding by one float ulp.
const Tol kFloat32{1e-6, 1e-30};

template <typename T>
bool close(T h, T d, const Tol& tol) {
  if constexpr (std::is_same_v<T, float16>) {  // storage only: compare the values
    return close<double>(static_cast<double>(h), static_cast<double>(d), tol);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(h) || std::isnan(d)) return std::isnan(h) && std::isnan(d);
    if (tol.rel == 0 && tol.abs == 0) return h == d;
    if (std::isinf(h) || std::isinf(d)) return h == d;
    return std::fabs(static_cast<double>(d) - static_cast<double>(h)) <= tol.abs + tol.rel * std::fabs(static_cast<double>(h));
  } else {
    return h == d;
  }
}

::testing::AssertionResult same_block(const Block& host, const Block& device_block, const Tol& tol) {
  const Block dev = to_host(device_block);
  if (dev.dtype() != host.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(dev.dtype()) << " vs host " << dtype_name(host.dtype());
  if (dev.shape() != host.shape())
    return ::testing::AssertionFailure() << "shape " << shape_to_string(dev.shape()) << " vs host "
                                         << shape_to_string(host.shape());
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  int bad = 0;
  dispatch_dtype(host.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* h = static_cast<const T*>(host.raw());
    const T* d = static_cast<const T*>(dev.raw());
    for (std::int64_t i = 0; i < host.size(); ++i) {
      if (close<T>(h[i], d[i], tol)) continue;
      if (bad++ == 0) result = ::testing::AssertionFailure();
      if (bad <= 5)
        result << "element " << i << ": device " << static_cast<double>(d[i]) << " host " << static_cast<double>(h[i])
               << "; ";
    }
  });
  if (bad) result << bad << " of " << host.size() << " elements differ";
  return result;
}

bool bit_identical(const Block& a, const Block& b) {
  const Block x = to_host(a), y = to_host(b);
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw(), y.raw(), x.nbytes()) == 0;
}

Program program_of(const Task& t) { return from_value<Program>(std::get<Value>(t.args[0])); }

/** Where the "device" runs of a test go: GPU 0 through run_op, or the host emulation. */
enum class Mode { Gpu, Emulated };
Mode g_mode = Mode::Gpu;

/** The pretend GPU of the emulation: SMs and resident blocks per SM (the plan's wave). */
int g_emulated_sms = 7, g_emulated_blocks_per_sm = 2;

/** The blockwise op through the emulated kernels, planned for the pretend GPU. */
Value emulate_blockwise(const std::vector<Value>& args) {
  const auto program = from_value<Program>(args.at(0));
  std::vector<const Block*> inputs;
  for (std::size_t i = 1; i < args.size(); ++i) inputs.push_back(&args[i].block());
  const auto enc = std::make_unique<prog::EncodedProgram>(prog::encode_program(program, inputs));
  Block out(enc->out_dtype, enc->out_shape);
  if (enc->out_elements == 0) return Value(std::move(out));
  const prog::LaunchPlan plan = prog::plan_for(enc->dev, g_emulated_sms, g_emulated_blocks_per_sm);
  std::vector<prog::Acc> temp(plan.temp_bytes / sizeof(prog::Acc) + 1);
  std::uint32_t error = 0;  // as blockwise_device: a flag word when the program can raise
  if (enc->dev.raises) enc->dev.error = &error;
  prog::emulate_launch(enc->dev, plan, out.raw(), temp.data());
  if (error == detail::elem::kNegativePowerError) throw Error(std::string("power: ") + detail::elem::kNegativePowerMessage);
  return Value(std::move(out));
}

Value run_on_device(const Task& t, const std::vector<Value>& args) {
  if (g_mode == Mode::Emulated) return emulate_blockwise(args);
  Value v = run_op(t.op, OpContext{&t.key, Target::Device, 0}, args);
  EXPECT_EQ(v.block().memory_kind(), MemoryKind::Device) << t.key;
  return v;
}

struct Outcome {
  std::vector<Block> host;    // the graph's outputs, all on the host
  std::vector<Block> device;  // the same with every blockwise task run on the GPU
  int blockwise_tasks = 0;
};

/**
 * Runs the array's graph twice: on the host, and with each blockwise task on GPU 0 (the other
 * tasks on the host, over the device results). Each blockwise task is also run on the GPU with
 * the host run's arguments and compared with the host block within `tol`.
 */
Outcome run_both(const Array& a, const Tol& tol) {
  std::vector<Key> keys;
  const Graph g = a.to_graph(&keys);
  std::unordered_map<Key, Value> host, dev;
  Outcome out;
  std::function<void(const Key&)> visit = [&](const Key& k) {
    if (host.count(k)) return;
    const Task& t = g.at(k);
    for (const Key& dep : t.dependencies()) visit(dep);
    std::vector<Value> hargs, dargs;
    for (const Arg& arg : t.args) {
      if (const auto* r = std::get_if<KeyRef>(&arg)) {
        hargs.push_back(host.at(r->key));
        dargs.push_back(dev.at(r->key));
      } else {
        hargs.push_back(std::get<Value>(arg));
        dargs.push_back(std::get<Value>(arg));
      }
    }
    const OpContext on_host{&t.key, Target::Host};
    Value hv = run_op(t.op, on_host, hargs);
    if (t.op == detail::kBlockwiseOp) {
      ++out.blockwise_tasks;
      const Value same_args = run_on_device(t, hargs);
      EXPECT_TRUE(same_block(hv.block(), same_args.block(), tol)) << "task " << t.key;
      if (g_mode == Mode::Gpu && program_of(t).reduce.enabled) {
        const Value again = run_on_device(t, hargs);
        EXPECT_TRUE(bit_identical(same_args.block(), again.block())) << "task " << t.key << " is not deterministic";
      }
      dev[k] = Value(to_host(run_on_device(t, dargs).block()));
    } else {
      dev[k] = run_op(t.op, on_host, dargs);
    }
    host[k] = std::move(hv);
  };
  for (const Key& k : keys) visit(k);
  for (const Key& k : keys) {
    out.host.push_back(to_host(host.at(k).block()));
    out.device.push_back(to_host(dev.at(k).block()));
  }
  return out;
}

/** run_both, then the outputs compared with `final_tol`; returns the number of blockwise tasks. */
int check(const Array& a, const Tol& tol, const Tol& final_tol) {
  const Outcome o = run_both(a, tol);
  for (std::size_t i = 0; i < o.host.size(); ++i)
    EXPECT_TRUE(same_block(o.host[i], o.device[i], final_tol)) << "output chunk " << i;
  EXPECT_GT(o.blockwise_tasks, 0);
  return o.blockwise_tasks;
}
int check(const Array& a, const Tol& tol = kExact) { return check(a, tol, tol); }

ReduceOptions axes(std::vector<int> ax, bool keepdims = false, int ddof = 0) {
  ReduceOptions o;
  o.axes = std::move(ax);
  o.keepdims = keepdims;
  o.ddof = ddof;
  return o;
}

// ---- encoding (no GPU needed) -------------------------------------------------------------------

Instr op_instr(EwOp op, int a, int b = -1, CType t = CType::F64) {
  Instr in;
  in.code = InstrCode::Op;
  in.sub = static_cast<std::uint8_t>(op);
  in.ctype = t;
  in.dtype = t == CType::F64 ? DType::Float64 : DType::Int64;
  in.a = a;
  in.b = b;
  return in;
}
Instr normal_instr(std::vector<std::int64_t> coef, std::int64_t base = 0) {
  Instr in;
  in.code = InstrCode::Generator;
  in.sub = static_cast<std::uint8_t>(GenKind::Normal);
  in.p0 = 0;
  in.p1 = 1;
  in.key = 42;
  in.base = base;
  in.coef = std::move(coef);
  return in;
}

TEST(BlockwiseEncode, RejectsProgramsLongerThanTheLimitWithDeviceError) {
  Program p;
  p.shape = {10};
  p.instrs.push_back(normal_instr({1}));
  for (int k = 1; k < prog::kMaxInstrs; ++k) p.instrs.push_back(op_instr(EwOp::Neg, k - 1));
  EXPECT_NO_THROW(prog::encode_program(p, {}));  // exactly kMaxInstrs
  p.instrs.push_back(op_instr(EwOp::Neg, prog::kMaxInstrs - 1));
  try {
    prog::encode_program(p, {});
    FAIL() << "a program of " << p.instrs.size() << " instructions was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("too long"), std::string::npos) << e.what();
  }
}

TEST(BlockwiseEncode, LongArrayExpressionLowersToAProgramTheDeviceRejects) {
  auto x = random::normal(1, 0.0, 1.0, {100}, {100});
  Array y = x;
  for (int i = 0; i < 30; ++i) y = y * 1.5 + 1.0;  // two instructions (scalar, op) per operation
  std::vector<Key> keys;
  const Graph g = y.to_graph(&keys);
  const Program p = program_of(g.at(keys[0]));
  ASSERT_GT(static_cast<int>(p.instrs.size()), prog::kMaxInstrs);
  EXPECT_THROW(prog::encode_program(p, {}), DeviceError);
}

TEST(BlockwiseEncode, MergesAxesWalkedAsOneAndDropsLengthOneAxes) {
  // A contiguous 9-d chunk (row-major coefficients) is one axis.
  Program p;
  p.shape = Shape(9, 2);
  std::vector<std::int64_t> coef(9);
  for (int a = 0; a < 9; ++a) coef[a] = std::int64_t{1} << (8 - a);
  p.instrs.push_back(normal_instr(coef));
  auto enc = prog::encode_program(p, {});
  EXPECT_EQ(enc.dev.nd, 1);
  EXPECT_EQ(enc.dev.R, 512);
  EXPECT_EQ(enc.dev.S, 1);
  EXPECT_EQ(enc.dev.shape[prog::kMaxDims - 1], 512);
  EXPECT_EQ(enc.dev.instrs[0].coef[prog::kMaxDims - 1], 1);
  EXPECT_EQ(enc.out_elements, 512);
  EXPECT_EQ(enc.out_shape, p.shape);

  // Nine axes no leaf walks as one: more than kMaxDims.
  for (int a = 0; a < 9; ++a) coef[a] = 1;
  for (int a = 7; a >= 0; --a) coef[a] = coef[a + 1] * 3;
  p.instrs[0].coef = coef;
  EXPECT_THROW(prog::encode_program(p, {}), DeviceError);

  // Length-1 axes vanish: (1, 9 non-mergeable axes of 2 but one of them 1) -> 8 axes.
  p.shape[4] = 1;
  enc = prog::encode_program(p, {});
  EXPECT_EQ(enc.dev.nd, 8);
}

TEST(BlockwiseEncode, SeedProgramIsTwoAxesTwoSlotsOneHoistedConstant) {
  const std::int64_t n = 2000, c = 500;
  auto x = random::normal(7, 10.0, 1.0, {n, n}, {c, c});
  auto y = (x + 1.0)[{step(2), step(2)}].sum();
  std::vector<Key> keys;
  const Graph g = y.to_graph(&keys);
  int programs = 0;
  for (const auto& [k, t] : g.tasks()) {
    if (t.op != detail::kBlockwiseOp) continue;
    ++programs;
    const Program p = program_of(t);
    ASSERT_TRUE(p.reduce.enabled);
    const auto enc = prog::encode_program(p, {});
    EXPECT_EQ(enc.dev.nd, 2);  // the strided rows do not merge
    EXPECT_EQ(enc.dev.S, 1);
    EXPECT_EQ(enc.dev.R, (c / 2) * (c / 2));
    EXPECT_EQ(enc.dev.nconst, 1);  // the 1.0
    EXPECT_LE(enc.dev.nslots, 2);
    EXPECT_EQ(enc.dev.reducing, 1);
    EXPECT_EQ(enc.dev.partial_f64, 1);
    EXPECT_EQ(enc.out_dtype, DType::Float64);
    EXPECT_EQ(enc.out_shape, (Shape{1, 1}));
    EXPECT_EQ(enc.dev.instrs[enc.dev.nconst].xop, prog::kGenNormalF);
    EXPECT_EQ(enc.dev.instrs[enc.dev.nconst].coef[prog::kMaxDims - 2], 2 * n);
    EXPECT_EQ(enc.dev.instrs[enc.dev.nconst].coef[prog::kMaxDims - 1], 2);
  }
  EXPECT_EQ(programs, (n / c) * (n / c));
}

TEST(BlockwiseEncode, ReductionSplitsSlotsFromReducedAxes) {
  // Sum over axis 1 of a (4, 1, 6) chunk read contiguously: slots along axis 0, 6 elements each.
  Program p;
  p.shape = {4, 1, 6};
  p.instrs.push_back(normal_instr({6, 6, 1}));
  p.reduce.enabled = true;
  p.reduce.kind = static_cast<std::uint8_t>(ReduceKind::Var);
  p.reduce.axes = {0, 1, 1};
  p.reduce.arg_coef = {0, 0, 0};
  const auto enc = prog::encode_program(p, {});
  EXPECT_EQ(enc.dev.nd, 2);
  EXPECT_EQ(enc.dev.S, 4);
  EXPECT_EQ(enc.dev.R, 6);
  EXPECT_EQ(enc.dev.comps, 3);
  EXPECT_EQ(enc.out_shape, (Shape{4, 1, 1, 3}));
  EXPECT_EQ(enc.out_elements, 12);
  EXPECT_EQ(enc.dev.iter_mask, 1u << (prog::kMaxDims - 1));
}

TEST(BlockwiseEncode, TransposedInputFullReductionWalksWholeTiles) {
  // A 40 x 70 chunk reduced to one value, read through x.T (coefficients 1 and 40).
  prog::DeviceProgram p;
  p.nd = 2;
  p.reducing = 1;
  p.S = 1;
  p.R = 40 * 70;
  p.iter_mask = 3u << (prog::kMaxDims - 2);
  p.shape[prog::kMaxDims - 2] = 40;
  p.shape[prog::kMaxDims - 1] = 70;
  p.ninstr = 1;
  p.instrs[0].ptr = &p;  // any input block
  p.instrs[0].coef[prog::kMaxDims - 2] = 1;
  p.instrs[0].coef[prog::kMaxDims - 1] = 40;
  const prog::LaunchPlan L = prog::plan_for(p, 132, 8);
  ASSERT_EQ(L.tiled, 1);
  EXPECT_EQ(L.tiled_cols, 96);
  EXPECT_EQ(L.tiled_r, 40 * 96);
  EXPECT_EQ(L.per_block % prog::kThreads, 0);
  // Every element of the chunk once, padding aside: the walk of each thread of each block.
  std::vector<int> seen(40 * 70, 0);
  for (std::int64_t by = 0; by < L.grid_y; ++by)
    for (int lane = 0; lane < prog::kThreads; ++lane) {
      const std::int64_t r0 = by * L.per_block, r1 = std::min(L.tiled_r, r0 + L.per_block);
      std::int64_t r = r0 + lane;
      if (r >= r1) continue;
      std::int64_t o[2];
      prog::tile_coords<2>(o, L, r);
      for (; r < r1; r += prog::kThreads) {
        if (prog::in_domain<2>(o, p)) ++seen[static_cast<std::size_t>(o[0] * 70 + o[1])];
        prog::tile_advance<2>(o, L);
      }
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 40 * 70);
  // Row-major inputs keep the row walk; so do reductions along one axis.
  p.instrs[0].coef[prog::kMaxDims - 2] = 70;
  p.instrs[0].coef[prog::kMaxDims - 1] = 1;
  EXPECT_EQ(prog::plan_for(p, 132, 8).tiled, 0);
}

TEST(BlockwiseEncode, ManyLiveValuesNeedTooManySlots) {
  // a0 + (a1 + (a2 + ...)): every generator stays live until the additions unwind.
  Program p;
  p.shape = {8};
  const int leaves = prog::kMaxSlots + 2;
  for (int k = 0; k < leaves; ++k) p.instrs.push_back(normal_instr({1}, k));
  int acc = leaves - 1;
  for (int k = leaves - 2; k >= 0; --k) {
    p.instrs.push_back(op_instr(EwOp::Add, k, acc));
    acc = static_cast<int>(p.instrs.size()) - 1;
  }
  ASSERT_LE(static_cast<int>(p.instrs.size()), prog::kMaxInstrs);
  EXPECT_THROW(prog::encode_program(p, {}), DeviceError);

  // The same additions as a left fold need two slots.
  Program q;
  q.shape = {8};
  q.instrs.push_back(normal_instr({1}, 0));
  acc = 0;
  for (int k = 1; k < leaves; ++k) {
    q.instrs.push_back(normal_instr({1}, k));
    q.instrs.push_back(op_instr(EwOp::Add, acc, static_cast<int>(q.instrs.size()) - 1));
    acc = static_cast<int>(q.instrs.size()) - 1;
  }
  ASSERT_LE(static_cast<int>(q.instrs.size()), prog::kMaxInstrs);
  EXPECT_EQ(prog::encode_program(q, {}).dev.nslots, 2);
}

TEST(BlockwiseEncode, RejectsWhatTheHostRejects) {
  Program p;
  p.shape = {4};
  p.instrs.push_back(normal_instr({1}));
  p.instrs.push_back(op_instr(EwOp::LogicalNot, 0));  // no float kernel
  try {
    prog::encode_program(p, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no float kernel"), std::string::npos) << e.what();
  }
  p.instrs[1] = op_instr(EwOp::Div, 0, 0, CType::I64);
  EXPECT_THROW(prog::encode_program(p, {}), Error);
  p.instrs[1] = op_instr(EwOp::Add, 0, 5);  // operand from the future
  EXPECT_THROW(prog::encode_program(p, {}), Error);

  // Inputs: a missing argument, and a read outside the block.
  Program q;
  q.shape = {4};
  Instr in;
  in.code = InstrCode::Input;
  in.input = 0;
  in.coef = {2};
  q.instrs.push_back(in);
  EXPECT_THROW(prog::encode_program(q, {}), Error);
  const Block small = Block::from_values<double>({1, 2, 3, 4, 5, 6, 7}, {7});
  EXPECT_NO_THROW(prog::encode_program(q, {&small}));  // reads 0, 2, 4, 6
  q.instrs[0].base = 1;                                // reads 1, 3, 5, 7
  EXPECT_THROW(prog::encode_program(q, {&small}), Error);
}

// ---- device against host ---------------------------------------------------------------------------

// Defines BlockwiseDevice.NAME (GPU 0, skipped without one) and BlockwiseEmulated.NAME (the host
// emulation of the kernels) over one body.
#define BLOCKWISE_TEST(NAME)                    \
  void NAME##_body();                           \
  TEST(BlockwiseDevice, NAME) {                 \
    TESSERA_SKIP_WITHOUT_GPU();                         \
    g_mode = Mode::Gpu;                         \
    NAME##_body();                              \
  }                                             \
  TEST(BlockwiseEmulated, NAME) {               \
    g_mode = Mode::Emulated;                    \
    g_emulated_sms = 7;                         \
    g_emulated_blocks_per_sm = 2;               \
    NAME##_body();                              \
  }                                             \
  void NAME##_body()

BLOCKWISE_TEST(Generators) {
  auto x = random::normal(3, 10.0, 2.0, {301, 257}, {128, 100});
  check(x, kNormal);
  check(x[{step(2), step(3)}], kNormal);
  check(x[{slice(5, 300, 7), step(-2)}], kNormal);
  check(x.T(), kNormal);
  check(x.astype(DType::Float32), kFloat32);
  auto u = random::uniform(4, -3.0, 5.0, {1000, 33}, {256, 33});
  check(u, kUlps);
  check(u[{step(3), slice(1, std::nullopt, 2)}], kUlps);
  check(u.astype(DType::Float32), kFloat32);
  check(random::integers(5, -100, 1000, {5000}, {999}));
  check(random::integers(6, -(std::int64_t{1} << 40), std::int64_t{1} << 41, {77, 91}, {40, 50})[{step(2), step(-3)}]);
  check(random::integers(7, -5, 5, {400, 30}, {100, 30}, DType::Int32));
  check(arange(0, 1000, 1, 300));
  check(arange(-7, 1000, 3, 128)[{step(5)}]);
  check(arange(0, 10, 0.25, 7, DType::Float64), kExact);
  check(arange(1, 50, 1.5, 16, DType::Float32), kExact);
  check(arange(3, 300, 2, 64, DType::Int32)[{step(-1)}]);
  check(full({50, 60}, 2.5, {20, 25}));
  check(full({50, 60}, 0.1, {20, 25}, DType::Float32));
  check(full({17}, 7, {5}, DType::Int64));
  check(full({17}, 3, {5}, DType::Bool));
  check(zeros({9, 4}, {4, 4}, DType::Int32));
}

BLOCKWISE_TEST(Distributions) {
  // random_semantics.hpp is the one definition: the emulation (the same host code) agrees
  // exactly; CUDA's log, exp and lgamma may move the last bits of a continuous value.
  const Tol f = g_mode == Mode::Emulated ? kExact : kFn;
  check(random::gamma(21, 0.4, 2.0, {301, 57}, {128, 20}), f);
  check(random::gamma(22, 3.5, 1.0, {301, 57}, {128, 20})[{step(2), step(-3)}], f);
  check(random::beta(23, 2.0, 5.0, {200, 40}, {64, 40}), f);
  check(random::beta(24, 0.3, 0.6, {200, 40}, {64, 40}).T(), f);
  check(random::standard_t(25, 4.0, {5000}, {999}), f);
  check(random::chisquare(26, 3.0, {5000}, {999}), f);
  check(random::exponential(27, 2.0, {5000}, {999}), f);
  check(random::lognormal(28, 0.5, 0.3, {5000}, {999}), kFn);  // exp of the (vectorised) normal kernels
  check(random::poisson(29, 3.0, {300, 50}, {128, 50}));
  check(random::poisson(30, 250.0, {300, 50}, {128, 50})[{step(3), step(2)}]);
  check(random::binomial(31, 40, 0.1, {300, 50}, {128, 50}));
  check(random::binomial(32, 4000, 0.6, {300, 50}, {128, 50}));
  check(random::geometric(33, 0.3, {5000}, {999}));
  check(random::permutation(34, 5000, 999));
  check(random::choice(35, 100, {40, 2}, {16, 2}, false));
  // choice with the most probabilities it takes still fits a device program.
  std::vector<double> p(12, 1.0 / 16);
  p[0] = p[11] = 3.0 / 16;
  check(random::choice(36, 12, {300, 7}, {128, 7}, true, p));
  // In expressions, as float registers, and reduced.
  check(random::poisson(36, 5.0, {300, 50}, {128, 50}).astype(DType::Float64) * 0.5 + random::gamma(37, 2.0, 1.0, {300, 50}, {128, 50}), f);
  check(random::poisson(38, 5.0, {300, 50}, {128, 50}).sum(axes({0})));
  check(random::gamma(39, 2.0, 1.0, {300, 50}, {128, 50}).astype(DType::Int64));
  // The samplers added later, and distributions composed of the vectorised kernels.
  check(random::Generator(40).noncentral_chisquare(3.0, 2.0, {301, 57}, {128, 20}), f);
  check(random::Generator(41).noncentral_chisquare(0.5, 1.5, {5000}, {999}), f);
  check(random::Generator(42).vonmises(0.5, 3.0, {200, 40}, {64, 40}).T(), f);
  check(random::Generator(43).negative_binomial(2.5, 0.3, {300, 50}, {128, 50}));
  check(random::Generator(44).zipf(2.0, {5000}, {999}));
  check(random::Generator(45).logseries(0.9, {300, 50}, {128, 50})[{step(2), step(-3)}]);
  check(random::Generator(46).laplace(1.0, 2.0, {5000}, {999}), kFn);
  check(random::Generator(47).wald(1.5, 2.0, {300, 50}, {128, 50}), kFn);
  check(random::Generator(48).triangular(-1.0, 0.5, 3.0, {5000}, {999}), kFn);
  // hypergeometric: the sample travels in the instruction's integer parameter.
  check(random::Generator(49).hypergeometric(40, 70, 33, {300, 50}, {128, 50}));
  check(random::Generator(50).hypergeometric(7, 12, 5, {300, 50}, {128, 50})[{step(3), step(-2)}]);
  check(random::Generator(51).hypergeometric(900, 400, 1000, {300, 50}, {128, 50}).astype(DType::Float64) * 0.5, f);
}

BLOCKWISE_TEST(FloatUnaryOps) {
  auto x = random::normal(11, 0.0, 3.0, {200, 150}, {64, 50});
  auto pos = random::uniform(12, 0.01, 4.0, {200, 150}, {64, 50});
  check(-x, kNormal);
  check(abs(x), kNormal);
  check(exp(pos), kFn);
  check(log(pos), kFn);
  check(log1p(pos), kFn);
  check(sqrt(pos), kFn);
  check(square(x), kNormal);
  check(sin(x), kFn);
  check(cos(x), kFn);
  check(tan(pos), Tol{1e-9, 1e-12});  // steep near pi/2
  check(tanh(x), kFn);
  check(floor(x * 4.0), kExact);  // exact unless a normal sits on an integer boundary within an ulp
  check(ceil(pos * 4.0), kExact);
  check(sign(floor(x)), kExact);
  check(exp(pos.astype(DType::Float32)), kFloat32);
}

BLOCKWISE_TEST(SpecialValues) {
  std::vector<double> v = {0.0, -0.0, 1.5, -2.5, kNaN, kInf, -kInf, 3.0, -7.0, 1e300, -1e-300, 2.0};
  auto a = from_vector(v, {12}, {5});
  std::vector<double> w = {2.0, kNaN, -1.5, 2.5, 1.0, kInf, 3.0, 0.0, 2.0, -1e300, 7.0, -0.0};
  auto b = from_vector(w, {12}, {5});
  check(isnan(a));
  check(isfinite(a));
  check(sign(a));
  check(abs(a));
  check(-a);
  check(minimum(a, b));
  check(maximum(a, b));
  check(floor_divide(a, b));
  check(mod(a, b));
  check(a / b);
  check(power(a, b), kUlps);
  check(a < b);
  check(a <= b);
  check(a > b);
  check(a >= b);
  check(a == b);
  check(a != b);
  check(where(isnan(b), a, b * 2.0));
  check(a.astype(DType::Int64));  // NaN and inf become INT64_MIN, as x86 truncation does
  check(a.astype(DType::Int32));
  check(a.astype(DType::Bool));
  check(a.astype(DType::Float32));
  check(isnan(arange(0, 12, 1, 5)));
  check(isfinite(arange(0, 12, 1, 5, DType::Int32)));
}

BLOCKWISE_TEST(FloatBinaryOps) {
  auto x = random::normal(21, 1.0, 3.0, {120, 90}, {50, 40});
  auto y = random::uniform(22, -4.0, 4.0, {120, 90}, {50, 40});
  check(x + y, kNormal);
  check(x - y, Tol{1e-11, 1e-12});
  check(x * y, kNormal);
  check(x / y, kNormal);
  check(floor_divide(x, y), Tol{0, 1e-300});  // may differ where x / y sits within an ulp of an integer
  check(mod(x, y), Tol{1e-10, 1e-12});
  check(power(abs(x), y), Tol{1e-11, 1e-300});
  check(minimum(x, y), kNormal);
  check(maximum(x, y), kNormal);
  check(x < y);
  check(x >= y);
  check(x == x);
  check((x > 0.0) && (y < 0.0));
  check((x > 0.0) || (y < 0.0));
  check(!(x > 0.0));
  check(where(x > y, x, y), kNormal);
  check(where(x > 0.0, scalar(1.0), y * 0.5), kUlps);
  check(x * 2.5 + y / 3.0 - 1.0, Tol{1e-11, 1e-12});
  check((x.astype(DType::Float32) + y.astype(DType::Float32)) * 0.1, kFloat32);
}

BLOCKWISE_TEST(IntegerOps) {
  auto a = random::integers(31, -50, 50, {64, 70}, {30, 32});
  auto b = random::integers(32, -6, 7, {64, 70}, {30, 32});
  auto big = random::integers(33, -(std::int64_t{1} << 62), std::int64_t{1} << 62, {64, 70}, {30, 32});
  check(-a);
  check(abs(a));
  check(square(a));
  check(sign(a));
  check(floor(a));
  check(ceil(a));
  check(!(a > 0));
  check(a + b);
  check(a - b);
  check(a * b);
  check(big * big);  // wraps around
  check(big + big);
  check(floor_divide(a, b));  // includes division by zero (0, as NumPy gives)
  check(mod(a, b));
  check(power(a, abs(b)));
  check(power(b, abs(b)));
  check(minimum(a, b));
  check(maximum(a, b));
  check(a < b);
  check(a == b);
  check(a != b);
  check((a > 0) && (b > 0));
  check((a > 0) || (b > 0));
  check(where(a > b, a, b * 2));
  check(a * 3 + 1);
  check(a / b, kUlps);  // true division gives float64
  check((a + 0.5) * b, kExact);
  auto i32 = random::integers(34, -2000000000, 2000000000, {64, 70}, {30, 32}, DType::Int32);
  check(i32 + i32);  // int32 wrap-around
  check(i32 * 3);
  check(i32.astype(DType::Int64) * 3);
  check(i32.astype(DType::Float32));
}

// Every binary operation on edge values of every dtype pair against numpy's results (the tables
// tests/array/element_semantics_test.cpp checks the host evaluator with): the device kernels share
// element_semantics.hpp with the host, so both must give numpy's values.
BLOCKWISE_TEST(ElementSemanticsMatchNumpy) {
  namespace ec = tessera_test::elem_cases;
  int cases = 0;
  for (const auto& c : ec::tables().cases) {
    if (c.numpy_dtype == "none") continue;
    SCOPED_TRACE(c.op + " of " + std::string(dtype_name(c.a)) + ", " + std::string(dtype_name(c.b)));
    const auto o = ec::operands(c, false);
    const Array r = ec::apply(c.op, from_block(o.a, {-1}), from_block(o.b, {-1}));
    // CUDA's pow and powf are not glibc's: a few ulps (of float32 too) on the GPU.
    const bool gpu_pow = g_mode == Mode::Gpu && c.op == "Pow";
    const Outcome out = run_both(r, gpu_pow ? kFloat32 : kExact);
    ASSERT_EQ(out.device.size(), 1u);
    EXPECT_TRUE(ec::matches_numpy(c, o, out.device[0], gpu_pow ? 4 : ec::kNumpyPowUlps));
    ++cases;
  }
  EXPECT_GT(cases, 400);
}

// The same for the functions added later (element_semantics_more_tables.inc).
BLOCKWISE_TEST(MoreElementSemanticsMatchNumpy) {
  namespace ec = tessera_test::elem_cases;
  int cases = 0;
  for (const auto& c : ec::more_tables().cases) {
    if (c.numpy_dtype == "none") continue;
    SCOPED_TRACE(c.op + " of " + std::string(dtype_name(c.a)) + ", " + std::string(dtype_name(c.b)));
    const auto o = ec::operands(c, false);
    const Array r = ec::apply(c.op, from_block(o.a, {-1}), from_block(o.b, {-1}));
    // CUDA's atan2, hypot, log1p, exp are not glibc's nor SLEEF's: a few ulps (the host's results
    // are compared with numpy's within 2).
    const bool gpu_ulps = g_mode == Mode::Gpu && ec::ulps_op(c.op);
    const Outcome out = run_both(r, ec::ulps_op(c.op) ? (gpu_ulps ? kFloat32 : kUlps) : kExact);
    ASSERT_EQ(out.device.size(), 1u);
    EXPECT_TRUE(ec::matches_numpy(c, o, out.device[0], gpu_ulps ? 4 : 2));
    ++cases;
  }
  EXPECT_GT(cases, 250);
}

BLOCKWISE_TEST(MoreUnaryFunctions) {
  auto x = random::normal(13, 0.0, 3.0, {200, 150}, {64, 50});
  auto unit = random::uniform(14, -1.0, 1.0, {200, 150}, {64, 50});
  auto pos = random::uniform(15, 0.01, 40.0, {200, 150}, {64, 50});
  check(arcsin(unit), kUlps);
  check(arccos(unit), kUlps);
  // Where x is near zero (cos near its zeros), the host's x (libmvec's cos) and the device's
  // (CUDA's) differ by about 1e-16 absolute, so functions that behave like x there (arctan,
  // arcsinh, sinh, expm1, cbrt) differ by up to 1e-12 relative: seen on an H200.
  check(arctan(x), kFn);
  check(arcsinh(x), kFn);
  check(arccosh(pos + 1.0), kUlps);
  check(arctanh(unit * 0.99), kUlps);
  check(sinh(x), kFn);
  check(cosh(x), kUlps);
  check(log2(pos), kUlps);
  check(log10(pos), kUlps);
  check(exp2(x), kUlps);
  check(expm1(x), kFn);
  check(cbrt(x), kFn);
  check(trunc(x * 4.0), kExact);
  check(rint(x * 4.0), kExact);
  check(round(x, 2), kUlps);
  check(sinc(x), kFn);  // near its zeros sin(pi x) turns the inputs' ulp into 1e-12 relative
  check(deg2rad(x), kNormal);  // x itself differs by an ulp where the host draws with libmvec
  // Stepping between neighbouring floats, in each float format: exact on both sides, on values
  // read from a block (generated values differ by an ulp or so between host and device), at the
  // formats' edges too.
  auto w = from_block(random::uniform(17, -50.0, 50.0, {200, 150}, {64, 50}).compute(), {64, 50});
  auto edges = from_vector(std::vector<double>{0.0, -0.0, 1.0, -2.0, 5e-324, -1e-310, 2.2250738585072014e-308,
                                               1.7976931348623157e308, -1.7976931348623157e308, 65504.0, 6e-8,
                                               std::numeric_limits<double>::infinity(),
                                               -std::numeric_limits<double>::infinity(),
                                               std::numeric_limits<double>::quiet_NaN(), 0.75, -3.5},
                           {16}, {5});
  for (const Array& v : {w, edges}) {
    check(spacing(v), kExact);
    check(nextafter(v, v * 2.0 + 1.0), kExact);
    check(nextafter(v, 0.0), kExact);
    check(spacing(v.astype(DType::Float32)), kExact);
    check(nextafter(v.astype(DType::Float32), -1.0), kExact);
    check(spacing(v.astype(DType::Float16)), kExact);
    check(nextafter(v.astype(DType::Float16), 100.0), kExact);
    auto [m, e] = frexp(v);
    check(m, kExact);
    check(e, kExact);
  }
  check(i0(w), kUlps);  // the series and e^x: FMA contraction and exp differ by an ulp
  check(i0(edges), kUlps);
  check(arcsin(unit.astype(DType::Float32)), kFloat32);
  auto i = random::integers(16, -1000, 1000, {64, 70}, {30, 32});
  check(trunc(i));
  check(invert(i));
  check(bitwise_not(i > 0));
  check(round(i, -1));
  check(reciprocal(i));
}

BLOCKWISE_TEST(MoreSpecialValues) {
  std::vector<double> v = {0.0, -0.0, 1.5, -2.5, kNaN, kInf, -kInf, 3.0, -7.0, 1e300, -1e-300, 2.0};
  auto a = from_vector(v, {12}, {5});
  check(isinf(a));
  check(isposinf(a));
  check(isneginf(a));
  check(signbit(a));
  check(nan_to_num(a));
  check(clip(a, -1.0, 2.0));
  check(isclose(a, a * 1.000001));
  check(heaviside(a, 0.5));
  // The sign of fmin/fmax of equal zeros is the first operand's on both sides (CUDA's and glibc's
  // fmin leave it open; the emulation's glibc call gave +0.0 where the host gave -0.0).
  const Array z = from_vector<double>({-0.0, 0.0, -0.0, 0.0}, {4}, {3});
  const Array w = from_vector<double>({0.0, -0.0, -0.0, 0.0}, {4}, {3});
  check(signbit(fmin(z, w)));
  check(signbit(fmax(z, w)));
  using Fn = Array (*)(const Array&);
  for (Fn fn : {Fn(arcsin), Fn(arccos), Fn(arctan), Fn(arcsinh), Fn(arccosh), Fn(arctanh), Fn(sinh), Fn(cosh),
                Fn(log2), Fn(log10), Fn(exp2), Fn(expm1), Fn(cbrt), Fn(trunc), Fn(rint)})
    check(fn(a), kUlps);
}

// float -> int32 / int64 / bool casts as NumPy on x86-64 (NaN and out of range: the minimum;
// NaN is true), the same helpers on both sides.
BLOCKWISE_TEST(FloatToIntegerCasts) {
  const Array f = from_vector<double>({3e9, kNaN, -7.9, 1e20, -3e9, 2147483647.5, -kInf, 0.0}, {8}, {3});
  for (const DType t : {DType::Int32, DType::Int64, DType::Bool}) {
    const Outcome o = run_both(f.astype(t), kExact);
    for (std::size_t i = 0; i < o.device.size(); ++i) EXPECT_TRUE(bit_identical(o.host[i], o.device[i])) << dtype_name(t);
  }
  const Block b = f.astype(DType::Int32).compute();
  EXPECT_EQ(b.data<std::int32_t>()[0], std::numeric_limits<std::int32_t>::min());  // numpy 2.4.6 on x86-64
  EXPECT_EQ(b.data<std::int32_t>()[5], 2147483647);
}

// NumPy raises for a negative integer exponent; so does the device task (the kernels flag it).
BLOCKWISE_TEST(NegativeIntegerPowerFailsTheTask) {
  const Array base = from_vector<std::int64_t>({2, 3, 4, 5}, {4}, {4});
  const Array exps = from_vector<std::int64_t>({1, 2, -1, 0}, {4}, {4});
  // Only the device runs the blockwise task (the host evaluator raises too: test_element_semantics).
  std::vector<Key> keys;
  const Graph g = power(base, exps).to_graph(&keys);
  std::unordered_map<Key, Value> done;
  int raised = 0;
  std::function<void(const Key&)> visit = [&](const Key& k) {
    if (done.count(k)) return;
    const Task& t = g.at(k);
    for (const Key& dep : t.dependencies()) visit(dep);
    std::vector<Value> args;
    for (const Arg& arg : t.args)
      args.push_back(std::holds_alternative<KeyRef>(arg) ? done.at(std::get<KeyRef>(arg).key) : std::get<Value>(arg));
    if (t.op != detail::kBlockwiseOp) {
      done[k] = run_op(t.op, OpContext{&t.key, Target::Host}, args);
      return;
    }
    try {
      done[k] = run_on_device(t, args);
    } catch (const Error& e) {
      ++raised;
      EXPECT_NE(std::string(e.what()).find("Integers to negative integer powers are not allowed"), std::string::npos)
          << e.what();
      done[k] = Value();
    }
  };
  for (const Key& k : keys) visit(k);
  EXPECT_EQ(raised, 1);
  // Without negative exponents the same program runs (and agrees with the host).
  check(power(base, abs(exps)));
}

BLOCKWISE_TEST(BroadcastingAndPromotion) {
  auto col = random::normal(41, 0.0, 1.0, {90, 1}, {40, 1});
  auto row = random::uniform(42, 0.0, 1.0, {1, 70}, {1, 30});
  auto flat = random::integers(43, 0, 10, {70}, {25});
  check(col + row, kNormal);
  check(col * flat, kNormal);
  check(row + flat, kUlps);
  check(where(col > 0.0, row, flat.astype(DType::Float64)), kUlps);
  auto m = random::normal(44, 5.0, 1.0, {3, 40, 50}, {2, 20, 25});
  check(m + random::uniform(45, 0.0, 1.0, {50}, {20}), kUlps);
  check(m.transpose({2, 0, 1}) * 2.0, kNormal);  // three axes no leaf walks as one
  check(m[{step(2), slice(3, 30, 4), step(-3)}] - 1.0, kNormal);
  check(scalar(2.0) * 3.0 + scalar(1.0));
}

BLOCKWISE_TEST(InputsOfEveryDtype) {
  const int n = 5000;
  std::vector<double> f64(n);
  std::vector<float> f32(n);
  std::vector<std::int64_t> i64(n);
  std::vector<std::int32_t> i32(n);
  std::vector<bool> b(n);
  for (int i = 0; i < n; ++i) {
    f64[i] = std::sin(i * 0.37) * 1000.0;
    f32[i] = static_cast<float>(std::cos(i * 0.11) * 100.0);
    i64[i] = (static_cast<std::int64_t>(i) * 7919 % 20011) - 10000;
    i32[i] = static_cast<std::int32_t>((i * 104729) % 65521) - 30000;
    b[i] = (i % 3) == 0;
  }
  auto F64 = from_vector(f64, {50, 100}, {20, 30});
  auto F32 = from_vector(f32, {50, 100}, {20, 30});
  auto I64 = from_vector(i64, {50, 100}, {20, 30});
  auto I32 = from_vector(i32, {50, 100}, {20, 30});
  auto B = from_vector(b, {50, 100}, {20, 30});
  for (const Array& x : {F64, F32, I64, I32, B}) {
    const Array v = x[{step(3), step(-2)}];  // a strided read of the source blocks
    check(v);
    for (DType t : {DType::Float64, DType::Float32, DType::Int64, DType::Int32, DType::Bool}) {
      check(v.astype(t));
      if (t != x.dtype()) check(x.astype(t));
    }
  }
  check(F64 + F32 * 2.0);
  check(I64 + I32);
  check(where(B, F32, I32.astype(DType::Float32)));
  // Transposed reads across chunk boundaries (assemble tasks feed the program).
  check(F64[{slice(0, 50), slice(0, 50)}].T() + I64[{slice(0, 50), slice(50, 100)}]);
  check(F64[{slice(3, 47, 2), slice(10, 90, 3)}] * I32[{slice(3, 47, 2), slice(10, 90, 3)}]);
}

// Every reduction kind, over all axes, each axis, with and without keepdims. `select` is the
// tolerance of min/max/arg partials: exact for data read from inputs or integers, an ulp for
// values the GPU computes itself (random normals).
void check_reductions(const Array& x, const Tol& tol, const Tol& select) {
  using R = ReduceOptions;
  std::vector<R> options = {R{}, axes({0}), axes({1}), axes({0}, true), axes({1}, true), axes({0, 1}, true)};
  for (const R& o : options) {
    check(x.sum(o), tol);
    check(x.prod(o), tol);
    check(x.min(o), select);
    check(x.max(o), select);
    check(x.mean(o), tol);
    check(x.var(o), tol);
    check(x.std(o), tol);
    check(x.var(axes(o.axes, o.keepdims, 1)), tol);
    check(x.any(o));
    check(x.all(o));
  }
  check(x.argmin(), select);
  check(x.argmax(), select);
  check(x.argmin(0), select);
  check(x.argmax(1), select);
}

BLOCKWISE_TEST(ReductionsOfFloats) {
  auto x = random::normal(51, 1.0, 0.5, {70, 90}, {30, 40});
  check_reductions(x, Tol{1e-10, 1e-10}, kNormal);
  check_reductions(x[{step(2), step(-3)}], Tol{1e-10, 1e-10}, kNormal);
  // One chunk: slots of 1000 elements (axis 1) or 33 (axis 0).
  check_reductions(random::uniform(52, 0.9, 1.1, {33, 1000}, {33, 1000}), Tol{1e-10, 1e-10}, kUlps);
  // Read from an input block: the values are the host's, so selections are exact.
  std::vector<double> v(70 * 90);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<double>(k) * 1.3) + 1.5;
  check_reductions(from_vector(v, {70, 90}, {30, 40}), Tol{1e-10, 1e-10}, kExact);
}

BLOCKWISE_TEST(ReductionsOfIntegersAndBools) {
  auto i = random::integers(61, -3, 4, {70, 90}, {30, 40});
  check_reductions(i, Tol{1e-12, 1e-12}, kExact);
  // All negative / all positive: an identity that is not INT64_MIN / INT64_MAX would show.
  for (const ReduceOptions& o : {ReduceOptions{}, axes({0}), axes({1}, true)}) {
    check((i - 10).max(o));
    check((i + 10).min(o));
    check((i.astype(DType::Float64) - 10.0).max(o));
    check((i.astype(DType::Float64) + 10.0).min(o));
    check((i.astype(DType::Float64) - 10.0).argmax(o.axes.empty() ? std::nullopt : std::optional<int>(o.axes[0])));
  }
  check_reductions(random::integers(62, 1, 3, {40, 30}, {20, 15}, DType::Int32), Tol{1e-12, 1e-12}, kExact);
  auto b = random::integers(63, 0, 2, {70, 90}, {30, 40}) > 0;
  check(b.any());
  check(b.all());
  check(b.any(axes({1})));
  check(b.all(axes({0}, true)));
  check((b || !b).all());
  check((b && !b).any());
  check(b.sum(), kExact);
}

BLOCKWISE_TEST(ReductionsWithNaN) {
  std::vector<double> v(600);
  for (int k = 0; k < 600; ++k) v[k] = std::cos(k * 0.7);
  v[17] = kNaN;
  v[250] = kNaN;
  v[401] = -kInf;
  v[599] = kInf;
  auto x = from_vector(v, {20, 30}, {8, 12});
  check(x.min(), kExact);
  check(x.max(), kExact);
  check(x.min(axes({0})), kExact);
  check(x.max(axes({1}, true)), kExact);
  check(x.argmin(), kExact);
  check(x.argmax(), kExact);
  check(x.argmin(1), kExact);
  check(x.argmax(0), kExact);
  check(x.sum(axes({1})), kSums);
  check(x.any());
  check(isnan(x).any(axes({0})));
  check(x.mean(axes({0})), kSums);
}

BLOCKWISE_TEST(ArgReductionTiesPickTheLowestIndex) {
  // Few distinct values over one large chunk: many blocks per slot, and ties everywhere.
  auto x = random::integers(71, 0, 5, {300000}, {300000});
  check(x.argmin(), kExact);
  check(x.argmax(), kExact);
  auto y = random::integers(72, 0, 3, {3, 100000}, {3, 100000});
  check(y.argmin(1), kExact);
  check(y.argmax(0), kExact);
  check(y.astype(DType::Float64).argmax(), kExact);
}

// Whole-chunk reductions of a transposed input take the tiled walk (plan_for); a ragged chunk
// (40 x 40: padded to 64 columns) and whole tiles (96 x 64).
BLOCKWISE_TEST(TransposedInputReductions) {
  std::vector<double> v(72 * 72), w(64 * 96);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<double>(k) * 0.7) + 0.25;
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = std::cos(static_cast<double>(k) * 1.1);
  auto x = from_vector(v, {72, 72}, {40, 40});
  auto y = from_vector(w, {64, 96}, {64, 96});
  for (const Array& a : {x + x.T(), y.T() * 2.0}) {
    check(a.sum(), Tol{1e-12, 1e-12});
    check(a.mean(), Tol{1e-12, 1e-12});
    check(a.var(), Tol{1e-12, 1e-12});
    check(a.min());
    check(a.max());
    check(a.argmin());
    check(a.argmax());
  }
}

BLOCKWISE_TEST(LargeChunksUseManyBlocksPerSlot) {
  auto x = random::normal(81, 10.0, 1.0, {3000, 2000}, {3000, 2000});
  check(x.sum(), kSums);
  check(x.var(), Tol{1e-10, 1e-10});
  check(x.min(), kNormal);
  check(x.argmax(), kNormal);
  check(x.sum(axes({0})), kSums);  // 2000 slots of 3000
  check(x.mean(axes({1})), kSums);  // 3000 slots of 2000
  auto tall = random::uniform(82, -1.0, 1.0, {200000, 3}, {200000, 3});
  check(tall.sum(axes({0})), kSums);  // three slots, many blocks each, then the merge
  check(tall.std(axes({0})), Tol{1e-10, 1e-10});
  check(tall.argmin(0), kUlps);
  check(tall * 2.0 + 1.0, kUlps);  // a large element-wise chunk
}

BLOCKWISE_TEST(EmptyChunks) {
  auto x = zeros({0, 4}, {1, 4});
  check(x + 1.0);
  check(x.sum(axes({0})));  // nothing to fold: the identities
  check(x.prod(axes({0}, true)));
  check(x.mean(axes({0})));
  check(x.var(axes({0})));
  check(x.any(axes({0})));
  check(x.all(axes({0})));
}

BLOCKWISE_TEST(SeedExpressionMatchesHost) {
  const std::int64_t n = 2000, c = 500;
  auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
  auto y = (x + 1.0)[{step(2), step(2)}].sum();
  const Outcome o = run_both(y, kSums);
  ASSERT_EQ(o.host.size(), 1u);
  const double h = o.host[0].item(), d = o.device[0].item();
  EXPECT_NEAR(d, h, 1e-12 * std::fabs(h));
  EXPECT_NEAR(h / static_cast<double>((n / 2) * (n / 2)), 11.0, 0.01);
  EXPECT_EQ(o.blockwise_tasks, static_cast<int>((n / c) * (n / c)));
}

BLOCKWISE_TEST(TooLongProgramIsADeviceError) {
  auto x = random::normal(1, 0.0, 1.0, {100}, {100});
  Array y = x;
  for (int i = 0; i < 30; ++i) y = y * 1.5 + 1.0;
  std::vector<Key> keys;
  const Graph g = y.to_graph(&keys);
  const Task& t = g.at(keys[0]);
  ASSERT_EQ(t.op, detail::kBlockwiseOp);
  std::vector<Value> args;
  for (const Arg& a : t.args) args.push_back(std::get<Value>(a));
  EXPECT_THROW(run_on_device(t, args), DeviceError);
  EXPECT_NO_THROW(run_op(t.op, OpContext{&t.key, Target::Host}, args));  // the host has no limit
}

// The plan an H100 gets (132 SMs, four blocks of the two-axis kernels each): many more blocks
// per slot, so hundreds of block partials per slot go through the merge.
TEST(BlockwiseEmulated, WithTheWaveOfAnH100) {
  g_mode = Mode::Emulated;
  g_emulated_sms = 132;
  g_emulated_blocks_per_sm = 4;
  SeedExpressionMatchesHost_body();
  ArgReductionTiesPickTheLowestIndex_body();
  auto x = random::normal(91, 10.0, 1.0, {2000, 1500}, {2000, 1500});
  check(x.sum(), kSums);
  check(x.std(axes({0})), Tol{1e-10, 1e-10});
  check(x.argmin(), kNormal);
  g_emulated_sms = 7;
  g_emulated_blocks_per_sm = 2;
}

// GPU only: the seed through the public API and the local executor (device tasks in the graph).
TEST(BlockwiseDevice, SeedThroughTheLocalExecutor) {
  TESSERA_SKIP_WITHOUT_GPU();
  const std::int64_t n = 2000, c = 500;
  auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
  const Array on_gpu = (x.to_device() + 1.0)[{step(2), step(2)}].sum();
  std::vector<Key> keys;
  const Graph g = on_gpu.to_graph(&keys);
  int device_programs = 0;
  for (const auto& [k, t] : g.tasks())
    if (t.op == detail::kBlockwiseOp && t.annotations.target == Target::Device) ++device_programs;
  EXPECT_EQ(device_programs, static_cast<int>((n / c) * (n / c)));
  const double host = (x + 1.0)[{step(2), step(2)}].sum().compute().item();
  const double dev = on_gpu.compute().item();
  EXPECT_NEAR(dev, host, 1e-12 * std::fabs(host));
}

// GPU only: one task of the seed headline ((x + 1)[::2, ::2].sum() of normal(10, 1) 500000^2 in
// chunks of 10000: a 5000 x 5000 strided generator, the add and a full sum) timed on the GPU and
// extrapolated to the 2500 tasks, which must stay well under 10 s.
TEST(BlockwiseDevice, SeedHeadlineTaskTime) {
  TESSERA_SKIP_WITHOUT_GPU();
  auto x = random::normal(0, 10.0, 1.0, {500000, 500000}, {10000, 10000});
  std::vector<Key> keys;
  const Graph g = (x + 1.0)[{step(2), step(2)}].sum().to_graph(&keys);
  std::vector<const Task*> programs;
  for (const auto& [k, t] : g.tasks())
    if (t.op == detail::kBlockwiseOp) programs.push_back(&t);
  ASSERT_EQ(programs.size(), 2500u);
  auto args_of = [](const Task& t) {
    std::vector<Value> args;
    for (const Arg& a : t.args) args.push_back(std::get<Value>(a));
    return args;
  };
  const Task& first = *programs[0];
  const Value warm = run_op(first.op, OpContext{&first.key, Target::Device, 0}, args_of(first));
  const Value host = run_op(first.op, OpContext{&first.key, Target::Host}, args_of(first));
  EXPECT_TRUE(same_block(host.block(), warm.block(), kSums));
  const int runs = 40;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    const Task& t = *programs[static_cast<std::size_t>(i) * 61 % programs.size()];
    run_op(t.op, OpContext{&t.key, Target::Device, 0}, args_of(t));
  }
  const double per_task = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / runs;
  std::printf("seed headline: %.3f ms per 5000x5000 task, %.2f s for 2500 tasks (estimate)\n", per_task * 1e3,
              per_task * 2500);
  RecordProperty("ms_per_task", std::to_string(per_task * 1e3));
  EXPECT_LT(per_task * 2500, 10.0);
}

}  // namespace
