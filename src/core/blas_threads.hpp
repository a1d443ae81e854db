#pragma once
/** @file Private: keeping BLAS's own threads from fighting the task threads. */

namespace tessera::detail {

/**
 * @brief Makes the BLAS library run each call on one thread, because `task_threads` (> 1) task
 * threads, or several worker processes on a host, already keep the cores busy: OpenBLAS's own
 * pool on top of them oversubscribes the cores (measured: matmul_sum 2.3 s -> 1.8 s on 2 cores).
 * Dask's workers do the same through OMP/OPENBLAS_NUM_THREADS=1. A user's OPENBLAS_NUM_THREADS
 * or OMP_NUM_THREADS wins; a BLAS without openblas_set_num_threads is left alone.
 */
void single_thread_blas();

}  // namespace tessera::detail
