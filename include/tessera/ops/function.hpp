#pragma once
/**
 * @file Registering user functions as task operations.
 *
 *     double add(double a, double b) { return a + b; }
 *     TESSERA_REGISTER_FUNCTION(add);                 // registered as "add"
 *     TESSERA_REGISTER_FUNCTION_AS("my.scale", scale);
 *
 * Arguments and results that are Blocks travel as raw blocks; anything else travels as a
 * cereal-serialized Object. The function runs wherever the task is placed, so it must be
 * registered (by linking or --preload) in every process that may run it.
 */
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {
namespace detail {

template <typename T>
Value to_task_value(T&& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Value>) return std::forward<T>(v);
  else if constexpr (std::is_same_v<D, Block>) return Value(std::forward<T>(v));
  else return Value(to_object<D>(v));
}

template <typename T>
T from_task_value(const Value& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Value>) return v;
  else if constexpr (std::is_same_v<D, Block>) return v.block();
  else return from_value<D>(v);
}

template <typename T>
struct function_traits : function_traits<decltype(&T::operator())> {};
template <typename R, typename... A>
struct function_traits<R (*)(A...)> {
  using result = R;
  using args = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct function_traits<R(A...)> : function_traits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...) const> : function_traits<R (*)(A...)> {};

/** @brief Stable hash of the function's argument count and name, for signature checks. */
std::uint64_t signature_hash(const std::string& name, std::size_t arity);

template <typename F>
OpFn wrap_function(const std::string& name, F fn) {
  using traits = function_traits<std::decay_t<F>>;
  using ArgsTuple = typename traits::args;
  constexpr std::size_t arity = std::tuple_size_v<ArgsTuple>;
  return [fn, name](const OpContext&, std::span<const Value> args) -> Value {
    if (args.size() != arity)
      throw Error("function " + name + " takes " + std::to_string(arity) + " arguments, got " +
                  std::to_string(args.size()));
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::invoke(fn, from_task_value<std::tuple_element_t<I, ArgsTuple>>(args[I])...);
    };
    if constexpr (std::is_void_v<typename traits::result>) {
      call(std::make_index_sequence<arity>{});
      return Value(Block::scalar<bool>(true));
    } else {
      return to_task_value(call(std::make_index_sequence<arity>{}));
    }
  };
}

/** Like wrap_function for device functions: fn's first parameter is the OpContext. */
template <typename F>
OpFn wrap_device_function(const std::string& name, F fn) {
  using traits = function_traits<std::decay_t<F>>;
  using AllArgs = typename traits::args;
  static_assert(std::tuple_size_v<AllArgs> >= 1 && std::is_same_v<std::tuple_element_t<0, AllArgs>, OpContext>,
                "a device function takes const tessera::OpContext& first");
  constexpr std::size_t arity = std::tuple_size_v<AllArgs> - 1;
  return [fn, name](const OpContext& ctx, std::span<const Value> args) -> Value {
    if (args.size() != arity)
      throw Error("function " + name + " takes " + std::to_string(arity) + " arguments, got " +
                  std::to_string(args.size()));
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::invoke(fn, ctx, from_task_value<std::tuple_element_t<I + 1, AllArgs>>(args[I])...);
    };
    if constexpr (std::is_void_v<typename traits::result>) {
      call(std::make_index_sequence<arity>{});
      return Value(Block::scalar<bool>(true));
    } else {
      return to_task_value(call(std::make_index_sequence<arity>{}));
    }
  };
}

}  // namespace detail

/**
 * @brief Registers fn as the device (GPU) variant of op `name`: a user's CUDA kernel as a task.
 *
 *     Block add(const tessera::OpContext& ctx, Block x, Block y) {   // x, y already on ctx.device
 *       Block out = tessera::device_block(x.dtype(), x.shape(), ctx.device, ctx.stream);
 *       add_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(ctx.stream)>>>(...);
 *       return out;                                                    // run_op syncs ctx.stream
 *     }
 *     TESSERA_REGISTER_DEVICE_FUNCTION_AS("example.add", add);
 *
 * Submit it with annotations target = Target::Device (Annotate or SubmitOptions) so it runs on
 * a GPU worker; its block arguments arrive in that GPU's memory and its results go back to a
 * client as host data. A host variant may be registered under the same name too.
 */
template <typename F>
void register_device_function(const std::string& name, F fn) {
  using traits = detail::function_traits<std::decay_t<F>>;
  register_device_op(name, detail::wrap_device_function(name, std::move(fn)),
                     detail::signature_hash(name, std::tuple_size_v<typename traits::args> - 1));
}

/** @brief Registers fn (any callable with a fixed signature) as op `name`. */
template <typename F>
void register_function(const std::string& name, F fn) {
  using traits = detail::function_traits<std::decay_t<F>>;
  register_op(name, detail::wrap_function(name, std::move(fn)),
              detail::signature_hash(name, std::tuple_size_v<typename traits::args>));
}

}  // namespace tessera

#define TESSERA_DETAIL_CONCAT2(a, b) a##b
#define TESSERA_DETAIL_CONCAT(a, b) TESSERA_DETAIL_CONCAT2(a, b)
/** @brief Registers a function at load time under the name given as a string. */
#define TESSERA_REGISTER_FUNCTION_AS(name, fn)                                        \
  static const bool TESSERA_DETAIL_CONCAT(tessera_registered_, __COUNTER__) = [] {   \
    ::tessera::register_function(name, fn);                                          \
    return true;                                                                      \
  }()
/** @brief Registers a device function (see register_device_function) at load time. */
#define TESSERA_REGISTER_DEVICE_FUNCTION_AS(name, fn)                                 \
  static const bool TESSERA_DETAIL_CONCAT(tessera_registered_, __COUNTER__) = [] {   \
    ::tessera::register_device_function(name, fn);                                   \
    return true;                                                                      \
  }()
/** @brief Registers a free function at load time under its own name. */
#define TESSERA_REGISTER_FUNCTION(fn) TESSERA_REGISTER_FUNCTION_AS(#fn, fn)
