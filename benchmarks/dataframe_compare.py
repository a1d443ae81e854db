#!/usr/bin/env python3
"""Tessera's DataFrame groupby beside Dask, pandas and Polars, in the same run, time and memory.

  python benchmarks/dataframe_compare.py --csv 'DIR/*.csv' [--by passenger_count]
      [--column tip_amount] [--agg mean] [--repeat 3] [--tessera BIN] [--blocksize BYTES]
      [--engines LIST] [--polars-engine streaming|in-memory|auto] [--out-md FILE]

Engines (--engines, comma-separated; default all):
  tessera-threads      BIN --csv GLOB --by .. --column .. --agg .. --scheduler threads --device host
  tessera-distributed  the same with --scheduler distributed (the program's own 2-worker cluster)
  dask-threads         Dask DataFrame, threaded scheduler            (benchmarks/dataframe_engines.py)
  dask-distributed     Dask DataFrame, LocalCluster(2 worker processes, 1 thread each)
  pandas               pandas.read_csv + groupby (the reference every result is checked against)
  polars               Polars scan_csv + group_by + agg (lazy; the streaming engine unless
                       --polars-engine says otherwise)

Each run of each engine is its own process, started --repeat times; "seconds" is the best of
those runs as the engine itself reports it (read + groupby + compute: no interpreter start-up,
no cluster start-up). "peak_rss_mb" is the largest total resident memory of that process and
all its descendants (the cluster's scheduler and workers included) at one time, sampled from
/proc every 20 ms, over all runs (and never below the next figure); "max_process_rss_mb" is the largest single process's peak as
the kernel counts it (ru_maxrss from wait4, exact but per process). The sampled total can miss a
spike shorter than the sampling period, and it counts shared pages (libraries) once per process.

Prints one JSON line per engine, {"benchmark": "dataframe_compare", "engine", "seconds",
"peak_rss_mb", "groups", ...}, then one line of ratios ("benchmark": "dataframe_compare_ratios":
Dask over Tessera for each scheduler, Tessera over Polars). Every result must equal pandas'
(same group keys as pandas prints them, values within a relative 1e-9): on a mismatch, or when
an engine fails, the differences go to stderr and the exit status is 1. Without the Tessera
program (default: $TESSERA_BUILD_DIR/benchmarks/dataframe_groupby, else build/...) the other
engines still run and a line on stderr says so. --out-md FILE writes the figures as a markdown
table.

The engines run in the Python environment of tests/dataframe/tessera_pyenv.py ($TESSERA_PYENV).
dask-distributed needs the `distributed` package there; without it that engine is skipped
with a line on stderr.
"""
import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
import tessera_pyenv  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()

import check_against_pandas as cap  # noqa: E402

ENGINES = ("tessera-threads", "tessera-distributed", "dask-threads", "dask-distributed", "pandas", "polars")
SAMPLE_S = 0.02
PAGE = os.sysconf("SC_PAGE_SIZE")


def log(msg):
    print(f"dataframe_compare: {msg}", file=sys.stderr, flush=True)


# ---- memory of a process tree ----------------------------------------------------------------


def children_of(pid):
    kids = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
        except OSError:
            pass
    return kids


def tree_rss_bytes(root):
    """The resident bytes of ROOT and its descendants now (processes that end meanwhile count 0)."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(children_of(pid))
    return total


def run_measured(cmd, env=None):
    """Runs CMD; returns (exit code, stdout, stderr, peak tree RSS bytes, max single-process RSS bytes)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss_bytes(proc.pid))
                done.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            # wait4, not Popen.wait: its rusage has the peak of the largest process in the tree.
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                peak[0], usage.ru_maxrss * 1024)


# ---- engines ---------------------------------------------------------------------------------


def default_tessera_bin():
    return os.path.join(ROOT, os.environ.get("TESSERA_BUILD_DIR", "build"), "benchmarks", "dataframe_groupby")


def engine_command(engine, args, python):
    common = ["--csv", args.csv, "--by", args.by, "--column", args.column, "--agg", args.agg]
    if args.blocksize:
        common += ["--blocksize", str(args.blocksize)]
    if engine.startswith("tessera-"):
        return [args.tessera] + common + ["--scheduler", engine.split("-", 1)[1], "--device", "host"]
    if engine == "polars":
        common += ["--polars-engine", args.polars_engine]
    return [python, os.path.join(HERE, "dataframe_engines.py"), engine] + common


