#pragma once
/**
 * @file
 * Registering user functions as task operations.
 *
 *     double add(double a, double b) { return a + b; }
 *     TESSERA_REGISTER_FUNCTION(add);                 // registered as "add"
 *     TESSERA_REGISTER_FUNCTION_AS("my.scale", scale);
 *
 * Arguments and results that are Blocks travel as raw blocks; anything else travels as a
 * cereal-serialized Object tagged with its type. The parameter and result types are recorded
 * (OpSignature), so a client that links the function can submit the function itself and have
 * its arguments checked at submit; the worker checks them again before the call. The function
 * runs wherever the task is placed, so it must be registered (by linking or --preload) in every
 * process that may run it.
 */
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "tessera/ops/signature.hpp"

namespace tessera {
/// @cond INTERNAL
namespace detail {

template <typename T>
Value to_task_value(T&& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Value>) return std::forward<T>(v);
  else if constexpr (std::is_same_v<D, Block>) return Value(std::forward<T>(v));
  else return Value(to_object<D>(v));
}

/** @brief Decodes v as T, once its type is known to be T (check_task_arguments checked it). */
template <typename T>
T from_checked_value(const Value& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Value>) return v;
  else if constexpr (std::is_same_v<D, Block>) return v.block();
  else return from_value<D>(v);
}

/**
 * @brief Decodes a task's argument or result as T, after checking that it holds a T (so a wrong
 * read says "holds int, read as std::string" rather than cereal's byte counts); `what` names the
 * value in that message.
 */
template <typename T>
T from_task_value(const Value& v, const std::string& what = "the value") {
  using D = std::decay_t<T>;
  if constexpr (!std::is_same_v<D, Value>) check_value_type(v, type_tag<D>(), what);
  return from_checked_value<T>(v);
}

template <typename T>
struct function_traits : function_traits<decltype(&T::operator())> {};
template <typename R, typename... A>
struct function_traits<R (*)(A...)> {
  using result = R;
  using args = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct function_traits<R (*)(A...) noexcept> : function_traits<R (*)(A...)> {};
template <typename R, typename... A>
struct function_traits<R(A...)> : function_traits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...) const> : function_traits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...) const noexcept> : function_traits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...)> : function_traits<R (*)(A...)> {};

template <typename Tuple>
struct tuple_tail;
template <typename H, typename... T>
struct tuple_tail<std::tuple<H, T...>> {
  using type = std::tuple<T...>;
};

/**
 * @brief What a caller passes to a registered function: its parameters less a device function's
 * leading OpContext, and its result.
 */
template <typename F>
struct call_traits {
 private:
  using all = typename function_traits<std::decay_t<F>>::args;
  static constexpr bool takes_context = [] {
    if constexpr (std::tuple_size_v<all> == 0) return false;
    else return std::is_same_v<std::tuple_element_t<0, all>, OpContext>;
  }();

 public:
  using args = typename std::conditional_t<takes_context, tuple_tail<all>, std::type_identity<all>>::type;
  using result = std::decay_t<typename function_traits<std::decay_t<F>>::result>;
};

/** @brief A function pointer, or an object with one call operator (a lambda, a functor). */
template <typename F>
concept RegistrableFunction =
    (std::is_pointer_v<std::decay_t<F>> && std::is_function_v<std::remove_pointer_t<std::decay_t<F>>>) ||
    (std::is_class_v<std::decay_t<F>> && requires { &std::decay_t<F>::operator(); });

/** @brief The types of fn's parameters from the `skip`th on, and of its result, as tags. */
template <typename F, std::size_t skip = 0>
OpSignature signature_of() {
  using traits = function_traits<std::decay_t<F>>;
  using Args = typename traits::args;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return OpSignature{{type_tag<std::tuple_element_t<I + skip, Args>>()...},
                       type_tag<std::decay_t<typename traits::result>>()};
  }(std::make_index_sequence<std::tuple_size_v<Args> - skip>{});
}

/**
 * One object per lambda or functor type: its address tells the types apart. A type's name does
 * not: two files may each have an `Op` in an anonymous namespace, or a first registered lambda,
 * with the same mangled name; for such a type this variable has internal linkage, so each file
 * has its own.
 */
template <typename D>
inline constexpr char function_type_key = 0;

