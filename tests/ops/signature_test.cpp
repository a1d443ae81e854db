// Registered functions' signatures: recorded at registration, checked by the worker before a call,
// named in words; values read as a type they do not hold say so.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/signature.hpp"

using namespace tessera;

namespace {

int sig_add_one(int x) { return x + 1; }
std::string sig_join(std::string a, std::vector<double> v, Block b) { return a + std::to_string(v.size() + b.size()); }
void sig_void(Value) {}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("gtest.sig.add_one", sig_add_one);
TESSERA_REGISTER_FUNCTION_AS("gtest.sig.join", sig_join);
TESSERA_REGISTER_FUNCTION_AS("gtest.sig.void", sig_void);

namespace {
struct SameNamedOp {  // tests/ops/function_id_other_file.cpp has one of this name too
  int operator()(int x) const { return x + 100; }
};
}  // namespace
TESSERA_REGISTER_FUNCTION_AS("gtest.sig.same_named_op.this_file", SameNamedOp{});
std::string function_id_of_the_other_files_op();

namespace {

Value call(const std::string& op, std::vector<Value> args) {
  Key k = "test-key";
  return run_op(op, OpContext{&k, Target::Host}, args);
}

std::string message_of(const std::vector<Value>& args, const std::string& op) {
  try {
    call(op, args);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST(Signature, RecordedAtRegistration) {
  auto t = OpRegistry::global().types("gtest.sig.join");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->args.size(), 3u);
  EXPECT_EQ(type_name(t->args[0]), "std::string");
  EXPECT_EQ(type_name(t->args[1]), "std::vector<double, std::allocator<double> >");
  EXPECT_EQ(t->args[2], kBlockType);
  EXPECT_EQ(type_name(t->result), "std::string");
  EXPECT_EQ(OpRegistry::global().types("gtest.sig.void")->args, std::vector<std::string>{kAnyType});
  EXPECT_EQ(OpRegistry::global().types("gtest.sig.void")->result, kVoidType);
  EXPECT_FALSE(OpRegistry::global().types("tessera.identity").has_value());
  EXPECT_FALSE(OpRegistry::global().types("no.such.op").has_value());
  // The function itself finds its name.
  EXPECT_EQ(OpRegistry::global().names_of_function(detail::function_id(sig_add_one)),
            std::vector<std::string>{"gtest.sig.add_one"});
  EXPECT_EQ(OpRegistry::global().names_of_function(detail::function_id(&sig_join)),
            std::vector<std::string>{"gtest.sig.join"});
  // Different types, different hashes.
  EXPECT_NE(detail::signature_hash("f", {{type_tag<int>()}, type_tag<int>()}),
            detail::signature_hash("f", {{type_tag<double>()}, type_tag<int>()}));
}

TEST(Signature, TheWorkerChecksArgumentsBeforeTheCall) {
  // Before: a std::string or a double decoded as an int without an error (2 and 1 came back).
  EXPECT_EQ(message_of({Value(to_object(std::string("x")))}, "gtest.sig.add_one"),
            "function gtest.sig.add_one: argument 1 expects int, given std::string");
  EXPECT_EQ(message_of({Value(to_object(2.5))}, "gtest.sig.add_one"),
            "function gtest.sig.add_one: argument 1 expects int, given double");
  EXPECT_EQ(message_of({Value(to_object(1)), Value(to_object(2))}, "gtest.sig.add_one"),
            "function gtest.sig.add_one takes 1 argument (int), given 2 (int, int)");
  EXPECT_EQ(message_of({Value(Block::scalar(1.0))}, "gtest.sig.add_one"),
            "function gtest.sig.add_one: argument 1 expects int, given tessera::Block");
  EXPECT_EQ(message_of({Value(to_object(std::string("a"))), Value(to_object(std::vector<double>{1})),
                        Value(to_object(3))},
                       "gtest.sig.join"),
            "function gtest.sig.join: argument 3 expects tessera::Block, given int");
  EXPECT_THROW(call("gtest.sig.add_one", {Value(to_object(2.5))}), SignatureError);
  // Matching arguments run; a Value parameter takes anything.
  EXPECT_EQ(from_value<int>(call("gtest.sig.add_one", {Value(to_object(41))})), 42);
  EXPECT_NO_THROW(call("gtest.sig.void", {Value(to_object(std::string("anything")))}));
  EXPECT_NO_THROW(call("gtest.sig.void", {Value(Block::scalar(1.0))}));
}

TEST(Signature, CheckArgumentsNamesFunctionArgumentExpectedAndGiven) {
  const OpSignature sig{{type_tag<int>(), type_tag<std::string>()}, type_tag<int>()};
  const std::vector<std::string> ok{type_tag<int>(), type_tag<std::string>()};
  EXPECT_NO_THROW(check_arguments("f", sig, ok));
  const std::vector<std::string> unknown{"", type_tag<std::string>()};  // an untyped future
  EXPECT_NO_THROW(check_arguments("f", sig, unknown));
  const std::vector<std::string> bad{type_tag<int>(), type_tag<double>()};
  try {
    check_arguments("f", sig, bad);
    FAIL() << "expected SignatureError";
  } catch (const SignatureError& e) {
    EXPECT_STREQ(e.what(), "function f: argument 2 expects std::string, given double");
  }
  const std::vector<std::string> none;
  try {
    check_arguments("f", sig, none);
    FAIL() << "expected SignatureError";
  } catch (const SignatureError& e) {
    EXPECT_STREQ(e.what(), "function f takes 2 arguments (int, std::string), given 0");
  }
}

TEST(Signature, ValueReadAsTheWrongTypeSaysSoInWords) {
  const Value i(to_object(7));
  try {
    (void)detail::from_task_value<std::string>(i, "the result of k");
    FAIL() << "expected SerializationError";
  } catch (const SerializationError& e) {
    // Before: cereal's "Failed to read 8 bytes from input stream! Read 4".
    EXPECT_STREQ(e.what(), "the result of k holds int, read as std::string");
  }
  EXPECT_THROW((void)detail::from_task_value<Block>(i), SerializationError);
  EXPECT_THROW((void)detail::from_task_value<int>(Value(Block::scalar(1.0))), SerializationError);
  EXPECT_EQ(detail::from_task_value<int>(i), 7);
  EXPECT_EQ(type_name("Shape"), "Shape");  // a hand-made tag reads as it is
}

TEST(Signature, FunctorsOfTheSameNameInTwoFilesAreTwoFunctions) {
  // Their mangled type names are equal; submit(fn) must still find each one's own name.
  const std::string here = detail::function_id(SameNamedOp{});
  EXPECT_NE(here, function_id_of_the_other_files_op());
  EXPECT_EQ(OpRegistry::global().names_of_function(here),
            std::vector<std::string>{"gtest.sig.same_named_op.this_file"});
  EXPECT_EQ(OpRegistry::global().names_of_function(function_id_of_the_other_files_op()),
            std::vector<std::string>{"gtest.sig.same_named_op.other_file"});
}

TEST(Signature, AnEmptyValueArgumentIsNamed) {
  try {
    call("gtest.sig.add_one", {Value()});
    FAIL() << "expected SignatureError";
  } catch (const SignatureError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 1 expects int, given no value"), std::string::npos) << e.what();
  }
}
