// The gather ops (see gather.hpp): plans of contiguous runs, executed by memcpy on the host and
// by the device runtime's copies on a GPU. Both variants share the planning code, so they
// return the same values; only where the bytes are copied differs.
#include "gather.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {

namespace {

// Calls emit(run) for each run of the plan, in output order, without keeping them (a gather
// along the last axis has a run per element).
template <typename Emit>
void for_each_run(const GatherParams& p, const std::vector<Shape>& block_shapes, Emit&& emit) {
  const int nd = static_cast<int>(p.window.size());
  if (static_cast<int>(p.index.size()) != nd) throw Error("gather: index lists do not match the window's axes");
  // Per axis: each output position's block slot (-1: fill) and coordinate inside that block.
  std::vector<std::vector<int>> slot(nd);
  std::vector<std::vector<std::int64_t>> local(nd);
  std::vector<std::int64_t> counts(nd);
  for (int a = 0; a < nd; ++a) {
    std::vector<std::int64_t> offs{0};
    for (auto w : p.window[a]) offs.push_back(offs.back() + w);
    counts[a] = static_cast<std::int64_t>(p.window[a].size());
    for (auto x : p.index[a]) {
      if (x < 0) {
        slot[a].push_back(-1);
        local[a].push_back(0);
        continue;
      }
      if (x >= offs.back())
        throw IndexError("gather: index " + std::to_string(x) + " is out of bounds for a window of " +
                         std::to_string(offs.back()) + " elements on axis " + std::to_string(a));
      const auto s = (std::upper_bound(offs.begin(), offs.end(), x) - offs.begin()) - 1;
      slot[a].push_back(static_cast<int>(s));
      local[a].push_back(x - offs[s]);
    }
  }
  const std::int64_t nblocks = shape_size(counts);
  if (static_cast<std::int64_t>(block_shapes.size()) != nblocks)
    throw Error("gather: " + std::to_string(block_shapes.size()) + " blocks for a window of " +
                std::to_string(nblocks));
  std::vector<std::vector<std::int64_t>> strides(block_shapes.size());
  for (std::size_t b = 0; b < block_shapes.size(); ++b) {
    const auto coords = [&] {
      std::vector<std::int64_t> c(nd);
      std::int64_t f = static_cast<std::int64_t>(b);
      for (int a = nd - 1; a >= 0; --a) {
        c[a] = f % counts[a];
        f /= counts[a];
      }
      return c;
    }();
    Shape want(nd);
    for (int a = 0; a < nd; ++a) want[a] = p.window[a][coords[a]];
    if (block_shapes[b] != want)
      throw ShapeError("gather: block " + std::to_string(b) + " is " + shape_to_string(block_shapes[b]) +
                       ", expected " + shape_to_string(want));
    strides[b] = row_major_strides(want);
  }

  if (nd == 0) {
    emit(CopyRun{0, 0, 0, 1});
    return;
  }
  Shape out(nd);
  for (int a = 0; a < nd; ++a) out[a] = static_cast<std::int64_t>(p.index[a].size());
  if (shape_size(out) == 0) return;
  const int last = nd - 1;
  CopyRun pending{-1, 0, 0, 0};
  auto add = [&](int block, std::int64_t src, std::int64_t dst) {
    if (pending.n > 0 && pending.block == block && pending.dst + pending.n == dst &&
        (block < 0 || pending.src + pending.n == src)) {
      ++pending.n;
      return;
    }
    if (pending.n > 0) emit(pending);
    pending = CopyRun{block, src, dst, 1};
  };
  std::vector<std::int64_t> o(nd, 0);
  std::int64_t dst = 0;
  while (true) {
    bool fill = false;
    std::int64_t head = 0;  // row-major block index over the leading axes
    for (int a = 0; a < last; ++a) {
      if (slot[a][o[a]] < 0) fill = true;
      head = head * counts[a] + std::max(slot[a][o[a]], 0);
    }
    for (std::int64_t j = 0; j < out[last]; ++j, ++dst) {
      const int sl = slot[last][j];
      if (fill || sl < 0) {
        add(-1, 0, dst);
        continue;
      }
      const int b = static_cast<int>(head * counts[last] + sl);
      std::int64_t src = local[last][j] * strides[b][last];
      for (int a = 0; a < last; ++a) src += local[a][o[a]] * strides[b][a];
      add(b, src, dst);
    }
    int a = last - 1;
    for (; a >= 0; --a) {
      if (++o[a] < out[a]) break;
      o[a] = 0;
    }
    if (a < 0) break;
  }
  if (pending.n > 0) emit(pending);
}

/** Copies n elements of `isz` bytes; single elements of the common sizes without a memcpy call. */
inline void copy_elements(unsigned char* d, const unsigned char* s, std::int64_t n, std::size_t isz) {
  if (n == 1) {
    switch (isz) {
      case 8: std::memcpy(d, s, 8); return;
      case 4: std::memcpy(d, s, 4); return;
      case 1: *d = *s; return;
      default: break;
    }
  }
  std::memcpy(d, s, static_cast<std::size_t>(n) * isz);
}

}  // namespace

