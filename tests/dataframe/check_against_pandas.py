#!/usr/bin/env python3
"""Checks one result line of benchmarks/dataframe_groupby against pandas on the same files.

  python tests/dataframe/check_against_pandas.py --csv 'DIR/*.csv' --by passenger_count \
      --column tip_amount --agg mean --json LINE_OR_FILE

--json is the JSON line itself, a file holding it (the first line with a "result" object is
used), or - for stdin. pandas reads every file the glob matches, in sorted order, with Dask's
assume_missing semantics: a column pandas would make int64 is float64, so an integer key
prints as "1.0". The groupby drops missing keys (pandas' dropna=True) and the keys of the
expected result are the keys as pandas prints them (str of the key; repr of a float).

Exit 0 when the line's groups are pandas' groups and every value is within a relative 1e-9
(--rel-tol) of pandas' (missing and NaN values equal each other); else the differing groups go
to stderr and the exit status is 1. Usage errors exit 2.

benchmarks/dataframe_compare.py imports pandas_groupby, result_from_line and
compare_results from here, so that the benchmark and the tests judge results the same way.
"""
import argparse
import glob
import json
import math
import os
import sys

if __name__ == "__main__":
    import tessera_pyenv  # beside this file

    tessera_pyenv.reexec_in_pyenv()

AGGS = ("sum", "mean", "count", "min", "max", "std", "var", "size")
DEFAULT_REL_TOL = 1e-9


def csv_files(pattern):
    """The files a glob matches, sorted (the order every engine reads them in)."""
    files = sorted(glob.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no file matches {pattern!r}")
    return files


def key_text(key):
    """A group key as pandas prints it: "1.0" for a float, the string itself for a string."""
    if isinstance(key, float) or type(key).__name__.startswith("float"):
        return repr(float(key))
    if hasattr(key, "item"):  # a numpy scalar: its Python value prints as pandas does
        key = key.item()
    return str(key)


def value_of(v):
    """A result value as a Python float, int or None (missing: NaN, None, pandas' NA)."""
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def series_to_result(series):
    """{key text: value} from the Series a groupby aggregation returns, sorted by key."""
    return {key_text(k): value_of(v) for k, v in series.sort_index().items()}


def aggregate(grouped, agg):
    """Applies AGG to a pandas or Dask SeriesGroupBy (both name them alike; ddof=1 for std/var)."""
    if agg not in AGGS:
        raise ValueError(f"unknown aggregation {agg!r} (one of {', '.join(AGGS)})")
    return getattr(grouped, agg)()


def read_assume_missing(path, columns):
    """pandas.read_csv of COLUMNS with integer columns as float64 (Dask's assume_missing=True)."""
    import pandas as pd

    df = pd.read_csv(path, usecols=columns)
    ints = [c for c in df.columns if pd.api.types.is_integer_dtype(df[c].dtype)]
    if ints:
        df[ints] = df[ints].astype("float64")
    return df


def pandas_groupby(pattern, by, column, agg):
    """The expected result, {key text: value}, computed with pandas."""
    import pandas as pd

    columns = [by] if by == column else [by, column]
    frames = [read_assume_missing(f, columns) for f in csv_files(pattern)]
    df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return series_to_result(aggregate(df.groupby(by, dropna=True)[column], agg))


def result_from_line(text):
    """The parsed JSON object of the first line of TEXT that has a "result" object."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
            return obj
    raise ValueError("no JSON line with a \"result\" object in the input")


def load_line(arg):
    """--json's argument: the line itself, '-' for stdin, or a file that holds it."""
    if arg == "-":
        return result_from_line(sys.stdin.read())
    if arg.lstrip().startswith("{"):
        return result_from_line(arg)
    with open(arg, encoding="utf-8") as f:
        return result_from_line(f.read())


def values_equal(expected, actual, rel_tol):
    e, a = value_of(expected), value_of(actual)
    if e is None or a is None:
        return e is None and a is None
    if math.isinf(e) or math.isinf(a):
        return e == a
    return math.isclose(e, a, rel_tol=rel_tol, abs_tol=0.0)


def compare_results(expected, actual, rel_tol=DEFAULT_REL_TOL):
    """The differences between two {key text: value} results, as readable lines ([] when equal)."""
    problems = []
    for key in sorted(set(expected) - set(actual)):
        problems.append(f"group {key!r}: missing (pandas: {expected[key]!r})")
    for key in sorted(set(actual) - set(expected)):
        problems.append(f"group {key!r}: not a pandas group (value {actual[key]!r})")
    for key in sorted(set(expected) & set(actual)):
        if not values_equal(expected[key], actual[key], rel_tol):
            e, a = value_of(expected[key]), value_of(actual[key])
            rel = ""
            if isinstance(e, (int, float)) and isinstance(a, (int, float)) and e != 0:
                rel = f", rel. error {abs(a - e) / abs(e):.3g}"
            problems.append(f"group {key!r}: {actual[key]!r}, pandas {expected[key]!r}{rel}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="glob of the CSV files (quote it)")
    ap.add_argument("--by", required=True)
    ap.add_argument("--column", required=True)
    ap.add_argument("--agg", required=True, choices=AGGS)
    ap.add_argument("--json", required=True, help="the result line, a file holding it, or - (stdin)")
    ap.add_argument("--rel-tol", type=float, default=DEFAULT_REL_TOL)
    args = ap.parse_args(argv)

    try:
        line = load_line(args.json)
    except (OSError, ValueError) as e:
        print(f"check_against_pandas: --json: {e}", file=sys.stderr)
        return 2
    try:
        expected = pandas_groupby(args.csv, args.by, args.column, args.agg)
    except FileNotFoundError as e:
        print(f"check_against_pandas: {e}", file=sys.stderr)
        return 2
    problems = compare_results(expected, line["result"], args.rel_tol)
    name = line.get("benchmark", "result")
    if problems:
        print(f"check_against_pandas: {name} differs from pandas in {len(problems)} of "
              f"{len(set(expected) | set(line['result']))} groups "
              f"({args.by} -> {args.column}.{args.agg}, {os.path.basename(args.csv)}):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    if "groups" in line and line["groups"] != len(expected):
        print(f"check_against_pandas: \"groups\" is {line['groups']} but the result has "
              f"{len(expected)} groups, as pandas has", file=sys.stderr)
        return 1
    print(f"check_against_pandas: {name} equals pandas ({len(expected)} groups, rel. tol. {args.rel_tol:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
