// The device variants of reduce_combine, assemble and matmul (cuda/device_ops.cpp), and reshape's
// (no copy), against their host twins, on random inputs: each op runs through run_op once with
// Target::Host and once with Target::Device, and the results must agree (exactly, except
// floating-point matmul, where cuBLAS sums in its own order). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "array/array_ops.hpp"
#include "gpu_test_util.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace {

using namespace tessera;
using tessera_cuda_test::expect_same_block;

Value run_on(Target target, const std::string& op, const std::vector<Value>& args) {
  static const Key key = "cuda-op-test";
  return run_op(op, OpContext{&key, target, target == Target::Device ? 0 : -1}, std::span<const Value>(args));
}

/** Runs the op on host and device and checks that the device gives the host's block exactly. */
Block expect_device_matches_host(const std::string& op, const std::vector<Value>& args, const std::string& what) {
  const Value host = run_on(Target::Host, op, args);
  const Value device = run_on(Target::Device, op, args);
  EXPECT_TRUE(host.is_block() && device.is_block()) << what;
  expect_same_block(host.block(), device.block(), what);
  return device.block();
}

std::string kind_name(detail::ReduceKind k) {
  static const char* names[] = {"sum", "prod", "min", "max", "mean", "var", "std", "any", "all", "argmin", "argmax"};
  return names[static_cast<int>(k)];
}

// ---- reduce_combine -----------------------------------------------------------------------------

/** Random partials of one reduction kind, with the awkward cases each kind has. */
Block random_partial(detail::ReduceKind kind, DType dtype, const Shape& shape, std::mt19937_64& gen) {
  using K = detail::ReduceKind;
  const int comps = detail::partial_components(static_cast<std::uint8_t>(kind));
  Block b(dtype, shape);
  const std::int64_t slots = b.size() / comps;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 3.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto maybe_nan = [&](double v) { return unit(gen) < 0.06 ? nan : v; };
  for (std::int64_t s = 0; s < slots; ++s) {
    double f[3] = {0, 0, 0};
    std::int64_t q[3] = {0, 0, 0};
    switch (kind) {
      case K::Sum: f[0] = maybe_nan(normal(gen)); q[0] = static_cast<std::int64_t>(gen() % 2001) - 1000; break;
      case K::Prod:  // products of 40 stay finite (and within int64)
        f[0] = maybe_nan(0.5 + unit(gen));
        q[0] = static_cast<std::int64_t>(gen() % 4) - 1;
        break;
      case K::Min: case K::Max:
        f[0] = maybe_nan(std::round(normal(gen)));  // rounded: ties happen
        q[0] = static_cast<std::int64_t>(gen() % 21) - 10;
        break;
      case K::Any: q[0] = unit(gen) < 0.1 ? 1 : 0; f[0] = static_cast<double>(q[0]); break;
      case K::All: q[0] = unit(gen) < 0.97 ? 1 : 0; f[0] = static_cast<double>(q[0]); break;
      case K::Mean: case K::NanMean:  // (NanMean: host programs only, not in the device's kinds)
        f[1] = static_cast<double>(gen() % 10);  // count (0 sometimes)
        f[0] = maybe_nan(f[1] * normal(gen));     // sum
        break;
      case K::Var: case K::Std:
        f[0] = static_cast<double>(gen() % 6);                  // count (0 sometimes)
        f[1] = f[0] > 0 ? maybe_nan(normal(gen)) : 0.0;         // mean
        f[2] = f[0] > 0 ? std::fabs(normal(gen)) * f[0] : 0.0;  // M2
        break;
      case K::ArgMin: case K::ArgMax:
        if (unit(gen) < 0.1) {
          f[0] = 0.0;
          f[1] = -1.0;  // an empty chunk
        } else {
          f[0] = maybe_nan(static_cast<double>(gen() % 3));  // few values: ties
          f[1] = static_cast<double>(gen() % 1000);
        }
        break;
    }
    for (int c = 0; c < comps; ++c) {
      if (dtype == DType::Float64) b.data<double>()[s * comps + c] = f[c];
      else b.data<std::int64_t>()[s * comps + c] = q[c];
    }
  }
  return b;
}

