// Errors: invalid expressions throw when they are built (never at compute); failing map_blocks
// functions surface as TaskError and leave the executors usable.
#include <stdexcept>

#include "array_test_util.hpp"
#include "tessera/ops/function.hpp"

using namespace tessera_test;

namespace {

Array m34() { return ones({3, 4}, {2}); }

TEST(ArrayErrors, BroadcastShapeMismatchIsAShapeErrorAtBuildTime) {
  EXPECT_THROW(m34() + ones({4, 3}, {2}), ShapeError);
  EXPECT_THROW(m34() * ones({3}, {2}), ShapeError);
  EXPECT_THROW(m34() < ones({2, 3, 3}, {2}), ShapeError);
  EXPECT_THROW(where(m34() > 0.0, m34(), ones({5}, {1})), ShapeError);
  EXPECT_THROW(minimum(m34(), ones({2, 4}, {1})), ShapeError);
  try {
    (void)(m34() + ones({4, 3}, {2}));
    FAIL() << "no exception";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(3, 4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 3)"), std::string::npos) << msg;
  }
}

TEST(ArrayErrors, MatmulMisalignedIsAShapeError) {
  EXPECT_THROW(matmul(m34(), m34()), ShapeError);
  EXPECT_THROW(matmul(ones({5}, {2}), m34()), ShapeError);
  EXPECT_THROW(dot(ones({3}, {2}), ones({4}, {2})), ShapeError);
  EXPECT_THROW(matmul(scalar(1), m34()), ShapeError);
  EXPECT_THROW(matmul(ones({2, 3, 4}, {2}), ones({3, 4, 2}, {2})), ShapeError);  // batch axes 2 and 3
  EXPECT_THROW(matmul(ones({2, 3, 4}, {2}), ones({3, 4}, {2})), ShapeError);
  EXPECT_NO_THROW(matmul(m34(), m34().T()));
}

TEST(ArrayErrors, IndexErrors) {
  Array x = m34();
  EXPECT_THROW(x[3], IndexError);
  EXPECT_THROW(x[-4], IndexError);
  EXPECT_THROW((x[{0, 4}]), IndexError);
  EXPECT_THROW((x[{all(), -5}]), IndexError);
  EXPECT_THROW((x[{0, 0, 0}]), IndexError);            // too many indices
  EXPECT_THROW((x[{all(), all(), all()}]), IndexError);  // too many indices
  EXPECT_THROW((scalar(1)[0]), IndexError);
  EXPECT_THROW((x[{slice(0, 2, 0)}]), IndexError);  // zero step
  // newaxis does not count towards the number of indices; out-of-range slices clamp.
  EXPECT_NO_THROW((x[{newaxis, 0, newaxis, 1, newaxis}]));
  EXPECT_NO_THROW((x[{slice(-100, 100), slice(7, 9)}]));
  EXPECT_NO_THROW(x[-3]);
}

TEST(ArrayErrors, DTypeErrors) {
  Array f = m34();
  Array b = f > 0.0;
  // NumPy takes the truth of numbers in logical operations and where (elementwise_test.cpp).
  EXPECT_NO_THROW(f && b);
  EXPECT_NO_THROW(where(f, f, f));
  // NumPy's TypeErrors for bools, and its errors for integer powers (element_semantics_test.cpp).
  EXPECT_THROW(b - b, DTypeError);
  EXPECT_THROW(-b, DTypeError);
  EXPECT_THROW(power(f.astype(DType::Int64), -2), DTypeError);
  EXPECT_NO_THROW(where(b, f, f));
  EXPECT_NO_THROW(b && (f.astype(DType::Int32)));
}

TEST(ArrayErrors, ReshapeAndAxisErrors) {
  Array x = m34();
  EXPECT_THROW(x.reshape({5, 2}), ShapeError);
  EXPECT_THROW(x.reshape({-1, 5}), ShapeError);
  EXPECT_THROW(x.reshape({-1, -1}), ShapeError);
  EXPECT_THROW(x.reshape({13}), ShapeError);
  EXPECT_NO_THROW(x.reshape({-1}));
  EXPECT_THROW(x.sum({.axes = {2}}), ShapeError);
  EXPECT_THROW(x.mean({.axes = {-3}}), ShapeError);
  EXPECT_THROW(x.argmin(2), ShapeError);
  EXPECT_THROW(x.argmax({.axes = {0, 2}}), ShapeError);
  EXPECT_THROW(x.argmax({.axes = {0, 1, 0}}), ShapeError);
  EXPECT_THROW(x.rechunk({2, 2, 2}), ShapeError);  // three sizes for two axes
  EXPECT_THROW(ones({2, 3, 4}, {2}).rechunk({2, 2}), ShapeError);
  EXPECT_THROW(x.transpose({0}), ShapeError);
  EXPECT_THROW(x.transpose({0, 2}), ShapeError);
  EXPECT_THROW(x.transpose({1, 1}), ShapeError);
  EXPECT_THROW(concatenate({x, x}, 2), ShapeError);
  EXPECT_THROW(stack({x, x}, 3), ShapeError);
  EXPECT_THROW(ones({2, 2, 2}, {1}).argmax(std::nullopt).sum({.axes = {0}}), ShapeError);
}

TEST(ArrayErrors, MapBlocksUnknownOperation) {
  EXPECT_THROW(map_blocks("tessera_test.array.no_such_function", {m34()}, DType::Float64), UnknownOperationError);
  EXPECT_THROW(map_blocks("tessera_test.array.thrower", {}, DType::Float64), Error);
  EXPECT_THROW(map_blocks("tessera_test.array.thrower", {m34(), ones({4, 3}, {1})}, DType::Float64), ShapeError);
}

Block tessera_test_thrower(Block b) {
  if (b.size() > 0) throw std::runtime_error("tessera_test thrower: this chunk is bad");
  return b;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.array.thrower", tessera_test_thrower);

// Returns a block of the wrong shape.
Block tessera_test_wrong_shape(Block b) { return Block(DType::Float64, {b.shape()[0] + 1}); }
TESSERA_REGISTER_FUNCTION_AS("tessera_test.array.wrong_shape", tessera_test_wrong_shape);

TEST(ArrayErrors, ThrowingMapBlocksIsATaskErrorAndExecutorsRecover) {
  for (const auto& e : executors()) {
    SCOPED_TRACE(e.name);
    // Building is fine; computing fails.
    Array bad = map_blocks("tessera_test.array.thrower", {ones({6, 6}, {2})}, DType::Float64).sum();
    try {
      bad.compute(*e.ex);
      FAIL() << "no exception";
    } catch (const TaskError& err) {
      EXPECT_NE(std::string(err.what()).find("this chunk is bad"), std::string::npos) << err.what();
      EXPECT_NE(err.task_message().find("this chunk is bad"), std::string::npos);
    }
    EXPECT_THROW(bad.persist(*e.ex), TaskError);
    // The executor keeps working.
    const Ref a = sample(DType::Float64, {5, 5});
    EXPECT_TRUE(block_matches(((to_array(a, {2}) + 1.0).sum({.axes = {0}})).compute(*e.ex),
                              make_ref(DType::Float64, {5}, [&](auto& i) {
                                double s = 0;
                                for (int r = 0; r < 5; ++r) s += a.at({r, i[0]}) + 1;
                                return s;
                              })));
  }
  // A function returning the wrong shape is caught when the chunk is collected.
  Array wrong = map_blocks("tessera_test.array.wrong_shape", {ones({4}, {2})}, DType::Float64);
  EXPECT_THROW(compute_sync(wrong), Error);
}

TEST(ArrayErrors, NothingRunsAtBuildTime) {
  // A throwing map_blocks inside a long expression: building, slicing, reducing and lowering
  // never run it; only compute does.
  Array x = map_blocks("tessera_test.array.thrower", {ones({8, 8}, {4})}, DType::Float64);
  Array y = ((x * 2.0)[{step(2)}] + 1.0).mean({.axes = {1}});
  std::vector<Key> keys;
  EXPECT_NO_THROW(y.to_graph(&keys));
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_THROW(compute_sync(y), TaskError);
}

}  // namespace
