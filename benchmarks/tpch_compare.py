#!/usr/bin/env python3
"""TPC-H queries on Tessera beside DuckDB and Dask DataFrame, in the same run, results checked.

  python benchmarks/tpch_compare.py [--data DIR] [--scale 1] [--queries 1,2,...,22]
      [--repeat 3] [--engines LIST] [--tessera BIN]

--data is a folder of tpchgen-cli's Parquet output (one folder per table); when it holds no
lineitem/ folder, `tpchgen-cli parquet -s SCALE --parts 4` writes it there first. Engines, each
run in its own process (default all):

  tessera-threads      BIN --data DIR --queries .. --scheduler threads (benchmarks/tpch.cpp)
  tessera-distributed  the same on the program's own cluster (2 worker processes, 1 thread each)
  duckdb               benchmarks/tpch/queries.sql over read_parquet views, SET threads=2
  dask-threads         benchmarks/tpch/dask_queries.py, threaded scheduler
  dask-distributed     the same on LocalCluster(2 workers, 1 thread each)

"seconds" is the best of --repeat runs of a query as the engine reports it (reading the files is
part of it; start-up is not). DuckDB's answer is the reference: every other engine's rows must
equal it (numbers within a relative 1e-6: Tessera and Dask read the decimal money columns as
float64; text and dates exactly), else the difference goes to stderr and the exit status is 1.
Prints one JSON line per engine and query, then one line of ratios per query (Dask over
Tessera for each scheduler; Tessera over DuckDB).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
sys.path.insert(0, os.path.join(HERE, "tpch"))
import tessera_pyenv  # noqa: E402
from common import best_of, dask_reader, differences, duckdb_connection, plain_rows, sql_queries  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()

ENGINES = ("tessera-threads", "tessera-distributed", "duckdb", "dask-threads", "dask-distributed")
def run_python_engine(engine, data, queries, repeat):
    """In this process: each query `repeat` times; prints one JSON line per query."""
    if engine == "duckdb":
        con = duckdb_connection(data, threads=2)
        sql = sql_queries()
        for q in queries:
            best, rows = best_of(repeat, lambda: con.execute(sql[q]).fetchall())
            print(json.dumps({"query": q, "seconds": best, "result": plain_rows(rows)}), flush=True)
        return
    import dask
    import dask_queries
    client = None
    if engine == "dask-distributed":
        from distributed import Client, LocalCluster
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))
    read = dask_reader(data)
    try:
        with dask.config.set(scheduler=client or "threads"):
            for q in queries:
                best, result = best_of(repeat, lambda: dask_queries.QUERIES[q](read))
                rows = plain_rows(result.itertuples(index=False, name=None))
                print(json.dumps({"query": q, "seconds": best, "result": rows}), flush=True)
    finally:
        if client:
            client.cluster.close()
            client.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/tpch-sf1")
    ap.add_argument("--scale", default="1")
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--tessera", default=os.path.join(os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build")),
                                                      "benchmarks", "tpch"))
    ap.add_argument("--engine", help=argparse.SUPPRESS)  # internal: one Python engine in this process
    args = ap.parse_args()
    queries = [int(q) for q in args.queries.split(",")]
    if args.engine:
        run_python_engine(args.engine, args.data, queries, args.repeat)
        return 0
    if not os.path.isdir(os.path.join(args.data, "lineitem")):
        gen = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
        subprocess.run([gen, "parquet", "-s", args.scale, "--parts", "4", f"--output-dir={args.data}"], check=True)
    results, failed = {}, False
    for engine in args.engines.split(","):
        if engine.startswith("tessera"):
            if not os.path.exists(args.tessera):
                print(f"tpch_compare: {args.tessera} is not built; {engine} skipped", file=sys.stderr)
                continue
            cmd = [args.tessera, "--data", args.data, "--queries", args.queries, "--repeat", str(args.repeat),
                   "--scheduler", "threads" if engine == "tessera-threads" else "distributed"]
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--engine", engine, "--data", args.data,
                   "--queries", args.queries, "--repeat", str(args.repeat)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"tpch_compare: {engine} failed:\n{run.stderr[-3000:]}", file=sys.stderr)
            failed = True
            continue
        for line in run.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                results[(engine, r["query"])] = r
    for q in queries:
        ref = results.get(("duckdb", q))
        for engine in args.engines.split(","):
            r = results.get((engine, q))
            if not r:
                continue
            why = differences(r["result"], ref["result"]) if ref and engine != "duckdb" else None
            if why:
                print(f"tpch_compare: query {q}, {engine}: {why}", file=sys.stderr)
                failed = True
            print(json.dumps({"benchmark": "tpch_compare", "engine": engine, "query": q,
                              "seconds": round(r["seconds"], 4), "rows": len(r["result"]),
                              "equals_duckdb": None if engine == "duckdb" or not ref else why is None}), flush=True)
        ratios = {"benchmark": "tpch_compare_ratios", "query": q}
        for sched in ("threads", "distributed"):
            t, d = results.get((f"tessera-{sched}", q)), results.get((f"dask-{sched}", q))
            if t and d:
                ratios[f"dask_{sched}_over_tessera"] = round(d["seconds"] / t["seconds"], 2)
        t, d = results.get(("tessera-threads", q)), results.get(("duckdb", q))
        if t and d:
            ratios["tessera_threads_over_duckdb"] = round(t["seconds"] / d["seconds"], 2)
        print(json.dumps(ratios), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
