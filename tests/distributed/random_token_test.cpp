// Tokens and ids come from the OS random source (issue 19): unpredictable, and never the same in
// a forked child and its parent (a Mersenne Twister seeded once is copied by fork()).
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "distributed/util.hpp"

using tessera::distributed::random_hex;

TEST(RandomToken, HexOfTheRequestedLengthAndNeverRepeated) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto t = random_hex(32);
    ASSERT_EQ(t.size(), 32u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
    EXPECT_TRUE(seen.insert(t).second) << "repeated: " << t;
  }
  EXPECT_EQ(random_hex(7).size(), 7u);
  EXPECT_EQ(random_hex(0), "");
}

TEST(RandomToken, AForkedChildDoesNotRepeatItsParent) {
  (void)random_hex(32);  // the parent's generator is set up before the fork
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto t = random_hex(32);
    const auto k = ::write(fds[1], t.data(), t.size());
    ::_exit(k == static_cast<ssize_t>(t.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string child(32, '\0');
  std::size_t got = 0;
  while (got < child.size()) {
    const auto k = ::read(fds[0], child.data() + got, child.size() - got);
    if (k <= 0) break;
    got += static_cast<std::size_t>(k);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(got, child.size());
  EXPECT_NE(child, random_hex(32)) << "the child drew the same token as its parent";
}
