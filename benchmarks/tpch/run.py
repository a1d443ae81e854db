#!/usr/bin/env python3
"""TPC-H on Tessera, Dask, Polars and DuckDB in one run, every answer checked against DuckDB's.

  python3 benchmarks/tpch/run.py --data DIR [--engines tessera,dask,polars,duckdb]
      [--scheduler threads|distributed] [--queries 1,3,6] [--repeat 3] [--out-md FILE]
      [--scale SF [--parts N]] [--threads 2] [--isolate query|engine] [--timeout SECONDS]

DIR is tpchgen-cli's Parquet output, one folder per table of one or more files
(DIR/lineitem/lineitem.1.parquet, ...). When DIR has no lineitem/ and --scale is given,
scripts/tpch_data.sh SCALE DIR [PARTS] writes it first.

Engines (the programs they run):
  tessera  $TESSERA_BUILD_DIR/benchmarks/tpch (benchmarks/tpch.cpp; TESSERA_BUILD_DIR defaults to
           `build`, a relative one is taken from the repository root), --scheduler threads (its
           thread pool) or distributed (its own local cluster: 2 worker processes, 1 thread each)
  dask     benchmarks/tpch/dask_queries.py: the threaded scheduler with --threads threads, or a
           LocalCluster of 2 worker processes with 1 thread each for --scheduler distributed
  polars   benchmarks/tpch/polars_queries.py, lazy API, default engine, POLARS_MAX_THREADS=--threads
  duckdb   benchmarks/tpch/queries.sql over read_parquet views, SET threads=--threads
Polars and DuckDB run in one process whatever --scheduler says; their lines still carry it.
--threads (default 2, the benchmark machine's cores) is the one configuration of all 22 queries;
Tessera's thread pool takes every core of the machine, so on a bigger one pin the run (taskset)
to --threads cores.

Prints one JSON line per query and engine, e.g.
  {"query": 1, "engine": "tessera", "scheduler": "threads", "seconds": 0.41,
   "peak_rss_bytes": 123456789, "correct": true}
"seconds" is the best of --repeat runs (default 3) of the query as the engine times it: reading
the Parquet files is part of it, starting the process, its imports and its cluster are not.
"correct" says whether the rows equal DuckDB's (same order; numbers within a relative 1e-6,
because Tessera, Dask and Polars read the decimal money columns as float64; text and dates
exactly; a sum over no rows, NULL in SQL, may be 0 as in the DataFrame libraries: query 17 at
scale factor 0.01); DuckDB is the reference, so its own lines say true. DuckDB runs first, and
runs even when --engines leaves it out (then only as the reference, with no lines of its own).

"peak_rss_bytes" is the largest peak resident set of the engine's processes: the ru_maxrss that
wait4() returns for the engine's process, which covers that process and every descendant it
waited for (Tessera's distributed workers and its scheduler; Dask's LocalCluster workers), and,
for Dask on a LocalCluster, the largest ru_maxrss the workers report themselves before the
cluster closes (in case one is not waited for). It is the largest single process, not a sum.
With --isolate query (the default) each query runs in a process of its own, so the number is
that query's; with --isolate engine one process per engine runs all the queries (faster to
start) and every line of the engine carries the peak of that whole process.

A query that fails (an error, a crash, --timeout) prints a line with "error" and
"correct": false, and the other queries and engines still run. A wrong answer's first difference
goes to stderr. The exit status is 1 when any answer is wrong or missing, else 0.

--out-md FILE writes a Markdown table for docs/benchmarks.md: a row per query, a column of
seconds per engine, the ratios Dask/Tessera and Tessera/min(Polars, DuckDB), and a row of
geometric means (each column's over the queries it has a number for).
"""
import argparse
import importlib.metadata
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
sys.path.insert(0, HERE)
import tessera_pyenv  # noqa: E402
from common import (best_of, dask_reader, differences, duckdb_connection, plain_rows, sql_queries,  # noqa: E402
                    table_glob)

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()

