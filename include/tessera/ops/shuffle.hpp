#pragma once
/** @file
 * The peer-to-peer shuffle as an op sees it (docs/dataframe-shuffle.md): a ShuffleExchange moves
 * shards of input partitions to the process that owns each output partition, outside the task
 * graph. A cluster worker gives its tasks one that talks to the scheduler and to its peers
 * (src/distributed/worker_shuffle.cpp); the local executors give one that keeps the shards in
 * this process (src/exec/local_shuffle.cpp). Ops reach it through OpContext::shuffle.
 *
 * The exchange carries Values and knows nothing of what they hold: the DataFrame's shuffle ops
 * (src/dataframe/shuffle_p2p_ops.cpp) split Arrow tables into shards and put them back together.
 */
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/value.hpp"

namespace tessera {

/** @brief How a shuffle's tasks are named, so that the scheduler can find them by its token. */
struct ShuffleKeys {
  std::string transfer_prefix;  ///< transfer task i is transfer_prefix + i
  std::string barrier;          ///< the barrier task
  std::string unpack_prefix;    ///< unpack task j is unpack_prefix + j
};

/** @brief One run of a shuffle: its id and who owns which output partition. */
struct ShuffleRun {
  std::string token;
  std::int64_t id = 0;
  std::int64_t inputs = 0, outputs = 0;
  /** The participants, in order; output partition j belongs to workers[owner(j)]. */
  std::vector<std::string> workers;
  /** Contiguous ranges of output partitions per participant, as evenly as they divide. */
  std::size_t owner(std::int64_t output) const {
    return static_cast<std::size_t>(output * static_cast<std::int64_t>(workers.size()) / outputs);
  }
};

/**
 * @brief The service behind a shuffle's transfer, barrier and unpack ops. Thread-safe: the ops
 * of one run call it from many threads and processes at once. Every call that learns its run was
 * replaced (a participant was lost) throws ShuffleRunLost; the ops' tasks carry retries, so the
 * scheduler runs them again in the new run.
 */
class ShuffleExchange {
 public:
  virtual ~ShuffleExchange() = default;
  /** @brief The token's current run, created (participants chosen) by the first caller. */
  virtual ShuffleRun join(const std::string& token, std::int64_t inputs, std::int64_t outputs,
                          const ShuffleKeys& keys) = 0;
  /**
   * @brief Sends input partition `input`'s rows to the owners of their output partitions;
   * returns once every owner holds them. `rows` holds them ordered by output partition: output
   * j's are rows [offsets[j], offsets[j+1]) (outputs + 1 offsets, from 0 to every row). It is a
   * Native whose codec can count, cut and join rows (NativeCodec::rows/split/concat: a table),
   * so that the exchange sends each owner its part as one value, not one per output partition.
   */
  virtual void send(const ShuffleRun& run, std::int64_t input, Value rows, const std::vector<std::int64_t>& offsets) = 0;
  /** @brief Records that `input` was sent whole in `run` (the barrier counts these). */
  virtual void input_done(const ShuffleRun& run, std::int64_t input) = 0;
  /** @brief Passes when every input was sent in the token's current run `run`. */
  virtual void barrier(const std::string& token, std::int64_t run) = 0;
  /**
   * @brief Output partition `output`'s shards, ordered by input partition, taken out of this
   * process (a second take of the same output gets nothing). Throws when this process does not
   * hold all of them (it is not the owner, or the run was lost).
   */
  virtual std::vector<Value> take(const std::string& token, std::int64_t run, std::int64_t output) = 0;
};

/**
 * @brief Checks send()'s arguments (a splittable Native, outputs + 1 ascending offsets from 0 to
 * its row count) and cuts `rows` at `offsets[first]`..`offsets[last]` into one view per output
 * in [first, last): the pieces an exchange stores or sends. Throws Error naming what is wrong.
 */
std::vector<Value> cut_by_output(const ShuffleRun& run, const Value& rows, const std::vector<std::int64_t>& offsets,
                                 std::int64_t first, std::int64_t last);

/** @brief The run a call was made for is no longer the token's current one. */
class ShuffleRunLost : public Error {
 public:
  using Error::Error;
};

/** @brief This process's in-memory exchange, for the local executors (one participant). */
ShuffleExchange& local_shuffle_exchange();

}  // namespace tessera
