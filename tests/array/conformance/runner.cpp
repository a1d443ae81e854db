// tessera_array_conformance: runs the cases a manifest lists and writes their outputs as .npy.
//
// Usage: tessera_array_conformance MANIFEST   (one run per line, written by run.py)
//        tessera_array_conformance --list     (the registered case names)
//
// A manifest line: OUT CASE EXECUTOR TARGET PARAMS N (INPUT CHUNKS){N}
//   EXECUTOR  sync | threads | cluster (an in-process LocalCluster of two thread workers, so
//             every task goes through the scheduler and serialisation)
//   TARGET    host | device (the inputs are moved to_device() under the fake device runtime:
//             device placement, moves and the device tier run; the CUDA back end is not loaded)
//   PARAMS    k=v;k=v or "-"
//   CHUNKS    per-axis chunk sizes "3,2" (-1: the whole axis), or "-" for a 0-d input
// Results: OUT.<i>.npy per output, or OUT.err holding "ErrorType: message".
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/fake_device.hpp"
#include "conformance.hpp"
#include "tessera/array/io.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"

namespace tessera_conformance {

namespace {

std::map<std::string, CaseFn>& registry() {
  static std::map<std::string, CaseFn> r;
  return r;
}

[[noreturn]] void bad_param(const std::string& key, const std::string& why) {
  throw std::invalid_argument("conformance parameter '" + key + "': " + why);
}

}  // namespace

bool register_case(const std::string& name, CaseFn fn) {
  if (!registry().emplace(name, std::move(fn)).second) {
    std::fprintf(stderr, "conformance case '%s' registered twice\n", name.c_str());
    std::abort();
  }
  return true;
}

const std::map<std::string, CaseFn>& cases() { return registry(); }

const std::string& Params::s(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) bad_param(key, "missing");
  return it->second;
}
std::string Params::s(const std::string& key, const std::string& fallback) const {
  return has(key) ? s(key) : fallback;
}
std::int64_t Params::i(const std::string& key) const {
  try {
    return std::stoll(s(key));
  } catch (const std::logic_error&) {
    bad_param(key, "not an integer: " + s(key));
  }
}
std::int64_t Params::i(const std::string& key, std::int64_t fallback) const { return has(key) ? i(key) : fallback; }
double Params::d(const std::string& key) const {
  const std::string& v = s(key);
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  try {
    return std::stod(v);
  } catch (const std::logic_error&) {
    bad_param(key, "not a number: " + v);
  }
}
double Params::d(const std::string& key, double fallback) const { return has(key) ? d(key) : fallback; }
bool Params::b(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string& v = s(key);
  return v == "1" || v == "true" || v == "True";
}
std::vector<std::int64_t> Params::ints(const std::string& key) const {
  std::vector<std::int64_t> out;
  std::stringstream ss(s(key));
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}
std::vector<int> Params::axes(const std::string& key) const {
  std::vector<int> out;
  for (auto v : ints(key)) out.push_back(static_cast<int>(v));
  return out;
}

}  // namespace tessera_conformance

namespace {

using namespace tessera;
namespace tc = tessera_conformance;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

ChunkSpec parse_chunks(const std::string& text) {
  ChunkSpec spec;
  if (text == "-") return spec;
  for (auto& v : split(text, ',')) spec.push_back(std::stoll(v));
  return spec;
}

tc::Params parse_params(const std::string& text) {
  std::map<std::string, std::string> values;
  if (text != "-")
    for (auto& kv : split(text, ';')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("bad parameter '" + kv + "'");
      values[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  return tc::Params(std::move(values));
}

// The name of the error's type, for cases that expect one.
std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const TaskError*>(&e)) return "TaskError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  if (dynamic_cast<const std::invalid_argument*>(&e)) return "invalid_argument";
  return "exception";
}

struct Executors {
  SyncExecutor sync;
  ThreadPoolExecutor threads{3};
  std::unique_ptr<distributed::LocalCluster> cluster;
  std::unique_ptr<distributed::Client> client;

  Executor& get(const std::string& name) {
    if (name == "sync") return sync;
    if (name == "threads") return threads;
    if (name == "cluster") {
      if (!client) {
        distributed::LocalClusterOptions o;
        o.n_workers = 2;
        o.threads_per_worker = 2;
        o.processes = false;
        o.protocol = "inproc";
        cluster = std::make_unique<distributed::LocalCluster>(o);
        client = std::make_unique<distributed::Client>(*cluster);
      }
      return *client;
    }
    throw std::invalid_argument("unknown executor '" + name + "'");
  }
  ~Executors() {
    client.reset();
    if (cluster) cluster->close();
  }
};

void write_error(const std::string& out, const std::string& kind, const std::string& what) {
  std::ofstream f(out + ".err");
  f << kind << ": " << what << "\n";
}

int run_manifest(const std::string& manifest) {
  std::ifstream in(manifest);
  if (!in) {
    std::cerr << "cannot open manifest " << manifest << "\n";
    return 2;
  }
  Executors executors;
  std::string line;
  int runs = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string out, name, executor, target, params;
    int n = 0;
    ls >> out >> name >> executor >> target >> params >> n;
    std::vector<std::pair<std::string, std::string>> inputs(n);
    for (auto& [path, chunks] : inputs) ls >> path >> chunks;
    if (!ls) {
      std::cerr << "malformed manifest line: " << line << "\n";
      return 2;
    }
    ++runs;
    auto it = tc::cases().find(name);
    if (it == tc::cases().end()) {
      write_error(out, "UnknownCase", "no case '" + name + "' is registered");
      continue;
    }
    // The fake device lives for the run only: host runs see no GPU at all.
    std::unique_ptr<tessera_test::ScopedFakeDevice> gpu;
    if (target == "device") gpu = std::make_unique<tessera_test::ScopedFakeDevice>();
    try {
      tc::Inputs arrays;
      for (auto& [path, chunks] : inputs) {
        Array a = from_block(load_npy(path), parse_chunks(chunks));
        arrays.push_back(target == "device" ? a.to_device() : a);
      }
      tc::Outputs outputs = it->second(arrays, parse_params(params));
      Executor& ex = executors.get(executor);
      for (std::size_t i = 0; i < outputs.size(); ++i)
        save_npy(out + "." + std::to_string(i) + ".npy", outputs[i].compute(ex));
    } catch (const std::exception& e) {
      write_error(out, error_kind(e), e.what());
    }
  }
  std::cout << "ran " << runs << " runs\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The fake device runtime stands in for a GPU; the CUDA back end, which would register its
  // kernels for device tasks, must not be loaded beside it.
  setenv("TESSERA_NO_CUDA", "1", 1);
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (auto& [name, fn] : tessera_conformance::cases()) std::cout << name << "\n";
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: tessera_array_conformance MANIFEST | --list\n";
    return 2;
  }
  return run_manifest(argv[1]);
}
