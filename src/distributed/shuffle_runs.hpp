#pragma once
/**
 * @file The scheduler's table of peer-to-peer shuffle runs (docs/dataframe-shuffle.md): pure
 * bookkeeping, no I/O, tested alone (tests/distributed/shuffle_runs_test.cpp). The scheduler
 * (scheduler_shuffle.cpp) turns its answers into messages and state-machine events.
 *
 * A token (the shuffle's expression name) has at most one current run. The first transfer that
 * joins creates it, fixing its participants (the workers running then) and which of them owns
 * each output partition. Transfers say when their input was sent whole; the barrier passes once
 * every input was, in this run. The run ends when every unpack finished, and is lost when one of
 * its participants leaves first; either way the next join creates a new run with a new id (ids
 * are never reused, so a late message of an old run is recognised and refused).
 */
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/core/key.hpp"
#include "tessera/ops/shuffle.hpp"

namespace tessera::distributed {

class ShuffleRuns {
 public:
  struct Record {
    ShuffleRun run;
    ShuffleKeys keys;
    std::set<std::int64_t> inputs_done;
    std::set<std::int64_t> outputs_done;  ///< unpacks finished (in this run or an earlier one)
    bool barrier_passed = false;
  };

  /**
   * @brief The token's current run, or a new one over `workers` (the running workers, any order)
   * whose outputs in `already_done` (unpack results still held from an earlier run) count as
   * finished. `created` says which. Throws Error for counts out of range or no workers.
   */
  const Record& join(const std::string& token, std::int64_t inputs, std::int64_t outputs, const ShuffleKeys& keys,
                     std::vector<std::string> workers, const std::set<std::int64_t>& already_done, bool& created);
  /** @brief Input `input` was sent whole in run `id`; throws ShuffleRunLost for another run. */
  void input_done(const std::string& token, std::int64_t id, std::int64_t input);
  /**
   * @brief The barrier of run `id`: passes (returns empty) when every input was sent in it;
   * otherwise returns the transfer keys that were not (results of an earlier run, to compute
   * again). Throws ShuffleRunLost for another run.
   */
  std::vector<Key> barrier(const std::string& token, std::int64_t id);
  /**
   * @brief A task finished. When it is the last unpack of its run, the run ends and is returned
   * (its participants drop what is left of it).
   */
  std::optional<ShuffleRun> task_finished(const Key& key);
  /**
   * @brief `address` left: every current run it took part in is lost and returned with its keys,
   * as are runs that ended earlier with it as a participant (their results may be needed again).
   */
  std::vector<Record> worker_removed(const std::string& address);

  const Record* current(const std::string& token) const;
  std::size_t size() const { return runs_.size(); }

  /** @brief Transfer task keys and the barrier's (what a lost run computes again). */
  static std::vector<Key> input_keys(const Record& r);
  static std::vector<Key> unpack_keys(const Record& r);

 private:
  Record& current_run(const std::string& token, std::int64_t id);
  void end(const std::string& token);

  std::int64_t next_id_ = 0;
  std::unordered_map<std::string, Record> runs_;
  std::unordered_map<Key, std::pair<std::string, std::int64_t>> unpack_index_;  // unpack key -> token, output
  // Runs that ended, newest last (at most kEndedKept): a participant lost later may have held
  // results that are needed again, and then their inputs are computed again in a new run.
  std::vector<Record> ended_;
  static constexpr std::size_t kEndedKept = 256;
};

}  // namespace tessera::distributed
