// Ops layer: registry, user functions, serialization of values and tasks, built-in ops.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "ops/fused_tasks.hpp"

using namespace tessera;

namespace {

double ops_test_add(double a, double b) { return a + b; }
TESSERA_REGISTER_FUNCTION(ops_test_add);

Block ops_test_scale(Block b, double f) {
  Block out(DType::Float64, b.shape());
  auto in = b.values<double>();
  for (std::size_t i = 0; i < in.size(); ++i) out.data<double>()[i] = in[i] * f;
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("gtest.ops.scale", ops_test_scale);

template <typename T>
T round_trip(const T& v) {
  return from_object<T>(to_object(v));
}

Value call(const std::string& op, std::vector<Value> args) {
  Key k = "test-key";
  return run_op(op, OpContext{&k, Target::Host}, args);
}

}  // namespace

TEST(Registry, UnknownOperationNamesItAndHintsSimilarNames) {
  try {
    (void)OpRegistry::global().get("no.such.op");
    FAIL() << "expected UnknownOperationError";
  } catch (const UnknownOperationError& e) {
    EXPECT_NE(std::string(e.what()).find("'no.such.op'"), std::string::npos) << e.what();
  }
  try {
    (void)OpRegistry::global().get("other.scale");
    FAIL() << "expected UnknownOperationError";
  } catch (const UnknownOperationError& e) {
    EXPECT_NE(std::string(e.what()).find("gtest.ops.scale"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call("no.such.op", {}), UnknownOperationError);
  EXPECT_THROW(register_op("", [](const OpContext&, std::span<const Value>) { return Value(); }), Error);
}

TEST(Registry, RegisterOpAndNames) {
  register_op("gtest.ops.seven", [](const OpContext& ctx, std::span<const Value> args) {
    EXPECT_NE(ctx.key, nullptr);
    return Value(Block::scalar<double>(7.0 + static_cast<double>(args.size())));
  });
  EXPECT_TRUE(OpRegistry::global().contains("gtest.ops.seven"));
  EXPECT_EQ(call("gtest.ops.seven", {Value(), Value()}).block().item(), 9.0);
  auto names = OpRegistry::global().names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "ops_test_add"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "tessera.identity"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "tessera.fused"), names.end());
}

TEST(Registry, FunctionsWithNonBlockArguments) {
  Value r = call("ops_test_add", {Value(to_object(2.0)), Value(to_object(40.0))});
  EXPECT_EQ(from_value<double>(r), 42.0);
  EXPECT_NE(OpRegistry::global().get("ops_test_add").signature, 0u);
  EXPECT_THROW(call("ops_test_add", {Value(to_object(2.0))}), Error);
  // A Block where an object is expected is a clear error, not garbage.
  EXPECT_THROW(call("ops_test_add", {Value(Block::scalar(1.0)), Value(to_object(1.0))}), SignatureError);

  register_function("gtest.ops.concat", [](std::string a, std::vector<int> v) {
    return a + ":" + std::to_string(v.size());
  });
  Value s = call("gtest.ops.concat", {Value(to_object(std::string("n"))), Value(to_object(std::vector<int>{1, 2, 3}))});
  EXPECT_EQ(from_value<std::string>(s), "n:3");
}

TEST(Registry, FunctionsWithBlockArguments) {
  Value r = call("gtest.ops.scale", {Value(Block::from_values<double>({1, 2, 3}, {3})), Value(to_object(2.5))});
  ASSERT_TRUE(r.is_block());
  EXPECT_EQ(r.block().to_doubles(), (std::vector<double>{2.5, 5, 7.5}));
  // The wrong dtype inside the function surfaces as DTypeError.
  EXPECT_THROW(call("gtest.ops.scale", {Value(Block::from_values<float>({1}, {1})), Value(to_object(1.0))}),
               DTypeError);
  int calls = 0;
  register_function("gtest.ops.void", [&calls](Block) { ++calls; });
  EXPECT_EQ(call("gtest.ops.void", {Value(Block::scalar(1.0))}).block().item(), 1.0);
  EXPECT_EQ(calls, 1);
}

TEST(Registry, IdentityReturnsItsArgument) {
  Value in(Block::from_values<std::int32_t>({4, 5}, {2}));
  Value out = call("tessera.identity", {in});
  EXPECT_EQ(out.block().buffer(), in.block().buffer());
  EXPECT_THROW(call("tessera.identity", {}), Error);
}

TEST(Serialize, ObjectsRoundTripAndCorruptDataThrows) {
  EXPECT_EQ(round_trip(std::string("hello")), "hello");
  EXPECT_EQ(round_trip(std::vector<double>{1, 2.5}), (std::vector<double>{1, 2.5}));
  Object o = to_object(std::string("hello world, a longer string"));
  Object truncated{o.type, std::make_shared<const std::string>(o.bytes->substr(0, 4))};
  EXPECT_THROW(from_object<std::string>(truncated), SerializationError);
  EXPECT_THROW(from_object<std::string>(Object{"x", nullptr}), SerializationError);
  EXPECT_THROW(from_value<double>(Value(Block::scalar(1.0))), SerializationError);
}

TEST(Serialize, BlocksRoundTripEveryDType) {
  std::vector<Block> blocks = {
      Block::from_values<bool>({true, false, true}, {3}),
      Block::from_values<std::int32_t>({1, -2, 3, 4}, {2, 2}),
      Block::from_values<std::int64_t>({1LL << 40}, {}),
      Block::from_values<float>({0.5f, 1.5f}, {1, 2}),
      Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 1, 3}),
      Block(DType::Float64, {0, 3}),
  };
  for (const Block& b : blocks) {
    Block r = round_trip(b);
    EXPECT_EQ(r.dtype(), b.dtype());
    EXPECT_EQ(r.shape(), b.shape());
    ASSERT_EQ(r.nbytes(), b.nbytes());
    if (b.nbytes()) { EXPECT_EQ(std::memcmp(r.raw(), b.raw(), b.nbytes()), 0); }
    EXPECT_NE(r.buffer(), b.buffer());
  }
  EXPECT_TRUE(round_trip(Block()).empty());
}

