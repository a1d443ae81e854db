#!/usr/bin/env python3
"""benchmarks/dataframe_merge against pandas' merge of the same Parquet files.

  python tests/dataframe/merge_pandas_check.py BUILD_DIR

Random left and right datasets (several files each) with missing keys, an int64 key on one side
and a float64 one on the other, a second string key and a value column both sides have. For every
how (pandas' four, and Dask's leftsemi and leftanti, which pandas expresses with indicator=True),
one and two keys, each strategy (a side of one partition broadcast, either side broadcast when
asked, the hash join), on the thread pool and on a 2-worker cluster: the result's columns are pandas' in pandas' order, and its
rows, sorted, are pandas' rows (numbers compared as floats: Tessera keeps int64 with nulls where
pandas makes float64 with NaN). Exit 0 when all agree, 1 on the first difference, 77 (skipped)
without the Python environment.
"""
import glob
import math
import os
import subprocess
import sys
import tempfile

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tessera_pyenv  # beside this file

    tessera_pyenv.reexec_in_pyenv()

try:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)


def write_side(directory, files, rows, seed, float_key, value_name):
    rng = np.random.default_rng(seed)
    os.makedirs(directory)
    for f in range(files):
        k = rng.integers(0, 40, rows).astype("float64")
        k[rng.random(rows) < 0.08] = np.nan
        k2 = np.array(["a", "b", "c", None], dtype=object)[rng.integers(0, 4, rows)]
        cols = {
            "k": pa.array(k, type=pa.float64(), from_pandas=True) if float_key
            else pa.array(pd.array(k, dtype="Int64")),
            "k2": pa.array(k2, type=pa.string()),
            "v": pa.array(rng.normal(size=rows).round(6)),
            value_name: pa.array(rng.integers(0, 1000, rows)),
        }
        pq.write_table(pa.table(cols), os.path.join(directory, f"part.{f}.parquet"))


def read_dir(directory):
    files = sorted(glob.glob(os.path.join(directory, "*.parquet")), key=lambda p: int(p.split(".")[-2]))
    return pd.concat([pq.read_table(p).to_pandas() for p in files], ignore_index=True)


def pandas_merge(left, right, how, on):
    if how in ("leftsemi", "leftanti"):
        keys = right[on].drop_duplicates()
        m = left.merge(keys, on=on, how="left", indicator=True)
        keep = "both" if how == "leftsemi" else "left_only"
        return m[m["_merge"] == keep].drop(columns="_merge")
    return pd.merge(left, right, on=on, how=how)


def canonical(value):
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 9)
    if isinstance(value, (int, np.integer, bool, np.bool_)):
        return round(float(value), 9)
    return str(value)


def rows_of(frame):
    return sorted((tuple(canonical(v) for v in row) for row in frame.itertuples(index=False, name=None)),
                  key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    tool = os.path.join(sys.argv[1], "benchmarks", "dataframe_merge")
    if not os.path.exists(tool):
        print(f"SKIP: {tool} is not built")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        write_side(os.path.join(tmp, "left"), 3, 300, 1, float_key=False, value_name="w")
        write_side(os.path.join(tmp, "right"), 2, 200, 2, float_key=True, value_name="z")
        write_side(os.path.join(tmp, "small"), 1, 50, 3, float_key=True, value_name="z")
        cases = 0
        # The hash join (both sides several partitions), forced or chosen; the one-partition side
        # broadcast (the right one for inner, left, leftsemi and leftanti, the left one for
        # inner and right; the other hows hash-join).
        layouts = (("left", "right", "auto"), ("left", "right", "false"), ("left", "small", "auto"),
                   ("small", "right", "auto"), ("left", "right", "true"))
        for scheduler in ("threads", "distributed"):
            for left_name, right_name, broadcast in layouts:
                left = read_dir(os.path.join(tmp, left_name))
                right = read_dir(os.path.join(tmp, right_name))
                for on in (["k"], ["k", "k2"]):
                    for how in ("inner", "left", "right", "outer", "leftsemi", "leftanti"):
                        if broadcast == "true" and how == "outer":
                            continue  # refused when built: outer keeps both sides' unmatched rows
                        if scheduler == "distributed" and (on != ["k"] or "small" in (left_name, right_name)):
                            continue  # the cluster runs the same tasks: one key, both strategies
                        out = os.path.join(tmp, f"out-{cases}")
                        cmd = [tool, "--left", os.path.join(tmp, left_name, "*.parquet"),
                               "--right", os.path.join(tmp, right_name, "*.parquet"), "--on", ",".join(on),
                               "--how", how, "--broadcast", broadcast, "--scheduler", scheduler, "--out", out]
                        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                        if run.returncode != 0:
                            print("FAILED:", " ".join(cmd), run.stdout, run.stderr, sep="\n")
                            return 1
                        got = read_dir(out)
                        want = pandas_merge(left, right, how, on)
                        what = f"{scheduler} {how} on={on} {left_name} with {right_name}, broadcast={broadcast}"
                        if list(got.columns) != list(want.columns):
                            print(f"MISMATCH ({what}): columns {list(got.columns)}, pandas {list(want.columns)}")
                            return 1
                        g, w = rows_of(got), rows_of(want)
                        if g != w:
                            extra = [r for r in g if r not in w][:5]
                            missing = [r for r in w if r not in g][:5]
                            print(f"MISMATCH ({what}): {len(g)} rows, pandas {len(w)}; "
                                  f"not in pandas: {extra}; missing: {missing}")
                            return 1
                        cases += 1
        print(f"{cases} merges equal pandas' (rows and columns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
