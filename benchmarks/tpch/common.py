"""What the TPC-H drivers share (benchmarks/tpch/run.py and benchmarks/tpch_compare.py).

Reading the queries' SQL, opening the tables in DuckDB and Dask, turning a result row into
plain JSON values, and comparing an engine's rows with DuckDB's. Importing it has no side
effects beyond the standard library; DuckDB and Dask are imported by the functions that use them.
"""
import datetime
import decimal
import math
import os
import re
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLES = ("lineitem", "orders", "customer", "nation", "region", "supplier", "part", "partsupp")


def table_glob(data, table):
    """The files of one table as tpchgen-cli's --parts writes them (DIR/TABLE/TABLE.N.parquet)."""
    return f"{data}/{table}/*.parquet"


def sql_queries():
    """{number: SQL text} from benchmarks/tpch/queries.sql (each query follows a "-- query N" line)."""
    text = open(os.path.join(HERE, "queries.sql")).read()
    out, number = {}, None
    for line in text.splitlines():
        m = re.fullmatch(r"-- query (\d+)", line.strip())
        if m:
            number = int(m.group(1))
            out[number] = ""
        elif number is not None and not line.startswith("--"):
            out[number] += line + "\n"
    return {q: body.strip().rstrip(";") for q, body in out.items()}


def plain(value):
    """A result cell as JSON-like Python: float, str or None.

    Every number becomes a float so that DuckDB's exact decimals, the float64 sums of the
    other engines and integer counts compare alike; dates become ISO text as Tessera prints them.
    """
    if value is None:
        return None
    if isinstance(value, (decimal.Decimal, float, int)) and not isinstance(value, bool):
        return float(value)
    if hasattr(value, "item"):
        return plain(value.item())
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.strftime("%Y-%m-%d")
    return str(value)


def plain_rows(rows):
    return [[plain(v) for v in r] for r in rows]


def same(a, b):
    """One cell against DuckDB's: numbers within a relative 1e-6 (float64 money against exact decimals)."""
    if a is None or b is None:
        return a is b

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if number(a) and number(b):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    return str(a) == str(b)


def empty_aggregate(rows, reference):
    """Whether both are a global aggregate over no input rows (query 17 at small scale factors).

    SQL's sum() of no rows is NULL where pandas, Dask and Polars sum to 0; the queries are not
    bent to imitate SQL there, so a one-row answer of zeros (or nulls) equals DuckDB's row of NULLs.
    """
    return (len(reference) == 1 and all(v is None for v in reference[0])
            and len(rows) == 1 and len(rows[0]) == len(reference[0]) and all(v in (None, 0.0) for v in rows[0]))


def differences(rows, reference):
    """None when `rows` equal DuckDB's `reference` row by row, else the first difference in words."""
    if empty_aggregate(rows, reference):
        return None
    if len(rows) != len(reference):
        return f"{len(rows)} rows, DuckDB {len(reference)}"
    for i, (r, ref) in enumerate(zip(rows, reference)):
        if len(r) != len(ref) or not all(same(x, y) for x, y in zip(r, ref)):
            return f"row {i}: {r} against DuckDB's {ref}"
    return None


def best_of(repeat, run):
    """(smallest seconds of `repeat` calls of run(), the last call's result)."""
    best, result = None, None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = run()
        s = time.perf_counter() - t0
        best = s if best is None else min(best, s)
    return best, result


def duckdb_connection(data, threads=2):
    """A DuckDB connection with a view per table over its Parquet files, SET threads=`threads`."""
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads={int(threads)}")
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{table_glob(data, t)}')")
    return con


def dask_reader(data):
    """read(table) -> a Dask DataFrame with the decimal money columns as float64 (as Tessera reads them)."""
    import dask.dataframe as dd

    def read(table):
        df = dd.read_parquet(table_glob(data, table))
        money = [c for c, t in df.dtypes.items() if "decimal" in str(t)]
        return df.astype({c: "float64" for c in money}) if money else df

    return read
