// One worker per GPU without a GPU: LocalCUDACluster and the tessera-cuda-worker binary started
// with an explicit CUDA_VISIBLE_DEVICES (or with the stand-in NVML of tests/plugins/fake_nvml.cpp)
// against a scheduler. Checks the names, the GPU=1 resource, the rotated CUDA_VISIBLE_DEVICES
// each worker process got (asked with Client::run), that GPU-annotated tasks run only on those
// workers in a mixed cluster (the seed's foo -> bar -> baz), the refusal without GPUs, and that
// SIGTERM stops and reaps every process.
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/data_store_limits.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;
using tessera_test::spawn_scheduler;
using tessera_test::expect_exit_zero;
using tessera_test::processes_with;
using tessera_test::client_options;
using tessera_test::wait_until;
using tessera_test::read_text;

// Runs in the LocalCUDACluster's workers (this test binary, started with --tessera-worker).
std::string cwt_getenv(std::string name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "<unset>";
}

// The CPUs the task's thread may run on ("0-3"; the argument is ignored).
std::string cwt_cpus(std::string) { return tessera::format_cpu_list(tessera::allowed_cpus()); }

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("cuda_worker_test.getenv", cwt_getenv);
TESSERA_REGISTER_FUNCTION_AS("cuda_worker_test.cpus", cwt_cpus);

namespace {

// Client::run of a getenv op on every worker: worker name -> value.
std::map<std::string, std::string> env_by_name(Client& client, const std::string& op, const std::string& var) {
  std::map<std::string, std::string> by_address;
  for (const auto& [address, v] : client.run(op, {tessera::detail::to_task_value(var)}))
    by_address[address] = from_value<std::string>(v);
  std::map<std::string, std::string> out;
  for (const auto& w : client.scheduler_info().workers) out[w.name] = by_address.count(w.address) ? by_address[w.address] : "?";
  return out;
}

std::string hostname() {
  char h[256] = {};
  return ::gethostname(h, sizeof h - 1) == 0 ? h : "";
}

std::filesystem::path tests_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path(); }

struct Binaries {
  std::string scheduler, worker, cuda_worker, plugin;
  bool found = false;
  Binaries() {
    auto bin = tessera_test::build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    cuda_worker = (bin / "tessera-cuda-worker").string();
    plugin = (tests_dir() / "libtessera_cuda_worker_tasks.so").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker) &&
            std::filesystem::exists(cuda_worker) && std::filesystem::exists(plugin);
  }
};
#define NEED_BINARIES(bins) \
  if (!(bins).found) GTEST_SKIP() << "tessera-scheduler/-worker/-cuda-worker or the test plugin not built"


// /proc/PID/cmdline with spaces between the arguments.
std::string cmdline_of(int pid) {
  std::string cmd = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  for (auto& c : cmd)
    if (c == '\0') c = ' ';
  return cmd;
}

// "sh -c 'unset CUDA_VISIBLE_DEVICES; exec ARGV... 2>>LOG'": the test's own environment may set it.
std::vector<std::string> without_cvd(const std::vector<std::string>& argv, const std::string& log) {
  std::string cmd = "unset CUDA_VISIBLE_DEVICES; exec";
  for (const auto& a : argv) cmd += " '" + a + "'";
  cmd += " 2>>'" + log + "'";
  return {"/bin/sh", "-c", cmd};
}

// ---- LocalCUDACluster -----------------------------------------------------------------------------

