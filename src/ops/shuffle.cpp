// What every ShuffleExchange shares (tessera/ops/shuffle.hpp): checking a send's rows and
// offsets, and cutting the rows into one piece per output partition.
#include "tessera/ops/shuffle.hpp"

#include "tessera/core/native.hpp"

namespace tessera {

std::vector<Value> cut_by_output(const ShuffleRun& run, const Value& rows, const std::vector<std::int64_t>& offsets,
                                 std::int64_t first, std::int64_t last) {
  const std::string what = "shuffle " + run.token;
  if (!rows.is_native()) throw Error(what + ": the rows to send are " + rows.describe() + ", not a table");
  const NativeCodec& codec = native_codec(rows.native().type);
  if (!codec.rows || !codec.split)
    throw Error(what + ": rows of type " + rows.native().type + " cannot be cut into shards");
  const std::int64_t total = codec.rows(rows.native());
  if (static_cast<std::int64_t>(offsets.size()) != run.outputs + 1 || offsets.front() != 0 || offsets.back() != total)
    throw Error(what + ": " + std::to_string(offsets.size()) + " offsets for " + std::to_string(run.outputs) +
                " outputs and " + std::to_string(total) + " rows (expected outputs + 1, from 0 to the row count)");
  if (first < 0 || last < first || last > run.outputs) throw Error(what + ": outputs " + std::to_string(first) + " to " + std::to_string(last));
  // Pieces: the rows before `first`'s, one per output in [first, last), the rows after.
  std::vector<std::int64_t> counts{offsets[static_cast<std::size_t>(first)]};
  for (auto j = first; j < last; ++j) {
    const auto n = offsets[static_cast<std::size_t>(j) + 1] - offsets[static_cast<std::size_t>(j)];
    if (n < 0) throw Error(what + ": offsets go down at output " + std::to_string(j));
    counts.push_back(n);
  }
  counts.push_back(total - offsets[static_cast<std::size_t>(last)]);
  auto pieces = codec.split(rows.native(), counts);
  std::vector<Value> out;
  out.reserve(static_cast<std::size_t>(last - first));
  for (std::size_t i = 1; i + 1 < pieces.size(); ++i) out.emplace_back(std::move(pieces[i]));
  return out;
}

}  // namespace tessera