TEST(Serialize, CorruptBlocksAndDeviceBlocksThrow) {
  Object o = to_object(Block::from_values<double>({1, 2, 3, 4}, {4}));
  Object cut{o.type, std::make_shared<const std::string>(o.bytes->substr(0, o.bytes->size() - 8))};
  EXPECT_THROW(from_object<Block>(cut), SerializationError);
  std::string bad = *o.bytes;
  bad[1] = static_cast<char>(kNumDTypes);  // dtype code after the "present" flag: the first unused one
  EXPECT_THROW(from_object<Block>(Object{o.type, std::make_shared<const std::string>(bad)}), SerializationError);

  static double fake[4];
  auto dev = Buffer::adopt(fake, sizeof fake, MemoryKind::Device, 0, [](void*, std::size_t) {});
  EXPECT_THROW(to_object(Block(DType::Float64, {4}, dev)), SerializationError);
}

TEST(Serialize, ValuesAndTasksRoundTrip) {
  Value vb(Block::from_values<float>({1, 2}, {2}));
  Value vo(to_object(std::string("payload")));
  Value ve;
  EXPECT_EQ(round_trip(vb).block().to_doubles(), (std::vector<double>{1, 2}));
  Value ro = round_trip(vo);
  ASSERT_TRUE(ro.is_object());
  EXPECT_EQ(ro.object().type, vo.object().type);
  EXPECT_EQ(from_value<std::string>(ro), "payload");
  EXPECT_TRUE(round_trip(ve).empty());

  Task t;
  t.key = "sum-abc,1,2";
  t.op = "tessera.sum";
  t.args = {KeyRef{"x,0"}, vb, KeyRef{"y,1"}, vo, ve};
  t.annotations.resources = {{"GPU", 1}, {"MEM", 1e9}};
  t.annotations.priority = -3;
  t.annotations.retries = 2;
  t.annotations.workers = {"tcp://a:1", "w2"};
  t.annotations.allow_other_workers = true;
  Task r = round_trip(t);
  EXPECT_EQ(r.key, t.key);
  EXPECT_EQ(r.op, t.op);
  EXPECT_EQ(r.annotations, t.annotations);
  ASSERT_EQ(r.args.size(), 5u);
  EXPECT_EQ(std::get<KeyRef>(r.args[0]), KeyRef{"x,0"});
  EXPECT_EQ(std::get<Value>(r.args[1]).block().to_doubles(), (std::vector<double>{1, 2}));
  EXPECT_EQ(std::get<KeyRef>(r.args[2]).key, "y,1");
  EXPECT_EQ(from_value<std::string>(std::get<Value>(r.args[3])), "payload");
  EXPECT_TRUE(std::get<Value>(r.args[4]).empty());
  EXPECT_EQ(r.dependencies(), (std::vector<Key>{"x,0", "y,1"}));

  std::vector<Task> many(3, t);
  many[2].key = "other";
  auto back = round_trip(many);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].key, "other");
}

TEST(Fused, InputsAndDirectRun) {
  Task a{"a", "gtest.ops.scale", {KeyRef{"in"}, Value(to_object(2.0))}, {}};
  Task b{"b", "gtest.ops.scale", {KeyRef{"a"}, Value(to_object(10.0))}, {}};
  std::vector<Task> chain{a, b};
  EXPECT_EQ(fused_task_inputs(chain), (std::vector<Key>{"in"}));
  Value out = call("tessera.fused", {encode_fused_tasks(chain), Value(Block::from_values<double>({1, 2}, {2}))});
  EXPECT_EQ(out.block().to_doubles(), (std::vector<double>{20, 40}));
  EXPECT_THROW(call("tessera.fused", {encode_fused_tasks(chain)}), Error);  // input missing
  EXPECT_THROW(call("tessera.fused", {}), Error);
  // An inner failure propagates.
  Task bad{"c", "no.such.op", {KeyRef{"b"}}, {}};
  EXPECT_THROW(call("tessera.fused", {encode_fused_tasks({a, b, bad}), Value(Block::scalar(1.0))}),
               UnknownOperationError);
}
