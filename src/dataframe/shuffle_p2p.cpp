// Lowering a shuffle to the peer-to-peer tasks: see shuffle_p2p.hpp.
#include "shuffle_p2p.hpp"

#include <cstdlib>

#include "tessera/core/error.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {

namespace {

// Every task of a run may be caught by the loss of a participant: it fails with ShuffleRunLost
// and runs again in the next run. Enough for a few losses in a row.
constexpr int kShuffleRetries = 8;

// `device`: a device task (device frames in and out), as the other tasks of a device frame.
Task p2p_task(Key key, const char* op, std::vector<Arg> args, bool device) {
  Task t;
  t.key = std::move(key);
  t.op = op;
  t.args = std::move(args);
  t.annotations.retries = kShuffleRetries;
  if (device) {
    t.annotations.target = Target::Device;
    t.annotations.resources["GPU"] = 1;
  }
  return t;
}

}  // namespace

ShuffleMethod shuffle_method(const Executor* executor) {
  if (const char* forced = std::getenv("TESSERA_SHUFFLE_METHOD"); forced && *forced) {
    const std::string m = forced;
    if (m == "tasks") return ShuffleMethod::Tasks;
    if (m == "p2p") return ShuffleMethod::PeerToPeer;
    throw Error("TESSERA_SHUFFLE_METHOD is '" + m + "': expected 'tasks' or 'p2p'");
  }
  // A cluster's Client names itself "distributed..." (client.cpp).
  if (executor && executor->name().rfind("distributed", 0) == 0) return ShuffleMethod::PeerToPeer;
  return ShuffleMethod::Tasks;
}

std::vector<Key> add_p2p_shuffle(Graph& graph, const std::string& name, const std::vector<Key>& inputs,
                                 std::int64_t outputs, const std::vector<std::string>& on,
                                 const std::string& range_column, bool ascending, bool nulls_first,
                                 const std::optional<Key>& bounds, bool device) {
  P2PShuffleSpec spec;
  spec.token = name;
  spec.on = on;
  spec.range_column = range_column;
  spec.ascending = ascending;
  spec.nulls_first = nulls_first;
  spec.inputs = static_cast<std::int64_t>(inputs.size());
  spec.outputs = outputs;
  spec.transfer_prefix = name + "-transfer-";
  spec.barrier = name + "-barrier";
  spec.unpack_prefix = name + "-";
  const Value params(p2p_shuffle_params(spec));
  std::vector<Arg> barrier_args{params};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Arg> args{params, Value(to_object(static_cast<std::int64_t>(i), "tessera.frame.Part")), KeyRef{inputs[i]}};
    if (bounds) args.push_back(KeyRef{*bounds});
    Key k = spec.transfer_prefix + std::to_string(i);
    barrier_args.push_back(KeyRef{k});
    graph.add(p2p_task(std::move(k), kOpShuffleTransfer, std::move(args), device));
  }
  graph.add(p2p_task(spec.barrier, kOpShuffleBarrier, std::move(barrier_args), false));
  std::vector<Key> keys;
  for (std::int64_t j = 0; j < outputs; ++j) {
    keys.push_back(spec.unpack_prefix + std::to_string(j));
    graph.add(p2p_task(keys.back(), kOpShuffleP2PUnpack,
                       {params, Value(to_object(j, "tessera.frame.Part")), KeyRef{spec.barrier}}, device));
  }
  return keys;
}

}  // namespace tessera::dataframe::detail