std::vector<CopyRun> plan_gather(const GatherParams& p, const std::vector<Shape>& block_shapes) {
  std::vector<CopyRun> runs;
  for_each_run(p, block_shapes, [&](const CopyRun& r) { runs.push_back(r); });
  return runs;
}

Block run_copy_plan(DType dtype, const Shape& shape, const std::vector<CopyRun>& runs,
                    const std::vector<const Block*>& blocks, double fill, int device, StreamView stream) {
  const std::size_t isz = itemsize(dtype);
  for (const Block* b : blocks)
    if (b->dtype() != dtype) throw DTypeError("gather: blocks of different dtypes");
  // The fill value as the dtype holds it, repeated for the longest fill run.
  std::int64_t longest = 0;
  for (const auto& r : runs)
    if (r.block < 0) longest = std::max(longest, r.n);
  std::vector<unsigned char> one(isz);
  dispatch_dtype(dtype, [&](auto tag) {
    const auto v = static_cast<decltype(tag)>(fill);
    std::memcpy(one.data(), &v, isz);
  });
  std::vector<unsigned char> fills(static_cast<std::size_t>(longest) * isz);
  for (std::int64_t i = 0; i < longest; ++i) std::memcpy(fills.data() + i * isz, one.data(), isz);
  if (device < 0) {
    Block out(dtype, shape);
    auto* dp = static_cast<unsigned char*>(out.raw());
    for (const auto& r : runs) {
      const void* sp = r.block < 0 ? static_cast<const void*>(fills.data())
                                   : static_cast<const unsigned char*>(blocks[r.block]->raw()) + r.src * isz;
      copy_elements(dp + r.dst * isz, static_cast<const unsigned char*>(sp), r.n, isz);
    }
    return out;
  }
  DeviceRuntime* rt = device_runtime();
  if (!rt) throw DeviceError("gather (device): no device runtime in this process");
  // Many short runs (a mask, indices along the last axis): one kernel launch from the CUDA back
  // end rather than a copy per run, where it is loaded.
  constexpr std::size_t kMostCopies = 32;
  if (runs.size() > kMostCopies && OpRegistry::global().contains(kGatherElementsOp)) {
    const OpInfo& kernel = OpRegistry::global().get(kGatherElementsOp);
    if (kernel.device) {
      const std::int64_t n = shape_size(shape);
      Block block_of(DType::Int32, {n}), offset(DType::Int64, {n});
      for (const auto& r : runs)
        for (std::int64_t i = 0; i < r.n; ++i) {
          block_of.data<std::int32_t>()[r.dst + i] = r.block;
          offset.data<std::int64_t>()[r.dst + i] = r.block < 0 ? 0 : r.src + i;
        }
      const GatherElementsParams p{dtype, shape, one};
      std::vector<Value> args{Value(to_object(p, "GatherElementsParams")), Value(std::move(block_of)), Value(std::move(offset))};
      for (const Block* b : blocks) args.emplace_back(*b);
      return kernel.device(OpContext{nullptr, Target::Device, device, stream}, args).block();
    }
  }
  Block out = device_block(dtype, shape, device, stream);
  auto* dp = static_cast<unsigned char*>(out.raw());
  for (const auto& r : runs) {
    const void* sp = r.block < 0 ? static_cast<const void*>(fills.data())
                                 : static_cast<const unsigned char*>(blocks[r.block]->raw()) + r.src * isz;
    rt->copy_async(dp + r.dst * isz, sp, static_cast<std::size_t>(r.n) * isz, stream);
  }
  // Fill runs copy from host memory that this call owns: wait before it goes away.
  if (longest > 0) rt->synchronize(stream);
  return out;
}