std::vector<DType> out_dtypes(detail::ReduceKind kind, DType partial) {
  using K = detail::ReduceKind;
  switch (kind) {
    case K::Sum: case K::Prod: case K::Min: case K::Max:
      return partial == DType::Float64 ? std::vector<DType>{DType::Float64, DType::Float32}
                                       : std::vector<DType>{DType::Int64, DType::Int32, DType::Float64};
    case K::Any: case K::All: return {DType::Bool, DType::Int64};
    case K::Mean: case K::NanMean: case K::Var: case K::Std: return {DType::Float64, DType::Float32};
    case K::ArgMin: case K::ArgMax: return {DType::Int64};
  }
  return {};
}

TEST(CudaDeviceOps, CombineMatchesHostForEveryKind) {
  TESSERA_SKIP_WITHOUT_GPU();
  using K = detail::ReduceKind;
  std::mt19937_64 gen(2024);
  // Partials keep the reduced axes as length 1; the last axis holds the components.
  struct Layout {
    Shape base;
    std::vector<std::uint8_t> reduced;
  };
  const std::vector<Layout> layouts = {{{5, 1, 7}, {0, 1, 0}}, {{1, 1}, {1, 1}}, {{300, 1}, {0, 1}}};
  for (K kind : {K::Sum, K::Prod, K::Min, K::Max, K::Mean, K::Var, K::Std, K::Any, K::All, K::ArgMin, K::ArgMax}) {
    const auto k = static_cast<std::uint8_t>(kind);
    const int comps = detail::partial_components(k);
    std::vector<DType> partial_dtypes{detail::partial_dtype(k, DType::Float64)};
    if (detail::partial_dtype(k, DType::Int64) != partial_dtypes[0]) partial_dtypes.push_back(DType::Int64);
    for (DType pdt : partial_dtypes)
      for (const auto& layout : layouts)
        for (int n : {1, 2, 3, 32, 33, 40, 70}) {
          Shape shape = layout.base;
          shape.push_back(comps);
          std::vector<Block> parts;
          for (int i = 0; i < n; ++i) parts.push_back(random_partial(kind, pdt, shape, gen));
          const std::string what = kind_name(kind) + " " + std::string(dtype_name(pdt)) + " partials " +
                                   shape_to_string(shape) + " x" + std::to_string(n);
          // Not finalising: the combined partial.
          detail::CombineParams p;
          p.kind = k;
          p.partial_dtype = pdt;
          p.reduced = layout.reduced;
          std::vector<Value> args{Value(to_object(p, "CombineParams"))};
          for (const auto& b : parts) args.emplace_back(b);
          expect_device_matches_host(detail::kCombineOp, args, what + " (partial)");
          if (HasFatalFailure()) return;
          // Finalising, with each output dtype, ddof and keepdims.
          for (DType odt : out_dtypes(kind, pdt))
            for (int ddof : {0, 1})
              for (bool keepdims : {false, true}) {
                if (ddof == 1 && kind != K::Var && kind != K::Std) continue;
                p.finalize = true;
                p.out_dtype = odt;
                p.ddof = ddof;
                p.keepdims = keepdims;
                args[0] = Value(to_object(p, "CombineParams"));
                expect_device_matches_host(detail::kCombineOp, args,
                                           what + " -> " + std::string(dtype_name(odt)) + " ddof " +
                                               std::to_string(ddof) + (keepdims ? " keepdims" : ""));
                if (HasFatalFailure()) return;
              }
        }
  }
}

