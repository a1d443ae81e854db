#!/usr/bin/env python3
"""benchmarks/dataframe_index against pandas on the same Parquet files.

  python tests/dataframe/index_pandas_check.py BUILD_DIR

A random dataset (several files) with duplicate keys, a key holding half the rows and missing
keys. set_index: the partitions in order hold pandas' sort_index() keys in the same order (missing
last) and the same rows; loc (an inclusive range): pandas' rows; drop_duplicates (first, last; one
and two columns): pandas' rows in pandas' order; nlargest / nsmallest (one and two columns): pandas'
rows in pandas' order. On the thread pool and on a 2-worker cluster. Exit 0 when all agree, 1 on
the first difference, 77 (skipped) without the Python environment.
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


def write_data(directory, files, rows, seed):
    rng = np.random.default_rng(seed)
    os.makedirs(directory)
    for f in range(files):
        k = rng.integers(0, 300, rows).astype("float64")
        k[rng.random(rows) < 0.5] = 42.0  # a key holding half the rows
        k[rng.random(rows) < 0.05] = np.nan
        cols = {
            "k": pa.array(pd.array(k, dtype="Int64")),
            "x": pa.array(rng.integers(0, 20, rows).astype("float64") / 4),
            "s": pa.array(np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, rows)]),
            "id": pa.array(np.arange(rows) + f * rows),
        }
        pq.write_table(pa.table(cols), os.path.join(directory, f"part.{f}.parquet"))


def read_dir(directory):
    files = sorted(glob.glob(os.path.join(directory, "*.parquet")), key=lambda p: int(p.split(".")[-2]))
    return pd.concat([pq.read_table(p).to_pandas() for p in files], ignore_index=True)


def canonical(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 9)
    if isinstance(value, (int, np.integer)):
        return round(float(value), 9)
    return str(value)


def rows_of(frame):
    return [tuple(canonical(v) for v in row) for row in frame.itertuples(index=False, name=None)]


def sorted_rows(frame):
    return sorted(rows_of(frame), key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    tool = os.path.join(sys.argv[1], "benchmarks", "dataframe_index")
    if not os.path.exists(tool):
        print(f"SKIP: {tool} is not built")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        write_data(data, 3, 700, 4)
        df = read_dir(data)
        cases = [
            (["--op", "set_index", "--columns", "k"], "set_index"),
            (["--op", "loc", "--columns", "k", "--lo", "40", "--hi", "120"], "loc"),
            (["--op", "drop_duplicates", "--columns", "k", "--keep", "first"], "drop_duplicates"),
            (["--op", "drop_duplicates", "--columns", "k,s", "--keep", "last"], "drop_duplicates"),
            (["--op", "nlargest", "--columns", "k", "--n", "25"], "select"),
            (["--op", "nsmallest", "--columns", "x,id", "--n", "40"], "select"),
            (["--op", "nlargest", "--columns", "x", "--n", "30"], "select"),
        ]
        count = 0
        for scheduler in ("threads", "distributed"):
            for args, kind in cases:
                out = os.path.join(tmp, f"out-{count}")
                cmd = [tool, "--input", os.path.join(data, "*.parquet"), "--scheduler", scheduler, "--out", out] + args
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                if run.returncode != 0:
                    print("FAILED:", " ".join(cmd), run.stdout, run.stderr, sep="\n")
                    return 1
                got = read_dir(out)
                op = args[1]
                columns = args[args.index("--columns") + 1].split(",")
                what = f"{scheduler} {' '.join(args)}"
                if kind == "set_index":
                    want = df.set_index("k").sort_index(na_position="last").reset_index()
                    if [canonical(v) for v in got["k"]] != [canonical(v) for v in want["k"]]:
                        print(f"MISMATCH ({what}): the keys are not pandas' sort_index order")
                        return 1
                    same = sorted_rows(got) == sorted_rows(want[list(got.columns)])
                elif kind == "loc":
                    want = df[(df["k"] >= 40) & (df["k"] <= 120)]  # pandas' df.loc[40:120] of the sorted index
                    same = sorted_rows(got) == sorted_rows(want[list(got.columns)])
                elif op == "drop_duplicates":
                    keep = args[args.index("--keep") + 1]
                    want = df.drop_duplicates(subset=columns, keep=keep)
                    same = rows_of(got) == rows_of(want[list(got.columns)])
                else:
                    n = int(args[args.index("--n") + 1])
                    want = getattr(df.astype({"k": "float64"}), op)(n, columns)
                    same = rows_of(got) == rows_of(want[list(got.columns)])
                if not same:
                    print(f"MISMATCH ({what}): {len(got)} rows, pandas {len(want)}")
                    print(got.head(10), want.head(10), sep="\n")
                    return 1
                count += 1
        print(f"{count} operations equal pandas' (set_index, loc, drop_duplicates, nlargest, nsmallest)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