namespace {

struct Place {
  int device = -1;  // -1: host
  StreamView stream;
};

Place place_of(const OpContext& ctx, bool on_device) {
  if (!on_device) return {};
  const int device = ctx.device < 0 ? 0 : ctx.device;
  DeviceRuntime* rt = device_runtime();
  if (!rt) throw DeviceError("gather (device): no device runtime in this process");
  return {device, ctx.stream.is_default() ? rt->thread_stream(device) : ctx.stream};
}

/** A block's values readable here: device blocks are waited for (their copies are queued on
 *  the task's stream) and copied to the host. */
Block on_host(const Block& b, const Place& w) {
  if (b.memory_kind() != MemoryKind::Device) return b;
  device_runtime()->synchronize(w.stream);
  return to_host(b);
}

std::vector<std::int64_t> int_values(const Block& b) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(b.size()));
  dispatch_dtype(b.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(b.raw());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(p[i]);
  });
  return v;
}

std::vector<std::uint8_t> truth_values(const Block& b) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(b.size()));
  dispatch_dtype(b.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(b.raw());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = p[i] != T(0);
  });
  return v;
}

Value gather(const OpContext& ctx, std::span<const Value> args, bool on_device) {
  if (args.empty()) throw Error("gather: missing parameters");
  auto p = from_value<GatherParams>(args[0]);
  const Place w = place_of(ctx, on_device);
  std::int64_t nblocks = 1;
  for (const auto& win : p.window) nblocks *= static_cast<std::int64_t>(win.size());
  const std::size_t want = 1 + static_cast<std::size_t>(nblocks) + (p.index_axis >= 0 ? 1 : 0);
  if (args.size() != want)
    throw Error("gather: " + std::to_string(args.size()) + " arguments, expected " + std::to_string(want));
  std::vector<const Block*> blocks;
  std::vector<Shape> shapes;
  for (std::int64_t i = 0; i < nblocks; ++i) {
    blocks.push_back(&args[1 + i].block());
    shapes.push_back(blocks.back()->shape());
  }
  if (p.index_axis >= 0) {
    const auto idx = int_values(on_host(args.back().block(), w));
    auto& out = p.index.at(static_cast<std::size_t>(p.index_axis));
    out.clear();
    for (auto i : idx) {
      const std::int64_t k = i < 0 ? i + p.axis_len : i;
      if (k < 0 || k >= p.axis_len)
        throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(p.index_axis) +
                         " with size " + std::to_string(p.axis_len));
      out.push_back(k);
    }
  }
  Shape shape;
  for (const auto& ix : p.index) shape.push_back(static_cast<std::int64_t>(ix.size()));
  if (w.device >= 0) return Value(run_copy_plan(p.dtype, shape, plan_gather(p, shapes), blocks, p.fill, w.device, w.stream));
  // Host: each run is copied as it is planned.
  Block out(p.dtype, shape);
  for (const Block* b : blocks)
    if (b->dtype() != p.dtype) throw DTypeError("gather: blocks of different dtypes");
  const std::size_t isz = itemsize(p.dtype);
  std::vector<unsigned char> one(isz);
  dispatch_dtype(p.dtype, [&](auto tag) {
    const auto v = static_cast<decltype(tag)>(p.fill);
    std::memcpy(one.data(), &v, isz);
  });
  auto* dp = static_cast<unsigned char*>(out.raw());
  for_each_run(p, shapes, [&](const CopyRun& r) {
    if (r.block < 0) {
      for (std::int64_t i = 0; i < r.n; ++i) std::memcpy(dp + (r.dst + i) * isz, one.data(), isz);
      return;
    }
    copy_elements(dp + r.dst * isz, static_cast<const unsigned char*>(blocks[r.block]->raw()) + r.src * isz, r.n, isz);
  });
  return Value(std::move(out));
}

