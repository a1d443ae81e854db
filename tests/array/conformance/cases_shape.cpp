// Conformance cases of the creation and shape functions (creation_more.hpp, shape.hpp) and of
// chunk specifications (chunks.hpp).
#include <optional>

#include "conformance.hpp"

namespace {

using namespace tessera;
namespace tc = tessera_conformance;

// Creation cases take one "like" input so that a device run creates on the device.
Array placed(const Array& x, const tc::Inputs& in) {
  return !in.empty() && in[0].target() == Target::Device ? x.to_device() : x;
}

ChunkSpec chunk_param(const tc::Params& p) {
  if (!p.has("chunks")) return auto_chunk;
  const std::string& s = p.s("chunks");
  if (s == "auto") return auto_chunk;
  return ChunkSpec(p.ints("chunks"));
}

std::optional<DType> dtype_param(const tc::Params& p) {
  if (!p.has("dtype")) return std::nullopt;
  return dtype_from_name(p.s("dtype"));
}

std::optional<int> axis_param(const tc::Params& p) {
  if (!p.has("axis")) return std::nullopt;
  return static_cast<int>(p.i("axis"));
}

}  // namespace

// ---- creation ----------------------------------------------------------------------------------
TESSERA_CONFORMANCE_CASE(linspace) {
  auto [y, step] = linspace_with_step(p.d("start"), p.d("stop"), p.i("num"), p.b("endpoint", true), chunk_param(p),
                                      dtype_param(p));
  return {placed(y, in), scalar(step)};
}

TESSERA_CONFORMANCE_CASE(logspace) {
  return {placed(logspace(p.d("start"), p.d("stop"), p.i("num"), p.b("endpoint", true), p.d("base", 10.0),
                          chunk_param(p), dtype_param(p)),
                 in)};
}

TESSERA_CONFORMANCE_CASE(geomspace) {
  return {placed(geomspace(p.d("start"), p.d("stop"), p.i("num"), p.b("endpoint", true), chunk_param(p), dtype_param(p)),
                 in)};
}

TESSERA_CONFORMANCE_CASE(eye) {
  std::optional<std::int64_t> M;
  if (p.has("M")) M = p.i("M");
  return {placed(eye(p.i("N"), chunk_param(p), M, p.i("k", 0), dtype_param(p).value_or(DType::Float64)), in)};
}

TESSERA_CONFORMANCE_CASE(identity) {
  return {placed(identity(p.i("n"), chunk_param(p), dtype_param(p).value_or(DType::Float64)), in)};
}

TESSERA_CONFORMANCE_CASE(tri) {
  std::optional<std::int64_t> M;
  if (p.has("M")) M = p.i("M");
  return {placed(tri(p.i("N"), M, p.i("k", 0), dtype_param(p).value_or(DType::Float64), chunk_param(p)), in)};
}

TESSERA_CONFORMANCE_CASE(indices) {
  return {placed(indices(p.ints("dims"), dtype_param(p).value_or(DType::Int64), chunk_param(p)), in)};
}

TESSERA_CONFORMANCE_CASE(tril) { return {tril(in[0], p.i("k", 0))}; }
TESSERA_CONFORMANCE_CASE(triu) { return {triu(in[0], p.i("k", 0))}; }
TESSERA_CONFORMANCE_CASE(diag) { return {diag(in[0], p.i("k", 0))}; }
TESSERA_CONFORMANCE_CASE(diagonal) {
  return {diagonal(in[0], p.i("offset", 0), static_cast<int>(p.i("axis1", 0)), static_cast<int>(p.i("axis2", 1)))};
}

TESSERA_CONFORMANCE_CASE(meshgrid) {
  return meshgrid(in, p.s("indexing", "xy") == "ij" ? MeshIndexing::IJ : MeshIndexing::XY);
}

TESSERA_CONFORMANCE_CASE(like) {
  const std::string& f = p.s("f");
  const auto t = dtype_param(p);
  if (f == "zeros") return {zeros_like(in[0], t)};
  if (f == "ones") return {ones_like(in[0], t)};
  if (f == "empty") return {empty_like(in[0], t)};
  return {full_like(in[0], p.d("value"), t)};
}

