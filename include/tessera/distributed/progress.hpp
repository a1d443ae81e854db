#pragma once
/**
 * @file
 * distributed.progress for futures: a terminal bar of how many are done, drawn until
 * every one has finished, erred or been cancelled.
 *
 *     auto fs = client.map(slow_inc, xs);
 *     tessera::distributed::progress(fs);   // [#####...] | 100% Completed |  2.1s
 */
#include <vector>

#include "tessera/distributed/client.hpp"
#include "tessera/exec/progress.hpp"

namespace tessera::distributed {

/** @brief Blocks, drawing a bar (ProgressBarOptions: fd, width, redraw interval), until all futures are done. */
void progress(const std::vector<Future>& futures, ProgressBarOptions options = {});

}  // namespace tessera::distributed
