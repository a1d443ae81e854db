// The moto S3 server the DataFrame tests read s3:// files from: it serves what was uploaded, and
// it is gone, port and process, once the S3Server is, even when the test binary is killed.
// Skipped where the Python environment with moto is missing (S3Server::unavailable_reason()).
#include "s3_server.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace {

using tessera::testing::http_get;
using tessera::testing::port_accepts_connections;
using tessera::testing::S3Server;

// Gone: no such process, or a zombie nobody reaps (a container's init may not).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close_paren = line.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < line.size() && line[close_paren + 2] == 'Z';
}

bool eventually(const std::function<bool()>& pred, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

#define SKIP_WITHOUT_MOTO()                                                           \
  do {                                                                                \
    if (auto why = S3Server::unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(S3Server, ServesAnUploadedObjectAndLeavesNoProcessOrPortBehind) {
  SKIP_WITHOUT_MOTO();
  const std::string file = temp_path("tessera-s3-upload.csv");
  const std::string text = "VendorID,passenger_count,tip_amount\n1,1,1.65\n2,,0\n";
  std::ofstream(file) << text;

  pid_t pid = -1;
  int port = 0;
  {
    S3Server s3;
    pid = s3.pid();
    port = s3.port();
    EXPECT_EQ(s3.endpoint(), "http://127.0.0.1:" + std::to_string(port));
    s3.create_bucket("tessera-taxi");
    s3.upload("tessera-taxi", "2019/yellow_tripdata_2019-01.csv", file);

    auto got = http_get(port, "/tessera-taxi/2019/yellow_tripdata_2019-01.csv");
    EXPECT_EQ(got.status, 200) << s3.log();
    EXPECT_EQ(got.body, text);
    EXPECT_EQ(http_get(port, "/tessera-taxi/2019/yellow_tripdata_2019-02.csv").status, 404);
    EXPECT_TRUE(port_accepts_connections(port));
    EXPECT_FALSE(process_gone(pid));
  }
  std::remove(file.c_str());
  EXPECT_TRUE(process_gone(pid));
  EXPECT_NE(::killpg(pid, 0), 0) << "a process of moto_server's group is still there";
  EXPECT_FALSE(port_accepts_connections(port));
}

TEST(S3Server, AFailedUploadSaysWhy) {
  SKIP_WITHOUT_MOTO();
  S3Server s3;
  s3.create_bucket("tessera-taxi");
  try {
    s3.upload("tessera-taxi", "missing.csv", "/nonexistent/tessera/missing.csv");
    FAIL() << "uploading a file that does not exist did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("s3://tessera-taxi/missing.csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tessera/missing.csv"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s3.upload("no-such-bucket", "k", "/etc/hostname"), std::runtime_error);
}

TEST(S3Server, WithoutTheEnvironmentItSaysWhy) {
  const std::string nowhere = "/nonexistent/tessera-pyenv";
  ScopedEnv env("TESSERA_PYENV", nowhere);
  EXPECT_EQ(S3Server::environment(), nowhere);
  const std::string why = S3Server::unavailable_reason();
  EXPECT_NE(why.find(nowhere), std::string::npos) << why;
  try {
    S3Server s3;
    FAIL() << "an S3Server started without its environment";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

// A test binary that dies (here: SIGKILL, which runs no destructor) takes moto with it.
TEST(S3ServerDeathTest, AKilledTestBinaryLeavesNoServerBehind) {
  SKIP_WITHOUT_MOTO();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The death test's child runs this test again from the top (threadsafe style): the file's
  // name reaches it through the environment, where the parent put it first.
  const char* kPidFileVar = "TESSERA_S3_DEATH_TEST_PID_FILE";
  std::optional<ScopedEnv> set_here;
  if (!std::getenv(kPidFileVar)) set_here.emplace(kPidFileVar, temp_path("tessera-s3-death-test.pid"));
  const std::string pid_file = std::getenv(kPidFileVar);
  std::remove(pid_file.c_str());

  EXPECT_EXIT(
      {
        S3Server s3;
        std::ofstream(pid_file) << s3.pid() << " " << s3.port() << "\n";
        ::raise(SIGKILL);
      },
      ::testing::KilledBySignal(SIGKILL), "");

  std::ifstream in(pid_file);
  pid_t pid = -1;
  int port = 0;
  ASSERT_TRUE(in >> pid >> port) << "the child wrote no pid to " << pid_file;
  std::remove(pid_file.c_str());
  EXPECT_TRUE(eventually([&] { return process_gone(pid); }, 10.0)) << "moto_server " << pid << " outlived its parent";
  if (!process_gone(pid)) ::kill(pid, SIGKILL);  // leave nothing behind even when the check failed
  EXPECT_TRUE(eventually([&] { return !port_accepts_connections(port); }, 10.0));
}

}  // namespace