TEST(CudaDeviceOps, CombineTreeOfDeviceResults) {
  // A two-level tree as the array lowering builds it: the inner combines' device results feed
  // the final combine without leaving the device.
  TESSERA_SKIP_WITHOUT_GPU();
  using K = detail::ReduceKind;
  std::mt19937_64 gen(5);
  const Shape shape{6, 1, 3};
  detail::CombineParams inner;
  inner.kind = static_cast<std::uint8_t>(K::Var);
  inner.reduced = {0, 1};
  detail::CombineParams outer = inner;
  outer.finalize = true;
  outer.ddof = 1;
  std::vector<Value> host_level{Value(to_object(outer, "CombineParams"))};
  std::vector<Value> device_level{Value(to_object(outer, "CombineParams"))};
  for (int g = 0; g < 4; ++g) {
    std::vector<Value> args{Value(to_object(inner, "CombineParams"))};
    for (int i = 0; i < 8; ++i) args.emplace_back(random_partial(K::Var, DType::Float64, shape, gen));
    host_level.push_back(run_on(Target::Host, detail::kCombineOp, args));
    device_level.push_back(run_on(Target::Device, detail::kCombineOp, args));
    ASSERT_EQ(device_level.back().block().memory_kind(), MemoryKind::Device);
  }
  const Value host = run_on(Target::Host, detail::kCombineOp, host_level);
  const Value device = run_on(Target::Device, detail::kCombineOp, device_level);
  expect_same_block(host.block(), device.block(), "var tree");
}

TEST(CudaDeviceOps, CombineRejectsMismatchedPartials) {
  TESSERA_SKIP_WITHOUT_GPU();
  detail::CombineParams p;
  p.reduced = {1};
  const std::vector<Value> args{Value(to_object(p, "CombineParams")), Value(Block::from_values<double>({1, 2}, {2, 1})),
                                Value(Block::from_values<double>({1, 2, 3}, {3, 1}))};
  EXPECT_THROW(run_on(Target::Device, detail::kCombineOp, args), ShapeError);
}

// ---- assemble -----------------------------------------------------------------------------------