TEST(LocalCUDACluster, OneWorkerPerListedDeviceEachPinnedAndNamed) {
  LocalCUDAClusterOptions o;
  o.cuda_visible_devices = "0, 1";  // explicit: works without GPUs (the workers then have none)
  o.timeout = 20;
  o.heartbeat_interval = 0.2;
  o.log_level = "error";
  std::string address;
  std::vector<int> pids;
  {
    LocalCUDACluster cluster(o);
    address = cluster.scheduler_address();
    pids = cluster.worker_pids();
    EXPECT_EQ(cluster.devices(), (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(cluster.worker_count(), 2u);
    Client client(cluster, client_options(cluster.token(), 10));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    std::set<std::string> names;
    for (const auto& w : info.workers) {
      names.insert(w.name);
      EXPECT_EQ(w.resources, (std::map<std::string, double>{{"GPU", 1.0}})) << w.name;
      EXPECT_EQ(w.nthreads, 1) << w.name;
      // memory_limit "auto": this machine's memory split over the 2 workers, as dask-cuda.
      EXPECT_EQ(w.memory_limit, parse_memory_limit("auto", system_memory(), 2)) << w.name;
    }
    EXPECT_EQ(names, (std::set<std::string>{"worker-gpu0", "worker-gpu1"}));
    auto env = env_by_name(client, "cuda_worker_test.getenv", "CUDA_VISIBLE_DEVICES");
    EXPECT_EQ(env, (std::map<std::string, std::string>{{"worker-gpu0", "0,1"}, {"worker-gpu1", "1,0"}}));
    // The workers are processes of their own.
    for (int pid : pids) EXPECT_TRUE(tessera_test::process_alive(pid)) << pid;
    client.close();
  }
  for (int pid : pids) EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(pid); }, 3)) << pid;
  EXPECT_TRUE(wait_until([&] { return processes_with(address + " ").empty(); }, 3));
}

// Each worker is pinned to the CPUs near its GPU (TESSERA_CPU_AFFINITY in its environment), as
// dask-cuda's CPUAffinity does; a TESSERA_CPU_AFFINITY the user set is left for every worker.
TEST(LocalCUDACluster, WorkersArePinnedToTheCpusNearTheirGpu) {
  const std::string nvml = (tests_dir() / "libtessera_fake_nvml_2.so").string();
  if (!std::filesystem::exists(nvml)) GTEST_SKIP() << nvml << " not built";
  const std::vector<int> allowed = allowed_cpus();
  if (!std::binary_search(allowed.begin(), allowed.end(), 0) || !std::binary_search(allowed.begin(), allowed.end(), 1))
    GTEST_SKIP() << "needs CPUs 0 and 1, this process may use " << format_cpu_list(allowed);
  tessera_test::ScopedEnv fake("TESSERA_NVML_LIBRARY", nvml);  // fake GPU i is near CPU i
  tessera_test::ScopedEnv unset(kCpuAffinityEnv, std::nullopt);
  LocalCUDAClusterOptions o;
  o.cuda_visible_devices = "1,0";  // worker-gpu1 has GPU 1
  o.timeout = 20;
  o.log_level = "error";
  {
    LocalCUDACluster cluster(o);
    Client client(cluster, client_options(cluster.token(), 10));
    EXPECT_EQ(env_by_name(client, "cuda_worker_test.getenv", kCpuAffinityEnv),
              (std::map<std::string, std::string>{{"worker-gpu1", "1"}, {"worker-gpu0", "0"}}));
    EXPECT_EQ(env_by_name(client, "cuda_worker_test.cpus", ""),
              (std::map<std::string, std::string>{{"worker-gpu1", "1"}, {"worker-gpu0", "0"}}))
        << "the threads that run tasks are pinned";
    client.close();
  }
  // "none" from the user: inherited by every worker, which then stays unpinned.
  tessera_test::ScopedEnv none(kCpuAffinityEnv, "none");
  o.cuda_visible_devices = "1";
  LocalCUDACluster cluster(o);
  Client client(cluster, client_options(cluster.token(), 10));
  EXPECT_EQ(env_by_name(client, "cuda_worker_test.cpus", ""),
            (std::map<std::string, std::string>{{"worker-gpu1", format_cpu_list(allowed)}}));
  client.close();
}

