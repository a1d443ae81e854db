// The scheduler's side of the peer-to-peer shuffle (docs/dataframe-shuffle.md): the workers'
// join / input-done / barrier requests answered from the run table (ShuffleRuns), a new run's
// unpacks placed on their owners, and a run's end or loss told to its participants. A lost run's
// tasks are computed again through the state machine (ForgetResults); the tasks themselves carry
// retries, so one that was running in the lost run fails with "shuffle run lost" and runs again.
#include "scheduler_impl.hpp"

#include "../core/logging.hpp"
#include "rpc.hpp"

namespace tessera::distributed {

void Scheduler::Impl::shuffle_request(Conn& c, const comm::Message& m) {
  const auto token = m.get<std::string>("token");
  comm::Message reply = make_reply(m);
  try {
    if (m.op == wire::kShuffleJoin) {
      const auto inputs = m.get<std::int64_t>("inputs"), outputs = m.get<std::int64_t>("outputs");
      ShuffleKeys keys{m.get<std::string>("transfer_prefix"), m.get<std::string>("barrier"),
                       m.get<std::string>("unpack_prefix")};
      if (token.empty() || keys.transfer_prefix.empty() || keys.barrier.empty() || keys.unpack_prefix.empty())
        throw Error("shuffle-join without a token or task names");
      std::vector<std::string> running;
      std::set<std::int64_t> done;
      if (!shuffles.current(token)) {
        for (const auto& [address, conn] : workers)
          if (!conn->leaving && !conn->restarting) running.push_back(address);
        // Outputs computed by an earlier run and still held need no unpack in this one.
        for (std::int64_t j = 0; j < outputs && j < (std::int64_t{1} << 31); ++j)
          if (state.status(keys.unpack_prefix + std::to_string(j)) == TaskStatus::Memory) done.insert(j);
      }
      bool created = false;
      const auto& r = shuffles.join(token, inputs, outputs, keys, std::move(running), done, created);
      const ShuffleRun run = r.run;
      reply.set("run", run.id);
      reply.set("workers", run.workers);
      if (created) {
        logging::debug("scheduler: shuffle {} run {} over {} workers ({} inputs, {} outputs)", token, run.id,
                       run.workers.size(), inputs, outputs);
        PinTasks pin;
        for (std::int64_t j = 0; j < outputs; ++j) {
          pin.keys.push_back(keys.unpack_prefix + std::to_string(j));
          pin.workers.push_back(run.workers[run.owner(j)]);
        }
        handle(std::move(pin));
      }
    } else if (m.op == wire::kShuffleInputDone) {
      shuffles.input_done(token, m.get<std::int64_t>("run"), m.get<std::int64_t>("input"));
    } else {
      const auto id = m.get<std::int64_t>("run");
      auto missing = shuffles.barrier(token, id);
      if (!missing.empty()) {
        const std::string why = std::to_string(missing.size()) + " of its inputs were sent in an earlier run";
        handle(ForgetResults{missing, "shuffle " + token + " run " + std::to_string(id) + ": " + why});
        throw ShuffleRunLost("shuffle " + token + " run " + std::to_string(id) + ": " + why +
                             "; they are computed again");
      }
    }
  } catch (const ShuffleRunLost& e) {
    reply = make_error_reply(m, std::string(wire::kShuffleLost) + e.what());
  } catch (const std::exception& e) {
    reply = make_error_reply(m, e.what());
  }
  c.comm->send(std::move(reply), nullptr);
}

void Scheduler::Impl::tell_participants(const ShuffleRun& run, const std::string& reason, const std::string& except) {
  for (const auto& address : run.workers) {
    if (address == except) continue;
    Conn* w = worker_conn(address);
    if (!w) continue;
    comm::Message m(wire::kShuffleForget);
    m.set("token", run.token);
    m.set("run", run.id);
    m.set("reason", reason);
    w->comm->send(std::move(m), nullptr);
  }
}

void Scheduler::Impl::shuffle_task_finished(const Key& key) {
  if (state.status(key) != TaskStatus::Memory) return;  // a report the machine did not take
  if (auto ended = shuffles.task_finished(key)) tell_participants(*ended, "ended", {});
}

void Scheduler::Impl::shuffle_worker_removed(const std::string& address) {
  for (auto& lost : shuffles.worker_removed(address)) {
    const std::string why = "shuffle " + lost.run.token + " run " + std::to_string(lost.run.id) + " lost participant " +
                            address;
    logging::info("scheduler: {}; its inputs are computed again in a new run", why);
    tell_participants(lost.run, why, address);
    handle(ForgetResults{ShuffleRuns::input_keys(lost), why});
  }
}

}  // namespace tessera::distributed
