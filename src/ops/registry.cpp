#include "tessera/ops/registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "arithmetic_fault.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/function.hpp"

namespace tessera {

struct OpRegistry::Impl {
  mutable std::shared_mutex mutex;
  std::unordered_map<std::string, OpInfo> ops;
  std::map<std::string, std::set<std::string>> functions;  // function id -> registered names
};

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

OpRegistry::Impl& OpRegistry::impl() const {
  // Function-local static: safe to use from static registrations in any translation unit.
  static Impl instance;
  return instance;
}

void OpRegistry::add(OpInfo info) {
  if (info.name.empty()) throw Error("cannot register an operation with an empty name");
  auto& im = impl();
  std::unique_lock lock(im.mutex);
  auto [it, inserted] = im.ops.try_emplace(info.name, info);
  if (!inserted) {
    if (info.host) it->second.host = std::move(info.host);
    if (info.device) it->second.device = std::move(info.device);
    if (info.signature) it->second.signature = info.signature;
    if (info.types) it->second.types = std::move(info.types);
  }
}

bool OpRegistry::contains(const std::string& name) const {
  auto& im = impl();
  std::shared_lock lock(im.mutex);
  return im.ops.count(name) != 0;
}

const OpInfo& OpRegistry::get(const std::string& name) const {
  auto& im = impl();
  std::shared_lock lock(im.mutex);
  auto it = im.ops.find(name);
  if (it != im.ops.end()) return it->second;  // entries are never erased: the reference stays valid
  std::string hint;
  for (const auto& [n, _] : im.ops) {
    // A cheap "did you mean": names sharing the last dotted component.
    const auto tail = [](const std::string& s) { return s.substr(s.rfind('.') + 1); };
    if (tail(n) == tail(name)) hint += (hint.empty() ? "" : ", ") + n;
  }
  throw UnknownOperationError("unknown operation '" + name + "'" +
                              (hint.empty() ? std::string(" (is the function registered in this process?)")
                                            : " (did you mean: " + hint + "?)"));
}

std::vector<std::string> OpRegistry::names() const {
  auto& im = impl();
  std::shared_lock lock(im.mutex);
  std::vector<std::string> out;
  out.reserve(im.ops.size());
  for (const auto& [n, _] : im.ops) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<OpSignature> OpRegistry::types(const std::string& name) const {
  auto& im = impl();
  std::shared_lock lock(im.mutex);
  auto it = im.ops.find(name);
  if (it == im.ops.end()) return std::nullopt;
  return it->second.types;
}

void OpRegistry::bind_function(const std::string& function_id, const std::string& name) {
  auto& im = impl();
  std::unique_lock lock(im.mutex);
  im.functions[function_id].insert(name);
}

std::vector<std::string> OpRegistry::names_of_function(const std::string& function_id) const {
  auto& im = impl();
  std::shared_lock lock(im.mutex);
  auto it = im.functions.find(function_id);
  if (it == im.functions.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void register_op(const std::string& name, OpFn host, std::uint64_t signature, std::optional<OpSignature> types) {
  OpRegistry::global().add(OpInfo{name, std::move(host), nullptr, signature, std::move(types)});
}

void register_device_op(const std::string& name, OpFn device, std::uint64_t signature,
                        std::optional<OpSignature> types) {
  OpRegistry::global().add(OpInfo{name, nullptr, std::move(device), signature, std::move(types)});
}

namespace {

bool any_block_where(std::span<const Value> args, bool on_device, int device) {
  for (const Value& v : args)
    if (v.is_block()) {
      const Block& b = v.block();
      const bool there = b.memory_kind() == MemoryKind::Device && (!on_device || b.buffer()->device() == device);
      if (on_device ? !there : there) return true;
    }
  return false;
}

// The host variant, with an arithmetic fault (SIGFPE) in it turned into an error of the task.
Value run_host(const std::string& name, const OpInfo& op, const OpContext& ctx, std::span<const Value> args) {
  struct Call {
    const OpInfo& op;
    const OpContext& ctx;
    std::span<const Value> args;
    Value out;
  } call{op, ctx, args, {}};
  const int sig = detail::run_catching_arithmetic_faults(
      [](void* p) {
        auto* c = static_cast<Call*>(p);
        c->out = c->op.host(c->ctx, c->args);
      },
      &call);
  if (sig)
    throw Error("operation '" + name + "'" + (ctx.key ? " (task " + *ctx.key + ")" : std::string()) +
                " raised an arithmetic fault (SIGFPE: integer division by zero or overflow)");
  return std::move(call.out);
}

}  // namespace

Value run_op(const std::string& name, const OpContext& ctx, std::span<const Value> args) {
  const OpInfo& op = OpRegistry::global().get(name);
  if (ctx.target == Target::Device) {
    // A device task needs a GPU in this process whichever variant runs, so a missing GPU is an
    // error rather than a silent run on the host.
    DeviceRuntime* rt = device_runtime();
    if (!rt || rt->device_count() == 0)
      throw DeviceError("operation '" + name + "'" + (ctx.key ? " (task " + *ctx.key + ")" : std::string()) +
                        " targets a GPU but this process has none (" +
                        (rt ? std::string("no CUDA device visible") : device_runtime_status()) + ")");
    if (op.device) {
      OpContext dctx = ctx;
      if (dctx.device < 0) dctx.device = 0;
      rt->set_device(dctx.device);
      if (dctx.stream.is_default()) dctx.stream = rt->thread_stream(dctx.device);
      std::vector<Value> moved;
      if (any_block_where(args, true, dctx.device)) {
        moved.reserve(args.size());
        for (const Value& v : args)
          // Queued only: the op runs after the copies on the same stream, and the sources (in
          // `args`) outlive the synchronisation below.
          moved.push_back(v.is_block() ? Value(to_device_async(v.block(), dctx.device, dctx.stream)) : v);
        args = moved;
      }
      Value out = op.device(dctx, args);
      rt->synchronize(dctx.stream);  // the result is complete before anyone else can read it
      return out;
    }
    // No device variant (a user's host function in a GPU pipeline): the host variant runs on
    // host copies of the inputs, below.
  }
  if (!op.host)
    throw UnknownOperationError("operation '" + name + "' has no host implementation" +
                                (op.device ? " (it runs only as a device task: annotate it Target::Device)" : ""));
  if (any_block_where(args, false, -1)) {
    std::vector<Value> moved;
    moved.reserve(args.size());
    for (const Value& v : args) moved.push_back(v.is_block() ? Value(to_host(v.block())) : v);
    return run_host(name, op, ctx, moved);
  }
  return run_host(name, op, ctx, args);
}

namespace detail {
std::uint64_t signature_hash(const std::string& name, const OpSignature& types) {
  std::string text = name + "(";
  for (const auto& a : types.args) text += a + ",";
  text += ")->" + types.result;
  // FNV-1a: stable across processes and builds, unlike std::hash.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}
}  // namespace detail

}  // namespace tessera
