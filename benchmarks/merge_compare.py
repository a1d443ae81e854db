#!/usr/bin/env python3
"""Tessera's DataFrame merge beside Dask, pandas, Polars and DuckDB, in the same run.

  python benchmarks/merge_compare.py [--left-rows 5000000] [--right-rows 1000000]
      [--left-files 8] [--right-files 4] [--keys 1000000] [--repeat 3] [--tessera BIN]
      [--engines LIST] [--data DIR]

Writes (or reuses, in --data) two Parquet datasets: a left "fact" table (k: int64 keys drawn
uniformly from --keys values, v: float64) and a right table (k, w: int64), several files each,
then counts the rows of their inner merge on k with each engine, each run in its own process:

  tessera-threads      BIN --left .. --right .. --on k --broadcast false --scheduler threads
  tessera-distributed  the same on the program's own cluster (2 worker processes, 1 thread each)
  dask-threads         dd.merge(..., shuffle_method="tasks"), threaded scheduler
  dask-distributed     dd.merge(..., shuffle_method="p2p") on LocalCluster(2 workers, 1 thread each)
  pandas               pd.merge of the whole tables
  polars               pl.scan_parquet(..).join(..).select(pl.len())
  duckdb               SELECT count(*) FROM read_parquet(..) JOIN read_parquet(..) USING (k)

Both Tessera and Dask hash-join (both sides shuffled) with as many output partitions as the
larger side has. "seconds" is the best of --repeat runs as the engine reports it (read + merge +
count: no interpreter or cluster start-up). Prints one JSON line per engine and a line of
ratios (Dask over Tessera, per scheduler); every engine must count the same rows as pandas, else
the exit status is 1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
import tessera_pyenv  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()

ENGINES = ("tessera-threads", "tessera-distributed", "dask-threads", "dask-distributed", "pandas", "polars", "duckdb")


def write_data(directory, args):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    marker = os.path.join(directory, "params.json")
    params = {k: getattr(args, k) for k in ("left_rows", "right_rows", "left_files", "right_files", "keys")}
    if os.path.exists(marker) and json.load(open(marker)) == params:
        return
    rng = np.random.default_rng(7)
    for side, rows, files in (("left", args.left_rows, args.left_files), ("right", args.right_rows, args.right_files)):
        os.makedirs(os.path.join(directory, side), exist_ok=True)
        each = rows // files
        for f in range(files):
            k = rng.integers(0, args.keys, each)
            other = rng.normal(size=each) if side == "left" else rng.integers(0, 1 << 40, each)
            pq.write_table(pa.table({"k": k, "v" if side == "left" else "w": other}),
                           os.path.join(directory, side, f"part.{f}.parquet"))
    json.dump(params, open(marker, "w"))


def run_engine(engine, data, partitions):
    """In this process: one run of one Python engine; returns (seconds, rows, startup)."""
    left, right = os.path.join(data, "left", "*.parquet"), os.path.join(data, "right", "*.parquet")
    startup = 0.0
    if engine == "pandas":
        import pandas as pd
        import glob
        t0 = time.perf_counter()
        lt = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob(left))], ignore_index=True)
        rt = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob(right))], ignore_index=True)
        rows = len(pd.merge(lt, rt, on="k"))
        return time.perf_counter() - t0, rows, startup
    if engine == "polars":
        import polars as pl
        t0 = time.perf_counter()
        rows = pl.scan_parquet(left).join(pl.scan_parquet(right), on="k").select(pl.len()).collect().item()
        return time.perf_counter() - t0, rows, startup
    if engine == "duckdb":
        import duckdb
        t0 = time.perf_counter()
        rows = duckdb.sql(f"SELECT count(*) FROM read_parquet('{left}') JOIN read_parquet('{right}') USING (k)").fetchall()[0][0]
        return time.perf_counter() - t0, rows, startup
    import dask
    import dask.dataframe as dd
    client = None
    if engine == "dask-distributed":
        from distributed import Client, LocalCluster
        t0 = time.perf_counter()
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))
        startup = time.perf_counter() - t0
    method = "p2p" if client else "tasks"
    try:
        with dask.config.set(scheduler=client or "threads"):
            t0 = time.perf_counter()
            lt, rt = dd.read_parquet(left), dd.read_parquet(right)
            merged = dd.merge(lt, rt, on="k", shuffle_method=method, npartitions=partitions, broadcast=False)
            rows = int(len(merged))
            return time.perf_counter() - t0, rows, startup
    finally:
        if client:
            client.cluster.close()
            client.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--left-rows", type=int, default=5_000_000)
    ap.add_argument("--right-rows", type=int, default=1_000_000)
    ap.add_argument("--left-files", type=int, default=8)
    ap.add_argument("--right-files", type=int, default=4)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--tessera", default=os.path.join(os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build")),
                                                      "benchmarks", "dataframe_merge"))
    ap.add_argument("--data", help="keep the generated data here (default: a temporary folder)")
    ap.add_argument("--engine", help=argparse.SUPPRESS)  # internal: one run of one Python engine
    ap.add_argument("--partitions", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        seconds, rows, startup = run_engine(args.engine, args.data, args.partitions)
        print(json.dumps({"seconds": seconds, "rows": rows, "startup_seconds": startup}))
        return 0
    tmp = None
    if not args.data:
        tmp = tempfile.TemporaryDirectory()
        args.data = tmp.name
    write_data(args.data, args)
    partitions = max(args.left_files, args.right_files)
    left, right = os.path.join(args.data, "left", "*.parquet"), os.path.join(args.data, "right", "*.parquet")
    results, failed = {}, False
    for engine in args.engines.split(","):
        best, rows = None, None
        for _ in range(args.repeat):
            if engine.startswith("tessera"):
                if not os.path.exists(args.tessera):
                    print(f"merge_compare: {args.tessera} is not built; {engine} skipped", file=sys.stderr)
                    break
                cmd = [args.tessera, "--left", left, "--right", right, "--on", "k", "--broadcast", "false",
                       "--npartitions", str(partitions),
                       "--scheduler", "threads" if engine == "tessera-threads" else "distributed"]
            else:
                cmd = [sys.executable, os.path.abspath(__file__), "--engine", engine, "--data", args.data,
                       "--partitions", str(partitions)]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"merge_compare: {engine} failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                failed = True
                break
            line = json.loads(run.stdout.strip().splitlines()[-1])
            best = line["seconds"] if best is None else min(best, line["seconds"])
            rows = line["rows"]
        if best is None:
            continue
        results[engine] = {"seconds": best, "rows": rows}
        print(json.dumps({"benchmark": "merge_compare", "engine": engine, "seconds": round(best, 4), "rows": rows,
                          "left_rows": args.left_rows, "right_rows": args.right_rows, "partitions": partitions}),
              flush=True)
    counts = {e: r["rows"] for e, r in results.items()}
    if len(set(counts.values())) > 1:
        print(f"merge_compare: engines disagree on the row count: {counts}", file=sys.stderr)
        failed = True
    ratios = {}
    for sched in ("threads", "distributed"):
        t, d = results.get(f"tessera-{sched}"), results.get(f"dask-{sched}")
        if t and d:
            ratios[f"dask_{sched}_over_tessera"] = round(d["seconds"] / t["seconds"], 2)
    print(json.dumps({"benchmark": "merge_compare_ratios", **ratios}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
