"""The 22 TPC-H queries with Polars' lazy API, under the rules of Polars' published TPC-H benchmark.

Each function takes `scan(table)`, which returns a LazyFrame over that table's folder of
Parquet files with its decimal money columns cast to float64 (as Tessera and Dask read them), and
returns the query as a LazyFrame; benchmarks/tpch/run.py collects it with collect()'s defaults
(the one configuration for all 22, POLARS_MAX_THREADS set by run.py) and compares the rows with
DuckDB's answer to benchmarks/tpch/queries.sql, so each result has that query's columns in its
order and its ORDER BY.

The rules (pola.rs/posts/benchmarks): one query per question, written in the library's own API;
no operation the SQL does not have (no table pruned before a join on our own initiative: the
WHERE clauses are written as filters after the joins and left to Polars' predicate and projection
pushdown); the join order is the query's FROM order (where two neighbours of the FROM list share
no key, as part and supplier in queries 2, 8 and 9, the table linking them comes between them);
a join's type may be declared (EXISTS and IN become semi joins, NOT EXISTS and NOT IN anti
joins); a subquery's own WHERE applies to its own relation. Scalar subqueries become a one-row
frame joined by a cross join (queries 11 and 22) or a column of the frame they summarise (15).
"""
import datetime

import polars as pl


def _d(text):
    return datetime.date.fromisoformat(text)


def _revenue():
    return pl.col("l_extendedprice") * (1 - pl.col("l_discount"))


