#!/usr/bin/env python3
"""Tessera's peer-to-peer shuffle beside Dask's, in the same run (issue 30's shuffle benchmark).

  python benchmarks/shuffle_compare.py [--gigabytes 5] [--memory-limit 1GB] [--workers 2]
      [--engines tessera,dask] [--tessera BIN]

Both engines make the same rows on their workers: timeseries data (timestamp, id, name, x, y),
one partition a day at one row a second (Dask: dask.datasets.timeseries), as many days as
--gigabytes needs at 41 bytes a row; shuffle them on `id` peer to peer into as many partitions;
and count every column of the result, so that every column crosses the shuffle. Each runs on a
local cluster of --workers processes of 1 thread, each limited to --memory-limit (spilling to
disk past 60% of it):

  tessera  BIN --gigabytes G --method p2p --scheduler distributed --workers W --memory-limit M
  dask     LocalCluster(n_workers=W, threads_per_worker=1, memory_limit=M);
           df.shuffle(on="id", shuffle_method="p2p")
             .map_partitions(lambda d: d.count().to_frame().T).sum().compute()

Dask's counts go through map_partitions because dask-expr's optimiser drops a shuffle followed
straight by count() (a count does not depend on the partitioning; .optimize().pprint() shows no
P2PShuffle), which would time the data's making alone. Tessera's plan keeps its shuffle
(explain() shows it; the benchmark's own check is that every row was counted after it).

"seconds" is the shuffle and count (cluster start-up not included); "peak_rss_workers_mb" the
largest peak resident memory of one worker process. Prints one JSON line per engine and one
with Dask's time over Tessera's; each engine must count every row, else the exit status is 1.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
import tessera_pyenv  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()

ROW_BYTES = 41


def days_for(gigabytes):
    return max(1, int(-(-gigabytes * 1e9 // (ROW_BYTES * 86400))))


def run_tessera(args):
    binary = args.tessera or os.path.join(os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build")),
                                          "benchmarks", "dataframe_shuffle")
    cmd = [binary, "--gigabytes", str(args.gigabytes), "--method", "p2p", "--scheduler", "distributed",
           "--workers", str(args.workers), "--memory-limit", args.memory_limit]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    line = json.loads(out.stdout.strip().splitlines()[-1])
    line["expected_rows"] = days_for(args.gigabytes) * 86400
    return line


def worker_peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_dask(args):
    import dask
    import dask.datasets
    from dask.distributed import Client, LocalCluster

    days = days_for(args.gigabytes)
    start = "2000-01-01"
    end = str((__import__("datetime").date(2000, 1, 1) + __import__("datetime").timedelta(days=days)))
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                      processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(args.workers)
        df = dask.datasets.timeseries(start=start, end=end, freq="1s", partition_freq="1d", seed=0)
        t0 = time.perf_counter()
        try:
            shuffled = df.shuffle(on="id", shuffle_method="p2p")
        except TypeError:
            shuffled = df.shuffle(on="id", method="p2p")
        meta = {c: "int64" for c in df.columns}
        per_partition = shuffled.map_partitions(lambda d: d.count().to_frame().T, meta=meta)
        if "P2PShuffle" not in per_partition.optimize().expr.tree_repr():
            raise RuntimeError("dask-expr's optimised plan has no P2PShuffle")
        counts = per_partition.sum().compute()
        seconds = time.perf_counter() - t0
        peaks = client.run(worker_peak_rss_mb)
    rows = int(counts["id"])
    return {"benchmark": "dataframe_shuffle", "impl": "dask", "dask": dask.__version__, "method": "p2p",
            "scheduler": "distributed", "workers": args.workers, "threads": 1, "memory_limit": args.memory_limit,
            "partitions": days, "rows": rows, "gigabytes": round(rows * ROW_BYTES / 1e9, 3),
            "seconds": round(seconds, 3), "peak_rss_workers_mb": round(max(peaks.values()), 1),
            "expected_rows": days * 86400}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gigabytes", type=float, default=5)
    p.add_argument("--memory-limit", default="1GB")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--engines", default="tessera,dask")
    p.add_argument("--tessera", help="the dataframe_shuffle program (default: $TESSERA_BUILD_DIR/benchmarks/)")
    args = p.parse_args()
    results, ok = {}, True
    for engine in args.engines.split(","):
        try:
            line = run_tessera(args) if engine == "tessera" else run_dask(args)
        except Exception as e:  # a failed engine is reported, the others still run
            print(json.dumps({"benchmark": "dataframe_shuffle", "impl": engine, "error": str(e)}), flush=True)
            ok = False
            continue
        if line["rows"] != line.pop("expected_rows"):
            line["correct"] = False
            ok = False
        else:
            line["correct"] = True
        results[engine] = line
        print(json.dumps(line), flush=True)
    if "tessera" in results and "dask" in results:
        print(json.dumps({"benchmark": "dataframe_shuffle", "ratio": "dask_over_tessera",
                          "value": round(results["dask"]["seconds"] / results["tessera"]["seconds"], 2)}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
