// Annotate scopes: what a thread's enclosing scopes give to the tasks it submits.
#include <gtest/gtest.h>

#include "distributed/client_impl.hpp"
#include "tessera/distributed/client.hpp"

using namespace tessera;
using namespace tessera::distributed;

TEST(ClientAnnotate, ScopesNestAndInnerValuesWin) {
  EXPECT_EQ(Annotate::current(), Annotations{});
  {
    Annotate outer({.resources = {{"GPU", 1}}, .priority = 2, .retries = 1});
    {
      Annotate inner({.priority = 5, .workers = {"w1"}});
      const Annotations a = Annotate::current();
      EXPECT_EQ(a.resources, (std::map<std::string, double>{{"GPU", 1}}));
      EXPECT_EQ(a.priority, 5);
      EXPECT_EQ(a.retries, 1);
      EXPECT_EQ(a.workers, std::vector<std::string>{"w1"});
    }
    EXPECT_EQ(Annotate::current().priority, 2);
  }
  EXPECT_EQ(Annotate::current(), Annotations{});
}

// Before, the scope's target was dropped: Annotate({.target = Target::Device}) sent its tasks as
// host tasks, to any worker (the fake GPU cluster example's test_gpu ran on the CPU worker).
TEST(ClientAnnotate, TheScopesTargetReachesTheTask) {
  {
    Annotate gpu({.target = Target::Device});
    EXPECT_EQ(Annotate::current().target, Target::Device);
    {
      Annotate inner({.priority = 1});  // unset target: the outer one stays
      EXPECT_EQ(Annotate::current().target, Target::Device);
    }
    Task t{"k", "op", {}, {}};
    apply_annotate_scope(t, Annotate::current());
    EXPECT_EQ(t.annotations.target, Target::Device);
  }
  EXPECT_EQ(Annotate::current().target, Target::Host);
  // A task's own non-default annotations win over the scope's.
  Annotate scope({.priority = 3, .target = Target::Device});
  Task own{"k", "op", {}, {.priority = 7}};
  apply_annotate_scope(own, Annotate::current());
  EXPECT_EQ(own.annotations.priority, 7);
  EXPECT_EQ(own.annotations.target, Target::Device);
}