TEST(LocalCUDACluster, FirstNDevicesAndReplacementWorkersKeepTheirDevice) {
  LocalCUDAClusterOptions o;
  o.cuda_visible_devices = "3,GPU-5f0c";
  o.n_workers = 1;
  o.resources = "GPU=2 MEM=5";
  o.name_prefix = "node";
  o.memory_limit = "0";
  o.scheduler_process = true;
  o.timeout = 20;
  o.heartbeat_interval = 0.2;
  o.log_level = "error";
  o.restart_dead_workers = false;  // it kills the worker, then adds one
  std::string address;
  {
    LocalCUDACluster cluster(o);
    address = cluster.scheduler_address();
    EXPECT_EQ(cluster.devices(), (std::vector<std::string>{"3"}));
    Client client(cluster, client_options(cluster.token(), 10));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 1u);
    EXPECT_EQ(info.workers[0].name, "node-gpu3");
    EXPECT_EQ(info.workers[0].resources, (std::map<std::string, double>{{"GPU", 2.0}, {"MEM", 5.0}}));
    EXPECT_EQ(info.workers[0].memory_limit, 0u);
    // Worker 0 sees both devices, its own first.
    EXPECT_EQ(env_by_name(client, "cuda_worker_test.getenv", "CUDA_VISIBLE_DEVICES"),
              (std::map<std::string, std::string>{{"node-gpu3", "3,GPU-5f0c"}}));
    // A worker added after it died takes the same device.
    cluster.signal_worker(0, SIGKILL);
    ASSERT_TRUE(wait_until([&] { return cluster.worker_count() == 0; }, 5));
    EXPECT_EQ(cluster.add_worker(), 1u);
    EXPECT_EQ(env_by_name(client, "cuda_worker_test.getenv", "CUDA_VISIBLE_DEVICES"),
              (std::map<std::string, std::string>{{"node-gpu3-1", "3,GPU-5f0c"}}));
    client.close();
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(address + " ").empty(); }, 3));
}

