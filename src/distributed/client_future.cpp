// Futures: a key's state on the client, waiting on it, its error, done callbacks, AsCompleted.
#include <algorithm>
#include <deque>

#include "../core/logging.hpp"
#include "client_impl.hpp"

namespace tessera::distributed {

const char* future_status_name(FutureStatus s) noexcept {
  switch (s) {
    case FutureStatus::Pending: return "pending";
    case FutureStatus::Finished: return "finished";
    case FutureStatus::Error: return "error";
    case FutureStatus::Cancelled: return "cancelled";
  }
  return "?";
}

namespace detail {

Future ClientImpl::make_future(const Key& key) {
  std::uint64_t e;
  {
    std::lock_guard lock(mu);
    keys[key].refs++;
    e = epoch;
  }
  return Future(std::make_shared<FutureRef>(key, shared_from_this(), e));
}

const FutureRef& ClientImpl::ref(const Future& f) {
  if (!f.ref_) throw Error("empty Future");
  return *f.ref_;
}

FutureStatus ClientImpl::wait_key(const Key& key, std::uint64_t future_epoch,
                                  std::optional<std::chrono::duration<double>> timeout) {
  std::unique_lock lock(mu);
  auto pred = [&] {
    if (future_epoch != epoch) return true;
    auto it = keys.find(key);
    return closed || it == keys.end() || it->second.status != FutureStatus::Pending;
  };
  if (timeout) {
    if (!cv.wait_for(lock, *timeout, pred)) return FutureStatus::Pending;
  } else {
    cv.wait(lock, pred);
  }
  if (future_epoch != epoch) return FutureStatus::Cancelled;
  auto it = keys.find(key);
  if (it != keys.end() && it->second.status != FutureStatus::Pending) return it->second.status;
  check_open();
  return FutureStatus::Pending;
}

std::exception_ptr ClientImpl::error_of(const Key& key, std::uint64_t future_epoch) const {
  std::lock_guard lock(mu);
  if (auto e = restart_error(key, future_epoch)) return e;
  auto it = keys.find(key);
  if (it == keys.end()) return nullptr;
  const KeyState& ks = it->second;
  if (ks.status == FutureStatus::Error)
    return std::make_exception_ptr(TaskError(ks.cause.empty() ? key : ks.cause, ks.message, ks.message));
  if (ks.status == FutureStatus::Cancelled)
    return std::make_exception_ptr(CancelledError("task " + key + " was cancelled"));
  return nullptr;
}

void ClientImpl::want_value(const Key& key, std::uint64_t future_epoch) {
  std::lock_guard lock(mu);
  if (future_epoch != epoch) return;
  if (auto it = keys.find(key); it != keys.end()) it->second.want_value = true;
}

std::optional<Value> ClientImpl::take_prefetched(const Key& key, std::uint64_t future_epoch) {
  std::unique_lock lock(mu);
  if (future_epoch != epoch) return std::nullopt;
  auto it = keys.find(key);
  if (it == keys.end()) return std::nullopt;
  cv.wait(lock, [&] {
    auto i = keys.find(key);
    return closed || future_epoch != epoch || i == keys.end() || i->second.prefetch != KeyState::Prefetch::InFlight;
  });
  if (future_epoch != epoch) return std::nullopt;
  it = keys.find(key);
  if (it == keys.end() || it->second.prefetch != KeyState::Prefetch::Done) return std::nullopt;
  it->second.prefetch = KeyState::Prefetch::None;
  return std::exchange(it->second.value, Value());
}

void ClientImpl::run_callback(const std::function<void(const Future&)>& fn, const Future& f) {
  try {
    fn(f);
  } catch (const std::exception& e) {
    logging::error("client: a done callback for {} threw: {}", f.key(), e.what());
  }
}

std::vector<Key> wait_finished(ClientImpl& impl, const std::vector<Future>& futures, std::uint64_t* epoch) {
  std::vector<Key> keys;
  keys.reserve(futures.size());
  std::uint64_t e = 0;
  for (const auto& f : futures) {
    const FutureRef& r = ClientImpl::ref(f);
    FutureStatus st = impl.wait_key(r.key, r.epoch, std::nullopt);
    if (st != FutureStatus::Finished) std::rethrow_exception(impl.error_of(r.key, r.epoch));
    keys.push_back(r.key);
    e = r.epoch;
  }
  if (epoch) {
    // Futures of one epoch are what a fetch can get: an older one already threw above, unless
    // a restart came in between (then fetch() throws its error).
    if (futures.empty()) {
      std::lock_guard lock(impl.mu);
      e = impl.epoch;
    }
    *epoch = e;
  }
  return keys;
}

}  // namespace detail

// ---- Future ---------------------------------------------------------------------------------------------

namespace {
const detail::FutureRef& ref_of(const std::shared_ptr<detail::FutureRef>& r) {
  if (!r) throw Error("empty Future");
  return *r;
}
}  // namespace

const Key& Future::key() const { return ref_of(ref_).key; }

FutureStatus Future::status() const {
  const auto& r = ref_of(ref_);
  std::lock_guard lock(r.client->mu);
  if (r.epoch != r.client->epoch) return FutureStatus::Cancelled;  // the cluster restarted since
  auto it = r.client->keys.find(r.key);
  return it == r.client->keys.end() ? FutureStatus::Pending : it->second.status;
}

bool Future::done() const { return status() != FutureStatus::Pending; }

bool Future::wait(std::optional<std::chrono::duration<double>> timeout) const {
  const auto& r = ref_of(ref_);
  return r.client->wait_key(r.key, r.epoch, timeout) != FutureStatus::Pending;
}

Value Future::result(std::optional<std::chrono::duration<double>> timeout) const {
  const auto& r = ref_of(ref_);
  r.client->want_value(r.key, r.epoch);
  FutureStatus st = r.client->wait_key(r.key, r.epoch, timeout);
  if (st == FutureStatus::Pending)
    throw comm::CommTimeoutError("timed out waiting for " + r.key);
  if (st != FutureStatus::Finished) std::rethrow_exception(r.client->error_of(r.key, r.epoch));
  if (auto v = r.client->take_prefetched(r.key, r.epoch)) return std::move(*v);
  return r.client->fetch({r.key}, r.epoch)[0];
}

std::exception_ptr Future::exception() const {
  const auto& r = ref_of(ref_);
  return r.client->error_of(r.key, r.epoch);
}

void Future::cancel() const {
  const auto& r = ref_of(ref_);
  {
    std::lock_guard lock(r.client->mu);
    if (r.epoch != r.client->epoch) return;  // cancelled by a restart already
  }
  r.client->send_events({CancelKeys{r.client->id, {r.key}, false}});
}

void Future::add_done_callback(std::function<void(const Future&)> fn) const {
  const auto& r = ref_of(ref_);
  {
    std::lock_guard lock(r.client->mu);
    auto it = r.client->keys.find(r.key);
    if (r.epoch == r.client->epoch && it != r.client->keys.end() && it->second.status == FutureStatus::Pending) {
      it->second.callbacks.push_back({std::move(fn), *this});
      return;
    }
  }
  detail::ClientImpl::run_callback(fn, *this);
}

bool wait(const std::vector<Future>& futures, std::optional<std::chrono::duration<double>> timeout) {
  using detail::Clock;
  auto deadline = timeout ? Clock::now() + std::chrono::duration_cast<Clock::duration>(*timeout) : Clock::time_point::max();
  for (const auto& f : futures) {
    if (!timeout) {
      f.wait();
      continue;
    }
    auto left = std::chrono::duration<double>(deadline - Clock::now());
    if (left.count() <= 0 && !f.done()) return false;
    if (!f.wait(std::max(left, std::chrono::duration<double>(0)))) return false;
  }
  return true;
}

// ---- AsCompleted --------------------------------------------------------------------------------------

struct AsCompleted::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Future> done;
  std::size_t outstanding = 0;
};

AsCompleted::AsCompleted(const std::vector<Future>& futures) : state_(std::make_shared<State>()) {
  for (const auto& f : futures) add(f);
}
AsCompleted::~AsCompleted() = default;

void AsCompleted::add(const Future& f) {
  {
    std::lock_guard lock(state_->mu);
    state_->outstanding++;
  }
  std::weak_ptr<State> weak = state_;
  f.add_done_callback([weak](const Future& g) {
    if (auto s = weak.lock()) {
      {
        std::lock_guard lock(s->mu);
        s->done.push_back(g);
      }
      s->cv.notify_all();
    }
  });
}

std::optional<Future> AsCompleted::next() {
  std::unique_lock lock(state_->mu);
  if (state_->outstanding == 0) return std::nullopt;
  state_->cv.wait(lock, [&] { return !state_->done.empty(); });
  Future f = std::move(state_->done.front());
  state_->done.pop_front();
  state_->outstanding--;
  return f;
}

std::size_t AsCompleted::remaining() const {
  std::lock_guard lock(state_->mu);
  return state_->outstanding;
}

}  // namespace tessera::distributed
