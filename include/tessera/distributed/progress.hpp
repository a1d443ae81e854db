#pragma once
/**
 * @file
 * distributed.progress for futures and arrays: a terminal bar of how many are done, drawn until
 * every one has finished, erred or been cancelled.
 *
 *     auto fs = client.map(slow_inc, xs);
 *     tessera::distributed::progress(fs);   // [#####...] | 100% Completed |  2.1s
 *
 *     auto chunks = tessera::distributed::progress(client, x);  // x's chunks, computed with a bar
 *
 * A ProgressBar (tessera/exec/progress.hpp) also draws for a Client's get() and persist() while
 * it lives: `{ ProgressBar bar; auto y = x.persist(client); }` counts x's chunks.
 */
#include <vector>

#include "tessera/array/array.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/exec/progress.hpp"

namespace tessera::distributed {

/** @brief Blocks, drawing a bar (ProgressBarOptions: fd, width, redraw interval), until all futures are done. */
void progress(const std::vector<Future>& futures, ProgressBarOptions options = {});

/**
 * @brief Computes every chunk of `array` on `client` (as persist does) and draws the bar over its
 * chunks until all are done; returns their futures, row-major, which keep the chunks on the
 * workers while they live.
 */
std::vector<Future> progress(Client& client, const Array& array, ProgressBarOptions options = {});

/**
 * @brief Tells `observer` how far `futures` are (run_started with their number, task_finished
 * per one done, run_finished) and returns when all are done: how a Client's get() and persist()
 * feed a ProgressBar.
 */
void report_progress(const std::vector<Future>& futures, ExecutionObserver& observer, double dt = 0.05);

}  // namespace tessera::distributed