def has_module(python, module):
    return subprocess.run([python, "-c", f"import {module}"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def run_engine(engine, args, python):
    """Runs ENGINE --repeat times; returns its summary line (with "result"), or None after a failure."""
    cmd = engine_command(engine, args, python)
    runs, peak, max_proc, best = [], 0, 0, None
    for i in range(args.repeat):
        rc, out, err, tree_peak, proc_peak = run_measured(cmd)
        if rc != 0:
            log(f"{engine}: run {i + 1} exited with {rc}: {shlex.join(cmd)}")
            sys.stderr.write(err[-4000:])
            return None
        try:
            line = cap.result_from_line(out)
        except ValueError:
            log(f"{engine}: printed no JSON line with a \"result\": {shlex.join(cmd)}\n{out[-2000:]}{err[-2000:]}")
            return None
        runs.append(round(float(line["seconds"]), 4))
        # The sampled total can miss a short peak that wait4 saw: it is never below the latter.
        peak, max_proc = max(peak, tree_peak, proc_peak), max(max_proc, proc_peak)
        if best is None or runs[-1] < float(best["seconds"]):
            best = line
    summary = {"benchmark": "dataframe_compare", "engine": engine, "seconds": min(runs),
               "peak_rss_mb": round(peak / 2**20, 1), "max_process_rss_mb": round(max_proc / 2**20, 1),
               "groups": len(best["result"]), "runs": runs}
    for k in ("rows", "startup_seconds", "version", "polars_engine", "scheduler", "device"):
        if k in best:
            summary[k] = best[k]
    summary["result"] = best["result"]
    return summary


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def seconds_of(lines, engine):
    line = lines.get(engine)
    return line["seconds"] if line else None


def machine_text():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    model = l.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
    return f"{os.cpu_count()} cores ({model}), {mem:.0f} GiB"


def write_markdown(path, args, files, lines, ratios, skipped):
    size = sum(os.path.getsize(f) for f in files)
    out = [
        f"DataFrame groupby: `{args.by}` -> `{args.column}`.{args.agg}() over {len(files)} files, "
        f"{size / 1e9:.3f} GB; best of {args.repeat}; {machine_text()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"`{shlex.join(['python', 'benchmarks/dataframe_compare.py'] + sys.argv[1:])}`",
        "",
        "| engine | seconds (best) | all runs | peak RSS, tree (MB) | largest process (MB) | groups | equals pandas |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for engine in ENGINES:
        if engine in lines:
            l = lines[engine]
            out.append(f"| {engine} | {l['seconds']:.3f} | {', '.join(f'{s:.3f}' for s in l['runs'])} | "
                       f"{l['peak_rss_mb']:.0f} | {l['max_process_rss_mb']:.0f} | {l['groups']} | "
                       f"{'yes' if l['equals_pandas'] else 'NO'} |")
        elif engine in skipped:
            out.append(f"| {engine} | - | - | - | - | - | not run: {skipped[engine]} |")
    out.append("")
    named = [(k, v) for k, v in ratios.items() if k != "benchmark"]
    out.append("Ratios: " + ", ".join(f"{k} {v if v is not None else '-'}" for k, v in named))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="glob of the CSV files (quote it)")
    ap.add_argument("--by", default="passenger_count")
    ap.add_argument("--column", default="tip_amount")
    ap.add_argument("--agg", default="mean", choices=cap.AGGS)
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine; the best counts (default 3)")
    ap.add_argument("--tessera", default=default_tessera_bin(), help="the dataframe_groupby program")
    ap.add_argument("--blocksize", type=int, default=None, help="bytes per partition, for Tessera and Dask")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of: " + ", ".join(ENGINES))
    ap.add_argument("--polars-engine", default="streaming", choices=("streaming", "in-memory", "auto"))
    ap.add_argument("--rel-tol", type=float, default=cap.DEFAULT_REL_TOL)
    ap.add_argument("--out-md", help="also write a markdown table here")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    try:
        files = cap.csv_files(args.csv)
    except FileNotFoundError as e:
        ap.error(str(e))

    python = tessera_pyenv.pyenv_python() if os.access(tessera_pyenv.pyenv_python(), os.X_OK) else sys.executable
    skipped = {}
    if any(e.startswith("tessera-") for e in engines) and not os.access(args.tessera, os.X_OK):
        log(f"{args.tessera} is missing (build Tessera first: bash scripts/build.sh): "
            "running the other engines only")
        for e in engines:
            if e.startswith("tessera-"):
                skipped[e] = "no Tessera program"
    if "dask-distributed" in engines and not has_module(python, "distributed"):
        log(f"dask-distributed: {python} has no `distributed` package (pip install 'dask[distributed]'): skipped")
        skipped["dask-distributed"] = "no distributed package"
    # pandas first: it is the reference, and it runs even when not asked for.
    order = ["pandas"] + [e for e in engines if e != "pandas" and e not in skipped]

    lines, failed = {}, []
    for engine in order:
        log(f"{engine}: {args.repeat} run(s)")
        line = run_engine(engine, args, python)
        if line is None:
            failed.append(engine)
            if engine == "pandas":
                log("pandas, the reference, failed: nothing to compare with")
                return 1
            continue
        lines[engine] = line

    reference = lines["pandas"]["result"]
    mismatched = []
    for engine, line in lines.items():
        problems = cap.compare_results(reference, line["result"], args.rel_tol)
        line["equals_pandas"] = not problems
        if problems:
            mismatched.append(engine)
            log(f"{engine} differs from pandas in {len(problems)} groups:")
            for p in problems:
                print(f"  {p}", file=sys.stderr)
    for engine in ENGINES:
        if engine in lines and (engine in engines or engine == "pandas"):
            print(json.dumps({k: v for k, v in lines[engine].items() if k != "result"}), flush=True)

    ratios = {
        "benchmark": "dataframe_compare_ratios",
        "dask_threads_over_tessera_threads": ratio(seconds_of(lines, "dask-threads"),
                                                   seconds_of(lines, "tessera-threads")),
        "dask_distributed_over_tessera_distributed": ratio(seconds_of(lines, "dask-distributed"),
                                                           seconds_of(lines, "tessera-distributed")),
        "tessera_threads_over_polars": ratio(seconds_of(lines, "tessera-threads"), seconds_of(lines, "polars")),
        "tessera_distributed_over_polars": ratio(seconds_of(lines, "tessera-distributed"),
                                                 seconds_of(lines, "polars")),
    }
    print(json.dumps(ratios), flush=True)
    if args.out_md:
        write_markdown(args.out_md, args, files, lines, ratios, skipped)
        log(f"wrote {args.out_md}")
    if failed or mismatched:
        log(f"FAILED: {', '.join(failed + mismatched)} (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