TEST(LocalCUDACluster, BadOptionsAndNoGpuFailBeforeStartingAnything) {
  auto fails_with = [](LocalCUDAClusterOptions o, const std::string& part) {
    o.timeout = 5;
    try {
      LocalCUDACluster cluster(o);
      ADD_FAILURE() << "expected an error containing '" << part << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  fails_with({.cuda_visible_devices = "0,1", .n_workers = 3}, "n_workers = 3 but only 2 devices");
  fails_with({.cuda_visible_devices = "0,0"}, "appears twice");
  fails_with({.cuda_visible_devices = ""}, "lists no device");
  fails_with({.cuda_visible_devices = "0", .device_memory_limit = "lots"}, "--device-memory-limit");
  fails_with({.cuda_visible_devices = "0", .memory_limit = "-1"}, "invalid memory limit");
  fails_with({.cuda_visible_devices = "0", .protocol = "inproc"}, "inproc");
  // Nothing given and nothing found: the clear error (only where this machine has no GPU).
  if (std::getenv("CUDA_VISIBLE_DEVICES")) GTEST_SKIP() << "CUDA_VISIBLE_DEVICES is set here";
  GpuDiscovery d = discover_gpus();
  if (!d.gpus.empty()) GTEST_SKIP() << "this machine has GPUs (" << d.source << ")";
  fails_with({}, "no GPUs found: CUDA_VISIBLE_DEVICES is unset and NVML");
}

// ---- tessera-cuda-worker ------------------------------------------------------------------------------

TEST(CudaWorkerBinary, ExplicitDevicesTwoPinnedWorkersStoppedBySigterm) {
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "cuda-worker-token";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    auto env = child_env();
    env["CUDA_VISIBLE_DEVICES"] = "0,1";
    pid_t parent = kids.spawn({bins.cuda_worker, "--scheduler-file", sfile, "--preload", bins.plugin, "--name", "node",
                               "--token", token, "--memory-limit", "2GB", "--device-memory-limit", "0.5",
                               "--death-timeout", "10", "--log-level", "warning"},
                              env);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s));
    auto info = client->scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    std::set<std::string> names;
    std::set<int> pids;
    for (const auto& w : info.workers) {
      names.insert(w.name);
      pids.insert(w.pid);
      EXPECT_NE(w.pid, parent) << "each worker is a process of its own";
      EXPECT_EQ(w.resources, (std::map<std::string, double>{{"GPU", 1.0}})) << w.name;
      EXPECT_EQ(w.nthreads, 1) << w.name;
      EXPECT_EQ(w.memory_limit, 2000000000u) << "bytes are per worker, as in Dask (auto is split)";
      // The device limit goes to each worker as given (it is a fraction of that worker's GPU).
      EXPECT_NE(cmdline_of(w.pid).find(" --device-memory-limit 0.5"), std::string::npos) << cmdline_of(w.pid);
    }
    EXPECT_EQ(names, (std::set<std::string>{"node-gpu0", "node-gpu1"}));
    EXPECT_EQ(pids.size(), 2u);
    EXPECT_EQ(env_by_name(*client, "cuda_plugin.getenv", "CUDA_VISIBLE_DEVICES"),
              (std::map<std::string, std::string>{{"node-gpu0", "0,1"}, {"node-gpu1", "1,0"}}));
    // Each worker watches the nanny (it exits when the nanny dies).
    auto parents = env_by_name(*client, "cuda_plugin.getenv", "TESSERA_PARENT_PID");
    for (const auto& [name, p] : parents) EXPECT_EQ(p, std::to_string(parent)) << name;
    client->close();
    client.reset();

    // SIGTERM to the nanny stops both workers cleanly; the scheduler stays.
    ::kill(parent, SIGTERM);
    expect_exit_zero(kids, parent, "tessera-cuda-worker after SIGTERM");
    for (int pid : pids) EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(pid); }, 3)) << pid;
    EXPECT_TRUE(kids.running(sched));
    auto again = Client::from_scheduler_file(sfile, client_options(token, 10));
    EXPECT_TRUE(wait_until([&] { return again->scheduler_info().workers.empty(); }, 3))
        << "workers that left must be gone from the scheduler";
    again->close();
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(CudaWorkerBinary, WithoutCudaVisibleDevicesOneWorkerPerGpuNvmlReports) {
  Binaries bins;
  NEED_BINARIES(bins);
  const std::string nvml = (tests_dir() / "libtessera_fake_nvml_2.so").string();
  if (!std::filesystem::exists(nvml)) GTEST_SKIP() << nvml << " not built";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string log = (dir.path() / "cuda-worker.log").string();
  const std::string token = "cuda-worker-nvml";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    auto env = child_env();
    env["TESSERA_NVML_LIBRARY"] = nvml;  // 2 fake GPUs
    env["TESSERA_TOKEN"] = token;
    pid_t parent = kids.spawn(without_cvd({bins.cuda_worker, "--scheduler-file", sfile, "--preload", bins.plugin,
                                           "--resources", "MEM=5", "--nthreads", "2", "--memory-limit", "0",
                                           "--log-level", "info"},
                                          log),
                              env);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s)) << read_text(log);
    const std::string host = hostname();
    std::set<std::string> names;
    for (const auto& w : client->scheduler_info().workers) {
      names.insert(w.name);
      EXPECT_EQ(w.resources, (std::map<std::string, double>{{"GPU", 1.0}, {"MEM", 5.0}})) << w.name;
      EXPECT_EQ(w.nthreads, 2);
    }
    EXPECT_EQ(names, (std::set<std::string>{host + "-gpu0", host + "-gpu1"}));
    EXPECT_EQ(env_by_name(*client, "cuda_plugin.getenv", "CUDA_VISIBLE_DEVICES"),
              (std::map<std::string, std::string>{{host + "-gpu0", "0,1"}, {host + "-gpu1", "1,0"}}));
    // Each worker's threads run on the CPUs NVML reports near its GPU (fake GPU i: CPU i), where
    // this process may use that CPU; otherwise the worker is left unpinned.
    const std::vector<int> allowed = allowed_cpus();
    auto expected_cpus = [&](int gpu) {
      return std::binary_search(allowed.begin(), allowed.end(), gpu) ? std::to_string(gpu) : format_cpu_list(allowed);
    };
    EXPECT_EQ(env_by_name(*client, "cuda_plugin.cpus", ""),
              (std::map<std::string, std::string>{{host + "-gpu0", expected_cpus(0)}, {host + "-gpu1", expected_cpus(1)}}));
    client->close();
    client.reset();
    // The nanny logged which GPU each worker has, and its CPUs.
    const std::string text = read_text(log);
    EXPECT_NE(text.find("worker " + host + "-gpu1 with CUDA_VISIBLE_DEVICES=1,0 (Fake GPU 1, GPU-"), std::string::npos)
        << text;
    if (allowed.size() >= 2) {
      EXPECT_NE(text.find("00000000:1A:00.0, 32.0 GiB, sm_90), CPUs 1"), std::string::npos) << text;
    }
    // Stopping the scheduler closes the workers, and with them the nanny.
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
    expect_exit_zero(kids, parent, "tessera-cuda-worker whose workers were closed by the scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(CudaWorkerBinary, NoGpuExitsWithStatus1AndSaysWhy) {
  Binaries bins;
  NEED_BINARIES(bins);
  const std::string nvml = (tests_dir() / "libtessera_fake_nvml_0.so").string();
  if (!std::filesystem::exists(nvml)) GTEST_SKIP() << nvml << " not built";
  tessera_test::TempDir dir;
  Children kids;
  auto run = [&](const std::vector<std::string>& argv, std::map<std::string, std::string> env, bool unset_cvd) {
    const std::string log = (dir.path() / "log").string();
    std::filesystem::remove(log);
    env["TESSERA_PARENT_PID"] = std::to_string(::getpid());
    std::vector<std::string> cmd = argv;
    cmd.insert(cmd.begin(), bins.cuda_worker);
    std::vector<std::string> sh{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>>'" + log + "'"};
    sh.insert(sh.end(), cmd.begin(), cmd.end());
    pid_t pid = kids.spawn(unset_cvd ? without_cvd(cmd, log) : sh, env);
    auto st = kids.wait_exit(pid, 10);
    EXPECT_TRUE(st.has_value());
    return std::pair{st ? *st : -1, read_text(log)};
  };
  // NVML answers and reports no GPU.
  auto [st, text] = run({"tcp://127.0.0.1:9", "--token", "x"}, {{"TESSERA_NVML_LIBRARY", nvml}}, true);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << tessera_test::describe_status(st);
  EXPECT_NE(text.find("no GPUs found: CUDA_VISIBLE_DEVICES is unset and NVML reports none"), std::string::npos) << text;
  // Set but empty, or malformed.
  std::tie(st, text) = run({"tcp://127.0.0.1:9", "--token", "x"}, {{"CUDA_VISIBLE_DEVICES", ""}}, false);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << tessera_test::describe_status(st);
  EXPECT_NE(text.find("CUDA_VISIBLE_DEVICES is set but lists no device"), std::string::npos) << text;
  std::tie(st, text) = run({"tcp://127.0.0.1:9", "--token", "x"}, {{"CUDA_VISIBLE_DEVICES", "0,,1"}}, false);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << tessera_test::describe_status(st);
  EXPECT_NE(text.find("invalid CUDA_VISIBLE_DEVICES \"0,,1\""), std::string::npos) << text;
  // A bad flag value, before any worker starts: 105, as every bad flag value (issue 29).
  std::tie(st, text) = run({"tcp://127.0.0.1:9", "--device-memory-limit", "lots"}, {{"CUDA_VISIBLE_DEVICES", "0"}}, false);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 105) << tessera_test::describe_status(st);
  EXPECT_NE(text.find("--device-memory-limit"), std::string::npos) << text;
  EXPECT_TRUE(processes_with("tcp://127.0.0.1:9").empty()) << "no worker may have been started";
}

