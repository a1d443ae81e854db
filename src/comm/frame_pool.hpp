#pragma once
// Receive buffers for the transports (tcp://, ucx://): recycled instead of allocated per message.
#include <cstddef>

#include "tessera/comm/message.hpp"

namespace tessera::comm::detail {

/**
 * A receive buffer of exactly n bytes (uninitialised, 64-byte aligned) from the process's frame
 * pool. When the last holder drops the Frame its memory goes back to the pool, and a later
 * frame of about that size reuses it.
 *
 * - Buffers up to 1 MiB come from power-of-two size classes (64 B .. 1 MiB), each class
 *   keeping at most 4 MiB (and 256 buffers) free.
 * - Buffers of 2 MiB or more are rounded to 2 MiB, asked for transparent huge pages and kept
 *   best-fit (never more than a quarter larger than needed), at most kLargeMaxBytes in all,
 *   the least recently freed first to go, and released after kLargeIdle unused. Faulting in
 *   fresh pages (the kernel zeroes each one) cost as much as the copy itself on this VM.
 */
Frame allocate_frame(std::size_t n);

/** Bytes held by free buffers in the pool (tests). */
std::size_t frame_pool_free_bytes();

}  // namespace tessera::comm::detail