// ---- shape -------------------------------------------------------------------------------------
TESSERA_CONFORMANCE_CASE(squeeze) {
  if (p.has("axis")) return {squeeze(in[0], p.axes("axis"))};
  return {squeeze(in[0])};
}
TESSERA_CONFORMANCE_CASE(expand_dims) { return {expand_dims(in[0], p.axes("axis"))}; }
TESSERA_CONFORMANCE_CASE(atleast) {
  const auto n = p.i("n");
  return {n == 1 ? atleast_1d(in[0]) : n == 2 ? atleast_2d(in[0]) : atleast_3d(in[0])};
}
TESSERA_CONFORMANCE_CASE(ravel) { return {ravel(in[0])}; }
TESSERA_CONFORMANCE_CASE(flip) {
  if (p.has("axis")) return {flip(in[0], p.axes("axis"))};
  return {flip(in[0])};
}
TESSERA_CONFORMANCE_CASE(fliplr) { return {fliplr(in[0])}; }
TESSERA_CONFORMANCE_CASE(flipud) { return {flipud(in[0])}; }
TESSERA_CONFORMANCE_CASE(rot90) {
  const auto axes = p.has("axes") ? p.axes("axes") : std::vector<int>{0, 1};
  return {rot90(in[0], static_cast<int>(p.i("k", 1)), {axes[0], axes[1]})};
}
TESSERA_CONFORMANCE_CASE(swapaxes) {
  return {swapaxes(in[0], static_cast<int>(p.i("axis1")), static_cast<int>(p.i("axis2")))};
}
TESSERA_CONFORMANCE_CASE(moveaxis) { return {moveaxis(in[0], p.axes("source"), p.axes("destination"))}; }
TESSERA_CONFORMANCE_CASE(rollaxis) {
  return {rollaxis(in[0], static_cast<int>(p.i("axis")), static_cast<int>(p.i("start", 0)))};
}
TESSERA_CONFORMANCE_CASE(roll) {
  if (!p.has("axis")) return {roll(in[0], p.i("shift"))};
  return {roll(in[0], p.ints("shift"), p.axes("axis"))};
}
TESSERA_CONFORMANCE_CASE(pad) {
  const auto w = p.ints("width");  // before, after for each axis (or one pair)
  std::vector<std::pair<std::int64_t, std::int64_t>> widths;
  for (std::size_t i = 0; i + 1 < w.size(); i += 2) widths.emplace_back(w[i], w[i + 1]);
  const std::string& m = p.s("mode");
  const PadMode mode = m == "edge"        ? PadMode::Edge
                       : m == "reflect"   ? PadMode::Reflect
                       : m == "symmetric" ? PadMode::Symmetric
                       : m == "wrap"      ? PadMode::Wrap
                                          : PadMode::Constant;
  return {pad(in[0], widths, mode, p.d("value", 0.0))};
}
TESSERA_CONFORMANCE_CASE(tile) { return {tile(in[0], p.ints("reps"))}; }
TESSERA_CONFORMANCE_CASE(repeat) { return {repeat(in[0], p.i("repeats"), axis_param(p))}; }
TESSERA_CONFORMANCE_CASE(block2x2) { return {block({{in[0], in[1]}, {in[2], in[3]}})}; }
TESSERA_CONFORMANCE_CASE(block1) { return {block(BlockList(std::vector<BlockList>(in.begin(), in.end())))}; }
TESSERA_CONFORMANCE_CASE(stack_fn) {
  const std::string& f = p.s("f");
  if (f == "hstack") return {hstack(in)};
  if (f == "vstack") return {vstack(in)};
  if (f == "dstack") return {dstack(in)};
  return {column_stack(in)};
}
TESSERA_CONFORMANCE_CASE(split) {
  const int axis = static_cast<int>(p.i("axis", 0));
  if (p.has("sections")) return split(in[0], p.i("sections"), axis);
  return split(in[0], p.ints("indices"), axis);
}
TESSERA_CONFORMANCE_CASE(array_split) { return array_split(in[0], p.i("sections"), static_cast<int>(p.i("axis", 0))); }
TESSERA_CONFORMANCE_CASE(broadcast_arrays) { return broadcast_arrays(in); }

// ---- chunks ------------------------------------------------------------------------------------
// Rechunks to explicit, irregular chunks ("2,3,1/4": axes separated by '/') or auto, then
// computes something that reads across the new boundaries.
TESSERA_CONFORMANCE_CASE(rechunk_irregular) {
  const std::string& text = p.s("chunks");
  ChunkSpec spec = auto_chunk;
  if (text != "auto") {
    Chunks c(1);
    std::string num;
    for (char ch : text + "/") {
      if (ch == ',' || ch == '/') {
        c.back().push_back(std::stoll(num));
        num.clear();
        if (ch == '/') c.emplace_back();
      } else {
        num += ch;
      }
    }
    c.pop_back();
    spec = ChunkSpec(c);
  }
  const Array y = in[0].rechunk(spec);
  return {y, y + flip(y)};
}

// The same array twice: the result's chunks repeat keys (run on the cluster too).
TESSERA_CONFORMANCE_CASE(concat_self) {
  return {concatenate({in[0], in[0]}, static_cast<int>(p.i("axis", 0)))};
}

// reshape_blockwise to p.ints("shape"): outputs the result and, reshaped back blockwise onto
// in[0]'s chunks, the round trip (which must be in[0] exactly). The order of the result's
// elements depends on the chunking; cases_shape.py checks it holds the same elements.
TESSERA_CONFORMANCE_CASE(reshape_blockwise_case) {
  const auto shape = p.ints("shape");
  const Array y = reshape_blockwise(in[0], Shape(shape.begin(), shape.end()));
  return {y, reshape_blockwise(y, in[0].shape(), in[0].chunks())};
}