/**
 * @brief What identifies a registered function in this process: its address, or for a lambda
 * or functor the address of its type's function_type_key.
 */
template <RegistrableFunction F>
std::string function_id(const F& fn) {
  using D = std::decay_t<F>;
  if constexpr (std::is_pointer_v<D>) {
    const D p = fn;
    return "fn@" + std::to_string(reinterpret_cast<std::uintptr_t>(p));
  } else {
    return "type@" + std::to_string(reinterpret_cast<std::uintptr_t>(&function_type_key<D>));
  }
}

/** @brief Stable hash of the function's name and argument and result types. */
std::uint64_t signature_hash(const std::string& name, const OpSignature& types);

/** @brief Whether each argument holds the type its parameter takes (no allocation). */
inline bool arguments_fit(const OpSignature& sig, std::span<const Value> args) {
  if (args.size() != sig.args.size()) return false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& want = sig.args[i];
    if (want == kAnyType) continue;
    if (args[i].is_block() ? want != kBlockType : !args[i].is_object() || args[i].object().type != want)
      return false;
  }
  return true;
}

// The worker's check: a client that does not link the function could not check its arguments.
inline void check_task_arguments(const std::string& name, const OpSignature& sig, std::span<const Value> args) {
  if (arguments_fit(sig, args)) return;
  std::vector<std::string> given;
  given.reserve(args.size());
  for (const Value& v : args) given.push_back(type_tag_of(v));
  check_arguments(name, sig, given);
  // check_arguments lets an empty tag through (a client's untyped future); here it is an empty
  // value, which no parameter takes.
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].empty() && sig.args[i] != kAnyType)
      throw SignatureError("function " + name + ": argument " + std::to_string(i + 1) + " expects " +
                           type_name(sig.args[i]) + ", given no value");
}

template <typename F>
OpFn wrap_function(const std::string& name, F fn) {
  using traits = function_traits<std::decay_t<F>>;
  using ArgsTuple = typename traits::args;
  constexpr std::size_t arity = std::tuple_size_v<ArgsTuple>;
  return [fn, name, sig = signature_of<F>()](const OpContext&, std::span<const Value> args) -> Value {
    check_task_arguments(name, sig, args);
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::invoke(fn, from_checked_value<std::tuple_element_t<I, ArgsTuple>>(args[I])...);
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
  return [fn, name, sig = signature_of<F, 1>()](const OpContext& ctx, std::span<const Value> args) -> Value {
    check_task_arguments(name, sig, args);
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::invoke(fn, ctx, from_checked_value<std::tuple_element_t<I + 1, AllArgs>>(args[I])...);
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
/// @endcond

/**
 * @brief Registers fn as the device (GPU) variant of op `name`: a user's CUDA kernel as a task.
 *
 *     Block add(const tessera::OpContext& ctx, Block x, Block y) {   // x, y already on ctx.device
 *       Block out = tessera::device_block(x.dtype(), x.shape(), ctx.device, ctx.stream);
 *       add_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(ctx.stream.native())>>>(...);
 *       return out;                                                    // run_op syncs ctx.stream
 *     }
 *     TESSERA_REGISTER_DEVICE_FUNCTION_AS("example.add", add);
 *
 * Submit it with annotations target = Target::Device (Annotate or SubmitOptions) so it runs on
 * a GPU worker; its block arguments arrive in that GPU's memory and its results go back to a
 * client as host data. A host variant may be registered under the same name too.
 */
template <detail::RegistrableFunction F>
void register_device_function(const std::string& name, F fn) {
  OpSignature types = detail::signature_of<F, 1>();
  const std::uint64_t hash = detail::signature_hash(name, types);
  OpRegistry::global().bind_function(detail::function_id(fn), name);
  register_device_op(name, detail::wrap_device_function(name, std::move(fn)), hash, std::move(types));
}

/**
 * @brief Registers fn (a function, or a lambda or functor with one call operator) as op `name`,
 * recording its parameter and result types so that calls are checked when they are submitted.
 */
template <detail::RegistrableFunction F>
void register_function(const std::string& name, F fn) {
  OpSignature types = detail::signature_of<F>();
  const std::uint64_t hash = detail::signature_hash(name, types);
  OpRegistry::global().bind_function(detail::function_id(fn), name);
  register_op(name, detail::wrap_function(name, std::move(fn)), hash, std::move(types));
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
