// take of a generated array along one axis, drawn directly (generated_take.hpp): a random
// selection of the rows of a random array need not make the rows it drops. Each element is the
// generator's value at its global row-major index, the same function the blockwise programs
// call, so the values are those of x[idx] computed any other way.
#include "generated_take.hpp"

#include "chunk_map.hpp"
#include "generator_reads.hpp"
#include "io_chunks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {

namespace {

constexpr const char* kGenerateRowsOp = "tessera.array.generate_rows";

struct GenerateRowsParams {
  GeneratorSpec spec;
  int axis = 0;                           // the axis the rows are taken along
  std::vector<std::int64_t> rows;         // global indices along axis
  std::vector<std::int64_t> start, size;  // the other axes' ranges (axis's entry unused)
  template <class Ar>
  void serialize(Ar& ar) {
    ar(spec, axis, rows, start, size);
  }
};

Value generate_rows_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 1) throw Error("generate_rows: expected the parameters only");
  const auto p = from_value<GenerateRowsParams>(args[0]);
  const std::size_t nd = p.spec.shape.size();
  if (p.start.size() != nd || p.size.size() != nd || p.axis < 0 || static_cast<std::size_t>(p.axis) + 1 >= nd)
    throw Error("generate_rows: inconsistent parameters");
  Shape out_shape = p.size;
  out_shape[static_cast<std::size_t>(p.axis)] = static_cast<std::int64_t>(p.rows.size());
  Block out(p.spec.dtype, out_shape);
  const auto stride = p.spec.strides();
  auto* o = static_cast<unsigned char*>(out.raw());
  const std::size_t isz = itemsize(p.spec.dtype);
  const std::int64_t run = out_shape.back();  // contiguous along the last axis (not `axis`)
  const std::int64_t runs = run ? shape_size(out_shape) / run : 0;
  std::vector<std::int64_t> at(nd - 1, 0);  // position of the run, over the output's leading axes
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t index = p.start[nd - 1];  // global row-major index of the run's first element
    for (std::size_t a = 0; a + 1 < nd; ++a)
      index += stride[a] * (a == static_cast<std::size_t>(p.axis) ? p.rows[static_cast<std::size_t>(at[a])]
                                                                   : p.start[a] + at[a]);
    p.spec.draw(index, run, o + static_cast<std::size_t>(r * run) * isz);
    for (std::size_t a = nd - 1; a-- > 0;) {
      if (++at[a] < out_shape[a]) break;
      at[a] = 0;
    }
  }
  return Value(std::move(out));
}

const bool generated_take_registered = [] {
  register_op(kGenerateRowsOp, generate_rows_op);
  return true;
}();

}  // namespace

bool takes_generated_rows(const Array& x, int axis) {
  const Expr& e = expr_of(x);
  // Rows along the last axis would not be runs of the generator's indices.
  return axis + 1 < static_cast<int>(e.shape.size()) && GeneratorSpec::of(e).has_value();
}

Array take_generated_rows(const Array& x, const std::vector<std::vector<std::int64_t>>& pieces, int axis) {
  const Expr& e = expr_of(x);
  const auto spec = GeneratorSpec::of(e);
  if (!spec || axis + 1 >= static_cast<int>(e.shape.size()))
    throw Error("take_generated_rows: not a generated array taken along a leading axis");
  Chunks chunks = e.chunks;
  auto& along = chunks[static_cast<std::size_t>(axis)];
  along.clear();
  for (const auto& piece : pieces) along.push_back(static_cast<std::int64_t>(piece.size()));
  if (along.empty()) along.push_back(0);
  // The other axes' ranges from the output's chunk boxes (along `axis` the rows say).
  const auto boxes = io::chunk_boxes(chunks);
  std::vector<Value> params;
  params.reserve(boxes.size());
  for (std::size_t f = 0; f < boxes.size(); ++f) {
    GenerateRowsParams p;
    p.spec = *spec;
    p.axis = axis;
    p.start = boxes[f].start;
    p.size = boxes[f].shape;
    const auto piece = static_cast<std::size_t>(chunk_coords(chunks, static_cast<std::int64_t>(f))[static_cast<std::size_t>(axis)]);
    if (!pieces.empty()) p.rows = pieces[piece];
    params.emplace_back(to_object(p, "GenerateRowsParams"));
  }
  return chunk_map(kGenerateRowsOp, e.dtype, std::move(chunks), {}, std::move(params),
                   std::vector<std::vector<ChunkRead>>(boxes.size()), "take-generated");
}

}  // namespace tessera::detail
