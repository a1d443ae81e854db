// A worker's peer-to-peer shuffle service (src/distributed/worker_shuffle.cpp) as its peers see
// it: parts arrive one per (input, worker) in shuffle-receive messages, the N x M small shards
// they hold are packed a few MiB at a time into one value per output partition in the worker's
// DataStore, and an unpack gets back exactly its output's rows, in input order, however the
// parts were packed or spilled. The store and the codec are the real ones; the scheduler and the
// peers are not needed (nothing here sends).
#include <gtest/gtest.h>

#include <arrow/api.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dataframe/arrow_util.hpp"
#include "distributed/data_store.hpp"
#include "distributed/wire.hpp"
#include "distributed/worker_shuffle.hpp"

namespace tessera::distributed {
namespace {

constexpr const char* kToken = "shuffle-pack-test";

// Input i's rows for outputs 0..outputs-1, `per_output` rows each, one output after another:
// columns (input, output, seq, name) so that every row says where it belongs.
std::shared_ptr<arrow::Table> part_of(std::int64_t input, std::int64_t outputs, std::int64_t per_output) {
  arrow::Int64Builder in, out, seq;
  arrow::StringBuilder name;
  for (std::int64_t o = 0; o < outputs; ++o)
    for (std::int64_t r = 0; r < per_output; ++r) {
      EXPECT_TRUE(in.Append(input).ok());
      EXPECT_TRUE(out.Append(o).ok());
      EXPECT_TRUE(seq.Append(r).ok());
      EXPECT_TRUE(name.Append("row-" + std::to_string(input) + "-" + std::to_string(r)).ok());
    }
  auto schema = arrow::schema({arrow::field("input", arrow::int64()), arrow::field("output", arrow::int64()),
                               arrow::field("seq", arrow::int64()), arrow::field("name", arrow::utf8())});
  return arrow::Table::Make(schema, {*in.Finish(), *out.Finish(), *seq.Finish(), *name.Finish()});
}

comm::Message receive_message(std::int64_t run, std::int64_t inputs, std::int64_t input, std::int64_t outputs,
                              std::int64_t per_output) {
  comm::Message m(wire::kShuffleReceive);
  m.set("token", std::string(kToken));
  m.set("run", run);
  m.set("inputs", inputs);
  m.set("input", input);
  m.set("first_output", std::int64_t{0});
  m.set("rows", std::vector<std::int64_t>(static_cast<std::size_t>(outputs), per_output));
  wire::put_values(m, {dataframe::detail::table_value(part_of(input, outputs, per_output))});
  return m;
}

struct Service {
  std::string address = "tcp://127.0.0.1:1";
  DataStore store;
  WorkerShuffle shuffle;
  explicit Service(std::size_t memory_limit)
      : store(DataStoreOptions{memory_limit, 0.6, 0.0, {}, 0}),
        shuffle(WorkerShuffle::Host{address, store, [](comm::Message) -> comm::Message { throw Error("no scheduler"); },
                                    [](const std::string&, comm::Message, RpcTable::Callback) { throw Error("no peers"); },
                                    [] {}}) {}
};

// Output j's rows as (input, seq) pairs, in the order take() gave them.
std::vector<std::pair<std::int64_t, std::int64_t>> rows_of(const std::vector<Value>& shards, std::int64_t output) {
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  for (const auto& v : shards) {
    auto t = dataframe::detail::host_table_of(v, "test");
    auto in = t->GetColumnByName("input"), out = t->GetColumnByName("output"), seq = t->GetColumnByName("seq");
    for (std::int64_t r = 0; r < t->num_rows(); ++r) {
      EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*out->GetScalar(r))->value, output);
      rows.push_back({std::static_pointer_cast<arrow::Int64Scalar>(*in->GetScalar(r))->value,
                      std::static_pointer_cast<arrow::Int64Scalar>(*seq->GetScalar(r))->value});
    }
  }
  return rows;
}

std::vector<std::pair<std::int64_t, std::int64_t>> expected_rows(const std::vector<std::int64_t>& inputs,
                                                                  std::int64_t per_output) {
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  for (auto i : inputs)
    for (std::int64_t r = 0; r < per_output; ++r) rows.push_back({i, r});
  return rows;
}

