#!/usr/bin/env python3
"""Dask distributed side of Tessera's distributed benchmarks (issue 3's anchors).

Each subcommand starts its own LocalCluster(n_workers=--workers, threads_per_worker=--threads,
processes=True) unless --scheduler ADDRESS names a running one, closes it at the end, and
prints ONE JSON line on stdout per run:

  throughput  --tasks N         client.map(no-op, range(N), pure=False) + client.gather
                                -> {"benchmark": "dask_task_throughput", ..., "tasks_per_s": ..}
  latency     --round-trips N   client.submit(inc, i, pure=False).result(), one after another
                                -> {"benchmark": "dask_latency", ..., "median_us", "p90_us", "min_us"}
  large_graph --tasks N         (da.ones(k, chunks=1) + 1).sum() with about N tasks after
                                optimization -> {"benchmark": "dask_large_graph", "tasks", "seconds",
                                "tasks_per_s", "scheduler_peak_rss_bytes", ...}
  transfer    --megabytes M     M MiB numpy array made on worker A, then a task on worker B that
                                needs it -> {"benchmark": "dask_transfer", "gb_per_s", "memcpy_gb_per_s"}
  seed        --n N --chunk C   ((x + 1)[::2, ::2]).sum(), x = da.random.normal(10, 1, (N, N), C)
                                -> {"benchmark": "dask_seed_array", "seconds", "value", "expected"}

Figures use the names of Tessera's benchmark binaries (tasks_per_s, median_us, gb_per_s,
seconds); GB is 1e9 bytes, MiB is 2**20. --repeat R runs the measurement R times on the same
cluster and reports the best, with every run's figure in "runs" (the spread).

  python benchmarks/dask/distributed_bench.py throughput --tasks 20000 --repeat 2
"""
import argparse
import json
import logging
import math
import os
import resource
import statistics
import sys
import time

# ---------------------------------------------------------------------------------------------
# Task functions. Module level, so that workers (spawned processes) can unpickle them.


def noop(i):
    return None


def inc(i):
    return i + 1


def make_array(nbytes, seed):
    import numpy as np

    # Random bytes, so that no compression (if one were configured) can shrink the transfer.
    return np.random.default_rng(seed).integers(0, 255, size=nbytes, dtype=np.uint8)


def nbytes_of(x):
    return int(x.nbytes)


def peak_rss_bytes():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes():
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------


def base_record(name, args, client):
    import dask
    import distributed

    workers = client.scheduler_info().get("workers", {})
    return {
        "benchmark": name,
        "impl": "dask",
        "dask_version": dask.__version__,
        "distributed_version": distributed.__version__,
        "cluster": args.scheduler or args.cluster,
        "workers": len(workers),
        # Threads per worker (the most any worker has, when connected to a running scheduler).
        "threads": args.threads if not args.scheduler else max(
            (w.get("nthreads", 0) for w in workers.values()), default=0),
        "processes": True,
        "repeat": args.repeat,
    }


def emit(rec):
    print(json.dumps(rec), flush=True)


def percentile(sorted_vals, q):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(math.ceil(q / 100.0 * len(sorted_vals))) - 1))
    return sorted_vals[k]


def spread(values):
    """Relative spread of a list of figures: (max - min) / min."""
    lo, hi = min(values), max(values)
    return round((hi - lo) / lo, 4) if lo > 0 else None


def bench_throughput(client, args):
    n = args.tasks
    # Warm-up: ships the function to the workers and warms the connections.
    client.gather(client.map(noop, range(min(n, 200)), pure=False))
    runs = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        futures = client.map(noop, range(n), pure=False)
        client.gather(futures)
        dt = time.perf_counter() - t0
        del futures
        runs.append(dt)
        time.sleep(0.5)  # let the scheduler forget the previous batch
    best = min(runs)
    rec = base_record("dask_task_throughput", args, client)
    rec.update({
        "tasks": n,
        "seconds": round(best, 6),
        "tasks_per_s": round(n / best, 1),
        "runs_tasks_per_s": [round(n / r, 1) for r in runs],
        "spread": spread(runs),
    })
    emit(rec)


def bench_latency(client, args):
    n = args.round_trips
    for i in range(min(50, n)):  # warm-up
        client.submit(inc, i, pure=False).result()
    medians, all_us = [], []
    total = []
    for _ in range(args.repeat):
        us = []
        t_start = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            client.submit(inc, i, pure=False).result()
            us.append((time.perf_counter() - t0) * 1e6)
        total.append(time.perf_counter() - t_start)
        us.sort()
        medians.append(statistics.median(us))
        all_us.append(us)
    best = min(range(len(medians)), key=lambda r: medians[r])
    us = all_us[best]
    rec = base_record("dask_latency", args, client)
    rec.update({
        "round_trips": n,
        "seconds": round(total[best], 6),
        "median_us": round(medians[best], 1),
        "p90_us": round(percentile(us, 90), 1),
        "p99_us": round(percentile(us, 99), 1),
        "min_us": round(us[0], 1),
        "runs_median_us": [round(m, 1) for m in medians],
        "spread": spread(medians),
    })
    emit(rec)


