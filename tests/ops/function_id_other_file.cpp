// A second translation unit for Signature.FunctorsOfTheSameNameInTwoFilesAreTwoFunctions: a
// functor named as one in signature_test.cpp, in its own anonymous namespace, registered under
// another name.
#include <string>

#include "tessera/ops/function.hpp"

namespace {
struct SameNamedOp {
  int operator()(int x) const { return x * 100; }
};
}  // namespace

TESSERA_REGISTER_FUNCTION_AS("gtest.sig.same_named_op.other_file", SameNamedOp{});

std::string function_id_of_the_other_files_op() { return tessera::detail::function_id(SameNamedOp{}); }