Value mask_select(const OpContext& ctx, std::span<const Value> args, bool on_device) {
  if (args.size() != 3) throw Error("mask_select: expected parameters, a block and a mask");
  const auto p = from_value<MaskSelectParams>(args[0]);
  const Place w = place_of(ctx, on_device);
  const Block& x = args[1].block();
  const auto mask = truth_values(on_host(args[2].block(), w));
  const int nd = x.ndim();
  if (p.axis < 0 || p.axis >= nd) throw ShapeError("mask_select: axis " + std::to_string(p.axis) + " of a " +
                                                   std::to_string(nd) + "-d block");
  if (static_cast<std::int64_t>(mask.size()) != x.shape()[p.axis])
    throw ShapeError("boolean index did not match indexed array along axis " + std::to_string(p.axis) +
                     "; size of axis is " + std::to_string(x.shape()[p.axis]) + " but size of boolean index is " +
                     std::to_string(mask.size()));
  if (w.device < 0) {
    // Host: the selected slabs copied directly (the slab is one element when axis is the last).
    std::int64_t outer = 1, inner = 1, kept = 0;
    for (int a = 0; a < p.axis; ++a) outer *= x.shape()[a];
    for (int a = p.axis + 1; a < nd; ++a) inner *= x.shape()[a];
    for (auto m : mask) kept += m;
    Shape shape = x.shape();
    shape[p.axis] = kept;
    Block out(x.dtype(), shape);
    const std::size_t isz = itemsize(x.dtype());
    const std::size_t slab = static_cast<std::size_t>(inner) * isz;
    const auto* sp = static_cast<const unsigned char*>(x.raw());
    auto* dp = static_cast<unsigned char*>(out.raw());
    const auto n = static_cast<std::int64_t>(mask.size());
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < n; ++i) {
        if (!mask[static_cast<std::size_t>(i)]) continue;
        copy_elements(dp, sp + (o * n + i) * static_cast<std::int64_t>(slab), inner, isz);
        dp += slab;
      }
    return Value(std::move(out));
  }
  GatherParams g;
  g.dtype = x.dtype();
  for (int a = 0; a < nd; ++a) {
    g.window.push_back({x.shape()[a]});
    std::vector<std::int64_t> ix;
    for (std::int64_t i = 0; i < x.shape()[a]; ++i)
      if (a != p.axis || mask[static_cast<std::size_t>(i)]) ix.push_back(i);
    g.index.push_back(std::move(ix));
  }
  Shape shape;
  for (const auto& ix : g.index) shape.push_back(static_cast<std::int64_t>(ix.size()));
  return Value(run_copy_plan(g.dtype, shape, plan_gather(g, {x.shape()}), {&x}, 0, w.device, w.stream));
}

Value mask_band(const OpContext& ctx, std::span<const Value> args, bool on_device) {
  if (args.empty()) throw Error("mask_band: missing parameters");
  const auto p = from_value<MaskBandParams>(args[0]);
  const Place w = place_of(ctx, on_device);
  std::int64_t nb = 1;
  for (auto c : p.counts) nb *= c;
  if (args.size() != static_cast<std::size_t>(1 + 2 * nb)) throw Error("mask_band: expected the band's blocks and masks");
  std::vector<const Block*> xs;
  std::vector<std::vector<std::uint8_t>> masks;
  for (std::int64_t b = 0; b < nb; ++b) {
    xs.push_back(&args[1 + b].block());
    masks.push_back(truth_values(on_host(args[1 + nb + b].block(), w)));
    if (static_cast<std::int64_t>(masks.back().size()) != xs.back()->size())
      throw ShapeError("boolean index of shape " + shape_to_string(args[1 + nb + b].block().shape()) +
                       " does not match a chunk of shape " + shape_to_string(xs.back()->shape()));
  }
  const DType dtype = xs[0]->dtype();
  const int nd = xs[0]->ndim();
  if (static_cast<int>(p.counts.size()) != nd - 1) throw ShapeError("mask_band: chunk counts do not match the blocks");
  // Block strides over the chunk grid of axes 1..nd-1, and each chunk's extent there.
  std::vector<std::int64_t> grid(nd, 1);
  for (int a = nd - 2; a >= 1; --a) grid[a] = grid[a + 1] * p.counts[a];
  std::vector<std::vector<std::int64_t>> extent(nd);
  for (int a = 1; a < nd; ++a)
    for (std::int64_t c = 0; c < p.counts[a - 1]; ++c) extent[a].push_back(xs[static_cast<std::size_t>(c * grid[a])]->shape()[a]);
  const std::int64_t rows = xs[0]->shape()[0];
  std::int64_t kept = 0;
  for (const auto& m : masks)
    for (auto v : m) kept += v;
  // The host copies each element as it is found; a device collects the runs for one plan.
  const bool host = w.device < 0;
  Block host_out = host ? Block(dtype, {kept}) : Block();
  auto* hp = host ? static_cast<unsigned char*>(host_out.raw()) : nullptr;
  const std::size_t isz = itemsize(dtype);
  std::vector<CopyRun> runs;
  CopyRun pending{-1, 0, 0, 0};
  std::int64_t dst = 0;
  auto add = [&](int b, std::int64_t src) {
    if (host) {
      copy_elements(hp + dst * isz, static_cast<const unsigned char*>(xs[static_cast<std::size_t>(b)]->raw()) + src * isz, 1, isz);
    } else if (pending.n > 0 && pending.block == b && pending.src + pending.n == src) {
      ++pending.n;
    } else {
      if (pending.n > 0) runs.push_back(pending);
      pending = CopyRun{b, src, dst, 1};
    }
    ++dst;
  };
  // Odometer over the band's rows and axes 1..nd-2 as (chunk, coordinate in chunk) pairs; along
  // the last axis, each chunk's segment in turn.
  std::vector<std::int64_t> chunk(nd, 0), local(nd, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    local[0] = r;
    std::fill(chunk.begin() + 1, chunk.end(), 0);
    std::fill(local.begin() + 1, local.end(), 0);
    while (true) {
      for (std::int64_t c = 0; c < (nd > 1 ? p.counts[nd - 2] : 1); ++c) {
        std::int64_t b = nd > 1 ? c : 0;
        for (int a = 1; a < nd - 1; ++a) b += chunk[a] * grid[a];
        const Block& blk = *xs[static_cast<std::size_t>(b)];
        std::int64_t off = 0;
        for (int a = 0; a < nd - 1; ++a) off = off * blk.shape()[a] + local[a];
        const std::int64_t len = nd > 1 ? blk.shape()[nd - 1] : blk.shape()[0];
        if (nd > 1) off *= len;
        const auto& m = masks[static_cast<std::size_t>(b)];
        for (std::int64_t j = 0; j < len; ++j)
          if (m[static_cast<std::size_t>(off + j)]) add(static_cast<int>(b), off + j);
        if (nd == 1) break;
      }
      int a = nd - 2;
      for (; a >= 1; --a) {
        if (++local[a] < extent[a][static_cast<std::size_t>(chunk[a])]) break;
        local[a] = 0;
        if (++chunk[a] < p.counts[a - 1]) break;
        chunk[a] = 0;
      }
      if (a < 1) break;
    }
  }
  if (host) return Value(std::move(host_out));
  if (pending.n > 0) runs.push_back(pending);
  return Value(run_copy_plan(dtype, {kept}, runs, xs, 0, w.device, w.stream));
}

