#!/usr/bin/env python3
"""Tests of the DataFrame benchmarks' Python tools, run by ctest (dataframe_python_tools).

benchmarks/gen_taxi_csv.py writes the same bytes for a seed and the schema the C++ program
reads; tests/dataframe/check_against_pandas.py accepts pandas' own answer and rejects a changed
one; benchmarks/dataframe_compare.py runs a stand-in Tessera program beside Polars and fails
when its answer differs from pandas'. Exits 77 (ctest: skipped) where the Python environment
(tessera_pyenv.py) lacks pandas, pyarrow or Polars.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tessera_pyenv  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()
    try:
        import pandas  # noqa: F401
        import polars  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        print(f"python_tools_test: skipped: {e} (Python environment: {tessera_pyenv.pyenv_dir()})")
        sys.exit(77)

import check_against_pandas as cap  # noqa: E402

GEN = os.path.join(ROOT, "benchmarks", "gen_taxi_csv.py")
CHECK = os.path.join(HERE, "check_against_pandas.py")
COMPARE = os.path.join(ROOT, "benchmarks", "dataframe_compare.py")
HEADER = ("VendorID,tpep_pickup_datetime,tpep_dropoff_datetime,passenger_count,trip_distance,RatecodeID,"
          "store_and_fwd_flag,PULocationID,DOLocationID,payment_type,fare_amount,extra,mta_tax,tip_amount,"
          "tolls_amount,improvement_surcharge,total_amount,congestion_surcharge")

# Stands in for build/benchmarks/dataframe_groupby: pandas' answer in the program's format,
# one value changed when $FAKE_SKEW is set.
FAKE_PROGRAM = r'''#!{python}
import argparse, json, os, sys, time
sys.path.insert(0, {here!r})
import check_against_pandas as cap
ap = argparse.ArgumentParser()
for flag in ("--csv", "--by", "--column", "--agg", "--scheduler", "--device", "--blocksize"):
    ap.add_argument(flag)
a = ap.parse_args()
t0 = time.perf_counter()
result = cap.pandas_groupby(a.csv, a.by, a.column, a.agg)
if os.environ.get("FAKE_SKEW"):
    result["1.0"] *= 1 + float(os.environ["FAKE_SKEW"])
print("a log line before the result")
print(json.dumps({{"benchmark": "dataframe_groupby", "scheduler": a.scheduler, "device": a.device,
                  "seconds": time.perf_counter() - t0, "rows": 0, "groups": len(result), "result": result}}))
'''


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


class TaxiToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tessera-df-tools-")
        cls.dir = os.path.join(cls.tmp.name, "taxi")
        r = run([sys.executable, GEN, "--out", cls.dir, "--files", "2", "--rows-per-file", "3000", "--seed", "7",
                 "--jobs", "2"])
        assert r.returncode == 0, r.stderr
        cls.summary = json.loads(r.stdout.strip().splitlines()[-1])
        cls.glob = os.path.join(cls.dir, "*.csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def env(self, **extra):
        env = dict(os.environ)
        env.update(extra)
        return env

    # ---- gen_taxi_csv.py ----

    def test_the_generator_writes_the_same_bytes_for_a_seed_and_other_bytes_for_another(self):
        again = os.path.join(self.tmp.name, "again")
        other = os.path.join(self.tmp.name, "other")
        self.assertEqual(run([sys.executable, GEN, "--out", again, "--files", "2", "--rows-per-file", "3000",
                              "--seed", "7", "--jobs", "1"]).returncode, 0)
        self.assertEqual(run([sys.executable, GEN, "--out", other, "--files", "2", "--rows-per-file", "3000",
                              "--seed", "8"]).returncode, 0)
        for name in ("yellow_tripdata_2019-01.csv", "yellow_tripdata_2019-02.csv"):
            with open(os.path.join(self.dir, name), "rb") as a, open(os.path.join(again, name), "rb") as b, \
                    open(os.path.join(other, name), "rb") as c:
                first = a.read()
                self.assertEqual(first, b.read(), name)
                self.assertNotEqual(first, c.read(), name)

    def test_the_files_have_the_2019_schema_and_missing_passenger_counts(self):
        self.assertEqual(self.summary["rows"], 6000)
        self.assertEqual(sorted(os.listdir(self.dir)), ["yellow_tripdata_2019-01.csv", "yellow_tripdata_2019-02.csv"])
        with open(os.path.join(self.dir, "yellow_tripdata_2019-02.csv")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], HEADER)
        self.assertEqual(len(lines), 3001)
        rows = [l.split(",") for l in lines[1:]]
        self.assertTrue(all(len(r) == 18 for r in rows))
        when = re.compile(r"^2019-02-\d\d \d\d:\d\d:\d\d$")
        self.assertTrue(all(when.match(r[1]) for r in rows), rows[0])
        empty = sum(1 for r in rows if r[3] == "")
        self.assertTrue(5 <= empty <= 80, f"{empty} of 3000 rows without passenger_count")
        self.assertTrue(all(r[3] == "" or 0 <= int(r[3]) <= 9 for r in rows))
        self.assertTrue(any(r[17] == "" for r in rows))
        self.assertTrue(all(r[6] in ("N", "Y", "") for r in rows))
        self.assertTrue(all(re.match(r"^-?\d+(\.\d{1,2})?$", r[13]) for r in rows), "tips in cents")

    # ---- check_against_pandas.py ----

    def check(self, line, agg="mean"):
        return run([sys.executable, CHECK, "--csv", self.glob, "--by", "passenger_count", "--column", "tip_amount",
                    "--agg", agg, "--json", json.dumps(line)])

    def test_the_check_accepts_pandas_answer_and_a_rounding_difference(self):
        for agg in ("mean", "std", "size"):
            result = cap.pandas_groupby(self.glob, "passenger_count", "tip_amount", agg)
            self.assertIn("1.0", result)
            r = self.check({"benchmark": "dataframe_groupby", "groups": len(result), "result": result}, agg)
            self.assertEqual(r.returncode, 0, r.stderr)
        result = cap.pandas_groupby(self.glob, "passenger_count", "tip_amount", "mean")
        result["1.0"] *= 1 + 1e-12
        self.assertEqual(self.check({"result": result}).returncode, 0)

    def test_the_check_rejects_a_changed_value_a_missing_group_and_an_extra_group(self):
        result = cap.pandas_groupby(self.glob, "passenger_count", "tip_amount", "mean")
        changed = dict(result, **{"2.0": result["2.0"] * (1 + 1e-7)})
        r = self.check({"result": changed})
        self.assertEqual(r.returncode, 1)
        self.assertIn("group '2.0'", r.stderr)
        missing = {k: v for k, v in result.items() if k != "1.0"}
        r = self.check({"result": missing})
        self.assertEqual(r.returncode, 1)
        self.assertIn("group '1.0': missing", r.stderr)
        r = self.check({"result": dict(result, **{"1": 0.5})})  # an integer key is not pandas' "1.0"
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a pandas group", r.stderr)
        r = self.check({"groups": len(result) + 1, "result": result})
        self.assertEqual(r.returncode, 1)

    # ---- dataframe_compare.py ----

    def fake_program(self):
        path = os.path.join(self.tmp.name, "dataframe_groupby")
        with open(path, "w") as f:
            f.write(FAKE_PROGRAM.format(python=sys.executable, here=HERE))
        os.chmod(path, 0o755)
        return path

    def compare(self, *extra, env=None):
        return run([sys.executable, COMPARE, "--csv", self.glob, "--repeat", "1"] + list(extra), env=env)

    def test_the_comparison_reports_time_memory_and_ratios_and_fails_on_a_wrong_answer(self):
        program = self.fake_program()
        md = os.path.join(self.tmp.name, "figures.md")
        r = self.compare("--tessera", program, "--engines", "tessera-threads,tessera-distributed,polars",
                         "--out-md", md)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = {l["engine"]: l for l in map(json.loads, r.stdout.splitlines()) if "engine" in l}
        self.assertEqual(sorted(lines), ["pandas", "polars", "tessera-distributed", "tessera-threads"])
        self.assertGreaterEqual(lines["pandas"]["groups"], 7)  # passenger_count 0..6 at least, 7..9 are rare
        for engine, l in lines.items():
            self.assertTrue(l["equals_pandas"], engine)
            self.assertEqual(l["groups"], lines["pandas"]["groups"], engine)
            self.assertGreater(l["seconds"], 0, engine)
            self.assertGreater(l["peak_rss_mb"], 10, engine)  # a Python process with pandas: tens of MB at least
            self.assertGreaterEqual(l["peak_rss_mb"], l["max_process_rss_mb"], engine)
        self.assertEqual(lines["tessera-distributed"]["scheduler"], "distributed")
        ratios = json.loads(r.stdout.splitlines()[-1])
        self.assertEqual(ratios["benchmark"], "dataframe_compare_ratios")
        self.assertAlmostEqual(ratios["tessera_threads_over_polars"],
                               lines["tessera-threads"]["seconds"] / lines["polars"]["seconds"], delta=0.01)
        with open(md) as f:
            self.assertIn("| tessera-threads |", f.read())

        r = self.compare("--tessera", program, "--engines", "tessera-threads", env=self.env(FAKE_SKEW="1e-6"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("tessera-threads differs from pandas", r.stderr)
        self.assertIn("group '1.0'", r.stderr)

    def test_without_the_tessera_program_the_others_still_run(self):
        missing = os.path.join(self.tmp.name, "no-such-program")
        r = self.compare("--tessera", missing, "--engines", "tessera-threads,polars")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{missing} is missing", r.stderr)
        engines = [json.loads(l).get("engine") for l in r.stdout.splitlines()]
        self.assertIn("polars", engines)
        self.assertNotIn("tessera-threads", engines)


if __name__ == "__main__":
    unittest.main(verbosity=2)
