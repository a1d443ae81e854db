#!/usr/bin/env python3
"""Runs the array workloads of issue 17 with Tessera and with Dask side by side and writes a table.

  compare_array_workloads.py --out-md FILE [--workloads a,b,...] [--repeat K] [--scale small|full]
                             [--schedulers threads,distributed]

For every workload and scheduler (threads: one process with a thread per core; distributed: a
local cluster of 2 worker processes with 1 thread each, started outside the timed region) it
runs $TESSERA_BUILD_DIR/benchmarks/array_workloads (default build/) and
benchmarks/dask/array_workloads.py, prints their JSON lines and a ratio line
  {"benchmark": "array_workloads_ratio", ..., "ratio": dask_seconds / tessera_seconds}
and writes a markdown table to FILE. --scale small divides n and the chunk size by 10.
Each workload's limit runs too (array_workloads --impl limit: the same arithmetic once per
element by hand on one thread per core, or OpenBLAS on the whole arrays for matmul_sq_sum): the
table gives Tessera threads / limit, whose goal is at most 2.

Values: Tessera and Dask draw different random numbers, so their results cannot agree to 1e-6.
Each value is checked instead against the EXPECTED value of its statistic for the data it was
drawn from: within 1e-6 (relative) where the result is deterministic (trig_chain: 1), else within
5 standard errors of the statistic (a z score; both values and the z scores are printed). A value
that fails the check is marked in the table and makes the exit status 1.

Dask runs in the Python environment of tests/dataframe/tessera_pyenv.py ($TESSERA_PYENV, else
~/.cache/tessera/pyenv), else in this Python.
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "dataframe"))
import tessera_pyenv  # noqa: E402
WORKLOADS = ["transpose_sum", "trig_chain", "matmul_sum", "matmul_sq_sum", "mean_axis0", "std_all", "rechunk_sum",
             "slice_sum", "elementwise_exp", "cumsum_sum", "tensordot_sum", "fancy_index_sum", "mask_sum",
             "histogram_counts", "topk_rows", "var_axis1", "median_axis0", "nanmean_all", "argmax_axis1", "diff_sum",
             "bincount_ints", "standardize_sum", "einsum_rowdot", "roll_sum", "concat_mean"]
# n, chunk: the defaults of both programs, defined once beside the Dask side (its module
# imports Dask only when it runs).
sys.path.insert(0, str(ROOT / "benchmarks" / "dask"))
from array_workloads import DEFAULTS as FULL  # noqa: E402
EXPRESSIONS = {
    "transpose_sum": "(x + x.T).sum(), x uniform(0, 1)",
    "trig_chain": "((sin(x)**2 + cos(x)**2) * 3 - 2).max(), x uniform(0, 1)",
    "matmul_sum": "(x @ y).sum(), x, y uniform(0, 1)",
    "matmul_sq_sum": "((x @ y) ** 2).sum(), x, y uniform(0, 1)",
    "mean_axis0": "x.mean(axis=0), x normal(10, 1)",
    "std_all": "x.std(), x normal(10, 1)",
    "rechunk_sum": "x.rechunk((2c, c/2)).sum(axis=1), x uniform(0, 1)",
    "slice_sum": "x[::3, 100:-100].sum(), x uniform(0, 1)",
    "elementwise_exp": "(exp(-x*x) / (1 + abs(x))).sum(), x uniform(-1, 1)",
    "cumsum_sum": "x.cumsum(axis=1).sum(), x uniform(0, 1)",
    "tensordot_sum": "tensordot(x, y, axes=(0, 0)).sum(), x, y n x n/4 uniform(0, 1)",
    "fancy_index_sum": "x[idx].sum(), idx the first n/4 of a permutation of range(n), x uniform(0, 1)",
    "mask_sum": "x[x > 0.5].sum(), x uniform(0, 1)",
    "histogram_counts": "histogram(x, bins=100, range=(0, 1)) counts, x uniform(0, 1)",
    "topk_rows": "topk(x, 10, axis=1), x uniform(0, 1)",
    "var_axis1": "x.var(axis=1), x uniform(0, 1)",
    "median_axis0": "median(x, axis=0), x uniform(0, 1)",
    "nanmean_all": "nanmean(where(x < 0.1, nan, x)), x uniform(0, 1)",
    "argmax_axis1": "x.argmax(axis=1), x uniform(0, 1)",
    "diff_sum": "diff(x, axis=1).sum(), x uniform(0, 1)",
    "bincount_ints": "bincount(i, minlength=1000), i n*n integers in [0, 1000), chunks of c*c",
    "standardize_sum": "((x - x.mean(axis=0)) / x.std(axis=0)).sum(), x uniform(0, 1)",
    "einsum_rowdot": "einsum('ij,ij->i', x, y).sum(), x, y uniform(0, 1)",
    "roll_sum": "roll(x, 7, axis=1)[:, :n/2].sum(), x uniform(0, 1)",
    "concat_mean": "concatenate([x, y]).mean(axis=1), x, y uniform(0, 1)",
}


def simpson(f, a, b, intervals=20000):
    h = (b - a) / intervals
    s = f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h) for i in range(1, intervals))
    return s * h / 3


def expected(workload, n):
    """(expected value, standard error) of the checksum for an n x n input; standard error 0
    means the result is deterministic."""
    if workload == "transpose_sum":  # 2 * sum(x), n^2 uniforms of variance 1/12
        return n * n, 2 * n / math.sqrt(12)
    if workload == "trig_chain":
        return 1.0, 0.0
    if workload == "matmul_sum":  # sum_k colsum(x)_k * rowsum(y)_k: n independent products
        mean_a, var_a = n / 2, n / 12
        var_product = (var_a + mean_a ** 2) ** 2 - mean_a ** 4
        return n * mean_a * mean_a, math.sqrt(n * var_product)
    if workload == "matmul_sq_sum":
        # C = x y with x = 1/2 + a, y = 1/2 + b (a, b of mean 0, variance 1/12): E[C_ij] = n/4,
        # Var[C_ij] = n (E[x^2] E[y^2] - 1/16) = 7 n / 144. The sum's leading fluctuation is
        # (n/4) n (sum(a) + sum(b)), of standard deviation (n^2 / 4) sqrt(2 n^2 / 12).
        return n * n * (n * n / 16 + 7 * n / 144), n ** 3 / 4 * math.sqrt(1 / 6)
    if workload == "mean_axis0":  # the sum of n column means of normal(10, 1), each of s.e. 1/sqrt(n)
        return 10.0 * n, 1.0
    if workload == "std_all":  # population std of N = n^2 normals of sigma 1
        size = n * n
        return math.sqrt((size - 1) / size), 1 / math.sqrt(2 * size)
    if workload == "rechunk_sum":
        return n * n / 2, n / math.sqrt(12)
    if workload == "slice_sum":
        kept = len(range(0, n, 3)) * max(0, n - 200)
        return kept / 2, math.sqrt(kept / 12)
    if workload == "elementwise_exp":  # f(x) = exp(-x^2) / (1 + |x|), x uniform(-1, 1): symmetric
        mean = simpson(lambda t: math.exp(-t * t) / (1 + t), 0, 1)
        second = simpson(lambda t: math.exp(-2 * t * t) / (1 + t) ** 2, 0, 1)
        size = n * n
        return size * mean, math.sqrt(size * (second - mean * mean))
    if workload == "cumsum_sum":  # element k of a row's running sum counts x_k (n - k) times
        return n * 0.5 * n * (n + 1) / 2, math.sqrt(n * (n * (n + 1) * (2 * n + 1) / 6) / 12)
    if workload == "tensordot_sum":  # sum_i rowsum(x)_i * rowsum(y)_i over n rows of m = n/4
        m = max(1, n // 4)
        mean_a, var_a = m / 2, m / 12
        var_product = (var_a + mean_a ** 2) ** 2 - mean_a ** 4
        return n * mean_a * mean_a, math.sqrt(n * var_product)
    if workload == "fancy_index_sum":  # n/4 distinct rows of n uniforms
        kept = (n // 4) * n
        return kept / 2, math.sqrt(kept / 12)
    if workload == "mask_sum":  # E[x 1{x > 1/2}] = 3/8, E[x^2 1{x > 1/2}] = 7/24
        size = n * n
        return size * 3 / 8, math.sqrt(size * (7 / 24 - 9 / 64))
    if workload == "histogram_counts":  # every element falls in [0, 1): the counts add up to n^2
        return n * n, 0.0
    if workload == "topk_rows":
        # The i-th largest of n uniforms has mean (n + 1 - i) / (n + 1); a row's top 10 sums to
        # 10 - 55 / (n + 1) on average. Its gaps below 1 are sums of exponentials / (n + 1):
        # variance sum_{i<=10} i^2 / (n + 1)^2 = 385 / (n + 1)^2 per row.
        return n * (10 - 55 / (n + 1)), math.sqrt(n * 385) / (n + 1)
    if workload == "var_axis1":
        # Population variance of a row of n uniforms: mean (n - 1) / (12 n); its variance is
        # about (mu4 - sigma^4) / n with mu4 = 1/80, sigma^4 = 1/144.
        return (n - 1) / 12, math.sqrt(n * (1 / 80 - 1 / 144) / n)
    if workload == "median_axis0":  # the median of n uniforms: mean 1/2, variance about 1/(4n)
        return n / 2, 0.5
    if workload == "nanmean_all":  # the mean of the uniforms >= 0.1: of U(0.1, 1)
        return 0.55, math.sqrt(0.9 ** 2 / 12 / (0.9 * n * n))
    if workload == "argmax_axis1":  # each row's argmax is uniform on 0..n-1
        return n * (n - 1) / 2, math.sqrt(n * (n * n - 1) / 12)
    if workload == "diff_sum":  # telescopes to sum(x[:, -1] - x[:, 0])
        return 0.0, math.sqrt(n * 2 / 12)
    if workload == "bincount_ints":  # every draw is counted once
        return n * n, 0.0
    if workload == "standardize_sum":  # every standardised column sums to 0, up to rounding
        return 0.0, 1e-6 * n
    if workload == "einsum_rowdot":  # n^2 products x y: mean 1/4, variance 1/9 - 1/16
        return n * n / 4, n * math.sqrt(7 / 144)
    if workload == "roll_sum":  # n rows of n/2 uniforms
        return n * (n // 2) / 2, math.sqrt(n * (n // 2) / 12)
    if workload == "concat_mean":  # 2n row means of n uniforms
        return n, math.sqrt(2 * n / (12 * n))
    raise ValueError(workload)


def check(workload, n, value):
    """(ok, text) for a value against the expected value of its statistic."""
    if value is None:
        return False, "no value"
    mean, se = expected(workload, n)
    if se == 0:
        rel = abs(value - mean) / abs(mean)
        return rel <= 1e-6, f"rel {rel:.1e}"
    z = (value - mean) / se
    return abs(z) <= 5, f"z {z:+.2f}"


def run_json(cmd, timeout):
    """Runs cmd; returns its array_workloads JSON line as a dict, or a dict with "error"."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and '"array_workloads"' in line:
            return json.loads(line)
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {p.returncode}: " + " | ".join(tail)}