Value argwhere(const OpContext& ctx, std::span<const Value> args, bool on_device) {
  if (args.size() != 2) throw Error("argwhere: expected parameters and one block");
  const auto p = from_value<ArgwhereParams>(args[0]);
  const Place w = place_of(ctx, on_device);
  const auto nz = truth_values(on_host(args[1].block(), w));
  const auto nd = static_cast<std::int64_t>(p.shape.size());
  if (p.column >= nd) throw ShapeError("argwhere: column " + std::to_string(p.column) + " of " + std::to_string(nd));
  std::int64_t k = 0;
  for (auto v : nz) k += v;
  Block out = p.column >= 0 ? Block(DType::Int64, {k}) : Block(DType::Int64, {k, nd});
  auto* o = out.data<std::int64_t>();
  std::vector<std::int64_t> coord(static_cast<std::size_t>(nd));
  for (std::size_t i = 0; i < nz.size(); ++i) {
    if (!nz[i]) continue;
    std::int64_t f = p.start + static_cast<std::int64_t>(i);
    for (std::int64_t a = nd - 1; a >= 0; --a) {
      coord[a] = f % p.shape[a];
      f /= p.shape[a];
    }
    if (p.column >= 0) {
      *o++ = coord[p.column];
    } else {
      for (std::int64_t a = 0; a < nd; ++a) *o++ = coord[a];
    }
  }
  // The coordinates are computed where the mask was read; a device task returns them there.
  if (w.device >= 0) return Value(to_device(out, w.device, w.stream));
  return Value(std::move(out));
}

// The shape of a chunk (an int64 vector), for compute_chunk_sizes: metadata only, so the same
// code serves device blocks.
Value chunk_shape(const OpContext&, std::span<const Value> args) {
  if (args.size() != 1) throw Error("chunk_shape: expected one block");
  const Shape& s = args[0].block().shape();
  return Value(Block::from_values<std::int64_t>(std::vector<std::int64_t>(s.begin(), s.end()),
                                                {static_cast<std::int64_t>(s.size())}));
}

template <Value (*F)(const OpContext&, std::span<const Value>, bool), bool D>
Value variant(const OpContext& ctx, std::span<const Value> args) {
  return F(ctx, args, D);
}

const bool gather_registered = [] {
  register_op(kGatherOp, variant<gather, false>);
  register_device_op(kGatherOp, variant<gather, true>);
  register_op(kMaskSelectOp, variant<mask_select, false>);
  register_device_op(kMaskSelectOp, variant<mask_select, true>);
  register_op(kMaskBandOp, variant<mask_band, false>);
  register_device_op(kMaskBandOp, variant<mask_band, true>);
  register_op(kArgwhereOp, variant<argwhere, false>);
  register_device_op(kArgwhereOp, variant<argwhere, true>);
  register_op(kChunkShapeOp, chunk_shape);
  register_device_op(kChunkShapeOp, chunk_shape);
  return true;
}();

}  // namespace
}  // namespace tessera::detail
