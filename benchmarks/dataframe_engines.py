#!/usr/bin/env python3
"""One run of the DataFrame groupby benchmark with one Python engine, in this process.

  python benchmarks/dataframe_engines.py ENGINE --csv GLOB --by COL --column COL --agg AGG
      [--blocksize BYTES] [--polars-engine streaming|in-memory|auto]

ENGINE is one of
  pandas            read_csv of each file (the two columns only) + concat + groupby
  polars            pl.scan_csv(files) + group_by + agg, collected on the streaming engine
                    (--polars-engine picks another)
  dask-threads      dd.read_csv(files, assume_missing=True) + groupby, threaded scheduler
  dask-distributed  the same on a LocalCluster(n_workers=2, threads_per_worker=1, processes=True)

and prints ONE JSON line: {"engine", "seconds", "groups", "result", ...}. "seconds" is the wall
time of read + groupby + compute only: imports, interpreter start-up and (for
dask-distributed) the cluster's start, reported as "startup_seconds", are not in it.
Every engine reads integer columns as float64 (Dask's assume_missing) and drops missing keys,
so that its result's keys print as pandas' do ("1.0"). benchmarks/dataframe_compare.py runs
this once per measured run, each in its own process, to measure its memory.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "dataframe"))
if __name__ == "__main__":
    import tessera_pyenv

    tessera_pyenv.reexec_in_pyenv()

import check_against_pandas as cap  # noqa: E402

ENGINES = ("pandas", "polars", "dask-threads", "dask-distributed")


def run_pandas(files, args):
    t0 = time.perf_counter()
    result = cap.pandas_groupby(args.csv, args.by, args.column, args.agg)
    return time.perf_counter() - t0, result, {}


def polars_agg(pl, column, agg):
    col = pl.col(column)
    return {
        "sum": col.sum(), "mean": col.mean(), "count": col.count(), "min": col.min(), "max": col.max(),
        "std": col.std(ddof=1), "var": col.var(ddof=1), "size": pl.len(),
    }[agg].alias(column)


def run_polars(files, args):
    import polars as pl
    import polars.selectors as cs

    by, column, agg = args.by, args.column, args.agg
    t0 = time.perf_counter()
    names = [by] if by == column else [by, column]
    query = (
        pl.scan_csv(files, infer_schema_length=10000)
        .select(names)
        .with_columns(cs.integer().cast(pl.Float64))  # assume_missing, as the others read
        .filter(pl.col(by).is_not_null())
        .group_by(by)
        .agg(polars_agg(pl, column, agg))
    )
    engine = args.polars_engine
    df = query.collect(engine=engine)
    result = {cap.key_text(k): cap.value_of(v) for k, v in sorted(zip(df[by].to_list(), df[column].to_list()))}
    return time.perf_counter() - t0, result, {"polars_engine": engine, "version": pl.__version__}


def dask_query(files, args):
    import dask.dataframe as dd

    kwargs = {"assume_missing": True}
    if args.blocksize:
        kwargs["blocksize"] = args.blocksize
    df = dd.read_csv(files, **kwargs)
    return cap.aggregate(df.groupby(args.by, dropna=True)[args.column], args.agg)


def run_dask_threads(files, args):
    import dask

    t0 = time.perf_counter()
    series = dask_query(files, args).compute(scheduler="threads")
    result = cap.series_to_result(series)
    return time.perf_counter() - t0, result, {"version": dask.__version__, "threads": os.cpu_count()}


def run_dask_distributed(files, args):
    import dask
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    # No dashboard: it needs bokeh, and it is no part of what is measured.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        startup = time.perf_counter() - t0
        t1 = time.perf_counter()
        series = dask_query(files, args).compute()
        result = cap.series_to_result(series)
        seconds = time.perf_counter() - t1
    return seconds, result, {"version": dask.__version__, "startup_seconds": round(startup, 3),
                             "workers": 2, "threads_per_worker": 1}


RUNNERS = {
    "pandas": run_pandas,
    "polars": run_polars,
    "dask-threads": run_dask_threads,
    "dask-distributed": run_dask_distributed,
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engine", choices=ENGINES)
    ap.add_argument("--csv", required=True, help="glob of the CSV files (quote it)")
    ap.add_argument("--by", default="passenger_count")
    ap.add_argument("--column", default="tip_amount")
    ap.add_argument("--agg", default="mean", choices=cap.AGGS)
    ap.add_argument("--blocksize", type=int, default=None, help="bytes per partition (Dask only)")
    ap.add_argument("--polars-engine", default="streaming", choices=("streaming", "in-memory", "auto"))
    args = ap.parse_args(argv)

    files = cap.csv_files(args.csv)
    seconds, result, extra = RUNNERS[args.engine](files, args)
    line = {"benchmark": "dataframe_groupby", "engine": args.engine, "by": args.by, "column": args.column,
            "agg": args.agg, "files": len(files), "seconds": round(seconds, 4), "groups": len(result)}
    line.update(extra)
    line["result"] = result
    print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
