// The tasks of the peer-to-peer shuffle (docs/dataframe-shuffle.md): N transfers, one barrier
// and M unpacks, whatever N and M; the shards go through the process's ShuffleExchange
// (OpContext::shuffle), never through the graph or the scheduler.
//
//   transfer i: joins the run, orders the partition's rows by output partition (the hash of the
//               key columns, or a sort's ranges), sends them (the exchange sends each owner its
//               part), says the input is done; returns a zero-row table of the partition's schema;
//   barrier:    passes once every input was sent in the current run; returns that schema with
//               the run id in its metadata;
//   unpack j:   takes output j's shards (ordered by input partition, so the row order does not
//               depend on timing) and concatenates them.
// Each of them carries retries: when a participant is lost the run is replaced, and a task
// that was running in the old one fails with ShuffleRunLost and runs again in the new one.
#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <charconv>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_backend.hpp"
#include "device_convert.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "partition_host.hpp"
#include "shuffle_p2p.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "tessera/ops/shuffle.hpp"

namespace tessera::dataframe::detail {

namespace {

constexpr const char* kRunKey = "tessera.shuffle.run";

ShuffleExchange& exchange_of(const OpContext& ctx) {
  if (!ctx.shuffle) throw Error("shuffle: this executor has no shuffle service (the peer-to-peer shuffle needs one)");
  return *ctx.shuffle;
}

ShuffleKeys keys_of(const P2PShuffleSpec& p) { return ShuffleKeys{p.transfer_prefix, p.barrier, p.unpack_prefix}; }

Value transfer_op(const OpContext& ctx, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<P2PShuffleSpec>(arg(args, 0).object());
  const auto input = from_object<std::int64_t>(arg(args, 1).object());
  auto table = table_of(arg(args, 2), "shuffle")->ReplaceSchemaMetadata(nullptr);
  if (p.outputs < 1 || p.outputs > (std::int64_t{1} << 31))
    throw Error("shuffle: " + std::to_string(p.outputs) + " output partitions (1 to 2^31)");
  std::vector<std::uint32_t> parts;
  if (p.range_column.empty()) {
    parts = hash_partitions(*table, p.on, static_cast<std::uint32_t>(p.outputs));
  } else {
    auto bounds = table_of(arg(args, 3), "sort_values (bounds)");
    parts = range_partitions(*table, *bounds, p.range_column, p.outputs, p.ascending, p.nulls_first);
  }
  ShuffleExchange& ex = exchange_of(ctx);
  const ShuffleRun run = ex.join(p.token, p.inputs, p.outputs, keys_of(p));
  // The rows reordered by output partition, one copy; the exchange cuts them into the part each
  // owner gets (views), and copies a part compact only to send it.
  std::vector<std::int64_t> offsets;
  auto rows = order_by_partition(table, parts, p.outputs, offsets);
  ex.send(run, input, table_value(std::move(rows)), offsets);
  ex.input_done(run, input);
  // A new empty table, not a zero-row slice: a slice would keep the whole input partition alive
  // (and counted in the worker's memory) for as long as the transfer's result is held, until
  // the shuffle ends.
  return table_value(unwrap(arrow::Table::MakeEmpty(table->schema()), "shuffle"));
}

Value barrier_op(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<P2PShuffleSpec>(arg(args, 0).object());
  if (args.size() < 2) throw Error("shuffle: a barrier without transfers");
  ShuffleExchange& ex = exchange_of(ctx);
  const ShuffleRun run = ex.join(p.token, p.inputs, p.outputs, keys_of(p));
  ex.barrier(p.token, run.id);
  auto schema = table_of(args[1], "shuffle")->schema();
  auto metadata = std::make_shared<arrow::KeyValueMetadata>(std::vector<std::string>{kRunKey},
                                                            std::vector<std::string>{std::to_string(run.id)});
  return table_value(arrow::Table::MakeEmpty(schema->WithMetadata(metadata)).ValueOrDie());
}

// The run id a barrier's result carries.
std::int64_t run_of(const arrow::Table& barrier) {
  const auto& metadata = barrier.schema()->metadata();
  const int at = metadata ? metadata->FindKey(kRunKey) : -1;
  std::int64_t run = -1;
  if (at >= 0) {
    const std::string& text = metadata->value(at);
    std::from_chars(text.data(), text.data() + text.size(), run);
  }
  if (run < 0) throw Error("shuffle: an unpack task's input is not its shuffle's barrier");
  return run;
}

Value unpack_op(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<P2PShuffleSpec>(arg(args, 0).object());
  const auto output = from_object<std::int64_t>(arg(args, 1).object());
  auto barrier = table_of(arg(args, 2), "shuffle");
  const std::int64_t run = run_of(*barrier);
  auto shards = exchange_of(ctx).take(p.token, run, output);
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (const auto& v : shards) tables.push_back(table_of(v, "shuffle")->ReplaceSchemaMetadata(nullptr));
  if (tables.empty()) return table_value(barrier->ReplaceSchemaMetadata(nullptr));
  if (tables.size() == 1) return table_value(tables.front());
  return table_value(unwrap(arrow::ConcatenateTables(tables), "shuffle: assembling a partition"));
}

// The device variants: the same steps over device frames, the split on the device
// (device_backend.hpp); the shards travel as device frames (host bytes over TCP).
Value transfer_device(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<P2PShuffleSpec>(arg(args, 0).object());
  const auto input = from_object<std::int64_t>(arg(args, 1).object());
  const Relational rel(ctx);
  const DeviceFrame frame = rel.input(device_frame_arg(arg(args, 2), "shuffle"));
  std::vector<std::int64_t> offsets;
  DeviceFrame rows = p.range_column.empty()
                         ? rel.hash_split(frame, p.on, p.outputs, offsets)
                         : rel.range_split(frame, p.range_column,
                                           range_bounds(*table_of(arg(args, 3), "sort_values (bounds)"), p.range_column,
                                                        p.outputs),
                                           p.outputs, p.ascending, p.nulls_first, offsets);
  ShuffleExchange& ex = exchange_of(ctx);
  const ShuffleRun run = ex.join(p.token, p.inputs, p.outputs, keys_of(p));
  ex.send(run, input, frame_value(std::move(rows)), offsets);
  ex.input_done(run, input);
  // No rows, the same columns; new empty blocks, not a slice, which would keep the input alive.
  DeviceFrame empty;
  for (const auto& c : frame.columns) {
    DeviceColumn e = c;
    e.values = Block(c.values.dtype(), {0});
    e.valid = Block();
    empty.columns.push_back(std::move(e));
  }
  return frame_value(std::move(empty));
}

Value unpack_device(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<P2PShuffleSpec>(arg(args, 0).object());
  const auto output = from_object<std::int64_t>(arg(args, 1).object());
  auto barrier = table_of(arg(args, 2), "shuffle");
  const std::int64_t run = run_of(*barrier);
  const Relational rel(ctx);
  std::vector<DeviceFrame> frames;
  for (const auto& v : exchange_of(ctx).take(p.token, run, output)) frames.push_back(rel.input(device_frame_arg(v, "shuffle")));
  if (frames.empty()) return rel.output(frame_from_table(*barrier->ReplaceSchemaMetadata(nullptr)));
  return rel.output(rel.concat(frames));
}

const bool p2p_ops_registered = [] {
  register_device_op(kOpShuffleTransfer, transfer_device);
  register_device_op(kOpShuffleP2PUnpack, unpack_device);
  register_op(kOpShuffleTransfer, transfer_op);
  register_op(kOpShuffleBarrier, barrier_op);
  register_op(kOpShuffleP2PUnpack, unpack_op);
  return true;
}();

}  // namespace

Object p2p_shuffle_params(const P2PShuffleSpec& spec) { return to_object(spec, "tessera.frame.P2PShuffleSpec"); }

}  // namespace tessera::dataframe::detail
