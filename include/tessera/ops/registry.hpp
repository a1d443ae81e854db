#pragma once
/** @file
 * The operation registry: one stable name per operation, with host and device variants. */
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/device.hpp"
#include "tessera/core/key.hpp"
#include "tessera/core/stream.hpp"
#include "tessera/core/value.hpp"
#include "tessera/ops/signature.hpp"

namespace tessera {

class ShuffleExchange;

/** @brief What an op implementation gets besides its arguments. */
struct OpContext {
  const Key* key = nullptr;  ///< the task being run (for messages)
  Target target = Target::Host;
  int device = -1;           ///< CUDA device ordinal when target is Device
  StreamView stream;         ///< this compute thread's stream (a cudaStream_t) when target is Device
  /** The peer-to-peer shuffle service of the process running the task (tessera/ops/shuffle.hpp). */
  ShuffleExchange* shuffle = nullptr;
};

/** @brief An op implementation: resolved arguments in, result out. Throws on failure. */
using OpFn = std::function<Value(const OpContext&, std::span<const Value>)>;

/** @brief A registered operation (like a StarPU codelet): a name and its variants. */
struct OpInfo {
  std::string name;
  OpFn host;                     ///< required
  OpFn device;                   ///< optional, set by the CUDA back end
  std::uint64_t signature = 0;   ///< hash of the argument/result types, checked by workers
  std::optional<OpSignature> types;  ///< a registered function's parameter and result types
};

/**
 * @brief Process-wide table of operations. Thread-safe.
 *
 * Built-in array ops register at library load; user functions register through
 * TESSERA_REGISTER_FUNCTION (tessera/ops/function.hpp) or register_op().
 */
class OpRegistry {
 public:
  static OpRegistry& global();

  /** @brief Adds an op; re-registering a name replaces its variants that are set. */
  void add(OpInfo info);
  /** @brief Throws UnknownOperationError listing close names when absent. */
  const OpInfo& get(const std::string& name) const;
  bool contains(const std::string& name) const;
  /** @brief Every registered name, sorted (what a worker advertises). */
  std::vector<std::string> names() const;
  /** @brief The parameter and result types recorded for `name`; nullopt when unknown here. */
  std::optional<OpSignature> types(const std::string& name) const;
  /**
   * @brief Records that the function identified by `function_id` (detail::function_id) is
   * registered as `name`, so that a client can submit the function itself.
   */
  void bind_function(const std::string& function_id, const std::string& name);
  /** @brief The names the function is registered under, sorted; empty when it is not. */
  std::vector<std::string> names_of_function(const std::string& function_id) const;

 private:
  OpRegistry() = default;
  struct Impl;
  Impl& impl() const;
};

/** @brief Registers a host implementation under a name. */
void register_op(const std::string& name, OpFn host, std::uint64_t signature = 0,
                 std::optional<OpSignature> types = std::nullopt);
/**
 * @brief Registers a device (GPU) implementation under a name, beside or instead of a host one.
 * It gets ctx.device and ctx.stream and must queue its work on ctx.stream; block arguments
 * arrive in device memory of ctx.device.
 */
void register_device_op(const std::string& name, OpFn device, std::uint64_t signature = 0,
                        std::optional<OpSignature> types = std::nullopt);

/** @brief The suffix a worker with a GPU adds to op names it advertises for device tasks. */
inline constexpr const char* kDeviceOpSuffix = "@device";

/**
 * @brief Runs the op with the variant for the context.
 *
 * Target::Device with a device variant: block arguments are moved to ctx.device (host blocks
 * copied there), the variant runs on ctx.stream (this thread's stream when default), and the stream
 * is synchronised before the result is returned. Otherwise the host variant runs, with device
 * block arguments copied to host first; a Device task of an op that has only a host variant
 * runs that way too. Throws DeviceError when a device variant is needed and no GPU is present.
 */
Value run_op(const std::string& name, const OpContext& ctx, std::span<const Value> args);

}  // namespace tessera