Block random_block(DType dtype, const Shape& shape, std::mt19937_64& gen) {
  Block b(dtype, shape);
  auto* bytes = static_cast<unsigned char*>(b.raw());
  if (dtype == DType::Bool) {
    for (std::size_t i = 0; i < b.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(gen() & 1);
  } else {
    for (std::size_t i = 0; i < b.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(gen());
    if (dtype == DType::Float64)  // keep the values ordinary (random bytes make NaN payloads)
      for (std::int64_t i = 0; i < b.size(); ++i) b.data<double>()[i] = static_cast<double>(gen() % 100000) / 7.0;
    if (dtype == DType::Float32)
      for (std::int64_t i = 0; i < b.size(); ++i) b.data<float>()[i] = static_cast<float>(gen() % 100000) / 7.0f;
  }
  return b;
}

/**
 * An assemble of `out` from pieces: most axes are cut in two at a random point and every box
 * comes from its own source block, which holds the box at an offset with random margins (or
 * none, so that boxes span whole rows of their source and the copies merge axes).
 */
std::vector<Value> random_assemble(DType dtype, const Shape& out, std::mt19937_64& gen) {
  detail::AssembleParams p;
  p.dtype = dtype;
  p.shape = out;
  std::vector<Value> sources;
  const std::size_t nd = out.size();
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> cuts(nd);  // (start, extent) per axis
  for (std::size_t a = 0; a < nd; ++a) {
    if (out[a] >= 2 && gen() % 3 != 0) {  // some axes uncut: boxes then span them whole
      const std::int64_t c = 1 + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(out[a] - 1));
      cuts[a] = {{0, c}, {c, out[a] - c}};
    } else {
      cuts[a] = {{0, out[a]}};
    }
  }
  std::int64_t boxes = 1;
  for (const auto& c : cuts) boxes *= static_cast<std::int64_t>(c.size());
  for (std::int64_t b = 0; b < boxes; ++b) {
    detail::AssemblePiece piece;
    Shape src_shape;
    std::int64_t rest = b;
    for (std::size_t a = nd; a-- > 0;) {
      const auto& [start, extent] = cuts[a][static_cast<std::size_t>(rest % static_cast<std::int64_t>(cuts[a].size()))];
      rest /= static_cast<std::int64_t>(cuts[a].size());
      const std::int64_t before = gen() % 2 ? static_cast<std::int64_t>(gen() % 3) : 0;
      const std::int64_t after = gen() % 2 ? static_cast<std::int64_t>(gen() % 3) : 0;
      piece.dst_start.insert(piece.dst_start.begin(), start);
      piece.src_start.insert(piece.src_start.begin(), before);
      piece.extent.insert(piece.extent.begin(), extent);
      src_shape.insert(src_shape.begin(), before + extent + after);
    }
    piece.arg = static_cast<std::int32_t>(sources.size());
    sources.emplace_back(random_block(dtype, src_shape, gen));
    p.pieces.push_back(piece);
  }
  std::vector<Value> args{Value(to_object(p, "AssembleParams"))};
  for (auto& s : sources) args.push_back(std::move(s));
  return args;
}

TEST(CudaDeviceOps, AssembleMatchesHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(11);
  const std::vector<Shape> shapes = {{}, {1}, {17}, {6, 9}, {1, 5}, {4, 5, 7}, {3, 1, 4, 6}, {2, 3, 2, 3, 5}};
  for (DType dtype : {DType::Float64, DType::Float32, DType::Int64, DType::Int32, DType::Bool})
    for (const auto& shape : shapes)
      for (int rep = 0; rep < 4; ++rep) {
        const auto args = random_assemble(dtype, shape, gen);
        expect_device_matches_host(detail::kAssembleOp, args,
                                   std::string(dtype_name(dtype)) + " " + shape_to_string(shape) + " rep " +
                                       std::to_string(rep));
        if (HasFatalFailure()) return;
      }
}

TEST(CudaDeviceOps, AssemblePiecesFromOneBlock) {
  // Several pieces read one argument (a rechunk gathering from a larger chunk), with boxes that
  // span whole rows on one side only.
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(3);
  const Block src = random_block(DType::Float64, {8, 10, 12}, gen);
  detail::AssembleParams p;
  p.dtype = DType::Float64;
  p.shape = {4, 10, 12};
  p.pieces.push_back({0, {1, 0, 0}, {0, 0, 0}, {2, 10, 12}});   // whole rows: one copy
  p.pieces.push_back({0, {5, 0, 3}, {2, 0, 0}, {2, 10, 5}});    // partial rows
  p.pieces.push_back({0, {6, 0, 0}, {2, 0, 5}, {2, 10, 7}});    // the rest of those rows
  const std::vector<Value> args{Value(to_object(p, "AssembleParams")), Value(src)};
  expect_device_matches_host(detail::kAssembleOp, args, "one source");
}

TEST(CudaDeviceOps, AssembleRejectsBoxesOutsideTheBlock) {
  TESSERA_SKIP_WITHOUT_GPU();
  detail::AssembleParams p;
  p.dtype = DType::Float64;
  p.shape = {4};
  p.pieces.push_back({0, {2}, {0}, {4}});  // reads [2, 6) of a block of 4
  const std::vector<Value> args{Value(to_object(p, "AssembleParams")), Value(Block::from_values<double>({1, 2, 3, 4}, {4}))};
  EXPECT_THROW(run_on(Target::Device, detail::kAssembleOp, args), ShapeError);
}

// ---- matmul -------------------------------------------------------------------------------------

Block random_matrix(DType dtype, std::int64_t rows, std::int64_t cols, std::mt19937_64& gen) {
  Block b(dtype, {rows, cols});
  std::normal_distribution<double> normal;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(b.raw());
    for (std::int64_t i = 0; i < b.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) d[i] = static_cast<T>(normal(gen));
      else if constexpr (std::is_same_v<T, bool>) d[i] = (gen() & 1) != 0;
      else d[i] = static_cast<T>(static_cast<std::int64_t>(gen() % 101) - 50);
    }
  });
  return b;
}