def q1(scan):
    lineitem = scan("lineitem")
    return (
        lineitem.filter(pl.col("l_shipdate") <= _d("1998-09-02"))  # 1998-12-01 minus 90 days
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            pl.col("l_extendedprice").sum().alias("sum_base_price"),
            _revenue().sum().alias("sum_disc_price"),
            (_revenue() * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            pl.col("l_extendedprice").mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def q2(scan):
    part, supplier, partsupp = scan("part"), scan("supplier"), scan("partsupp")
    nation, region = scan("nation"), scan("region")
    # part and supplier meet only through partsupp, so partsupp comes second.
    europe = (
        part.join(partsupp, left_on="p_partkey", right_on="ps_partkey")
        .join(supplier, left_on="ps_suppkey", right_on="s_suppkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .join(region, left_on="n_regionkey", right_on="r_regionkey")
        .filter(pl.col("r_name") == "EUROPE")
    )
    # The subquery: the cheapest European supply cost of each part (the part's own filters
    # below select whole parts, so they do not change a part's minimum).
    cheapest = europe.group_by("p_partkey").agg(pl.col("ps_supplycost").min().alias("min_supplycost"))
    return (
        europe.filter((pl.col("p_size") == 15) & pl.col("p_type").str.ends_with("BRASS"))
        .join(cheapest, on="p_partkey")
        .filter(pl.col("ps_supplycost") == pl.col("min_supplycost"))
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment")
        .sort(["s_acctbal", "n_name", "s_name", "p_partkey"], descending=[True, False, False, False])
        .head(100)
    )


def q3(scan):
    customer, orders, lineitem = scan("customer"), scan("orders"), scan("lineitem")
    return (
        customer.join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .filter(
            (pl.col("c_mktsegment") == "BUILDING")
            & (pl.col("o_orderdate") < _d("1995-03-15"))
            & (pl.col("l_shipdate") > _d("1995-03-15"))
        )
        .group_by("o_orderkey", "o_orderdate", "o_shippriority")
        .agg(_revenue().sum().alias("revenue"))
        # o_orderkey stands for l_orderkey: the join keeps the left key of two equal ones.
        .select(pl.col("o_orderkey").alias("l_orderkey"), "revenue", "o_orderdate", "o_shippriority")
        .sort(["revenue", "o_orderdate"], descending=[True, False])
        .head(10)
    )


def q4(scan):
    orders, lineitem = scan("orders"), scan("lineitem")
    late = lineitem.filter(pl.col("l_commitdate") < pl.col("l_receiptdate"))  # the EXISTS subquery
    return (
        orders.join(late, left_on="o_orderkey", right_on="l_orderkey", how="semi")
        .filter((pl.col("o_orderdate") >= _d("1993-07-01")) & (pl.col("o_orderdate") < _d("1993-10-01")))
        .group_by("o_orderpriority")
        .agg(pl.len().alias("order_count"))
        .sort("o_orderpriority")
    )


def q5(scan):
    customer, orders, lineitem = scan("customer"), scan("orders"), scan("lineitem")
    supplier, nation, region = scan("supplier"), scan("nation"), scan("region")
    return (
        customer.join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .join(supplier, left_on=["l_suppkey", "c_nationkey"], right_on=["s_suppkey", "s_nationkey"])
        .join(nation, left_on="c_nationkey", right_on="n_nationkey")
        .join(region, left_on="n_regionkey", right_on="r_regionkey")
        .filter(
            (pl.col("r_name") == "ASIA")
            & (pl.col("o_orderdate") >= _d("1994-01-01"))
            & (pl.col("o_orderdate") < _d("1995-01-01"))
        )
        .group_by("n_name")
        .agg(_revenue().sum().alias("revenue"))
        .sort("revenue", descending=True)
    )


def q6(scan):
    lineitem = scan("lineitem")
    return lineitem.filter(
        (pl.col("l_shipdate") >= _d("1994-01-01"))
        & (pl.col("l_shipdate") < _d("1995-01-01"))
        & pl.col("l_discount").is_between(0.05, 0.07)
        & (pl.col("l_quantity") < 24)
    ).select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue"))


def q7(scan):
    supplier, lineitem, orders = scan("supplier"), scan("lineitem"), scan("orders")
    customer, nation = scan("customer"), scan("nation")
    # nation twice, as n1 (the supplier's) and n2 (the customer's): the second one's columns
    # get the suffix "_n2".
    return (
        supplier.join(lineitem, left_on="s_suppkey", right_on="l_suppkey")
        .join(orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(customer, left_on="o_custkey", right_on="c_custkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .join(nation, left_on="c_nationkey", right_on="n_nationkey", suffix="_n2")
        .filter(
            (((pl.col("n_name") == "FRANCE") & (pl.col("n_name_n2") == "GERMANY"))
             | ((pl.col("n_name") == "GERMANY") & (pl.col("n_name_n2") == "FRANCE")))
            & pl.col("l_shipdate").is_between(_d("1995-01-01"), _d("1996-12-31"))
        )
        .select(
            pl.col("n_name").alias("supp_nation"),
            pl.col("n_name_n2").alias("cust_nation"),
            pl.col("l_shipdate").dt.year().alias("l_year"),
            _revenue().alias("volume"),
        )
        .group_by("supp_nation", "cust_nation", "l_year")
        .agg(pl.col("volume").sum().alias("revenue"))
        .sort("supp_nation", "cust_nation", "l_year")
    )


def q8(scan):
    part, supplier, lineitem, orders = scan("part"), scan("supplier"), scan("lineitem"), scan("orders")
    customer, nation, region = scan("customer"), scan("nation"), scan("region")
    # n1 is the customer's nation (its region must be AMERICA), n2 the supplier's.
    return (
        part.join(lineitem, left_on="p_partkey", right_on="l_partkey")
        .join(supplier, left_on="l_suppkey", right_on="s_suppkey")
        .join(orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(customer, left_on="o_custkey", right_on="c_custkey")
        .join(nation, left_on="c_nationkey", right_on="n_nationkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey", suffix="_n2")
        .join(region, left_on="n_regionkey", right_on="r_regionkey")
        .filter(
            (pl.col("r_name") == "AMERICA")
            & pl.col("o_orderdate").is_between(_d("1995-01-01"), _d("1996-12-31"))
            & (pl.col("p_type") == "ECONOMY ANODIZED STEEL")
        )
        .select(
            pl.col("o_orderdate").dt.year().alias("o_year"),
            _revenue().alias("volume"),
            pl.col("n_name_n2").alias("nation"),
        )
        .group_by("o_year")
        .agg(
            (pl.when(pl.col("nation") == "BRAZIL").then(pl.col("volume")).otherwise(0).sum()
             / pl.col("volume").sum()).alias("mkt_share")
        )
        .sort("o_year")
    )


def q9(scan):
    part, supplier, lineitem = scan("part"), scan("supplier"), scan("lineitem")
    partsupp, orders, nation = scan("partsupp"), scan("orders"), scan("nation")
    return (
        part.join(lineitem, left_on="p_partkey", right_on="l_partkey")
        .join(supplier, left_on="l_suppkey", right_on="s_suppkey")
        .join(partsupp, left_on=["l_suppkey", "p_partkey"], right_on=["ps_suppkey", "ps_partkey"])
        .join(orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("p_name").str.contains("green", literal=True))
        .select(
            pl.col("n_name").alias("nation"),
            pl.col("o_orderdate").dt.year().alias("o_year"),
            (_revenue() - pl.col("ps_supplycost") * pl.col("l_quantity")).alias("amount"),
        )
        .group_by("nation", "o_year")
        .agg(pl.col("amount").sum().alias("sum_profit"))
        .sort(["nation", "o_year"], descending=[False, True])
    )


def q10(scan):
    customer, orders, lineitem, nation = scan("customer"), scan("orders"), scan("lineitem"), scan("nation")
    return (
        customer.join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .join(nation, left_on="c_nationkey", right_on="n_nationkey")
        .filter(
            (pl.col("o_orderdate") >= _d("1993-10-01"))
            & (pl.col("o_orderdate") < _d("1994-01-01"))
            & (pl.col("l_returnflag") == "R")
        )
        .group_by("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(_revenue().sum().alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .sort(["revenue", "c_custkey"], descending=[True, False])
        .head(20)
    )


def q11(scan):
    partsupp, supplier, nation = scan("partsupp"), scan("supplier"), scan("nation")
    german = (
        partsupp.join(supplier, left_on="ps_suppkey", right_on="s_suppkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("n_name") == "GERMANY")
        .with_columns((pl.col("ps_supplycost") * pl.col("ps_availqty")).alias("value"))
    )
    # The HAVING's scalar subquery, on the same join (Polars evaluates the shared part once).
    threshold = german.select((pl.col("value").sum() * 0.0001).alias("threshold"))
    return (
        german.group_by("ps_partkey")
        .agg(pl.col("value").sum())
        .join(threshold, how="cross")
        .filter(pl.col("value") > pl.col("threshold"))
        .select("ps_partkey", "value")
        .sort("value", descending=True)
    )


def q12(scan):
    orders, lineitem = scan("orders"), scan("lineitem")
    high = pl.col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"])
    return (
        orders.join(lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .filter(
            pl.col("l_shipmode").is_in(["MAIL", "SHIP"])
            & (pl.col("l_commitdate") < pl.col("l_receiptdate"))
            & (pl.col("l_shipdate") < pl.col("l_commitdate"))
            & (pl.col("l_receiptdate") >= _d("1994-01-01"))
            & (pl.col("l_receiptdate") < _d("1995-01-01"))
        )
        .group_by("l_shipmode")
        .agg(
            pl.when(high).then(1).otherwise(0).sum().alias("high_line_count"),
            pl.when(high).then(0).otherwise(1).sum().alias("low_line_count"),
        )
        .sort("l_shipmode")
    )


def q13(scan):
    customer, orders = scan("customer"), scan("orders")
    # The comment test is part of the outer join's ON clause, so it applies to orders before
    # the join (a customer whose orders all fail it still counts, with 0 orders).
    plain_orders = orders.filter(~pl.col("o_comment").str.contains("special.*requests"))
    return (
        customer.join(plain_orders, left_on="c_custkey", right_on="o_custkey", how="left")
        .group_by("c_custkey")
        .agg(pl.col("o_orderkey").count().alias("c_count"))  # count() skips the nulls of the outer join
        .group_by("c_count")
        .agg(pl.len().alias("custdist"))
        .sort(["custdist", "c_count"], descending=[True, True])
    )


def q14(scan):
    lineitem, part = scan("lineitem"), scan("part")
    return (
        lineitem.join(part, left_on="l_partkey", right_on="p_partkey")
        .filter((pl.col("l_shipdate") >= _d("1995-09-01")) & (pl.col("l_shipdate") < _d("1995-10-01")))
        .select(
            (100.0 * pl.when(pl.col("p_type").str.starts_with("PROMO")).then(_revenue()).otherwise(0).sum()
             / _revenue().sum()).alias("promo_revenue")
        )
    )


def q15(scan):
    lineitem, supplier = scan("lineitem"), scan("supplier")
    revenue0 = (
        lineitem.filter((pl.col("l_shipdate") >= _d("1996-01-01")) & (pl.col("l_shipdate") < _d("1996-04-01")))
        .group_by("l_suppkey")
        .agg(_revenue().sum().alias("total_revenue"))
        .select(pl.col("l_suppkey").alias("supplier_no"), "total_revenue")
        # (SELECT max(total_revenue) FROM revenue0) as a column of revenue0 itself: the sums are
        # then computed once, and the equality below compares a float with its own maximum.
        .with_columns(pl.col("total_revenue").max().alias("max_revenue"))
    )
    return (
        supplier.join(revenue0, left_on="s_suppkey", right_on="supplier_no")
        .filter(pl.col("total_revenue") == pl.col("max_revenue"))
        .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
        .sort("s_suppkey")
    )


def q16(scan):
    partsupp, part, supplier = scan("partsupp"), scan("part"), scan("supplier")
    complaints = supplier.filter(pl.col("s_comment").str.contains("Customer.*Complaints"))  # the NOT IN subquery
    return (
        partsupp.join(part, left_on="ps_partkey", right_on="p_partkey")
        .filter(
            (pl.col("p_brand") != "Brand#45")
            & ~pl.col("p_type").str.starts_with("MEDIUM POLISHED")
            & pl.col("p_size").is_in([49, 14, 23, 45, 19, 3, 36, 9])
        )
        .join(complaints, left_on="ps_suppkey", right_on="s_suppkey", how="anti")
        .group_by("p_brand", "p_type", "p_size")
        .agg(pl.col("ps_suppkey").n_unique().alias("supplier_cnt"))
        .sort(["supplier_cnt", "p_brand", "p_type", "p_size"], descending=[True, False, False, False])
    )


def q17(scan):
    lineitem, part = scan("lineitem"), scan("part")
    joined = (
        lineitem.join(part, left_on="l_partkey", right_on="p_partkey")
        .filter((pl.col("p_brand") == "Brand#23") & (pl.col("p_container") == "MED BOX"))
    )
    # The correlated subquery: a fifth of the part's average quantity over all its lines, which
    # are all in `joined` since its filters select whole parts.
    small = joined.group_by("l_partkey").agg((0.2 * pl.col("l_quantity").mean()).alias("small_quantity"))
    return (
        joined.join(small, on="l_partkey")
        .filter(pl.col("l_quantity") < pl.col("small_quantity"))
        .select((pl.col("l_extendedprice").sum() / 7.0).alias("avg_yearly"))
    )


def q18(scan):
    customer, orders, lineitem = scan("customer"), scan("orders"), scan("lineitem")
    large = (  # the IN subquery
        lineitem.group_by("l_orderkey")
        .agg(pl.col("l_quantity").sum().alias("order_quantity"))
        .filter(pl.col("order_quantity") > 300)
    )
    return (
        customer.join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .join(large, left_on="o_orderkey", right_on="l_orderkey", how="semi")
        .group_by("c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice")
        .agg(pl.col("l_quantity").sum().alias("sum_qty"))
        .sort(["o_totalprice", "o_orderdate"], descending=[True, False])
        .head(100)
    )


def q19(scan):
    lineitem, part = scan("lineitem"), scan("part")

    def kind(brand, containers, quantity, size):
        return (
            (pl.col("p_brand") == brand)
            & pl.col("p_container").is_in(containers)
            & pl.col("l_quantity").is_between(quantity, quantity + 10)
            & pl.col("p_size").is_between(1, size)
            & pl.col("l_shipmode").is_in(["AIR", "AIR REG"])
            & (pl.col("l_shipinstruct") == "DELIVER IN PERSON")
        )

    return (
        lineitem.join(part, left_on="l_partkey", right_on="p_partkey")
        .filter(
            kind("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
            | kind("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
            | kind("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15)
        )
        .select(_revenue().sum().alias("revenue"))
    )


def q20(scan):
    supplier, nation, partsupp = scan("supplier"), scan("nation"), scan("partsupp")
    part, lineitem = scan("part"), scan("lineitem")
    forest = part.filter(pl.col("p_name").str.starts_with("forest"))
    # The correlated subquery per (part, supplier): half the quantity shipped in 1994. A pair
    # with no such lines has a NULL there, which no ps_availqty exceeds: an inner join.
    shipped = (
        lineitem.filter((pl.col("l_shipdate") >= _d("1994-01-01")) & (pl.col("l_shipdate") < _d("1995-01-01")))
        .group_by("l_partkey", "l_suppkey")
        .agg((0.5 * pl.col("l_quantity").sum()).alias("half_quantity"))
    )
    available = (
        partsupp.join(forest, left_on="ps_partkey", right_on="p_partkey", how="semi")
        .join(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"])
        .filter(pl.col("ps_availqty") > pl.col("half_quantity"))
    )
    return (
        supplier.join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("n_name") == "CANADA")
        .join(available, left_on="s_suppkey", right_on="ps_suppkey", how="semi")
        .select("s_name", "s_address")
        .sort("s_name")
    )


def q21(scan):
    supplier, lineitem, orders, nation = scan("supplier"), scan("lineitem"), scan("orders"), scan("nation")
    late = pl.col("l_receiptdate") > pl.col("l_commitdate")
    # EXISTS a line of the order from another supplier: the order has more than one supplier.
    # NOT EXISTS a late line from another supplier: l1 is late, so the order's late lines have
    # exactly one supplier (l1's).
    several_suppliers = (
        lineitem.group_by("l_orderkey").agg(pl.col("l_suppkey").n_unique().alias("n")).filter(pl.col("n") > 1)
    )
    one_late_supplier = (
        lineitem.filter(late).group_by("l_orderkey").agg(pl.col("l_suppkey").n_unique().alias("n"))
        .filter(pl.col("n") == 1)
    )
    return (
        supplier.join(lineitem, left_on="s_suppkey", right_on="l_suppkey")
        .join(orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(nation, left_on="s_nationkey", right_on="n_nationkey")
        .filter((pl.col("o_orderstatus") == "F") & late & (pl.col("n_name") == "SAUDI ARABIA"))
        .join(several_suppliers, on="l_orderkey", how="semi")
        .join(one_late_supplier, on="l_orderkey", how="semi")
        .group_by("s_name")
        .agg(pl.len().alias("numwait"))
        .sort(["numwait", "s_name"], descending=[True, False])
        .head(100)
    )


def q22(scan):
    customer, orders = scan("customer"), scan("orders")
    codes = ["13", "31", "23", "29", "30", "18", "17"]
    in_codes = customer.with_columns(pl.col("c_phone").str.slice(0, 2).alias("cntrycode")).filter(
        pl.col("cntrycode").is_in(codes)
    )
    average = in_codes.filter(pl.col("c_acctbal") > 0.0).select(pl.col("c_acctbal").mean().alias("avg_acctbal"))
    return (
        in_codes.join(average, how="cross")
        .filter(pl.col("c_acctbal") > pl.col("avg_acctbal"))
        .join(orders, left_on="c_custkey", right_on="o_custkey", how="anti")
        .group_by("cntrycode")
        .agg(pl.len().alias("numcust"), pl.col("c_acctbal").sum().alias("totacctbal"))
        .sort("cntrycode")
    )


QUERIES = {1: q1, 2: q2, 3: q3, 4: q4, 5: q5, 6: q6, 7: q7, 8: q8, 9: q9, 10: q10, 11: q11, 12: q12, 13: q13,
           14: q14, 15: q15, 16: q16, 17: q17, 18: q18, 19: q19, 20: q20, 21: q21, 22: q22}