TEST(CudaWorkerBinary, ApplicationAsItsOwnCudaWorker) {
  // `app --tessera-cuda-worker ADDRESS`: tessera::init runs the nanny, whose workers are the
  // application again (--tessera-worker), with its registered functions (this test binary's).
  LocalClusterOptions so;
  so.n_workers = 0;
  so.log_level = "error";
  LocalCluster cluster(so);
  const std::string address = cluster.scheduler_address();
  {
    Children kids;
    auto env = child_env();
    env["TESSERA_TOKEN"] = cluster.token();
    env["CUDA_VISIBLE_DEVICES"] = "1,0";
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    pid_t nanny = kids.spawn({self, "--tessera-cuda-worker", address, "--name", "app", "--memory-limit", "0",
                              "--log-level", "error"},
                             env);
    Client client(cluster, client_options(cluster.token(), 10));
    ASSERT_TRUE(client.wait_for_workers(2, 20s));
    EXPECT_EQ(env_by_name(client, "cuda_worker_test.getenv", "CUDA_VISIBLE_DEVICES"),
              (std::map<std::string, std::string>{{"app-gpu1", "1,0"}, {"app-gpu0", "0,1"}}));
    client.close();
    ::kill(nanny, SIGTERM);
    expect_exit_zero(kids, nanny, "app --tessera-cuda-worker");
  }
  cluster.close();
  EXPECT_TRUE(wait_until([&] { return processes_with(address + " ").empty(); }, 3));
}

