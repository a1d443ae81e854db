// Random arrays: counter-based generators (Philox4x32-10; kernels/random.cpp draws the numbers).
#include "tessera/array/random.hpp"

#include "generator.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace random {
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks) {
  if (!(stddev >= 0)) throw Error("normal: the standard deviation must be >= 0");
  return make_generator(GenKind::Normal, DType::Float64, std::move(shape), chunks, mean, stddev, 0, 0,
                        mix_key(seed, 0), "normal");
}
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks) {
  return make_generator(GenKind::Uniform, DType::Float64, std::move(shape), chunks, low, high, 0, 0,
                        mix_key(seed, 0), "uniform");
}
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype) {
  if (high <= low) throw Error("integers: high must be greater than low");
  if (!is_integer(dtype)) throw DTypeError("integers: dtype must be int32 or int64");
  return make_generator(GenKind::Integers, dtype, std::move(shape), chunks, static_cast<double>(low),
                        static_cast<double>(high), low, high, mix_key(seed, 0), "integers");
}
Array RandomState::normal(double mean, double stddev, Shape shape, ChunkSpec chunks) {
  auto a = random::normal(0, mean, stddev, std::move(shape), chunks);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
Array RandomState::uniform(double low, double high, Shape shape, ChunkSpec chunks) {
  auto a = random::uniform(0, low, high, std::move(shape), chunks);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
Array RandomState::integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype) {
  auto a = random::integers(0, low, high, std::move(shape), chunks, dtype);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
}  // namespace random

}  // namespace tessera
