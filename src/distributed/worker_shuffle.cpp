// A worker's peer-to-peer shuffle service: see worker_shuffle.hpp.
#include "worker_shuffle.hpp"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <thread>

#include "../core/logging.hpp"
#include "tessera/core/native.hpp"
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

Key WorkerShuffle::pack_key(const std::string& token, std::int64_t run, std::int64_t output, std::int64_t seq) {
  return "shuffle-pack-" + token + "-" + std::to_string(run) + "-" + std::to_string(output) + "-" + std::to_string(seq);
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

void WorkerShuffle::send(const ShuffleRun& run, std::int64_t input, Value rows, const std::vector<std::int64_t>& offsets) {
  cut_by_output(run, rows, offsets, 0, 0);  // checks the arguments
  if (test_send_delay().count() > 0) std::this_thread::sleep_for(test_send_delay());
  const NativeCodec& codec = native_codec(rows.native().type);
  const auto total_rows = offsets.back();
  const double row_bytes = total_rows > 0 ? static_cast<double>(rows.nbytes()) / static_cast<double>(total_rows) : 0;
  const auto rows_of = [&](std::int64_t from, std::int64_t to) {
    return offsets[static_cast<std::size_t>(to)] - offsets[static_cast<std::size_t>(from)];
  };
  struct Pending {
    std::string peer;
    std::future<void> done;
  };
  std::vector<Pending> pending;
  // Participant p owns a contiguous range of outputs (ShuffleRun::owner); it gets its part of the
  // rows as one value (a copy, compact), in messages of at most about kSendBatchBytes, and every
  // participant hears from every input, with no rows if it owns none of them: an unpack checks
  // that all inputs reached it before it trusts what it holds.
  std::int64_t first = 0;
  for (std::size_t p = 0; p < run.workers.size(); ++p) {
    std::int64_t end = first;
    while (end < run.outputs && run.owner(end) == p) ++end;
    const std::string& peer = run.workers[p];
    std::int64_t from = first;
    do {
      std::int64_t to = from;
      while (to < end && (to == from || static_cast<double>(rows_of(from, to + 1)) * row_bytes <= kSendBatchBytes)) ++to;
      std::vector<std::int64_t> counts;
      for (auto j = from; j < to; ++j) counts.push_back(rows_of(j, j + 1));
      std::vector<Value> part;
      if (rows_of(from, to) > 0) {
        const auto pieces = codec.split(rows.native(), {offsets[static_cast<std::size_t>(from)], rows_of(from, to),
                                                        total_rows - offsets[static_cast<std::size_t>(to)]});
        part.emplace_back(peer == w_.address ? pieces[1] : codec.concat({pieces[1]}));
      }
      if (peer == w_.address) {
        store_part(run.token, run.id, run.inputs, input, from, counts, part.empty() ? Value() : std::move(part[0]));
      } else {
        comm::Message m(wire::kShuffleReceive);
        m.set("token", run.token);
        m.set("run", run.id);
        m.set("inputs", run.inputs);
        m.set("input", input);
        m.set("first_output", from);
        m.set("rows", counts);
        wire::put_values(m, part);
        auto promise = std::make_shared<std::promise<void>>();
        pending.push_back({peer, promise->get_future()});
        w_.request_peer(peer, std::move(m), [promise](const comm::Message*, std::exception_ptr err) {
          if (err) promise->set_exception(err);
          else promise->set_value();
        });
      }
      from = to;
    } while (from < end);
    first = end;
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
  const auto counts = m.get<std::vector<std::int64_t>>("rows");
  auto values = wire::get_values(m);
  if (values.size() > 1) throw Error("shuffle-receive with " + std::to_string(values.size()) + " values (at most one)");
  store_part(m.get<std::string>("token"), m.get<std::int64_t>("run"), m.get<std::int64_t>("inputs"),
             m.get<std::int64_t>("input"), m.get<std::int64_t>("first_output"), counts,
             values.empty() ? Value() : std::move(values[0]));
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

// Staged shards wait outside the store, uncounted by it, so their total is kept small beside
// the worker's memory limit: packing them sooner only makes the packs smaller.
std::size_t WorkerShuffle::staging_limit() const {
  constexpr std::size_t kMost = std::size_t{32} << 20, kLeast = std::size_t{1} << 20;
  const std::size_t limit = w_.store.options().memory_limit;
  return limit == 0 ? kMost : std::clamp(limit / 32, kLeast, kMost);
}

namespace {

// A shard that can be packed with others: a Native whose codec knows rows, concat and split.
const NativeCodec* packable(const Value& v) {
  if (!v.is_native()) return nullptr;
  const auto& codec = native_codec(v.native().type);
  return codec.rows && codec.concat && codec.split ? &codec : nullptr;
}

}  // namespace

void WorkerShuffle::pack_and_store(const std::string& token, std::int64_t run, std::int64_t first_seq,
                                  std::map<std::int64_t, std::vector<Shard>> staged,
                                  std::vector<std::pair<std::int64_t, Pack>>& packs) {
  std::int64_t seq = first_seq;
  for (auto& [output, shards] : staged) {
    Pack pack{pack_key(token, run, output, seq++), {}};
    // Even one shard is copied: it is a view of a larger part, whose buffers it would keep.
    const NativeCodec& codec = *packable(shards[0].value);
    std::vector<Native> parts;
    parts.reserve(shards.size());
    for (auto& shard : shards) {
      pack.pieces.push_back({shard.input, codec.rows(shard.value.native())});
      parts.push_back(shard.value.native());
    }
    shards.clear();  // the pack is a copy: let the small shards go as it goes in
    Value packed(codec.concat(parts));
    parts.clear();
    w_.store.put(pack.key, std::move(packed));
    packs.push_back({output, std::move(pack)});
  }
}

void WorkerShuffle::store_part(const std::string& token, std::int64_t run, std::int64_t inputs, std::int64_t input,
                               std::int64_t first_output, const std::vector<std::int64_t>& counts, Value part) {
  if (input < 0 || input >= inputs)
    throw Error("shuffle " + token + ": input " + std::to_string(input) + " of " + std::to_string(inputs));
  if (first_output < 0) throw Error("shuffle " + token + ": shards from output " + std::to_string(first_output));
  std::int64_t rows = 0;
  for (auto c : counts) {
    if (c < 0) throw Error("shuffle " + token + ": a shard of " + std::to_string(c) + " rows");
    rows += c;
  }
  // One view per output with rows; each counts its share of the part's bytes.
  std::vector<std::pair<std::int64_t, Shard>> shards;
  if (rows > 0) {
    const NativeCodec* codec = packable(part);
    if (!codec) throw Error("shuffle " + token + ": shards of " + part.describe() + ", not a table");
    if (codec->rows(part.native()) != rows)
      throw Error("shuffle " + token + ": shards of " + std::to_string(rows) + " rows in a part of " +
                  std::to_string(codec->rows(part.native())));
    auto pieces = codec->split(part.native(), counts);
    const double row_bytes = static_cast<double>(part.nbytes()) / static_cast<double>(rows);
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (counts[i] > 0)
        shards.push_back({first_output + static_cast<std::int64_t>(i),
                          Shard{input, Value(std::move(pieces[i])), static_cast<std::size_t>(row_bytes * static_cast<double>(counts[i]))}});
  }
  std::map<std::int64_t, std::vector<Shard>> to_pack;
  std::int64_t first_seq = 0;
  {
    std::lock_guard lock(mu_);
    Run& r = live_run(token, run, inputs);
    if (!counts.empty()) r.owned.insert({first_output, first_output + static_cast<std::int64_t>(counts.size())});
    for (auto& [o, shard] : shards) {
      r.staged_bytes += shard.bytes;
      r.staged[o].push_back(std::move(shard));
    }
    if (r.staged_bytes > staging_limit()) {
      to_pack.swap(r.staged);
      r.staged_bytes = 0;
      first_seq = r.next_pack;
      r.next_pack += static_cast<std::int64_t>(to_pack.size());
      ++r.packing;  // a take waits for the packs to be in the store
    }
  }
  shards.clear();
  part = Value();
  // Outside mu_: packing copies, and a put may spill older values to disk.
  const bool packing = !to_pack.empty();
  std::vector<std::pair<std::int64_t, Pack>> stored;  // what went into the store, even on a failure
  std::exception_ptr failure;
  try {
    pack_and_store(token, run, first_seq, std::move(to_pack), stored);
  } catch (...) {
    failure = std::current_exception();
  }
  std::string cannot;
  if (w_.store.paused()) cannot = w_.store.spill_error();
  bool dropped = false;
  {
    std::lock_guard lock(mu_);
    Run& r = runs_[{token, run}];
    dropped = !r.lost.empty();  // forgotten while the shards went in
    if (!dropped)
      for (auto& [o, pack] : stored) r.packs[o].push_back(std::move(pack));
    if (cannot.empty() && !failure && !dropped) r.inputs_seen.insert(input);
    if (packing) --r.packing;
    // Shards of other inputs may have been in the failed pack: this worker's part of the run can
    // no longer be trusted, and its unpacks must fail rather than return rows short.
    if (failure && !dropped) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        drop(token, run, std::string("storing shards failed: ") + e.what());
      }
    }
  }
  packed_.notify_all();
  if (dropped)
    for (const auto& [o, pack] : stored) w_.store.erase(pack.key);
  w_.memory_changed();
  if (failure) std::rethrow_exception(failure);
  if (!cannot.empty())
    throw Error("worker " + w_.address + " cannot hold the shards of shuffle " + token +
                ": its memory is above the pause threshold and spilling to disk failed: " + cannot);
  if (dropped) throw ShuffleRunLost("shuffle " + token + " run " + std::to_string(run) + " was dropped on " + w_.address);
}

std::vector<Value> WorkerShuffle::take(const std::string& token, std::int64_t run, std::int64_t output) {
  std::vector<Pack> packs;
  std::vector<std::pair<std::int64_t, Value>> pieces;  // (input, its rows of this output)
  {
    std::unique_lock lock(mu_);
    auto it = runs_.find({token, run});
    if (it == runs_.end())
      throw ShuffleRunLost("worker " + w_.address + " holds nothing of shuffle " + token + " run " +
                           std::to_string(run) + " (not a participant, or it was lost)");
    Run& r = it->second;
    packed_.wait(lock, [&] { return r.packing == 0 || !r.lost.empty(); });
    if (!r.lost.empty()) throw ShuffleRunLost(r.lost);
    if (static_cast<std::int64_t>(r.inputs_seen.size()) < r.inputs)
      throw ShuffleRunLost("shuffle " + token + " run " + std::to_string(run) + ": " +
                           std::to_string(r.inputs_seen.size()) + " of its " + std::to_string(r.inputs) +
                           " inputs reached worker " + w_.address);
    const bool owned = std::any_of(r.owned.begin(), r.owned.end(),
                                   [&](const auto& range) { return output >= range.first && output < range.second; });
    if (!owned)
      throw Error("shuffle " + token + " run " + std::to_string(run) + ": output " + std::to_string(output) +
                  " is not worker " + w_.address + "'s (its unpack ran away from its shards)");
    if (!r.taken.insert(output).second)
      throw ShuffleRunLost("shuffle " + token + ": output " + std::to_string(output) + " was taken already on " +
                           w_.address);
    if (auto p = r.packs.find(output); p != r.packs.end()) {
      packs = std::move(p->second);
      r.packs.erase(p);
    }
    if (auto s = r.staged.find(output); s != r.staged.end()) {
      for (auto& shard : s->second) {
        r.staged_bytes -= std::min(r.staged_bytes, shard.bytes);
        pieces.push_back({shard.input, std::move(shard.value)});
      }
      r.staged.erase(s);
    }
  }
  for (auto& pack : packs) {
    auto value = w_.store.get(pack.key);  // read back from disk if it was spilled
    w_.store.erase(pack.key);
    if (!value) throw Error("shuffle " + token + ": worker " + w_.address + " lost a pack of output " + std::to_string(output));
    std::vector<std::int64_t> rows;
    for (const auto& piece : pack.pieces) rows.push_back(piece.second);
    const NativeCodec* codec = packable(*value);
    if (!codec) throw Error("shuffle " + token + ": a pack of output " + std::to_string(output) + " is not a table");
    auto cut = codec->split(value->native(), rows);
    for (std::size_t i = 0; i < cut.size(); ++i) pieces.push_back({pack.pieces[i].first, Value(std::move(cut[i]))});
  }
  // Input order, so that the partition's row order does not depend on when shards arrived; an
  // input sent twice in one run (a transfer retried after a partial send) counts once.
  std::stable_sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Native> ordered;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    if (i == 0 || pieces[i].first != pieces[i - 1].first) ordered.push_back(pieces[i].second.native());
  if (ordered.empty()) return {};
  // One compact copy: the pieces are views of packs and of parts still staged (a part holds
  // many outputs' rows, and this worker's own part is a view of a whole reordered input). Views
  // would keep those alive and count each one's whole buffers in the store, for every output
  // holding one; the copy lets them go as soon as the last view of them is dropped here.
  const NativeCodec& codec = native_codec(ordered.front().type);
  Native joined = codec.concat(ordered);
  ordered.clear();
  pieces.clear();
  std::vector<Value> out;
  out.emplace_back(std::move(joined));
  return out;
}

void WorkerShuffle::drop(const std::string& token, std::int64_t run, const std::string& why) {
  Run& r = runs_[{token, run}];
  for (const auto& [output, packs] : r.packs)
    for (const auto& pack : packs) w_.store.erase(pack.key);
  r.packs.clear();
  r.staged.clear();
  r.staged_bytes = 0;
  r.lost = "shuffle " + token + " run " + std::to_string(run) + " was dropped on " + w_.address + ": " + why;
  packed_.notify_all();
}

void WorkerShuffle::forget(const std::string& token, std::int64_t run, const std::string& reason) {
  std::lock_guard lock(mu_);
  logging::debug("worker {}: shuffle {} run {}: {}", w_.address, token, run, reason);
  drop(token, run, reason);
  auto& newest = newest_[token];
  newest = std::max(newest, run);
}

}  // namespace tessera::distributed
