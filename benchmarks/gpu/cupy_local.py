"""CuPy alone on one GPU: the limit for benchmarks/gpu_arrays and seed_array --device gpu.

Prints one JSON line per workload, like the C++ benchmarks:
    python3 benchmarks/gpu/cupy_local.py [--n 40000] [--matmul-n 20000] [--seed-n 100000] [--repeat 3]

transpose_sum: (x + x.T).sum() with x uniform n x n float64 (dask-cuda's local_cupy op);
matmul:        (x @ y).sum() with x, y uniform float64;
seed:          (x + 1)[::2, ::2].sum() with x = normal(10, 1) n x n (the seed headline, as one
               array: CuPy has no chunks and must hold all of x, so n is limited by memory).
Times are the best of --repeat after one warm-up, measured with CUDA events around the work.
"""
import argparse
import json
import sys

try:
    import cupy as cp
except ImportError as e:  # no CuPy on this machine: say so as a JSON line, not a traceback
    print(json.dumps({"benchmark": "cupy_local", "skipped": f"CuPy is not importable: {e}", "seconds": None}))
    sys.exit(0)


def timed(fn, repeat):
    fn()  # warm-up: kernel compilation, cuBLAS handles, memory pool
    best = float("inf")
    value = None
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        value = fn()
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return best, float(value)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=40000)
    p.add_argument("--matmul-n", type=int, default=20000)
    p.add_argument("--seed-n", type=int, default=50000)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    rs = cp.random.RandomState(1)

    x = rs.random_sample((a.n, a.n), dtype=cp.float64)
    sec, val = timed(lambda: (x + x.T).sum(), a.repeat)
    print(json.dumps({"benchmark": "gpu_arrays", "impl": "cupy", "op": "transpose_sum", "n": a.n,
                      "device": name, "seconds": sec, "value": val}), flush=True)
    del x
    cp.get_default_memory_pool().free_all_blocks()

    m = a.matmul_n
    x = rs.random_sample((m, m), dtype=cp.float64)
    y = rs.random_sample((m, m), dtype=cp.float64)
    sec, val = timed(lambda: (x @ y).sum(), a.repeat)
    print(json.dumps({"benchmark": "gpu_arrays", "impl": "cupy", "op": "matmul", "n": m, "device": name,
                      "seconds": sec, "value": val, "gflop_per_s": 2.0 * m ** 3 / sec / 1e9}), flush=True)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()

    s = a.seed_n

    def seed():
        x = rs.normal(10.0, 1.0, (s, s))  # generation is part of the workload, as in the seed
        return (x + 1)[::2, ::2].sum()

    sec, val = timed(seed, a.repeat)
    kept = ((s + 1) // 2) ** 2
    print(json.dumps({"benchmark": "seed_array", "impl": "cupy", "n": s, "device": name, "seconds": sec,
                      "value": val, "expected": kept * 11.0}), flush=True)


if __name__ == "__main__":
    main()
