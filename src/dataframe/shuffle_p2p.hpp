#pragma once
/**
 * @file Private: the peer-to-peer shuffle's tasks (shuffle_p2p_ops.cpp) and how a shuffle is
 * lowered to them (shuffle_p2p.cpp). docs/dataframe-shuffle.md.
 */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/key.hpp"
#include "tessera/core/value.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"

namespace tessera::dataframe::detail {

inline constexpr const char* kOpShuffleTransfer = "tessera.frame.shuffle_transfer";
inline constexpr const char* kOpShuffleBarrier = "tessera.frame.shuffle_barrier";
inline constexpr const char* kOpShuffleP2PUnpack = "tessera.frame.shuffle_p2p_unpack";

/** @brief Every parameter the three ops of one shuffle share. */
struct P2PShuffleSpec {
  std::string token;               ///< the run's name on the scheduler: the shuffle node's
  std::vector<std::string> on;     ///< hash the rows of these columns (when range_column is empty)
  std::string range_column;        ///< or place them by this column's ranges (a sort)
  bool ascending = true;
  bool nulls_first = false;        ///< a sort's missing values in the first range, not the last
  std::int64_t inputs = 0, outputs = 1;
  std::string transfer_prefix, barrier, unpack_prefix;  ///< task names (tessera/ops/shuffle.hpp)
  template <class A>
  void serialize(A& ar) {
    ar(token, on, range_column, ascending, nulls_first, inputs, outputs, transfer_prefix, barrier, unpack_prefix);
  }
};

Object p2p_shuffle_params(const P2PShuffleSpec& spec);

/** @brief How shuffles run: task-based (split and unpack tasks) or peer to peer. */
enum class ShuffleMethod : std::uint8_t { Tasks, PeerToPeer };

/**
 * @brief The method for graphs computed by `executor`: TESSERA_SHUFFLE_METHOD ("tasks" or
 * "p2p") when set, else peer to peer on a cluster (where the task-based one moves every split
 * to every unpack's worker) and task-based in one process (where a split is shared, not copied).
 */
ShuffleMethod shuffle_method(const Executor* executor);

/**
 * @brief Adds a peer-to-peer shuffle of `inputs` into `outputs` partitions to `graph`, its tasks
 * named after `name` (the unpacks are `name-0` ... as any frame's partitions); `bounds` is a
 * sort's quantiles (range placement). Returns the unpacks' keys.
 */
std::vector<Key> add_p2p_shuffle(Graph& graph, const std::string& name, const std::vector<Key>& inputs,
                                 std::int64_t outputs, const std::vector<std::string>& on,
                                 const std::string& range_column = {}, bool ascending = true,
                                 bool nulls_first = false, const std::optional<Key>& bounds = std::nullopt,
                                 bool device = false);

}  // namespace tessera::dataframe::detail
