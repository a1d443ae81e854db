"""The 22 TPC-H queries in Dask DataFrame (the same plans as benchmarks/tpch.cpp).

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


def q4(read):
    o = read("orders")
    o = o[(o.o_orderdate >= _d("1993-07-01")) & (o.o_orderdate < _d("1993-10-01"))]
    li = read("lineitem")
    li = li[li.l_commitdate < li.l_receiptdate][["l_orderkey"]].drop_duplicates()
    j = o.merge(li, left_on="o_orderkey", right_on="l_orderkey")
    g = j.groupby("o_orderpriority").size().compute().rename("order_count").reset_index()
    return g.sort_values("o_orderpriority")


def q7(read):
    n = read("nation")
    n = n[n.n_name.isin(["FRANCE", "GERMANY"])][["n_nationkey", "n_name"]]
    s = read("supplier").merge(n.rename(columns={"n_name": "supp_nation"}), left_on="s_nationkey", right_on="n_nationkey")
    c = read("customer").merge(n.rename(columns={"n_name": "cust_nation"}), left_on="c_nationkey", right_on="n_nationkey")
    li = read("lineitem")
    li = li[(li.l_shipdate >= _d("1995-01-01")) & (li.l_shipdate <= _d("1996-12-31"))]
    j = (li.merge(s[["s_suppkey", "supp_nation"]], left_on="l_suppkey", right_on="s_suppkey")
         .merge(read("orders")[["o_orderkey", "o_custkey"]], left_on="l_orderkey", right_on="o_orderkey")
         .merge(c[["c_custkey", "cust_nation"]], left_on="o_custkey", right_on="c_custkey"))
    j = j[((j.supp_nation == "FRANCE") & (j.cust_nation == "GERMANY"))
          | ((j.supp_nation == "GERMANY") & (j.cust_nation == "FRANCE"))]
    j = j.assign(l_year=j.l_shipdate.astype("datetime64[s]").dt.year, revenue=_revenue(j))
    g = j.groupby(["supp_nation", "cust_nation", "l_year"]).revenue.sum().compute().reset_index()
    return g.sort_values(["supp_nation", "cust_nation", "l_year"])


def q8(read):
    r = read("region")
    r = r[r.r_name == "AMERICA"]
    n1 = read("nation").merge(r, left_on="n_regionkey", right_on="r_regionkey")[["n_nationkey"]]
    c = read("customer").merge(n1, left_on="c_nationkey", right_on="n_nationkey")[["c_custkey"]]
    o = read("orders")
    o = o[(o.o_orderdate >= _d("1995-01-01")) & (o.o_orderdate <= _d("1996-12-31"))]
    p = read("part")
    p = p[p.p_type == "ECONOMY ANODIZED STEEL"][["p_partkey"]]
    s = read("supplier").merge(read("nation")[["n_nationkey", "n_name"]], left_on="s_nationkey", right_on="n_nationkey")
    j = (read("lineitem").merge(p, left_on="l_partkey", right_on="p_partkey")
         .merge(o[["o_orderkey", "o_custkey", "o_orderdate"]], left_on="l_orderkey", right_on="o_orderkey")
         .merge(c, left_on="o_custkey", right_on="c_custkey")
         .merge(s[["s_suppkey", "n_name"]], left_on="l_suppkey", right_on="s_suppkey"))
    j = j.assign(o_year=j.o_orderdate.astype("datetime64[s]").dt.year, volume=_revenue(j))
    j = j.assign(brazil=j.volume.where(j.n_name == "BRAZIL", 0.0))
    g = j.groupby("o_year")[["brazil", "volume"]].sum().compute()
    g["mkt_share"] = g.brazil / g.volume
    return g.reset_index()[["o_year", "mkt_share"]].sort_values("o_year")


def q9(read):
    p = read("part")
    p = p[p.p_name.str.contains("green", regex=False)][["p_partkey"]]
    s = read("supplier").merge(read("nation")[["n_nationkey", "n_name"]], left_on="s_nationkey", right_on="n_nationkey")
    j = (read("lineitem").merge(p, left_on="l_partkey", right_on="p_partkey")
         .merge(read("partsupp"), left_on=["l_suppkey", "l_partkey"], right_on=["ps_suppkey", "ps_partkey"])
         .merge(s[["s_suppkey", "n_name"]], left_on="l_suppkey", right_on="s_suppkey")
         .merge(read("orders")[["o_orderkey", "o_orderdate"]], left_on="l_orderkey", right_on="o_orderkey"))
    j = j.assign(o_year=j.o_orderdate.astype("datetime64[s]").dt.year,
                 amount=_revenue(j) - j.ps_supplycost * j.l_quantity)
    g = j.groupby(["n_name", "o_year"]).amount.sum().compute().reset_index()
    g = g.rename(columns={"n_name": "nation", "amount": "sum_profit"})
    return g.sort_values(["nation", "o_year"], ascending=[True, False])


def q13(read):
    o = read("orders")
    o = o[~o.o_comment.str.contains("special.*requests", regex=True)][["o_orderkey", "o_custkey"]]
    j = read("customer")[["c_custkey"]].merge(o, left_on="c_custkey", right_on="o_custkey", how="left")
    per = j.groupby("c_custkey").o_orderkey.count().compute().rename("c_count").reset_index()
    dist = per.groupby("c_count").size().rename("custdist").reset_index()
    return dist.sort_values(["custdist", "c_count"], ascending=False)


def q14(read):
    li = read("lineitem")
    li = li[(li.l_shipdate >= _d("1995-09-01")) & (li.l_shipdate < _d("1995-10-01"))]
    j = li.merge(read("part")[["p_partkey", "p_type"]], left_on="l_partkey", right_on="p_partkey")
    j = j.assign(revenue=_revenue(j))
    j = j.assign(promo=j.revenue.where(j.p_type.str.startswith("PROMO"), 0.0))
    sums = j[["promo", "revenue"]].sum().compute()
    import pandas as pd
    return pd.DataFrame({"promo_revenue": [100.0 * sums["promo"] / sums["revenue"]]})


def q17(read):
    p = read("part")
    p = p[(p.p_brand == "Brand#23") & (p.p_container == "MED BOX")][["p_partkey"]]
    lp = read("lineitem")[["l_partkey", "l_quantity", "l_extendedprice"]].merge(p, left_on="l_partkey",
                                                                                right_on="p_partkey")
    avg = lp.groupby("l_partkey").l_quantity.mean().rename("avg_quantity").reset_index()
    j = lp.merge(avg, on="l_partkey")
    j = j[j.l_quantity < 0.2 * j.avg_quantity]
    import pandas as pd
    return pd.DataFrame({"avg_yearly": [j.l_extendedprice.sum().compute() / 7.0]})


def q18(read):
    li = read("lineitem")[["l_orderkey", "l_quantity"]]
    per = li.groupby("l_orderkey").l_quantity.sum(split_out=4).reset_index()
    big = per[per.l_quantity > 300][["l_orderkey"]]
    o = read("orders").merge(big, left_on="o_orderkey", right_on="l_orderkey").drop(columns="l_orderkey")
    j = (read("customer").merge(o, left_on="c_custkey", right_on="o_custkey")
         .merge(li, left_on="o_orderkey", right_on="l_orderkey"))
    keys = ["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice"]
    g = j.groupby(keys).l_quantity.sum().compute().rename("sum_qty").reset_index()
    return g.sort_values(["o_totalprice", "o_orderdate"], ascending=[False, True]).head(100)


def q19(read):
    li = read("lineitem")
    li = li[li.l_shipmode.isin(["AIR", "AIR REG"]) & (li.l_shipinstruct == "DELIVER IN PERSON")]
    j = li.merge(read("part"), left_on="l_partkey", right_on="p_partkey")

    def kind(brand, containers, lo, size):
        return ((j.p_brand == brand) & j.p_container.isin(containers) & (j.l_quantity >= lo)
                & (j.l_quantity <= lo + 10) & (j.p_size >= 1) & (j.p_size <= size))

    j = j[kind("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
          | kind("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
          | kind("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15)]
    import pandas as pd
    return pd.DataFrame({"revenue": [_revenue(j).sum().compute()]})


def q2(read):
    r = read("region")
    r = r[r.r_name == "EUROPE"]
    n = read("nation").merge(r, left_on="n_regionkey", right_on="r_regionkey")[["n_nationkey", "n_name"]]
    s = read("supplier").merge(n, left_on="s_nationkey", right_on="n_nationkey")
    ps = read("partsupp").merge(s[["s_suppkey", "s_name", "s_address", "s_phone", "s_acctbal", "s_comment", "n_name"]],
                                left_on="ps_suppkey", right_on="s_suppkey")
    p = read("part")
    p = p[(p.p_size == 15) & p.p_type.str.endswith("BRASS")][["p_partkey", "p_mfgr"]]
    j = p.merge(ps, left_on="p_partkey", right_on="ps_partkey")
    cheapest = j.groupby("p_partkey").ps_supplycost.min().rename("min_cost").reset_index()
    best = j.merge(cheapest, left_on=["p_partkey", "ps_supplycost"], right_on=["p_partkey", "min_cost"]).compute()
    best = best.sort_values(["s_acctbal", "n_name", "s_name", "p_partkey"], ascending=[False, True, True, True])
    return best[["s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment"]].head(100)


def q11(read):
    n = read("nation")
    n = n[n.n_name == "GERMANY"]
    s = read("supplier").merge(n, left_on="s_nationkey", right_on="n_nationkey")[["s_suppkey"]]
    ps = read("partsupp").merge(s, left_on="ps_suppkey", right_on="s_suppkey")
    ps = ps.assign(value=ps.ps_supplycost * ps.ps_availqty)
    threshold = ps.value.sum().compute() * 0.0001
    g = ps.groupby("ps_partkey").value.sum().compute().reset_index()
    return g[g.value > threshold].sort_values("value", ascending=False)


def q15(read):
    li = read("lineitem")
    li = li[(li.l_shipdate >= _d("1996-01-01")) & (li.l_shipdate < _d("1996-04-01"))]
    li = li.assign(total_revenue=_revenue(li))
    per = li.groupby("l_suppkey").total_revenue.sum().compute().reset_index()
    top = per[per.total_revenue == per.total_revenue.max()]
    best = read("supplier").compute().merge(top, left_on="s_suppkey", right_on="l_suppkey")
    return best[["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"]].sort_values("s_suppkey")


def q16(read):
    p = read("part")
    p = p[(p.p_brand != "Brand#45") & ~p.p_type.str.startswith("MEDIUM POLISHED")
          & p.p_size.isin([49, 14, 23, 45, 19, 3, 36, 9])]
    sup = read("supplier")
    bad = sup[sup.s_comment.str.contains("Customer.*Complaints", regex=True)].s_suppkey.compute()
    ps = read("partsupp")
    ps = ps[~ps.ps_suppkey.isin(list(bad))]
    j = ps.merge(p, left_on="ps_partkey", right_on="p_partkey")
    g = j.groupby(["p_brand", "p_type", "p_size"]).ps_suppkey.nunique().compute().rename("supplier_cnt").reset_index()
    return g.sort_values(["supplier_cnt", "p_brand", "p_type", "p_size"], ascending=[False, True, True, True])


def q20(read):
    p = read("part")
    p = p[p.p_name.str.startswith("forest")][["p_partkey"]]
    li = read("lineitem")
    li = li[(li.l_shipdate >= _d("1994-01-01")) & (li.l_shipdate < _d("1995-01-01"))]
    shipped = li.groupby(["l_partkey", "l_suppkey"]).l_quantity.sum().reset_index()
    ps = read("partsupp").merge(p, left_on="ps_partkey", right_on="p_partkey")
    j = ps.merge(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"])
    j = j[j.ps_availqty > 0.5 * j.l_quantity][["ps_suppkey"]].drop_duplicates()
    n = read("nation")
    n = n[n.n_name == "CANADA"]
    s = read("supplier").merge(n, left_on="s_nationkey", right_on="n_nationkey")
    res = s.merge(j, left_on="s_suppkey", right_on="ps_suppkey")[["s_name", "s_address"]].compute()
    return res.sort_values("s_name")


def q21(read):
    li = read("lineitem")[["l_orderkey", "l_suppkey", "l_receiptdate", "l_commitdate"]]
    late = li[li.l_receiptdate > li.l_commitdate]
    # As benchmarks/tpch.cpp: other suppliers exist when the smallest and largest differ.
    suppliers = li.groupby("l_orderkey").l_suppkey.agg(["min", "max"]).reset_index()
    late_suppliers = late.groupby("l_orderkey").l_suppkey.agg(["min", "max"]).reset_index()
    late_suppliers.columns = ["l_orderkey", "late_min", "late_max"]
    o = read("orders")
    o = o[o.o_orderstatus == "F"][["o_orderkey"]]
    n = read("nation")
    n = n[n.n_name == "SAUDI ARABIA"]
    s = read("supplier").merge(n, left_on="s_nationkey", right_on="n_nationkey")[["s_suppkey", "s_name"]]
    j = (late.merge(s, left_on="l_suppkey", right_on="s_suppkey")
         .merge(o, left_on="l_orderkey", right_on="o_orderkey")
         .merge(suppliers, on="l_orderkey").merge(late_suppliers, on="l_orderkey"))
    j = j[(j["min"] != j["max"]) & (j.late_min == j.late_max)]
    g = j.groupby("s_name").size().compute().rename("numwait").reset_index()
    return g.sort_values(["numwait", "s_name"], ascending=[False, True]).head(100)


def q22(read):
    c = read("customer")
    c = c.assign(cntrycode=c.c_phone.str.slice(0, 2))
    c = c[c.cntrycode.isin(["13", "31", "23", "29", "30", "18", "17"])]
    average = c[c.c_acctbal > 0.0].c_acctbal.mean().compute()
    rich = c[c.c_acctbal > average]
    o = read("orders")[["o_custkey"]].drop_duplicates()
    m = rich.merge(o, left_on="c_custkey", right_on="o_custkey", how="left")
    idle = m[m.o_custkey.isna()]
    g = idle.groupby("cntrycode").c_acctbal.agg(["count", "sum"]).compute().reset_index()
    g.columns = ["cntrycode", "numcust", "totacctbal"]
    return g.sort_values("cntrycode")


QUERIES = {1: q1, 2: q2, 3: q3, 4: q4, 5: q5, 6: q6, 7: q7, 8: q8, 9: q9, 10: q10, 11: q11, 12: q12, 13: q13,
           14: q14, 15: q15, 16: q16, 17: q17, 18: q18, 19: q19, 20: q20, 21: q21, 22: q22}