def fmt_seconds(r):
    return f"{r['seconds']:.3f}" if "seconds" in r else "failed"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-md", required=True, help="markdown file the table is written to")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset")
    p.add_argument("--repeat", type=int, default=1, help="runs of each; the best time is kept")
    p.add_argument("--scale", choices=["small", "full"], default="full", help="small: n and chunk / 10")
    p.add_argument("--schedulers", default="threads,distributed")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per program run")
    args = p.parse_args()

    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in FULL]
    if unknown:
        p.error(f"unknown workloads: {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    schedulers = [s for s in args.schedulers.split(",") if s]
    tessera_bin = ROOT / os.environ.get("TESSERA_BUILD_DIR", "build") / "benchmarks/array_workloads"
    if not tessera_bin.exists():
        print(f"compare_array_workloads: {tessera_bin} is missing: build Tessera first", file=sys.stderr)
        return 1
    python = tessera_pyenv.pyenv_python() if os.access(tessera_pyenv.pyenv_python(), os.X_OK) else sys.executable
    dask_version = subprocess.run([python, "-c", "import dask; print(dask.__version__)"], capture_output=True,
                                  text=True).stdout.strip() or "?"
    print(f"compare_array_workloads: Dask {dask_version} from {python}", file=sys.stderr)

    rows = []
    all_ok = True
    for w in workloads:
        n, c = FULL[w]
        if args.scale == "small":
            n, c = n // 10, max(1, c // 10)
        common = ["--workload", w, "--n", str(n), "--chunk", str(c), "--repeat", str(args.repeat)]
        row = {"workload": w, "n": n, "chunk": c}
        lim = run_json([str(tessera_bin), "--workload", w, "--n", str(n), "--repeat", str(args.repeat),
                        "--impl", "limit"], args.timeout)
        print(json.dumps(lim), flush=True)
        lim_ok, lim_check = check(w, n, lim.get("value"))
        all_ok = all_ok and lim_ok
        row["limit"] = lim
        for s in schedulers:
            t = run_json([str(tessera_bin), *common, "--scheduler", s], args.timeout)
            d = run_json([python, str(ROOT / "benchmarks/dask/array_workloads.py"), *common, "--scheduler", s],
                         args.timeout)
            for r, impl in ((t, "tessera"), (d, "dask")):
                if "error" in r:
                    print(json.dumps({"benchmark": "array_workloads", "workload": w, "impl": impl, "scheduler": s,
                                      "error": r["error"]}), flush=True)
                else:
                    print(json.dumps(r), flush=True)
            t_ok, t_check = check(w, n, t.get("value"))
            d_ok, d_check = check(w, n, d.get("value"))
            all_ok = all_ok and t_ok and d_ok
            ratio = d["seconds"] / t["seconds"] if "seconds" in t and "seconds" in d and t["seconds"] > 0 else None
            print(json.dumps({"benchmark": "array_workloads_ratio", "workload": w, "scheduler": s, "n": n,
                              "chunk": c, "tessera_seconds": t.get("seconds"), "dask_seconds": d.get("seconds"),
                              "ratio": None if ratio is None else round(ratio, 3),
                              "tessera_value": t.get("value"), "dask_value": d.get("value"),
                              "expected": expected(w, n)[0], "tessera_check": t_check,
                              "dask_check": d_check, "values_ok": t_ok and d_ok}), flush=True)
            row[s] = (t, d, ratio, (t_ok, t_check), (d_ok, d_check))
        rows.append(row)

    lines = []
    header = ["workload", "n", "chunk"]
    for s in schedulers:
        header += [f"Tessera {s} (s)", f"Dask {s} (s)", f"Dask / Tessera ({s})"]
    header += ["limit (s)", "Tessera threads / limit", "value check (Tessera; Dask)"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 2) + ["---"]) + "|")
    for row in rows:
        cells = [f"`{row['workload']}`", str(row["n"]), str(row["chunk"])]
        checks = []
        for s in schedulers:
            t, d, ratio, tc, dc = row[s]
            cells += [fmt_seconds(t), fmt_seconds(d), "n/a" if ratio is None else f"{ratio:.2f}x"]
            checks.append(f"{s}: {tc[1]}{'' if tc[0] else ' FAIL'}; {dc[1]}{'' if dc[0] else ' FAIL'}")
        lim = row["limit"]
        cells.append(fmt_seconds(lim))
        tt = row.get("threads", (None,))[0]
        cells.append(f"{tt['seconds'] / lim['seconds']:.2f}" if tt and "seconds" in tt and "seconds" in lim else "n/a")
        cells.append("<br>".join(checks))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Workloads (`x` is n x n float64 in chunk x chunk chunks):")
    lines.append("")
    for w in workloads:
        lines.append(f"- `{w}`: `{EXPRESSIONS[w]}`")
    lines.append("")
    lines.append(f"Dask {dask_version}, Python {platform.python_version()}; {os.cpu_count()} cores; "
                 f"best of {args.repeat} run(s) each; scale {args.scale}.")
    Path(args.out_md).write_text("\n".join(lines) + "\n")
    print(f"compare_array_workloads: wrote {args.out_md}", file=sys.stderr)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