/** Device matmul of one output chunk vs the host's, from chunks a[i] (m x k_i) and b[i] (k_i x n). */
void check_matmul(DType dtype, std::int64_t m, const std::vector<std::int64_t>& ks, std::int64_t n,
                  std::mt19937_64& gen) {
  const auto nk = static_cast<std::int64_t>(ks.size());
  std::vector<Block> as, bs;
  for (auto k : ks) {
    as.push_back(random_matrix(dtype, m, k, gen));
    bs.push_back(random_matrix(dtype, k, n, gen));
  }
  std::vector<Value> args{Value(to_object(nk, "int64"))};
  for (auto& a : as) args.emplace_back(a);
  for (auto& b : bs) args.emplace_back(b);
  std::string what = std::string(dtype_name(dtype)) + " " + std::to_string(m) + " x (";
  for (auto k : ks) what += std::to_string(k) + " ";
  what += ") x " + std::to_string(n);

  const Block host = run_on(Target::Host, detail::kMatmulOp, args).block();
  const Value device_value = run_on(Target::Device, detail::kMatmulOp, args);
  ASSERT_EQ(device_value.block().memory_kind(), MemoryKind::Device) << what;
  if (dtype != DType::Float64 && dtype != DType::Float32) {
    expect_same_block(host, device_value.block(), what);
    return;
  }
  const Block device = to_host(device_value.block());
  ASSERT_EQ(device.dtype(), host.dtype()) << what;
  ASSERT_EQ(device.shape(), host.shape()) << what;
  const auto h = host.to_doubles(), g = device.to_doubles();
  const double eps = dtype == DType::Float64 ? 1e-13 : 1e-5;
  std::vector<std::vector<double>> ad, bd;
  for (std::size_t c = 0; c < ks.size(); ++c) {
    ad.push_back(as[c].to_doubles());
    bd.push_back(bs[c].to_doubles());
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      // Error bound of a sum of products: relative to the sum of their magnitudes.
      double scale = 0;
      for (std::size_t c = 0; c < ks.size(); ++c)
        for (std::int64_t p = 0; p < ks[c]; ++p) scale += std::fabs(ad[c][i * ks[c] + p] * bd[c][p * n + j]);
      ASSERT_NEAR(g[i * n + j], h[i * n + j], eps * (scale + 1e-30)) << what << " at (" << i << ", " << j << ")";
    }
}

TEST(CudaDeviceOps, MatmulMatchesHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(17);
  for (DType dtype : {DType::Float64, DType::Float32, DType::Int64, DType::Int32}) {
    check_matmul(dtype, 37, {13, 20, 1}, 29, gen);
    check_matmul(dtype, 1, {7}, 1, gen);
    check_matmul(dtype, 5, {1}, 3, gen);
    check_matmul(dtype, 64, {64, 64}, 64, gen);
    check_matmul(dtype, 3, {0, 4}, 2, gen);  // an empty contracted chunk adds nothing
    check_matmul(dtype, 0, {3}, 4, gen);     // an empty output chunk
    if (HasFatalFailure()) return;
  }
}

TEST(CudaDeviceOps, MatmulOfBoolIsZerosAsOnTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(1);
  check_matmul(DType::Bool, 4, {3}, 5, gen);
}

TEST(CudaDeviceOps, MatmulRejectsMisalignedChunks) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(2);
  const std::vector<Value> args{Value(to_object(std::int64_t{1}, "int64")), Value(random_matrix(DType::Float64, 3, 4, gen)),
                                Value(random_matrix(DType::Float64, 5, 2, gen))};
  EXPECT_THROW(run_on(Target::Device, detail::kMatmulOp, args), ShapeError);
}

// ---- reshape ------------------------------------------------------------------------------------

TEST(CudaDeviceOps, ReshapeKeepsTheDeviceBuffer) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(4);
  const Block src = to_device(random_block(DType::Int32, {4, 6}, gen), 0);
  const std::vector<Value> args{Value(to_object(Shape{2, 12}, "Shape")), Value(src)};
  const Value out = run_on(Target::Device, detail::kReshapeOp, args);
  EXPECT_EQ(out.block().buffer(), src.buffer());
  EXPECT_EQ(out.block().shape(), (Shape{2, 12}));
  expect_device_matches_host(detail::kReshapeOp, args, "reshape");
}

}  // namespace
