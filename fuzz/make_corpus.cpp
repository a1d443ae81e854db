// Writes the seed inputs of fuzz/corpus/<target>/ from real messages: the ones clients, workers
// and the scheduler send (built with the same code they use: comm::Message, distributed/wire.hpp),
// a hello with its proof, objects of the types the runtime decodes, a scheduler file as the
// scheduler writes it, and flag values from docs/deployment.md. Run by scripts/fuzz.sh --corpus:
//
//   build-fuzz/fuzz/fuzz_make_corpus fuzz/corpus
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/wire.hpp"
#include "distributed/wire.hpp"
#include "ops/task_serialize.hpp"
#include "tessera/comm/message.hpp"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

fs::path g_root;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string str(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

Block iota_block(std::int64_t n) {
  Block b(DType::Float64, {n});
  for (std::int64_t i = 0; i < n; ++i) b.data<double>()[i] = static_cast<double>(i) * 0.5;
  return b;
}

// A message as it goes on the wire: preamble, header, frames (tcp_conn.cpp).
std::string on_the_wire(const comm::Message& m) {
  const std::string header = comm::encode_header(m);
  std::vector<std::uint64_t> lens;
  for (const auto& f : m.frames) lens.push_back(f->size());
  std::string out = str(comm::wire::encode_preamble(header.size(), lens)) + header;
  for (const auto& f : m.frames) out.append(static_cast<const char*>(f->data()), f->size());
  return out;
}

std::vector<std::pair<std::string, comm::Message>> real_messages() {
  namespace dw = distributed::wire;
  std::vector<std::pair<std::string, comm::Message>> out;
  comm::Message client(dw::kRegisterClient);
  client.set("client", std::string("client-3f9a1c2e"));
  out.emplace_back("register_client", client);

  dw::WorkerHello hello;
  hello.add.address = "tcp://127.0.0.1:40123";
  hello.add.name = "worker-0";
  hello.add.nthreads = 2;
  hello.add.resources = {{"GPU", 1.0}};
  hello.add.memory_limit = std::size_t{1} << 30;
  hello.add.ops = {"tessera.add", "tessera.sum"};
  hello.pid = 4242;
  hello.host = "127.0.0.1";
  hello.local_directory = "/tmp/tessera-worker-0";
  comm::Message worker(dw::kRegisterWorker);
  worker.set("worker", hello);
  out.emplace_back("register_worker", worker);

  comm::Message get(dw::kGetData);
  get.set("keys", std::vector<Key>{"('x', 0)", "('x', 1)"});
  out.emplace_back("get_data", get);

  comm::Message who(dw::kWhoHas);
  who.set("id", std::uint64_t{7});
  who.set("keys", std::vector<Key>{});
  out.emplace_back("who_has", who);

  comm::Message stream(dw::kTaskStream);
  stream.set("since", std::uint64_t{0});
  stream.set("limit", std::uint64_t{1000});
  out.emplace_back("task_stream", stream);

  comm::Message reply(dw::kReply);
  reply.set("id", std::uint64_t{7});
  reply.set("keys", std::vector<Key>{"('x', 0)", "('y', 1)"});
  dw::put_values(reply, {Value(iota_block(8)), Value(to_object(std::string("a result")))});
  out.emplace_back("reply_values", reply);

  comm::Message block(dw::kRun);
  block.set("op", std::string("tessera.add"));
  block.add_block("x", iota_block(4));
  block.add_block("empty", Block());
  out.emplace_back("run_blocks", block);

  // A peer-to-peer shuffle's part: one input's rows for outputs 4, 5, 6 (protocol 12).
  comm::Message shuffle(dw::kShuffleReceive);
  shuffle.set("token", std::string("shuffle-0"));
  shuffle.set("run", std::int64_t{3});
  shuffle.set("inputs", std::int64_t{8});
  shuffle.set("input", std::int64_t{2});
  shuffle.set("first_output", std::int64_t{4});
  shuffle.set("rows", std::vector<std::int64_t>{3, 0, 5});
  dw::put_values(shuffle, {Value(iota_block(8))});
  out.emplace_back("shuffle_receive", shuffle);

  out.emplace_back("unregister", comm::Message(dw::kUnregister));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus <fuzz/corpus>\n";
    return 2;
  }
  g_root = argv[1];

  for (const auto& [name, m] : real_messages()) {
    write("preamble", name, on_the_wire(m));
    write("message", name, comm::encode_header(m));
  }

  // Events for the state machines (fuzz/state_events_fuzz.cpp): the first byte picks the path.
  namespace dw = distributed::wire;
  auto events = [](std::uint8_t pick, const comm::Message& m) {
    return std::string(1, static_cast<char>(pick)) + comm::encode_header(m);
  };
  {
    Task x{"x-1", "tessera.add", {Value(iota_block(2))}, {}};
    Task y{"y-1", "tessera.sum", {KeyRef{"x-1"}, KeyRef{"x-0"}}, {}};
    Task gpu{"z-1", "tessera.add", {KeyRef{"y-1"}}, {}};
    gpu.annotations.resources = {{"GPU", 1.0}};
    gpu.annotations.target = Target::Device;
    distributed::UpdateGraph u;
    u.client = "client-3f9a1c2e";
    u.tasks = {x, y, gpu};
    u.keys = {"z-1"};
    u.order = {{"x-1", 0}, {"y-1", 1}, {"z-1", 2}};
    std::vector<dw::ClientToScheduler> graph{u};
    write("state_events", "client_update_graph", events(0, dw::batch_message(dw::kClientEvents, graph)));
    std::vector<dw::ClientToScheduler> release{distributed::ReleaseKeys{"client-3f9a1c2e", {"x-0", "z-1"}}, u};
    write("state_events", "client_release_then_graph", events(0, dw::batch_message(dw::kClientEvents, release)));

    distributed::TaskFinished done;
    done.worker = "tcp://127.0.0.1:40001";
    done.key = "x-0";
    done.nbytes = 800;
    done.type = "Block";
    distributed::TaskErred erred{"tcp://127.0.0.1:40001", "x-0", "ValueError: no", ""};
    std::vector<dw::WorkerToScheduler> from_worker{done, erred};
    write("state_events", "worker_finished_erred", events(1, dw::batch_message(dw::kWorkerEvents, from_worker)));

    distributed::ComputeTask compute;
    compute.worker = "tcp://127.0.0.1:40001";
    compute.key = "y-1";
    compute.task = std::make_shared<const Task>(y);
    compute.priority = {0, 1, 1};
    compute.who_has = {distributed::WhoHas{"x-1", {"tcp://127.0.0.1:40002"}, 16}};
    std::vector<dw::SchedulerToWorker> to_worker{compute, distributed::FreeKeys{"tcp://127.0.0.1:40001", {"q"}}};
    write("state_events", "worker_compute_free", events(2, dw::batch_message(dw::kSchedulerEvents, to_worker)));
  }

  // A client's hello and its proof to the listener of fuzz/handshake_fuzz.cpp (same token).
  comm::wire::Hello listener;
  listener.nonce = std::string(comm::wire::kNonceBytes, '\x5a');
  listener.flags = comm::wire::kHelloProves;
  listener.name = "scheduler";
  listener.address = "tcp://127.0.0.1:8786";
  listener.transports = {"tcp"};
  comm::wire::Hello client;
  client.nonce = comm::wire::make_nonce();
  client.flags = comm::wire::kHelloProves;
  client.name = "client-3f9a1c2e";
  client.transports = {"tcp", "ucx"};
  const auto client_bytes = comm::wire::encode_hello(client);
  const auto proof = comm::wire::handshake_proof("fuzz-token", comm::wire::Role::connector, client_bytes,
                                                 comm::wire::encode_hello(listener));
  write("handshake", "client_with_proof", str(client_bytes) + str(proof));
  client.flags = 0;
  write("handshake", "client_without_token", str(comm::wire::encode_hello(client)));
  client.version = 1;
  write("handshake", "version_1", str(comm::wire::encode_hello(client)));

  // Objects: the first byte picks the type in fuzz/object_fuzz.cpp.
  auto object = [](std::uint8_t pick, const Object& o) { return std::string(1, static_cast<char>(pick)) + *o.bytes; };
  auto value = [](const Value& v) {
    std::ostringstream os(std::ios::binary);
    {
      cereal::BinaryOutputArchive ar(os);
      ar(v);
    }
    return std::string(1, '\0') + os.str();
  };
  write("object", "value_block", value(Value(iota_block(3))));
  write("object", "value_object", value(Value(to_object(std::string("x")))));
  write("object", "value_empty", value(Value()));
  write("object", "string", object(1, to_object(std::string("tcp://127.0.0.1:8786"))));
  write("object", "keys", object(2, to_object(std::vector<Key>{"('x', 0)", "('x', 1)", "('sum', 0)"})));
  write("object", "resources", object(3, to_object(std::map<std::string, double>{{"GPU", 2}, {"MEM", 1e10}})));
  write("object", "shape", object(4, to_object(Shape{4, 1000, 3})));
  write("object", "pairs",
        object(5, to_object(std::vector<std::pair<std::string, std::int64_t>>{{"a", 1}, {"b", -2}})));
  write("object", "who_has",
        object(6, to_object(std::map<std::string, std::vector<std::string>>{
                      {"('x', 0)", {"tcp://127.0.0.1:40123", "tcp://127.0.0.1:40124"}}})));
  write("object", "bools", object(7, to_object(std::vector<bool>{true, false, true})));

  // What write_scheduler_file (src/distributed/scheduler.cpp) writes.
  write("scheduler_file", "scheduler_json",
        "{\n  \"type\": \"Scheduler\",\n  \"id\": \"Scheduler-4f1e2d3c\",\n  \"address\": \"tcp://127.0.0.1:8786\",\n"
        "  \"pid\": 4242,\n  \"services\": {\"dashboard\": 8787}\n}\n");
  write("scheduler_file", "dask_json",
        "{\"type\": \"Scheduler\", \"id\": \"Scheduler-1\", \"address\": \"tls://10.0.0.1:8786\", \"services\": {}, "
        "\"started\": 1700000000.0, \"workers\": {}}");

  // Flag values (first byte: 0 duration, 1 positive duration, 2 memory, 3 device memory, 4 resources).
  const std::vector<std::pair<std::uint8_t, std::string>> flags = {
      {0, "60s"},  {0, "1.5 minutes"}, {1, "300ms"},          {1, "0.5"},
      {2, "4GB"},  {2, "512 MiB"},     {2, "auto"},           {2, "0.5"},
      {3, "auto"}, {3, "10e9"},        {4, "GPU=2 MEM=10e9"}, {4, "GPU=1,foo=0.5"}};
  int i = 0;
  for (const auto& [pick, text] : flags)
    write("cli_values", "flag_" + std::to_string(i++), std::string(1, static_cast<char>(pick)) + text);
  std::cout << "fuzz_make_corpus: wrote " << g_root << "\n";
  return 0;
}
