"""TPC-H queries 1, 3, 5, 6, 10 and 12 in Dask DataFrame (the same plans as benchmarks/tpch.cpp).

Each function takes `read(table)`, which returns a Dask DataFrame of that table with its money
columns as float64, and returns a pandas DataFrame (computed). benchmarks/tpch_compare.py runs
them on the threaded scheduler and on a 2-worker LocalCluster.
"""
import datetime


def _d(text):
    return datetime.date.fromisoformat(text)


def _revenue(df):
    return df.l_extendedprice * (1 - df.l_discount)


def q1(read):
    li = read("lineitem")
    f = li[li.l_shipdate <= _d("1998-09-02")]
    f = f.assign(disc_price=_revenue(f))
    f = f.assign(charge=f.disc_price * (1 + f.l_tax))
    g = f.groupby(["l_returnflag", "l_linestatus"]).agg(
        sum_qty=("l_quantity", "sum"), sum_base_price=("l_extendedprice", "sum"),
        sum_disc_price=("disc_price", "sum"), sum_charge=("charge", "sum"), avg_qty=("l_quantity", "mean"),
        avg_price=("l_extendedprice", "mean"), avg_disc=("l_discount", "mean"), count_order=("l_orderkey", "count"))
    return g.compute().reset_index().sort_values(["l_returnflag", "l_linestatus"])


def q3(read):
    c = read("customer")
    c = c[c.c_mktsegment == "BUILDING"][["c_custkey"]]
    o = read("orders")
    o = o[o.o_orderdate < _d("1995-03-15")][["o_orderkey", "o_custkey", "o_orderdate", "o_shippriority"]]
    li = read("lineitem")
    li = li[li.l_shipdate > _d("1995-03-15")]
    li = li.assign(revenue=_revenue(li))[["l_orderkey", "revenue"]]
    j = c.merge(o, left_on="c_custkey", right_on="o_custkey").merge(li, left_on="o_orderkey", right_on="l_orderkey")
    g = j.groupby(["l_orderkey", "o_orderdate", "o_shippriority"]).revenue.sum().reset_index()
    g = g.compute().sort_values(["revenue", "o_orderdate"], ascending=[False, True]).head(10)
    return g[["l_orderkey", "revenue", "o_orderdate", "o_shippriority"]]


def q5(read):
    r = read("region")
    r = r[r.r_name == "ASIA"]
    n = read("nation").merge(r, left_on="n_regionkey", right_on="r_regionkey")
    s = read("supplier").merge(n, left_on="s_nationkey", right_on="n_nationkey")
    o = read("orders")
    o = o[(o.o_orderdate >= _d("1994-01-01")) & (o.o_orderdate < _d("1995-01-01"))]
    j = (read("customer").merge(o, left_on="c_custkey", right_on="o_custkey")
         .merge(read("lineitem"), left_on="o_orderkey", right_on="l_orderkey")
         .merge(s, left_on=["l_suppkey", "c_nationkey"], right_on=["s_suppkey", "s_nationkey"]))
    j = j.assign(revenue=_revenue(j))
    return j.groupby("n_name").revenue.sum().compute().reset_index().sort_values("revenue", ascending=False)


def q6(read):
    li = read("lineitem")
    f = li[(li.l_shipdate >= _d("1994-01-01")) & (li.l_shipdate < _d("1995-01-01")) & (li.l_discount >= 0.05)
           & (li.l_discount <= 0.07) & (li.l_quantity < 24)]
    import pandas as pd
    return pd.DataFrame({"revenue": [(f.l_extendedprice * f.l_discount).sum().compute()]})


def q10(read):
    o = read("orders")
    o = o[(o.o_orderdate >= _d("1993-10-01")) & (o.o_orderdate < _d("1994-01-01"))]
    li = read("lineitem")
    li = li[li.l_returnflag == "R"]
    j = (read("customer").merge(o, left_on="c_custkey", right_on="o_custkey")
         .merge(li, left_on="o_orderkey", right_on="l_orderkey")
         .merge(read("nation"), left_on="c_nationkey", right_on="n_nationkey"))
    j = j.assign(revenue=_revenue(j))
    keys = ["c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"]
    g = j.groupby(keys).revenue.sum().compute().reset_index()
    g = g.sort_values(["revenue", "c_custkey"], ascending=[False, True]).head(20)
    return g[["c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment"]]


def q12(read):
    li = read("lineitem")
    li = li[li.l_shipmode.isin(["MAIL", "SHIP"]) & (li.l_commitdate < li.l_receiptdate)
            & (li.l_shipdate < li.l_commitdate) & (li.l_receiptdate >= _d("1994-01-01"))
            & (li.l_receiptdate < _d("1995-01-01"))]
    j = read("orders").merge(li, left_on="o_orderkey", right_on="l_orderkey")
    high = j.o_orderpriority.isin(["1-URGENT", "2-HIGH"])
    j = j.assign(high_line_count=high.astype("int64"), low_line_count=(~high).astype("int64"))
    g = j.groupby("l_shipmode")[["high_line_count", "low_line_count"]].sum().compute().reset_index()
    return g.sort_values("l_shipmode")


QUERIES = {1: q1, 3: q3, 5: q5, 6: q6, 10: q10, 12: q12}
