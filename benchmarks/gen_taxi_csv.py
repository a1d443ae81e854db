#!/usr/bin/env python3
"""Writes synthetic NYC yellow taxi trip files (the 2019 TLC schema) for the DataFrame benchmarks.

  python benchmarks/gen_taxi_csv.py --out DIR --files N --rows-per-file R [--seed S] [--jobs J]

File i (1-based) is DIR/yellow_tripdata_2019-NN.csv (NN = i, two digits) with the header

  VendorID,tpep_pickup_datetime,tpep_dropoff_datetime,passenger_count,trip_distance,RatecodeID,
  store_and_fwd_flag,PULocationID,DOLocationID,payment_type,fare_amount,extra,mta_tax,
  tip_amount,tolls_amount,improvement_surcharge,total_amount,congestion_surcharge

and R rows of plausible trips: pickups spread over month ((i - 1) mod 12) + 1 of 2019 written as
"2019-01-01 00:46:40", passenger_count 0..9 (mostly 1), money and distances rounded to cents.
As in the TLC's own files, about 1% of the rows have no passenger_count, and those rows have no
VendorID, RatecodeID, store_and_fwd_flag or payment_type either; congestion_surcharge is empty
on about 5% of the rows. Integers are written without a decimal point, so a reader that guesses
types sees integer columns with missing values (pandas makes them float64; Dask needs
assume_missing=True).

Every file is a pure function of (seed, i): the same command writes the same bytes whatever
--jobs is. One line per file goes to stderr; the last line on stdout is a JSON summary:
{"files": N, "rows": N*R, "bytes": ..., "seconds": ...}.
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "dataframe"))
    import tessera_pyenv

    tessera_pyenv.reexec_in_pyenv()

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

COLUMNS = [
    "VendorID", "tpep_pickup_datetime", "tpep_dropoff_datetime", "passenger_count", "trip_distance",
    "RatecodeID", "store_and_fwd_flag", "PULocationID", "DOLocationID", "payment_type", "fare_amount",
    "extra", "mta_tax", "tip_amount", "tolls_amount", "improvement_surcharge", "total_amount",
    "congestion_surcharge",
]

# Shares of passenger_count 0..9 among the rows that have one (close to the 2019 files).
PASSENGER_P = np.array([0.018, 0.705, 0.145, 0.042, 0.020, 0.042, 0.0275, 0.0002, 0.0002, 0.0001])
PASSENGER_P = PASSENGER_P / PASSENGER_P.sum()
EMPTY_PASSENGER_SHARE = 0.01
EMPTY_CONGESTION_SHARE = 0.05
N_ZONES = 265


def file_name(i):
    return f"yellow_tripdata_2019-{i:02d}.csv"


def zone_weights():
    # A few busy zones (Midtown, the airports) and a long tail: the same for every file.
    w = 1.0 / np.arange(1, N_ZONES + 1) ** 1.1
    np.random.default_rng(12345).shuffle(w)
    return w / w.sum()


def money(x):
    return np.round(x, 2)


def make_table(seed, index, rows):
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    month = (index - 1) % 12 + 1
    start = np.datetime64(f"2019-{month:02d}-01T00:00:00", "s")
    end = np.datetime64(f"2019-{month + 1:02d}-01T00:00:00", "s") if month < 12 else np.datetime64(
        "2020-01-01T00:00:00", "s")
    span = int((end - start).astype(np.int64))

    pickup_s = np.sort(rng.integers(0, span, size=rows))
    minutes = np.clip(rng.lognormal(mean=2.35, sigma=0.6, size=rows), 0.5, 180.0)
    pickup = start + pickup_s.astype("timedelta64[s]")
    dropoff = pickup + (minutes * 60).astype(np.int64).astype("timedelta64[s]")

    empty = rng.random(rows) < EMPTY_PASSENGER_SHARE
    passengers = rng.choice(10, size=rows, p=PASSENGER_P)
    vendor = np.where(rng.random(rows) < 0.37, 1, 2)
    distance = money(np.clip(rng.lognormal(mean=0.55, sigma=0.85, size=rows), 0.0, 80.0))
    distance[rng.random(rows) < 0.01] = 0.0
    ratecode = rng.choice([1, 2, 3, 4, 5, 99], size=rows, p=[0.972, 0.018, 0.002, 0.001, 0.0069, 0.0001])
    flag = np.where(rng.random(rows) < 0.01, "Y", "N")
    zones = zone_weights()
    pu = rng.choice(N_ZONES, size=rows, p=zones) + 1
    do = rng.choice(N_ZONES, size=rows, p=zones) + 1
    payment = rng.choice([1, 2, 3, 4], size=rows, p=[0.715, 0.277, 0.006, 0.002])

    fare = np.round((2.5 + 2.5 * distance + 0.35 * minutes) * 2) / 2  # the meter counts in 50 cents
    fare[ratecode == 2] = 52.0  # JFK flat fare
    extra = rng.choice([0.0, 0.5, 1.0, 2.5, 3.0], size=rows, p=[0.45, 0.3, 0.15, 0.05, 0.05])
    mta_tax = np.where(rng.random(rows) < 0.995, 0.5, 0.0)
    tip = np.where(payment == 1, money(fare * rng.uniform(0.0, 0.3, size=rows)), 0.0)
    tip[(payment == 1) & (rng.random(rows) < 0.08)] = 0.0
    tolls = np.where(rng.random(rows) < 0.05, 5.76, 0.0)
    improvement = np.full(rows, 0.3)
    congestion = np.where(rng.random(rows) < 0.9, 2.5, 0.0)
    total = money(fare + extra + mta_tax + tip + tolls + improvement + congestion)
    congestion_empty = rng.random(rows) < EMPTY_CONGESTION_SHARE

    def ints(values, mask=None):
        return pa.array(values.astype(np.int64), mask=mask)

    return pa.table(
        [
            ints(vendor, empty),
            pa.array(pickup),
            pa.array(dropoff),
            ints(passengers, empty),
            pa.array(distance),
            ints(ratecode, empty),
            pa.array(flag, mask=empty),
            ints(pu),
            ints(do),
            ints(payment, empty),
            pa.array(fare),
            pa.array(extra),
            pa.array(mta_tax),
            pa.array(tip),
            pa.array(tolls),
            pa.array(improvement),
            pa.array(total),
            pa.array(congestion, mask=congestion_empty),
        ],
        names=COLUMNS,
    )


def write_file(out_dir, seed, index, rows):
    path = os.path.join(out_dir, file_name(index))
    table = make_table(seed, index, rows)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write((",".join(COLUMNS) + "\n").encode())
        # No quoting: no value contains a comma, and the TLC files are not quoted either.
        pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, quoting_style="none",
                                                     batch_size=65536))
    os.replace(tmp, path)  # a file is there whole or not at all
    return path, os.path.getsize(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder to write to (made if missing)")
    ap.add_argument("--files", type=int, required=True, help="number of files (1..99)")
    ap.add_argument("--rows-per-file", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                    help="processes writing files at once (default: the cores, at most 8)")
    args = ap.parse_args(argv)
    if not 1 <= args.files <= 99:
        ap.error("--files must be 1..99 (file names carry two digits)")
    if args.rows_per_file < 1:
        ap.error("--rows-per-file must be at least 1")
    if args.seed < 0:
        ap.error("--seed must be >= 0")
    os.makedirs(args.out, exist_ok=True)

    t0 = time.perf_counter()
    total = 0
    jobs = max(1, min(args.jobs, args.files))
    indices = range(1, args.files + 1)
    if jobs == 1:
        results = (write_file(args.out, args.seed, i, args.rows_per_file) for i in indices)
        for path, size in results:
            total += size
            print(f"gen_taxi_csv: {path} ({size / 1e6:.1f} MB)", file=sys.stderr)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(write_file, args.out, args.seed, i, args.rows_per_file) for i in indices]
            for fut in futures:
                path, size = fut.result()
                total += size
                print(f"gen_taxi_csv: {path} ({size / 1e6:.1f} MB)", file=sys.stderr)
    seconds = time.perf_counter() - t0
    print(json.dumps({"files": args.files, "rows": args.files * args.rows_per_file, "bytes": total,
                      "seconds": round(seconds, 3), "seed": args.seed, "out": args.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
