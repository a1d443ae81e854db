// The scheduler's table of shuffle runs: see shuffle_runs.hpp.
#include "shuffle_runs.hpp"

#include <algorithm>

namespace tessera::distributed {

const ShuffleRuns::Record& ShuffleRuns::join(const std::string& token, std::int64_t inputs, std::int64_t outputs,
                                             const ShuffleKeys& keys, std::vector<std::string> workers,
                                             const std::set<std::int64_t>& already_done, bool& created) {
  created = false;
  if (auto it = runs_.find(token); it != runs_.end()) {
    const Record& r = it->second;
    if (r.run.inputs != inputs || r.run.outputs != outputs)
      throw Error("shuffle " + token + ": joined with " + std::to_string(inputs) + " inputs and " +
                  std::to_string(outputs) + " outputs, but its run has " + std::to_string(r.run.inputs) + " and " +
                  std::to_string(r.run.outputs));
    return r;
  }
  if (inputs < 0 || outputs < 1 || outputs > (std::int64_t{1} << 31))
    throw Error("shuffle " + token + ": " + std::to_string(inputs) + " inputs, " + std::to_string(outputs) +
                " outputs (1 to 2^31)");
  if (workers.empty()) throw Error("shuffle " + token + ": no running worker to take part");
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  Record r;
  r.run = ShuffleRun{token, ++next_id_, inputs, outputs, std::move(workers)};
  r.keys = keys;
  for (auto j : already_done)
    if (j >= 0 && j < outputs) r.outputs_done.insert(j);
  for (std::int64_t j = 0; j < outputs; ++j) unpack_index_[keys.unpack_prefix + std::to_string(j)] = {token, j};
  created = true;
  return runs_.insert_or_assign(token, std::move(r)).first->second;
}

ShuffleRuns::Record& ShuffleRuns::current_run(const std::string& token, std::int64_t id) {
  auto it = runs_.find(token);
  if (it == runs_.end() || it->second.run.id != id)
    throw ShuffleRunLost("shuffle " + token + ": run " + std::to_string(id) + " is not its current run" +
                         (it == runs_.end() ? std::string() : " (" + std::to_string(it->second.run.id) + " is)"));
  return it->second;
}

void ShuffleRuns::input_done(const std::string& token, std::int64_t id, std::int64_t input) {
  Record& r = current_run(token, id);
  if (input < 0 || input >= r.run.inputs)
    throw Error("shuffle " + token + ": input " + std::to_string(input) + " of " + std::to_string(r.run.inputs));
  r.inputs_done.insert(input);
}

std::vector<Key> ShuffleRuns::barrier(const std::string& token, std::int64_t id) {
  Record& r = current_run(token, id);
  std::vector<Key> missing;
  for (std::int64_t i = 0; i < r.run.inputs; ++i)
    if (!r.inputs_done.count(i)) missing.push_back(r.keys.transfer_prefix + std::to_string(i));
  if (missing.empty()) r.barrier_passed = true;
  return missing;
}

std::optional<ShuffleRun> ShuffleRuns::task_finished(const Key& key) {
  auto it = unpack_index_.find(key);
  if (it == unpack_index_.end()) return std::nullopt;
  const auto [token, output] = it->second;
  auto run = runs_.find(token);
  if (run == runs_.end()) return std::nullopt;
  Record& r = run->second;
  r.outputs_done.insert(output);
  if (static_cast<std::int64_t>(r.outputs_done.size()) < r.run.outputs) return std::nullopt;
  ShuffleRun done = r.run;
  end(token);
  return done;
}

void ShuffleRuns::end(const std::string& token) {
  auto it = runs_.find(token);
  if (it == runs_.end()) return;
  for (std::int64_t j = 0; j < it->second.run.outputs; ++j) unpack_index_.erase(it->second.keys.unpack_prefix + std::to_string(j));
  ended_.push_back(std::move(it->second));
  if (ended_.size() > kEndedKept) ended_.erase(ended_.begin());
  runs_.erase(it);
}

std::vector<ShuffleRuns::Record> ShuffleRuns::worker_removed(const std::string& address) {
  std::vector<Record> lost;
  auto took_part = [&](const Record& r) {
    return std::find(r.run.workers.begin(), r.run.workers.end(), address) != r.run.workers.end();
  };
  std::vector<std::string> tokens;
  for (const auto& [token, r] : runs_)
    if (took_part(r)) tokens.push_back(token);
  std::sort(tokens.begin(), tokens.end());
  for (const auto& token : tokens) {
    auto it = runs_.find(token);
    lost.push_back(it->second);
    for (std::int64_t j = 0; j < it->second.run.outputs; ++j)
      unpack_index_.erase(it->second.keys.unpack_prefix + std::to_string(j));
    runs_.erase(it);
  }
  // Ended runs with it as a participant: the unpack results it held may be wanted again, and
  // their shards are gone with the run. Reported once: a later loss finds them no more.
  for (auto it = ended_.begin(); it != ended_.end();) {
    if (took_part(*it)) {
      lost.push_back(std::move(*it));
      it = ended_.erase(it);
    } else {
      ++it;
    }
  }
  return lost;
}

const ShuffleRuns::Record* ShuffleRuns::current(const std::string& token) const {
  auto it = runs_.find(token);
  return it == runs_.end() ? nullptr : &it->second;
}

std::vector<Key> ShuffleRuns::input_keys(const Record& r) {
  std::vector<Key> keys;
  for (std::int64_t i = 0; i < r.run.inputs; ++i) keys.push_back(r.keys.transfer_prefix + std::to_string(i));
  keys.push_back(r.keys.barrier);
  return keys;
}

std::vector<Key> ShuffleRuns::unpack_keys(const Record& r) {
  std::vector<Key> keys;
  for (std::int64_t j = 0; j < r.run.outputs; ++j) keys.push_back(r.keys.unpack_prefix + std::to_string(j));
  return keys;
}

}  // namespace tessera::distributed