ENGINES = ("tessera", "dask", "polars", "duckdb")
TITLES = {"tessera": "Tessera", "dask": "Dask", "polars": "Polars", "duckdb": "DuckDB"}
ALL_QUERIES = tuple(range(1, 23))


# ---- the Python engines, each in a child process of its own (run.py --child ENGINE) ----

def run_child(engine, data, queries, repeat, scheduler, threads, memory_limit=None):
    """Runs the queries in this process; prints {"query", "seconds", "result"} per query.

    Dask on a LocalCluster adds "worker_peak_rss_bytes": the workers' own largest ru_maxrss.
    """
    if engine == "duckdb":
        con = duckdb_connection(data, threads)
        sql = sql_queries()
        for q in queries:
            seconds, rows = best_of(repeat, lambda: con.execute(sql[q]).fetchall())
            emit_child(q, seconds, plain_rows(rows))
    elif engine == "polars":
        # Read when polars is imported: the parent sets it too, this covers a child started by hand.
        os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
        import polars as pl
        import polars.selectors as cs
        import polars_queries

        def scan(table):
            return pl.scan_parquet(table_glob(data, table)).with_columns(cs.decimal().cast(pl.Float64))

        for q in queries:
            seconds, df = best_of(repeat, lambda: polars_queries.QUERIES[q](scan).collect())
            emit_child(q, seconds, plain_rows(df.rows()))
    elif engine == "dask":
        run_dask_child(data, queries, repeat, scheduler, threads, memory_limit)
    else:
        raise SystemExit(f"run.py: no Python engine {engine!r}")


def run_dask_child(data, queries, repeat, scheduler, threads, memory_limit=None):
    import dask
    import dask_queries
    read = dask_reader(data)
    if scheduler == "threads":
        with dask.config.set(scheduler="threads", num_workers=threads):
            for q in queries:
                seconds, result = best_of(repeat, lambda: dask_queries.QUERIES[q](read))
                emit_child(q, seconds, plain_rows(result.itertuples(index=False, name=None)))
        return
    from distributed import Client, LocalCluster
    limit = {"memory_limit": memory_limit} if memory_limit else {}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, **limit)
    client = Client(cluster)
    try:
        with dask.config.set(scheduler=client):
            for q in queries:
                seconds, result = best_of(repeat, lambda: dask_queries.QUERIES[q](read))
                peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
                emit_child(q, seconds, plain_rows(result.itertuples(index=False, name=None)),
                           worker_peak_rss_bytes=max(peaks.values(), default=0) * 1024)
    finally:
        client.close()
        cluster.close()


def emit_child(query, seconds, rows, **extra):
    print(json.dumps({"query": query, "seconds": seconds, "result": rows, **extra}), flush=True)


# ---- the parent: one child process per engine (and per query with --isolate query) ----

