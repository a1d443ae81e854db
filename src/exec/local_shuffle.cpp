// The in-process ShuffleExchange of the local executors (tessera/ops/shuffle.hpp): one
// participant, shards kept as views of the rows the transfer sent (no copy, no serialisation).
//
// A run lives from the first join of its token until its last output is taken. A join that
// finds a run some of whose outputs were taken already (a compute that stopped half-way, or the
// same graph computed again) starts a fresh one: in a run that is going well every transfer
// joins before the barrier, and every take comes after it.
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "tessera/ops/shuffle.hpp"

namespace tessera {
namespace {

class LocalShuffleExchange final : public ShuffleExchange {
 public:
  ShuffleRun join(const std::string& token, std::int64_t inputs, std::int64_t outputs, const ShuffleKeys&) override {
    if (inputs < 0 || outputs < 1) throw Error("shuffle " + token + ": " + std::to_string(outputs) + " outputs");
    std::lock_guard lock(mu_);
    auto it = runs_.find(token);
    if (it == runs_.end() || !it->second.taken.empty() || it->second.spec.inputs != inputs ||
        it->second.spec.outputs != outputs) {
      Run r;
      r.spec = ShuffleRun{token, ++next_id_, inputs, outputs, {"local"}};
      it = runs_.insert_or_assign(token, std::move(r)).first;
    }
    return it->second.spec;
  }

  void send(const ShuffleRun& run, std::int64_t input, Value rows, const std::vector<std::int64_t>& offsets) override {
    auto pieces = cut_by_output(run, rows, offsets, 0, run.outputs);  // views of `rows`: no copy
    std::lock_guard lock(mu_);
    Run& r = current(run.token, run.id);
    for (std::int64_t output = 0; output < run.outputs; ++output) {
      if (offsets[static_cast<std::size_t>(output) + 1] == offsets[static_cast<std::size_t>(output)]) continue;
      // a retried input replaces its shards
      r.shards[output].insert_or_assign(input, std::move(pieces[static_cast<std::size_t>(output)]));
    }
  }

  void input_done(const ShuffleRun& run, std::int64_t input) override {
    std::lock_guard lock(mu_);
    current(run.token, run.id).inputs_done.insert(input);
  }

  void barrier(const std::string& token, std::int64_t id) override {
    std::lock_guard lock(mu_);
    Run& r = current(token, id);
    if (static_cast<std::int64_t>(r.inputs_done.size()) != r.spec.inputs)
      throw ShuffleRunLost("shuffle " + token + ": " + std::to_string(r.inputs_done.size()) + " of " +
                           std::to_string(r.spec.inputs) + " inputs arrived before its barrier");
  }

  std::vector<Value> take(const std::string& token, std::int64_t id, std::int64_t output) override {
    std::lock_guard lock(mu_);
    Run& r = current(token, id);
    if (!r.taken.insert(output).second)
      throw ShuffleRunLost("shuffle " + token + ": output " + std::to_string(output) + " was taken already");
    std::vector<Value> out;
    if (auto s = r.shards.find(output); s != r.shards.end()) {
      for (auto& [input, value] : s->second) out.push_back(std::move(value));  // input order
      r.shards.erase(s);
    }
    if (static_cast<std::int64_t>(r.taken.size()) == r.spec.outputs) runs_.erase(token);
    return out;
  }

 private:
  struct Run {
    ShuffleRun spec;
    std::set<std::int64_t> inputs_done, taken;
    std::map<std::int64_t, std::map<std::int64_t, Value>> shards;  // output -> input -> shard
  };

  Run& current(const std::string& token, std::int64_t id) {
    auto it = runs_.find(token);
    if (it == runs_.end() || it->second.spec.id != id)
      throw ShuffleRunLost("shuffle " + token + ": run " + std::to_string(id) + " is no longer current");
    return it->second;
  }

  std::mutex mu_;
  std::int64_t next_id_ = 0;
  std::unordered_map<std::string, Run> runs_;
};

}  // namespace

ShuffleExchange& local_shuffle_exchange() {
  static LocalShuffleExchange exchange;
  return exchange;
}

}  // namespace tessera
