#pragma once
/** @file
 * Native values: in-process C++ objects (a dataframe partition) that tasks in one process share
 * without encoding, and that cross processes through a registered codec as raw frames. */
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/core/buffer.hpp"

namespace tessera {

/**
 * @brief A C++ object held by pointer, tagged with the name of the codec that can move it.
 *
 * Tasks in one process pass it as is (a shared, immutable object: an Arrow table, a frame of
 * device columns). Only when it leaves the process (a message, a spill file, a literal task
 * argument) does its codec split it into a small header plus buffers that travel as frames.
 */
struct Native {
  std::string type;                     ///< codec name, e.g. "arrow.table"
  std::shared_ptr<const void> object;   ///< the object; its real type is the codec's business
  std::size_t nbytes = 0;               ///< memory it holds, for memory accounting
};

/** @brief A Native split for the wire: a header (the layout) and the buffers it points into. */
struct NativeParts {
  std::string header;
  std::vector<std::shared_ptr<Buffer>> frames;
};

/**
 * @brief How one Native type is split into parts and rebuilt. Both directions should avoid
 * copying bulk data: encode wraps the object's own buffers, decode adopts the received ones.
 */
struct NativeCodec {
  std::function<NativeParts(const Native&)> encode;
  /** Throws Error (naming what is wrong) on parts it cannot rebuild from. */
  std::function<Native(const std::string& header, std::vector<std::shared_ptr<Buffer>> frames)> decode;
  /**
   * Optional, for a type made of rows (a table), and all three or none: how many rows a native
   * holds; one compact native holding several natives' rows one after another (they share a
   * layout: the shards of one shuffle); and one cut back into consecutive pieces of the given
   * row counts (views, no copy). A shuffle's receiving worker packs the many small shards of an
   * output partition into one with them, so that it holds, spills and reads back a few large
   * values rather than one per input partition.
   */
  std::function<std::int64_t(const Native&)> rows;
  std::function<Native(const std::vector<Native>& parts)> concat;
  std::function<std::vector<Native>(const Native&, const std::vector<std::int64_t>& rows)> split;
};

/** @brief Registers (or replaces) the codec of `type`; thread-safe. */
void register_native_codec(const std::string& type, NativeCodec codec);
/** @brief The codec of `type`; throws Error naming the type when none is registered. */
const NativeCodec& native_codec(const std::string& type);

}  // namespace tessera

namespace tessera {

/**
 * @brief One contiguous byte string holding a Native's parts (for spill files and cereal): the
 * frame count, header and frame sizes, then the header and each frame at a 64-byte aligned
 * offset. Device frames must have been copied to host (throws Error otherwise).
 */
std::string pack_native(const Native& native);
/**
 * @brief Rebuilds the Native of `type` from pack_native's bytes held in `packed` (64-byte
 * aligned host memory); the frames point into `packed`, which they keep alive. Throws Error on
 * bytes that do not hold a valid packing.
 */
Native unpack_native(const std::string& type, const std::shared_ptr<Buffer>& packed);

}  // namespace tessera