TEST(CudaWorkerBinary, MixedClusterGpuStepsOnlyOnGpuWorkers) {
  // The seed: foo = submit(cpu); with annotate(resources={"GPU": 1}): bar = submit(gpu, foo);
  // baz = submit(cpu, bar). Two GPU workers (tessera-cuda-worker, explicit devices) and a plain
  // tessera-worker; bar must run only on GPU workers, foo and baz anywhere.
  Binaries bins;
  NEED_BINARIES(bins);
  LocalClusterOptions so;
  so.n_workers = 0;  // the scheduler only
  so.log_level = "error";
  LocalCluster cluster(so);
  const std::string address = cluster.scheduler_address();
  {
    Children kids;
    auto env = child_env();
    env["TESSERA_TOKEN"] = cluster.token();
    auto gpu_env = env;
    gpu_env["CUDA_VISIBLE_DEVICES"] = "0,1";
    pid_t gpu = kids.spawn({bins.cuda_worker, address, "--preload", bins.plugin, "--name", "gpu", "--memory-limit",
                            "0", "--log-level", "error"},
                           gpu_env);
    pid_t cpu = kids.spawn({bins.worker, address, "--preload", bins.plugin, "--name", "cpu", "--nthreads", "2",
                            "--memory-limit", "0", "--log-level", "error"},
                           env);
    Client client(cluster, client_options(cluster.token(), 10));
    ASSERT_TRUE(client.wait_for_workers(3, 20s));
    std::set<std::string> gpu_pids, all_pids;
    std::string cpu_pid;
    for (const auto& w : client.scheduler_info().workers) {
      all_pids.insert(std::to_string(w.pid));
      if (w.name == "cpu") {
        cpu_pid = std::to_string(w.pid);
        EXPECT_TRUE(w.resources.empty());
      } else {
        gpu_pids.insert(std::to_string(w.pid));
        EXPECT_EQ(w.resources.at("GPU"), 1.0) << w.name;
      }
    }
    ASSERT_EQ(gpu_pids.size(), 2u);
    ASSERT_FALSE(cpu_pid.empty());

    std::vector<Future> bazs;
    for (int i = 0; i < 12; ++i) {
      Future foo = client.submit("cuda_plugin.foo", i);
      Future bar;
      {
        Annotate on_gpu({.resources = {{"GPU", 1}}});
        bar = client.submit("cuda_plugin.bar", foo);
      }
      bazs.push_back(client.submit("cuda_plugin.baz", bar));
    }
    std::set<std::string> foo_pids, bar_pids, baz_pids;
    for (const auto& v : client.gather(bazs)) {
      // "fooI:PID@CVD;bar:PID@CVD;baz:PID@CVD;"
      std::string trail = from_value<std::string>(v);
      std::stringstream ss(trail);
      std::string step;
      while (std::getline(ss, step, ';')) {
        auto colon = step.find(':'), at = step.find('@');
        ASSERT_NE(colon, std::string::npos) << trail;
        ASSERT_NE(at, std::string::npos) << trail;
        std::string what = step.substr(0, colon), pid = step.substr(colon + 1, at - colon - 1);
        std::string cvd = step.substr(at + 1);
        EXPECT_TRUE(all_pids.count(pid)) << trail;
        if (what == "bar") {
          bar_pids.insert(pid);
          EXPECT_TRUE(gpu_pids.count(pid)) << "a GPU=1 task ran off the GPU workers: " << trail;
          EXPECT_TRUE(cvd == "0,1" || cvd == "1,0") << trail;
        } else if (what == "baz") {
          baz_pids.insert(pid);
        } else {
          foo_pids.insert(pid);
        }
      }
    }
    EXPECT_FALSE(bar_pids.empty());
    EXPECT_TRUE(foo_pids.count(cpu_pid) || baz_pids.count(cpu_pid))
        << "plain steps never ran on the plain worker (they may run anywhere)";
    client.close();
    ::kill(gpu, SIGTERM);
    ::kill(cpu, SIGTERM);
    expect_exit_zero(kids, gpu, "tessera-cuda-worker");
    expect_exit_zero(kids, cpu, "tessera-worker");
  }
  cluster.close();
  EXPECT_TRUE(wait_until([&] { return processes_with(address + " ").empty(); }, 3));
}

}  // namespace
