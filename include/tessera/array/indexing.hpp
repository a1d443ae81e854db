#pragma once
/** @file
 * NumPy basic indexing of an Array: x[{step(2), slice(1, 10), 3, newaxis}]. */
#include <cstdint>
#include <optional>
#include <variant>

namespace tessera {

/** @brief start:stop:step on one axis; empty start/stop mean the ends (as in Python). */
struct Slice {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::int64_t step = 1;
};
/** @brief start:stop:step. */
inline Slice slice(std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                   std::int64_t step = 1) {
  return Slice{start, stop, step};
}
/** @brief Every s-th element, Python's \::s (a negative s walks backwards). */
inline Slice step(std::int64_t s) { return Slice{std::nullopt, std::nullopt, s}; }
/** @brief ":" (the whole axis). */
inline Slice all() { return Slice{}; }
/** @brief Inserts an axis of length 1 (numpy.newaxis). */
struct NewAxis {};
inline constexpr NewAxis newaxis{};

/** @brief One item of an index expression: an integer, a slice, or newaxis. */
class Index {
 public:
  Index(std::int64_t i) : v_(i) {}
  Index(int i) : v_(static_cast<std::int64_t>(i)) {}
  Index(Slice s) : v_(s) {}
  Index(NewAxis n) : v_(n) {}
  const std::variant<std::int64_t, Slice, NewAxis>& get() const { return v_; }

 private:
  std::variant<std::int64_t, Slice, NewAxis> v_;
};

}  // namespace tessera