TEST(ShufflePack, ManySmallShardsArePackedPerOutputAndComeBackInInputOrder) {
  // 64 MiB limit: shards are staged up to 2 MiB, then packed. 60 inputs x 40 outputs x 200 rows
  // (about 12 MB): a shard per (input, output) would be 2400 values in the store.
  constexpr std::int64_t kInputs = 60, kOutputs = 40, kPerOutput = 200;
  Service s(std::size_t{64} << 20);
  // Inputs arrive out of order, as they do from several senders.
  std::vector<std::int64_t> arrival;
  for (std::int64_t i = 0; i < kInputs; ++i) arrival.push_back((i * 37) % kInputs);
  for (auto i : arrival) s.shuffle.receive(receive_message(1, kInputs, i, kOutputs, kPerOutput));
  const auto held = s.store.size();
  EXPECT_GT(held, 0u) << "nothing was packed into the store";
  EXPECT_LE(held, static_cast<std::size_t>(kOutputs) * 10) << "shards were stored one by one, not packed";
  std::vector<std::int64_t> in_order;
  for (std::int64_t i = 0; i < kInputs; ++i) in_order.push_back(i);
  for (std::int64_t j = 0; j < kOutputs; ++j)
    EXPECT_EQ(rows_of(s.shuffle.take(kToken, 1, j), j), expected_rows(in_order, kPerOutput)) << "output " << j;
  EXPECT_EQ(s.store.size(), 0u) << "packs were left in the store after every output was taken";
  EXPECT_THROW(s.shuffle.take(kToken, 1, 0), ShuffleRunLost);  // taken already
  // An output this worker does not own (its unpack ran on the wrong worker): an error naming it,
  // not an empty partition.
  try {
    s.shuffle.take(kToken, 1, kOutputs);
    ADD_FAILURE() << "took an output owned elsewhere";
  } catch (const ShuffleRunLost&) {
    ADD_FAILURE() << "a lost run, not a misplaced unpack";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not worker"), std::string::npos) << e.what();
  }
}

TEST(ShufflePack, PacksSpillUnderASmallLimitAndReadBackRight) {
  constexpr std::int64_t kInputs = 30, kOutputs = 12, kPerOutput = 1'000;  // about 14 MB through a 4 MiB store
  Service s(std::size_t{4} << 20);
  for (std::int64_t i = kInputs - 1; i >= 0; --i) s.shuffle.receive(receive_message(7, kInputs, i, kOutputs, kPerOutput));
  EXPECT_GT(s.store.stats().spilled, 0u) << "nothing spilled under a 4 MiB limit";
  EXPECT_LT(s.store.stats().spilled, static_cast<std::size_t>(kInputs * kOutputs / 2)) << "shards spilled one by one";
  std::vector<std::int64_t> in_order;
  for (std::int64_t i = 0; i < kInputs; ++i) in_order.push_back(i);
  for (std::int64_t j = 0; j < kOutputs; ++j)
    EXPECT_EQ(rows_of(s.shuffle.take(kToken, 7, j), j), expected_rows(in_order, kPerOutput)) << "output " << j;
}

TEST(ShufflePack, AnInputSentTwiceCountsOnceAndAMissingOneIsNotTrusted) {
  constexpr std::int64_t kInputs = 4, kOutputs = 3, kPerOutput = 5;
  Service s(0);
  for (auto i : {0, 1, 1, 2}) s.shuffle.receive(receive_message(2, kInputs, i, kOutputs, kPerOutput));
  // Input 3 has not arrived: an unpack must not return rows short.
  EXPECT_THROW(s.shuffle.take(kToken, 2, 0), ShuffleRunLost);
  s.shuffle.receive(receive_message(2, kInputs, 3, kOutputs, kPerOutput));
  for (std::int64_t j = 1; j < kOutputs; ++j)
    EXPECT_EQ(rows_of(s.shuffle.take(kToken, 2, j), j), expected_rows({0, 1, 2, 3}, kPerOutput));
}

TEST(ShufflePack, AMalformedPartIsRefusedWithTheReason) {
  Service s(0);
  auto m = receive_message(3, 2, 0, 3, 4);
  m.set("rows", std::vector<std::int64_t>{4, 4, 5});  // 13 rows said, 12 sent
  try {
    s.shuffle.receive(m);
    FAIL() << "a part whose row counts do not match was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows"), std::string::npos) << e.what();
  }
  auto bad_input = receive_message(3, 2, 5, 3, 4);  // input 5 of 2
  EXPECT_THROW(s.shuffle.receive(bad_input), Error);
  // A later run replaces this one: its messages are refused as lost.
  s.shuffle.receive(receive_message(4, 2, 0, 3, 4));
  EXPECT_THROW(s.shuffle.receive(receive_message(3, 2, 1, 3, 4)), ShuffleRunLost);
}

}  // namespace
}  // namespace tessera::distributed
