#pragma once
/**
 * @file A worker's peer-to-peer shuffle service (docs/dataframe-shuffle.md), the
 * ShuffleExchange its tasks get in OpContext::shuffle. Private to src/distributed/.
 *
 * Runs are joined through the scheduler (shuffle-join, shuffle-input-done, shuffle-barrier);
 * shards go straight to the worker owning their output partition (shuffle-receive), which keeps
 * them in its DataStore under names of their own: they count in its memory, which the pause
 * threshold and the nanny watch, and spill to disk past its memory target like any result. An
 * unpack takes its output's shards out of the store. A run the scheduler says is over
 * (shuffle-forget: ended, or lost with a participant) has what is left of it dropped, and any
 * later message of it is refused.
 */
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
  void send(const ShuffleRun& run, std::int64_t input, std::vector<std::pair<std::int64_t, Value>> shards) override;
  void input_done(const ShuffleRun& run, std::int64_t input) override;
  void barrier(const std::string& token, std::int64_t run) override;
  std::vector<Value> take(const std::string& token, std::int64_t run, std::int64_t output) override;

  /** @brief A peer's shuffle-receive (or this worker's own shards): stores them; throws to refuse. */
  void receive(const comm::Message& m);
  /** @brief The scheduler's shuffle-forget: the run ended or was lost; drops what is left of it. */
  void forget(const std::string& token, std::int64_t run, const std::string& reason);

  /** @brief The DataStore key of a shard (tests look for them). */
  static Key shard_key(const std::string& token, std::int64_t run, std::int64_t output, std::int64_t input);

 private:
  struct Run {
    std::int64_t inputs = 0;
    std::set<std::int64_t> inputs_seen;  // inputs that sent this worker their part (maybe none)
    std::set<std::int64_t> taken;
    std::vector<Key> shard_keys;  // every shard stored (some may be taken already)
    std::string lost;             // why it was dropped; empty while it is live
  };
  // Stores shards of one input (under mu_ for the run's records; the store has its own lock).
  void store_shards(const std::string& token, std::int64_t run, std::int64_t inputs, std::int64_t input,
                    const std::vector<std::int64_t>& outputs, std::vector<Value> values);
  Run& live_run(const std::string& token, std::int64_t run, std::int64_t inputs);  // under mu_
  void drop(const std::string& token, std::int64_t run, const std::string& why);  // under mu_
  comm::Message call_scheduler(comm::Message m);

  Host w_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::int64_t>, Run> runs_;
  std::unordered_map<std::string, std::int64_t> newest_;  // token -> the newest run id heard of
};

}  // namespace tessera::distributed
