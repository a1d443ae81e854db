// A worker's peer-to-peer shuffle service: see worker_shuffle.hpp.
#include "worker_shuffle.hpp"

#include <cstdlib>
#include <future>
#include <thread>

#include "../core/logging.hpp"
#include "rpc.hpp"

namespace tessera::distributed {
namespace {

// Shards for one peer go in messages of about this size, so that one message never holds a
// whole partition's worth of frames in the sender's and the receiver's buffers at once.
constexpr std::size_t kSendBatchBytes = std::size_t{64} << 20;

// Tests that kill a worker mid-shuffle slow the sends down (TESSERA_SHUFFLE_TEST_SEND_DELAY_MS),
// so that a run is reliably caught between its first transfer and its barrier.
std::chrono::milliseconds test_send_delay() {
  static const std::chrono::milliseconds delay = [] {
    const char* v = std::getenv("TESSERA_SHUFFLE_TEST_SEND_DELAY_MS");
    return std::chrono::milliseconds(v ? std::atoi(v) : 0);
  }();
  return delay;
}

// A remote refusal as an exception: ShuffleRunLost when it says the run is over (the task is
// retried), else an Error with the context.
std::exception_ptr remote_failure(const std::string& what, const std::string& context) {
  const std::string lost = wire::kShuffleLost;
  if (auto at = what.find(lost); at != std::string::npos)
    return std::make_exception_ptr(ShuffleRunLost(what.substr(at + lost.size())));
  return std::make_exception_ptr(Error(context + ": " + what));
}

}  // namespace

Key WorkerShuffle::shard_key(const std::string& token, std::int64_t run, std::int64_t output, std::int64_t input) {
  return "shuffle-shard-" + token + "-" + std::to_string(run) + "-" + std::to_string(output) + "-" +
         std::to_string(input);
}

comm::Message WorkerShuffle::call_scheduler(comm::Message m) {
  const std::string what = m.op;
  try {
    return w_.call_scheduler(std::move(m));
  } catch (const RemoteError& e) {
    std::rethrow_exception(remote_failure(e.what(), "the scheduler refused " + what));
  }
}

ShuffleRun WorkerShuffle::join(const std::string& token, std::int64_t inputs, std::int64_t outputs,
                               const ShuffleKeys& keys) {
  comm::Message m(wire::kShuffleJoin);
  m.set("token", token);
  m.set("inputs", inputs);
  m.set("outputs", outputs);
  m.set("transfer_prefix", keys.transfer_prefix);
  m.set("barrier", keys.barrier);
  m.set("unpack_prefix", keys.unpack_prefix);
  auto reply = call_scheduler(std::move(m));
  ShuffleRun run{token, reply.get<std::int64_t>("run"), inputs, outputs, reply.get<std::vector<std::string>>("workers")};
  if (run.workers.empty()) throw Error("shuffle " + token + ": the scheduler named no participants");
  return run;
}

void WorkerShuffle::send(const ShuffleRun& run, std::int64_t input,
                         std::vector<std::pair<std::int64_t, Value>> shards) {
  std::vector<std::vector<std::pair<std::int64_t, Value>>> per_worker(run.workers.size());
  for (auto& [output, value] : shards) {
    if (output < 0 || output >= run.outputs)
      throw Error("shuffle " + run.token + ": a shard for output " + std::to_string(output) + " of " +
                  std::to_string(run.outputs));
    per_worker[run.owner(output)].push_back({output, std::move(value)});
  }
  if (test_send_delay().count() > 0) std::this_thread::sleep_for(test_send_delay());
  struct Pending {
    std::string peer;
    std::future<void> done;
  };
  std::vector<Pending> pending;
  for (std::size_t p = 0; p < run.workers.size(); ++p) {
    auto& mine = per_worker[p];
    const std::string& peer = run.workers[p];
    if (peer == w_.address) {
      std::vector<std::int64_t> outputs;
      std::vector<Value> values;
      for (auto& [o, v] : mine) {
        outputs.push_back(o);
        values.push_back(std::move(v));
      }
      store_shards(run.token, run.id, run.inputs, input, outputs, std::move(values));
      continue;
    }
    // Every participant hears from every input, with no shards if it owns none of its rows: an
    // unpack checks that all inputs reached it before it trusts what it holds.
    std::size_t next = 0;
    do {
      std::vector<std::int64_t> outputs;
      std::vector<Value> values;
      std::size_t bytes = 0;
      while (next < mine.size() && (values.empty() || bytes + mine[next].second.nbytes() <= kSendBatchBytes)) {
        bytes += mine[next].second.nbytes();
        outputs.push_back(mine[next].first);
        values.push_back(std::move(mine[next].second));
        ++next;
      }
      comm::Message m(wire::kShuffleReceive);
      m.set("token", run.token);
      m.set("run", run.id);
      m.set("inputs", run.inputs);
      m.set("input", input);
      m.set("outputs", outputs);
      wire::put_values(m, values);
      auto promise = std::make_shared<std::promise<void>>();
      pending.push_back({peer, promise->get_future()});
      w_.request_peer(peer, std::move(m), [promise](const comm::Message*, std::exception_ptr err) {
        if (err) promise->set_exception(err);
        else promise->set_value();
      });
    } while (next < mine.size());
  }
  // The first failure is what the task reports; one that is not a lost run comes first.
  std::exception_ptr lost, failed;
  bool unreachable = false;
  for (auto& p : pending) {
    try {
      p.done.get();
    } catch (const RemoteError& e) {
      auto why = remote_failure(e.what(), "shuffle " + run.token + ": worker " + p.peer + " refused shards");
      auto& slot = std::string(e.what()).find(wire::kShuffleLost) != std::string::npos ? lost : failed;
      if (!slot) slot = why;
    } catch (const std::exception& e) {
      unreachable = true;
      if (!failed)
        failed = std::make_exception_ptr(
            ShuffleRunLost("shuffle " + run.token + ": sending shards to worker " + p.peer + " failed: " + e.what()));
    }
  }
  // A peer that cannot be reached has most likely died; the scheduler sees its connection close
  // about when this worker does. Waiting a moment lets it replace the run before this task's
  // retry joins again (or the retry would find the same run and fail the same way).
  if (unreachable) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (failed) std::rethrow_exception(failed);
  if (lost) std::rethrow_exception(lost);
}

void WorkerShuffle::input_done(const ShuffleRun& run, std::int64_t input) {
  comm::Message m(wire::kShuffleInputDone);
  m.set("token", run.token);
  m.set("run", run.id);
  m.set("input", input);
  call_scheduler(std::move(m));
}

void WorkerShuffle::barrier(const std::string& token, std::int64_t run) {
  comm::Message m(wire::kShuffleBarrier);
  m.set("token", token);
  m.set("run", run);
  call_scheduler(std::move(m));
}

void WorkerShuffle::receive(const comm::Message& m) {
  const auto token = m.get<std::string>("token");
  const auto outputs = m.get<std::vector<std::int64_t>>("outputs");
  auto values = wire::get_values(m);
  if (values.size() != outputs.size())
    throw Error("shuffle-receive with " + std::to_string(outputs.size()) + " outputs but " +
                std::to_string(values.size()) + " values");
  store_shards(token, m.get<std::int64_t>("run"), m.get<std::int64_t>("inputs"), m.get<std::int64_t>("input"), outputs,
               std::move(values));
}

WorkerShuffle::Run& WorkerShuffle::live_run(const std::string& token, std::int64_t run, std::int64_t inputs) {
  auto newest = newest_.find(token);
  if (newest != newest_.end() && run < newest->second)
    throw ShuffleRunLost("shuffle " + token + ": run " + std::to_string(run) + " was replaced by run " +
                         std::to_string(newest->second));
  if (newest == newest_.end() || run > newest->second) {
    // A newer run of this token: the older ones are over (lost, or ended unannounced).
    for (auto& [id, r] : runs_)
      if (id.first == token && id.second < run && r.lost.empty()) drop(token, id.second, "replaced by run " + std::to_string(run));
    newest_[token] = run;
  }
  Run& r = runs_[{token, run}];
  if (!r.lost.empty()) throw ShuffleRunLost(r.lost);
  if (inputs < 0) throw Error("shuffle " + token + ": " + std::to_string(inputs) + " inputs");
  if (r.inputs == 0) r.inputs = inputs;
  return r;
}

void WorkerShuffle::store_shards(const std::string& token, std::int64_t run, std::int64_t inputs, std::int64_t input,
                                 const std::vector<std::int64_t>& outputs, std::vector<Value> values) {
  if (input < 0 || input >= inputs)
    throw Error("shuffle " + token + ": input " + std::to_string(input) + " of " + std::to_string(inputs));
  std::vector<Key> keys;
  {
    std::lock_guard lock(mu_);
    Run& r = live_run(token, run, inputs);
    for (auto o : outputs) {
      if (o < 0) throw Error("shuffle " + token + ": a shard for output " + std::to_string(o));
      keys.push_back(shard_key(token, run, o, input));
      r.shard_keys.push_back(keys.back());
    }
  }
  // Outside mu_: a put may spill older values to disk.
  for (std::size_t i = 0; i < keys.size(); ++i) w_.store.put(keys[i], std::move(values[i]));
  std::string cannot;
  if (w_.store.paused()) cannot = w_.store.spill_error();
  bool dropped = false;
  {
    std::lock_guard lock(mu_);
    Run& r = runs_[{token, run}];
    dropped = !r.lost.empty();  // forgotten while the shards went in
    if (cannot.empty() && !dropped) r.inputs_seen.insert(input);
  }
  if (dropped || !cannot.empty())
    for (const auto& k : keys) w_.store.erase(k);
  w_.memory_changed();
  if (!cannot.empty())
    throw Error("worker " + w_.address + " cannot hold the shards of shuffle " + token +
                ": its memory is above the pause threshold and spilling to disk failed: " + cannot);
  if (dropped) throw ShuffleRunLost("shuffle " + token + " run " + std::to_string(run) + " was dropped on " + w_.address);
}

std::vector<Value> WorkerShuffle::take(const std::string& token, std::int64_t run, std::int64_t output) {
  std::vector<Key> keys;
  {
    std::lock_guard lock(mu_);
    auto it = runs_.find({token, run});
    if (it == runs_.end())
      throw ShuffleRunLost("worker " + w_.address + " holds nothing of shuffle " + token + " run " +
                           std::to_string(run) + " (not a participant, or it was lost)");
    Run& r = it->second;
    if (!r.lost.empty()) throw ShuffleRunLost(r.lost);
    if (static_cast<std::int64_t>(r.inputs_seen.size()) < r.inputs)
      throw ShuffleRunLost("shuffle " + token + " run " + std::to_string(run) + ": " +
                           std::to_string(r.inputs_seen.size()) + " of its " + std::to_string(r.inputs) +
                           " inputs reached worker " + w_.address);
    if (!r.taken.insert(output).second)
      throw ShuffleRunLost("shuffle " + token + ": output " + std::to_string(output) + " was taken already on " +
                           w_.address);
    for (std::int64_t i = 0; i < r.inputs; ++i) keys.push_back(shard_key(token, run, output, i));
  }
  std::vector<Value> out;
  for (const auto& k : keys)
    if (auto v = w_.store.get(k)) {  // read back from disk if it was spilled
      out.push_back(std::move(*v));
      w_.store.erase(k);
    }
  return out;
}

void WorkerShuffle::drop(const std::string& token, std::int64_t run, const std::string& why) {
  Run& r = runs_[{token, run}];
  for (const auto& k : r.shard_keys) w_.store.erase(k);
  r.shard_keys.clear();
  r.shard_keys.shrink_to_fit();
  r.lost = "shuffle " + token + " run " + std::to_string(run) + " was dropped on " + w_.address + ": " + why;
}

void WorkerShuffle::forget(const std::string& token, std::int64_t run, const std::string& reason) {
  std::lock_guard lock(mu_);
  logging::debug("worker {}: shuffle {} run {}: {}", w_.address, token, run, reason);
  drop(token, run, reason);
  auto& newest = newest_[token];
  newest = std::max(newest, run);
}

}  // namespace tessera::distributed
