#!/usr/bin/env python3
"""Dask side of the seed benchmark: (x + 1)[::2, ::2].sum() over normal(10, 1) random data.

Prints one JSON object on stdout, the same shape as benchmarks/seed_array's:
  {"benchmark": "seed_array", "impl": "dask", "n": ..., "chunk": ..., "scheduler": "threads",
   "device": "host", "seconds": ..., "value": ..., "expected": ...}
"""
import argparse
import json
import os
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000, help="array is n x n float64")
    p.add_argument("--chunk", type=int, default=2000, help="chunks are chunk x chunk")
    p.add_argument("--scheduler", default="threads", choices=["threads", "sync", "synchronous"],
                   help="Dask local scheduler")
    p.add_argument("--repeat", type=int, default=1, help="runs; the fastest is reported")
    args = p.parse_args()

    import dask
    import dask.array as da

    scheduler = "sync" if args.scheduler in ("sync", "synchronous") else "threads"
    n, c = args.n, args.chunk
    best = None
    value = None
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        # Graph construction is inside the timed region, as for Tessera's benchmark.
        x = da.random.RandomState(0).normal(10, 1, size=(n, n), chunks=(c, c))
        y = (x + 1)[::2, ::2].sum()
        value = float(y.compute(scheduler=scheduler))
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)

    kept = (n + 1) // 2
    print(json.dumps({
        "benchmark": "seed_array",
        "impl": "dask",
        "dask_version": dask.__version__,
        "n": n,
        "chunk": c,
        "scheduler": scheduler,
        "device": "host",
        "threads": os.cpu_count() if scheduler == "threads" else 1,
        "seconds": round(best, 6),
        "value": value,
        "expected": float(kept) * kept * 11.0,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