def bench_large_graph(client, args):
    import dask
    import dask.array as da

    target = args.tasks
    # (ones(k, chunks=1) + 1).sum(): after the client's optimization (blockwise fusion) the
    # scheduler gets k fused ones+add+chunk-sum tasks plus the reduction tree, about 4k/3 tasks.
    # Calibrate k on a small graph so that the optimized graph has about --tasks tasks.
    def optimized_len(k):
        y = (da.ones((k,), chunks=1) + 1).sum()
        return len(dask.optimize(y)[0].__dask_graph__())

    per_chunk = optimized_len(3000) / 3000.0
    k = max(1, int(round(target / per_chunk)))

    sched_before = client.run_on_scheduler(peak_rss_bytes)
    sched_rss_before = client.run_on_scheduler(current_rss_bytes)
    runs, build_s = [], []
    value = tasks = tasks_raw = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        y = (da.ones((k,), chunks=1) + 1).sum()
        tasks_raw = len(y.__dask_graph__())
        t1 = time.perf_counter()
        value = float(client.compute(y).result())
        dt = time.perf_counter() - t0
        build_s.append(t1 - t0)
        runs.append(dt)
        del y
    # The graph the scheduler ran (optimized), counted outside the timed region.
    tasks = len(dask.optimize((da.ones((k,), chunks=1) + 1).sum())[0].__dask_graph__())
    sched_peak = client.run_on_scheduler(peak_rss_bytes)
    best = min(runs)
    in_client = (not args.scheduler) and args.cluster == "local"
    rec = base_record("dask_large_graph", args, client)
    rec.update({
        "target_tasks": target,
        "chunks": k,
        "tasks": tasks,
        "tasks_unoptimized": tasks_raw,
        "seconds": round(best, 6),
        "tasks_per_s": round(tasks / best, 1),
        "graph_build_seconds": round(build_s[runs.index(best)], 6),
        "runs_seconds": [round(r, 3) for r in runs],
        "spread": spread(runs),
        "value": value,
        "expected": float(2 * k),
        "scheduler_peak_rss_bytes": sched_peak,
        "scheduler_peak_rss_before_bytes": sched_before,
        "scheduler_rss_before_bytes": sched_rss_before,
        # (peak - RSS before the graph) / tasks; the second name is the one Tessera's
        # build/benchmarks/large_graph prints.
        "scheduler_peak_rss_bytes_per_task": round((sched_peak - (sched_rss_before or sched_before)) / tasks, 1),
        "scheduler_bytes_per_task": round((sched_peak - (sched_rss_before or sched_before)) / tasks, 1),
        # With LocalCluster the scheduler lives in this (client) process, so its peak RSS also
        # holds the client's graph; --cluster subprocess gives the scheduler its own process.
        "scheduler_in_client_process": in_client,
    })
    emit(rec)


def bench_transfer(client, args):
    import numpy as np
    from distributed import wait

    nbytes = int(args.megabytes * (1 << 20))
    workers = sorted(client.scheduler_info()["workers"])
    if len(workers) < 2:
        raise SystemExit("distributed_bench transfer: needs at least 2 workers")
    a, b = workers[0], workers[1]

    # Trivial round trip on B, measured the same way as the dependent task.
    for i in range(20):
        client.submit(inc, i, workers=[b], allow_other_workers=False, pure=False).result()
    trivial = []
    for i in range(200):
        t0 = time.perf_counter()
        client.submit(inc, i, workers=[b], allow_other_workers=False, pure=False).result()
        trivial.append(time.perf_counter() - t0)
    trivial_s = statistics.median(trivial)

    # Warm-up: one untimed A -> B transfer of the same size opens the worker-to-worker
    # connection and warms both allocators, so the timed runs measure the steady state.
    w = client.submit(make_array, nbytes, 99, workers=[a], allow_other_workers=False, pure=False)
    client.submit(nbytes_of, w, workers=[b], allow_other_workers=False, pure=False).result()
    del w

    raw, net = [], []
    for r in range(args.repeat):
        # A fresh array each run, so that B holds no replica from a previous run.
        x = client.submit(make_array, nbytes, r, workers=[a], allow_other_workers=False, pure=False)
        wait(x)
        t0 = time.perf_counter()
        got = client.submit(nbytes_of, x, workers=[b], allow_other_workers=False, pure=False).result()
        dt = time.perf_counter() - t0
        assert got == nbytes, (got, nbytes)
        raw.append(dt)
        net.append(max(dt - trivial_s, 1e-9))
        del x
        time.sleep(0.5)

    # memcpy of the same size in numpy, in this process (best of 5, destination pre-faulted).
    src = np.random.default_rng(0).integers(0, 255, size=nbytes, dtype=np.uint8)
    dst = np.zeros_like(src)
    dst[:] = 1
    mc = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        mc.append(time.perf_counter() - t0)

    best = min(range(len(raw)), key=lambda i: raw[i])
    rec = base_record("dask_transfer", args, client)
    rec.update({
        "megabytes": args.megabytes,
        "bytes": nbytes,
        "seconds": round(raw[best], 6),
        "trivial_task_seconds": round(trivial_s, 6),
        "net_seconds": round(net[best], 6),
        # gb_per_s: bytes / (dependent task's round trip - a trivial task's round trip).
        "gb_per_s": round(nbytes / net[best] / 1e9, 3),
        # Without subtracting the trivial round trip:
        "gross_gb_per_s": round(nbytes / raw[best] / 1e9, 3),
        "runs_gb_per_s": [round(nbytes / s / 1e9, 3) for s in net],
        "spread": spread(raw),
        "memcpy_gb_per_s": round(nbytes / min(mc) / 1e9, 3),
    })
    emit(rec)