def measured_run(cmd, env, timeout):
    """Runs `cmd` to its end; returns (exit status, stdout, stderr, peak RSS in bytes, timed out).

    The peak is wait4()'s ru_maxrss of the child, which includes its waited-for descendants.
    The child leads a process group of its own so that a timeout ends its workers too.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended as the timer fired
                pass

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        if timer:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return (child.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                usage.ru_maxrss * 1024, timed_out.is_set())


def tessera_program():
    build = os.environ.get("TESSERA_BUILD_DIR", "build")
    return os.path.join(ROOT, build, "benchmarks", "tpch")  # join() keeps an absolute `build` as it is


def engine_command(engine, args, queries):
    listed = ",".join(str(q) for q in queries)
    if engine == "tessera":
        cmd = [tessera_program(), "--data", args.data, "--queries", listed, "--repeat", str(args.repeat),
               "--scheduler", args.scheduler]
        return cmd + (["--memory-limit", args.memory_limit] if args.memory_limit else [])
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, "--data", args.data, "--queries", listed,
           "--repeat", str(args.repeat), "--scheduler", args.scheduler, "--threads", str(args.threads)]
    return cmd + (["--memory-limit", args.memory_limit] if args.memory_limit else [])


def run_engine(engine, args, queries):
    """{query: {"seconds", "result", "peak_rss_bytes"} or {"error"}} for one engine."""
    if engine == "tessera" and not os.access(tessera_program(), os.X_OK):
        return {q: {"error": f"{tessera_program()} is not built (TESSERA_BUILD_DIR)"} for q in queries}
    env = dict(os.environ, POLARS_MAX_THREADS=str(args.threads))
    groups = [[q] for q in queries] if args.isolate == "query" else [list(queries)]
    out = {}
    for group in groups:
        status, stdout, stderr, peak, timed_out = measured_run(engine_command(engine, args, group), env, args.timeout)
        lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        for r in lines:
            out[r["query"]] = {"seconds": r["seconds"], "result": r["result"],
                               "peak_rss_bytes": max(peak, r.get("worker_peak_rss_bytes", 0))}
        if status != 0:
            if timed_out:
                why = f"killed after --timeout {args.timeout} s"
            else:
                tail = stderr.strip().splitlines()[-3:]
                why = f"exit status {status}: " + " | ".join(tail)
            print(f"run.py: {engine} failed on queries {group}:\n{stderr[-3000:]}", file=sys.stderr)
            for q in group:
                out.setdefault(q, {"error": why})
    return out


def line_for(engine, query, r, reference, scheduler):
    """The JSON line of one engine's query, and whether it counts as a failure."""
    line = {"query": query, "engine": engine, "scheduler": scheduler}
    if "error" in r:
        return dict(line, seconds=None, peak_rss_bytes=None, correct=False, error=r["error"]), True
    if engine == "duckdb":
        correct = True
    elif reference is None or "error" in reference:
        correct = None  # nothing to compare with: DuckDB's own line says why
    else:
        why = differences(r["result"], reference["result"])
        if why:
            print(f"run.py: query {query}, {engine}: {why}", file=sys.stderr)
        correct = why is None
    line.update(seconds=round(r["seconds"], 4), peak_rss_bytes=r["peak_rss_bytes"], correct=correct)
    return line, correct is not True


# ---- the Markdown table ----

def geometric_mean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def engine_versions(engines):
    names = {"dask": "dask", "polars": "polars", "duckdb": "duckdb"}
    out = []
    for e in engines:
        if e in names:
            try:
                out.append(f"{e} {importlib.metadata.version(names[e])}")
            except importlib.metadata.PackageNotFoundError:
                pass
    if "tessera" in engines:
        git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        out.append(f"tessera {git.stdout.strip() or 'unknown commit'}")
    return ", ".join(out)


def write_markdown(path, args, engines, queries, results):
    def seconds(engine, q):
        r = results.get(engine, {}).get(q)
        return r["seconds"] if r and "error" not in r and r.get("correct") else None

    ratio_columns = []
    if "dask" in engines and "tessera" in engines:
        ratio_columns.append(("Dask/Tessera", lambda q: quotient(seconds("dask", q), seconds("tessera", q))))
    rivals = [e for e in ("polars", "duckdb") if e in engines]
    if "tessera" in engines and rivals:
        label = "Tessera/min(" + ", ".join(TITLES[e] for e in rivals) + ")"

        def over_best(q):
            times = [seconds(e, q) for e in rivals if seconds(e, q) is not None]
            return quotient(seconds("tessera", q), min(times) if len(times) == len(rivals) else None)

        ratio_columns.append((label, over_best))

    header = ["query"] + [f"{TITLES[e]} (s)" for e in engines] + [name for name, _ in ratio_columns]
    rows, columns = [], {c: [] for c in header[1:]}
    for q in queries:
        row = [str(q)]
        for e in engines:
            r = results.get(e, {}).get(q)
            s = seconds(e, q)
            columns[f"{TITLES[e]} (s)"].append(s)
            row.append(f"{s:.3f}" if s is not None else ("failed" if not r or "error" in r else "wrong"))
        for name, ratio in ratio_columns:
            v = ratio(q)
            columns[name].append(v)
            row.append(f"{v:.2f}x" if v is not None else "")
        rows.append(row)
    means = ["geometric mean"]
    for c in header[1:]:
        g = geometric_mean(columns[c])
        means.append("" if g is None else (f"{g:.2f}x" if c in dict(ratio_columns) else f"{g:.3f}"))
    rows.append(means)
    caption = (f"TPC-H, data `{args.data}`, scheduler `{args.scheduler}`, best of {args.repeat}, "
               f"--threads {args.threads}; {engine_versions(engines)}; {time.strftime('%Y-%m-%d')}. "
               "A wrong or failed answer has no time and is left out of the geometric means.")
    with open(path, "w") as f:
        f.write(caption + "\n\n")
        f.write("| " + " | ".join(header) + " |\n")
        f.write("| " + " | ".join("---" for _ in header) + " |\n")
        for row in rows:
            f.write("| " + " | ".join(row) + " |\n")


