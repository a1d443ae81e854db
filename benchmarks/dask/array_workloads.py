#!/usr/bin/env python3
"""Dask side of benchmarks/array_workloads: the same workloads and data definitions with dask.array.

  array_workloads.py --workload NAME [--n N] [--chunk C] [--scheduler threads|sync|distributed]
                     [--repeat K]

Prints one JSON object on stdout, the same shape as the Tessera program's:
  {"benchmark": "array_workloads", "workload": ..., "impl": "dask", "scheduler": ..., "n": ...,
   "chunk": ..., "seconds": <best>, "value": <the scalar result, or the sum of a vector result>}

--scheduler distributed starts a LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
before the timed runs, and one
untimed run at a tiny size comes first. Random data come from da.random.default_rng(0), the generator Dask's
documentation recommends; the graph is built inside the timed region, as Tessera's is.
"""
import argparse
import json
import os
import sys
import time

if __name__ == "__main__":
    # Dask lives in the project's Python environment (tests/dataframe/tessera_pyenv.py).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "dataframe"))
    import tessera_pyenv

    tessera_pyenv.reexec_in_pyenv()

# name: (default n, default chunk)
DEFAULTS = {
    "transpose_sum": (20000, 2000),
    "trig_chain": (10000, 2000),
    "matmul_sum": (4000, 1000),
    "matmul_sq_sum": (4000, 1000),
    "mean_axis0": (20000, 2000),
    "std_all": (20000, 2000),
    "rechunk_sum": (20000, 2000),
    "slice_sum": (20000, 2000),
    "elementwise_exp": (20000, 2000),
    "cumsum_sum": (10000, 1000),
    "tensordot_sum": (8000, 1000),
    "fancy_index_sum": (20000, 2000),
    "mask_sum": (20000, 2000),
    "histogram_counts": (20000, 2000),
    "topk_rows": (10000, 1000),
    "var_axis1": (20000, 2000),
    "median_axis0": (10000, 1000),
    "nanmean_all": (20000, 2000),
    "argmax_axis1": (20000, 2000),
    "diff_sum": (20000, 2000),
    "bincount_ints": (10000, 1000),
    "standardize_sum": (20000, 2000),
    "einsum_rowdot": (20000, 2000),
    "roll_sum": (20000, 2000),
    "concat_mean": (20000, 2000),
}


def build(name, n, c):
    import dask.array as da

    rng = da.random.default_rng(0)
    if name == "transpose_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return (x + x.T).sum()
    if name == "trig_chain":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return ((da.sin(x) ** 2 + da.cos(x) ** 2) * 3 - 2).max()
    if name == "matmul_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        y = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return (x @ y).sum()
    if name == "matmul_sq_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        y = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return ((x @ y) ** 2).sum()
    if name == "mean_axis0":
        x = rng.normal(10, 1, size=(n, n), chunks=(c, c))
        return x.mean(axis=0)
    if name == "std_all":
        x = rng.normal(10, 1, size=(n, n), chunks=(c, c))
        return x.std()
    if name == "rechunk_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x.rechunk((c * 2, max(1, c // 2))).sum(axis=1)
    if name == "slice_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x[::3, 100:-100].sum()
    if name == "elementwise_exp":
        x = rng.uniform(-1, 1, size=(n, n), chunks=(c, c))
        return (da.exp(-x * x) / (1 + abs(x))).sum()
    if name == "cumsum_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x.cumsum(axis=1).sum()
    if name == "tensordot_sum":
        m = max(1, n // 4)
        x = rng.uniform(0, 1, size=(n, m), chunks=(c, c))
        y = rng.uniform(0, 1, size=(n, m), chunks=(c, c))
        return da.tensordot(x, y, axes=([0], [0])).sum()
    if name == "fancy_index_sum":
        import numpy as np

        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        idx = np.random.default_rng(0).permutation(n)[: n // 4]
        return x[idx].sum()
    if name == "mask_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x[x > 0.5].sum()
    if name == "histogram_counts":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.histogram(x, bins=100, range=(0, 1))[0]
    if name == "topk_rows":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.topk(x, 10, axis=1)
    if name == "var_axis1":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x.var(axis=1)
    if name == "median_axis0":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.median(x, axis=0)
    if name == "nanmean_all":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.nanmean(da.where(x < 0.1, float("nan"), x))
    if name == "argmax_axis1":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return x.argmax(axis=1)
    if name == "diff_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.diff(x, axis=1).sum()
    if name == "bincount_ints":
        i = rng.integers(0, 1000, size=n * n, chunks=c * c)
        return da.bincount(i, minlength=1000)
    if name == "standardize_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return ((x - x.mean(axis=0)) / x.std(axis=0)).sum()
    if name == "einsum_rowdot":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        y = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.einsum("ij,ij->i", x, y).sum()
    if name == "roll_sum":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.roll(x, 7, axis=1)[:, : n // 2].sum()
    if name == "concat_mean":
        x = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        y = rng.uniform(0, 1, size=(n, n), chunks=(c, c))
        return da.concatenate([x, y]).mean(axis=1)
    raise ValueError(name)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, choices=sorted(DEFAULTS))
    p.add_argument("--n", type=int, default=0, help="arrays are n x n float64 (default: the workload's)")
    p.add_argument("--chunk", type=int, default=0, help="chunks are chunk x chunk (default: the workload's)")
    p.add_argument("--scheduler", default="threads", choices=["threads", "sync", "distributed"])
    p.add_argument("--repeat", type=int, default=1, help="runs; the fastest is reported")
    args = p.parse_args()

    import numpy as np

    n = args.n or DEFAULTS[args.workload][0]
    c = args.chunk or DEFAULTS[args.workload][1]
    client = cluster = None
    if args.scheduler == "distributed":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        # One untimed run at a tiny size first, so that imports and the start of the thread
        # pool or of the workers' modules are not counted (Tessera's program does the same).
        warm = build(args.workload, 256, max(16, min(c, 64)))
        if client is not None:
            client.compute(warm).result()
        else:
            warm.compute(scheduler=args.scheduler)
        best = value = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            expr = build(args.workload, n, c)
            if client is not None:
                result = client.compute(expr).result()
            else:
                result = expr.compute(scheduler=args.scheduler)
            value = float(np.sum(result))
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
    finally:
        if client is not None:
            client.close()
            cluster.close()

    print(json.dumps({
        "benchmark": "array_workloads",
        "workload": args.workload,
        "impl": "dask",
        "scheduler": args.scheduler,
        "n": n,
        "chunk": c,
        "seconds": round(best, 6),
        "value": value,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