def bench_seed(client, args):
    import dask.array as da

    n, c = args.n, args.chunk
    runs = []
    value = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        # Graph construction is inside the timed region, as in benchmarks/dask/seed_array.py.
        if args.rng == "randomstate":
            x = da.random.RandomState(0).normal(10, 1, size=(n, n), chunks=(c, c))
        else:
            x = da.random.normal(10, 1, size=(n, n), chunks=(c, c))
        y = (x + 1)[::2, ::2].sum()
        value = float(client.compute(y).result())
        runs.append(time.perf_counter() - t0)
        del x, y
    kept = (n + 1) // 2
    rec = base_record("dask_seed_array", args, client)
    rec.update({
        "n": n,
        "chunk": c,
        "scheduler": "distributed",
        "rng": args.rng,
        "device": "host",
        "seconds": round(min(runs), 6),
        "runs_seconds": [round(r, 3) for r in runs],
        "spread": spread(runs),
        "value": value,
        "expected": float(kept) * kept * 11.0,
    })
    emit(rec)


BENCHES = {
    "throughput": bench_throughput,
    "latency": bench_latency,
    "large_graph": bench_large_graph,
    "transfer": bench_transfer,
    "seed": bench_seed,
}


def main() -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workers", type=int, default=2, help="LocalCluster n_workers")
    common.add_argument("--threads", type=int, default=1, help="LocalCluster threads_per_worker")
    common.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="connect to a running scheduler instead of starting a cluster")
    common.add_argument("--cluster", default="local", choices=["local", "subprocess"],
                        help="local: LocalCluster (scheduler in this process); subprocess: "
                             "distributed's SubprocessCluster (scheduler in its own process)")
    common.add_argument("--repeat", type=int, default=None,
                        help="runs on the same cluster; the best is reported (default 1; seed and "
                             "transfer 3)")

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    sub = p.add_subparsers(dest="bench", required=True)
    s = sub.add_parser("throughput", parents=[common], help="client.map of a no-op")
    s.add_argument("--tasks", type=int, default=20000)
    s = sub.add_parser("latency", parents=[common], help="submit(inc).result() round trips")
    s.add_argument("--round-trips", type=int, default=1000)
    s = sub.add_parser("large_graph", parents=[common], help="a dask.array graph of about N tasks")
    s.add_argument("--tasks", type=int, default=100000)
    s = sub.add_parser("transfer", parents=[common], help="worker-to-worker transfer of one array")
    s.add_argument("--megabytes", type=float, default=256)
    s = sub.add_parser("seed", parents=[common], help="(x + 1)[::2, ::2].sum() on the cluster")
    s.add_argument("--n", type=int, default=20000)
    s.add_argument("--chunk", type=int, default=2000)
    s.add_argument("--rng", default="default", choices=["default", "randomstate"],
                   help="default: da.random.normal (Dask's module-level, unseeded RandomState); "
                        "randomstate: da.random.RandomState(0).normal, as "
                        "benchmarks/dask/seed_array.py. Both use numpy's legacy RandomState.")
    args = p.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.bench in ("seed", "transfer") else 1
    args.repeat = max(1, args.repeat)

    from distributed import Client, LocalCluster

    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        kw = dict(n_workers=args.workers, threads_per_worker=args.threads,
                  dashboard_address=None, silence_logs=logging.ERROR)
        if args.cluster == "subprocess":
            from distributed.deploy.subprocess import SubprocessCluster

            cluster = SubprocessCluster(**kw)
        else:
            cluster = LocalCluster(processes=True, **kw)
        client = Client(cluster)
    try:
        client.wait_for_workers(args.workers if not args.scheduler else 1)
        BENCHES[args.bench](client, args)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
