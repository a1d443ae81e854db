#pragma once
/**
 * @file A worker's peer-to-peer shuffle service (docs/dataframe-shuffle.md), the
 * ShuffleExchange its tasks get in OpContext::shuffle. Private to src/distributed/.
 *
 * Runs are joined through the scheduler (shuffle-join, shuffle-input-done, shuffle-barrier);
 * shards go straight to the worker owning their output partition (shuffle-receive), which keeps
 * them in its DataStore under names of their own: they count in its memory, which the pause
 * threshold and the nanny watch, and spill to disk past its memory target like any result.
 * There are N x M shards, most of them small, so they are not stored one by one: they wait,
 * per output partition, in a small staging area, and are packed a few MiB at a time into one
 * value per output (NativeCodec::concat), which is what the store holds and spills. An unpack
 * takes its output's packs and staged shards, cuts the packs back into their inputs' pieces and
 * returns them in input order. A run the scheduler says is over
 * (shuffle-forget: ended, or lost with a participant) has what is left of it dropped, and any
 * later message of it is refused.
 */
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "data_store.hpp"
#include "rpc.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/ops/shuffle.hpp"

namespace tessera::distributed {

class WorkerShuffle final : public ShuffleExchange {
 public:
  /** @brief What the service uses of its worker. */
  struct Host {
    const std::string& address;  ///< the worker's (set once it listens, before any task runs)
    DataStore& store;
    /** A request to the scheduler, answered or thrown (RemoteError for a refusal). */
    std::function<comm::Message(comm::Message)> call_scheduler;
    /** A request to a peer worker, over the connection kept to it. */
    std::function<void(const std::string& peer, comm::Message, RpcTable::Callback)> request_peer;
    /** Called after shards were stored: the worker checks its memory (pause, spill, report). */
    std::function<void()> memory_changed;
  };
  explicit WorkerShuffle(Host host) : w_(std::move(host)) {}

  ShuffleRun join(const std::string& token, std::int64_t inputs, std::int64_t outputs,
                  const ShuffleKeys& keys) override;
  void send(const ShuffleRun& run, std::int64_t input, Value rows, const std::vector<std::int64_t>& offsets) override;
  void input_done(const ShuffleRun& run, std::int64_t input) override;
  void barrier(const std::string& token, std::int64_t run) override;
  std::vector<Value> take(const std::string& token, std::int64_t run, std::int64_t output) override;

  /** @brief A peer's shuffle-receive (or this worker's own shards): stores them; throws to refuse. */
  void receive(const comm::Message& m);
  /** @brief The scheduler's shuffle-forget: the run ended or was lost; drops what is left of it. */
  void forget(const std::string& token, std::int64_t run, const std::string& reason);

  /** @brief The DataStore key of a pack: shards of one output partition, `seq` counts per run. */
  static Key pack_key(const std::string& token, std::int64_t run, std::int64_t output, std::int64_t seq);

 private:
  // One input's rows of one output: a view of the part that input sent this worker.
  struct Shard {
    std::int64_t input = 0;
    Value value;
    std::size_t bytes = 0;  // its share of the part's bytes (a view's buffers are the part's)
  };
  // A value in the store holding one output's shards from several inputs, one after another.
  struct Pack {
    Key key;
    std::vector<std::pair<std::int64_t, std::int64_t>> pieces;  // (input, rows), in the order they lie
  };
  struct Run {
    std::int64_t inputs = 0;
    std::set<std::int64_t> inputs_seen;  // inputs that sent this worker their part (maybe none)
    std::set<std::int64_t> taken;
    // The outputs this worker owns, as [first, end) ranges: every input's message names them
    // (with rows or without), so a take of an output owned elsewhere fails instead of
    // returning nothing.
    std::set<std::pair<std::int64_t, std::int64_t>> owned;
    // Shards arrive as one small value per (input, output): they wait here, per output, until
    // there are enough of them to be packed into one value each and put in the store.
    std::map<std::int64_t, std::vector<Shard>> staged;
    std::size_t staged_bytes = 0;
    std::map<std::int64_t, std::vector<Pack>> packs;  // output -> its packs in the store
    std::int64_t next_pack = 0;
    int packing = 0;  // stores packing staged shards outside mu_; a take waits for them
    std::string lost;  // why it was dropped; empty while it is live
  };
  // Stores input `input`'s part for outputs first_output, first_output + 1, ... (counts[i] rows
  // each, one after another in `part`; empty when all are 0). Under mu_ for the run's records;
  // the store has its own lock.
  void store_part(const std::string& token, std::int64_t run, std::int64_t inputs, std::int64_t input,
                  std::int64_t first_output, const std::vector<std::int64_t>& counts, Value part);
  // Packs `staged` (one output's shards each) and puts the packs in the store, adding each to
  // `packs` as it goes in (so that a failure half-way leaves nothing untracked); outside mu_.
  void pack_and_store(const std::string& token, std::int64_t run, std::int64_t first_seq,
                      std::map<std::int64_t, std::vector<Shard>> staged, std::vector<std::pair<std::int64_t, Pack>>& packs);
  std::size_t staging_limit() const;
  Run& live_run(const std::string& token, std::int64_t run, std::int64_t inputs);  // under mu_
  void drop(const std::string& token, std::int64_t run, const std::string& why);  // under mu_
  comm::Message call_scheduler(comm::Message m);

  Host w_;
  std::mutex mu_;
  std::condition_variable packed_;  // a store finished packing (Run::packing went down)
  std::map<std::pair<std::string, std::int64_t>, Run> runs_;
  std::unordered_map<std::string, std::int64_t> newest_;  // token -> the newest run id heard of
};

}  // namespace tessera::distributed