def quotient(a, b):
    return a / b if a is not None and b else None


# ---- main ----

def ensure_data(args):
    if os.path.isdir(os.path.join(args.data, "lineitem")):
        return True
    if not args.scale:
        print(f"run.py: {args.data} has no lineitem/; pass --scale to generate it", file=sys.stderr)
        return False
    cmd = ["bash", os.path.join(ROOT, "scripts", "tpch_data.sh"), args.scale, args.data]
    if args.parts:
        cmd.append(str(args.parts))
    return subprocess.run(cmd, stdout=sys.stderr).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="tpchgen-cli Parquet output, one folder per table")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--scheduler", choices=("threads", "distributed"), default="threads")
    ap.add_argument("--queries", default=",".join(str(q) for q in ALL_QUERIES))
    ap.add_argument("--repeat", type=int, default=3, help="runs per query; the best is reported (default 3)")
    ap.add_argument("--out-md", help="also write a Markdown table of the seconds here")
    ap.add_argument("--scale", help="scale factor to generate when --data has no lineitem/")
    ap.add_argument("--parts", type=int, help="files per table when generating (default: scripts/tpch_data.sh's)")
    ap.add_argument("--threads", type=int, default=2, help="threads of Polars, DuckDB and Dask's thread pool")
    ap.add_argument("--isolate", choices=("query", "engine"), default="query",
                    help="a process per query and engine (default), or one per engine")
    ap.add_argument("--memory-limit", help="--scheduler distributed: each worker's memory limit, e.g. 3GB "
                    "(Tessera's and Dask's LocalCluster; default: theirs)")
    ap.add_argument("--timeout", type=float, help="seconds before an engine's process is killed")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: one Python engine in this process
    args = ap.parse_args()
    queries = [int(q) for q in args.queries.split(",")]
    if args.child:
        run_child(args.child, args.data, queries, args.repeat, args.scheduler, args.threads, args.memory_limit)
        return 0
    engines = [e for e in args.engines.split(",") if e]
    if any(e not in ENGINES for e in engines) or any(q not in ALL_QUERIES for q in queries):
        print(f"run.py: --engines takes {','.join(ENGINES)} and --queries 1 to 22", file=sys.stderr)
        return 2
    if not ensure_data(args):
        return 2

    failed = False
    results = {}
    reference = run_engine("duckdb", args, queries)
    for engine in ["duckdb"] + [e for e in engines if e != "duckdb"]:
        results[engine] = reference if engine == "duckdb" else run_engine(engine, args, queries)
        if engine not in engines:
            failed |= any("error" in r for r in reference.values())  # unchecked answers are a failure
            continue
        for q in queries:
            line, bad = line_for(engine, q, results[engine][q], reference.get(q), args.scheduler)
            results[engine][q]["correct"] = line["correct"]
            failed |= bad
            print(json.dumps(line), flush=True)
    if args.out_md:
        write_markdown(args.out_md, args, engines, queries, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
