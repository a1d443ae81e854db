"""Conformance of reductions, scans, sorting and statistics (cases_reduce.cpp)."""
import numpy as np

from conformance import case, rand, with_nans

A = rand(7, 5, salt=20)
NA = with_nans(A, salt=21)
T3 = with_nans(rand(4, 3, 5, salt=22), salt=23)
I = rand(7, 5, dtype="int64", low=-9, high=9, salt=24)
V = rand(11, salt=25)
SMALL = rand(6, 4, low=0.5, high=1.5, salt=26)


def ax(axis):
    return tuple(axis) if isinstance(axis, list) else axis


NANREDUCE = {
    "nansum": np.nansum, "nanprod": np.nanprod, "nanmin": np.nanmin, "nanmax": np.nanmax,
    "nanmean": np.nanmean, "nanvar": np.nanvar, "nanstd": np.nanstd,
    "count_nonzero": np.count_nonzero, "ptp": np.ptp,
}


def nanreduce(op):
    f = NANREDUCE[op]

    def expect(x, op, axis=None, keepdims=False, ddof=None, split_every=None):
        kw = {"ddof": ddof} if ddof is not None else {}
        return np.asarray(f(x, axis=ax(axis), keepdims=keepdims, **kw))
    return expect


def nanarg(f):
    def expect(x, op, axis=None):
        return np.asarray(f(x, axis=axis))
    return expect


SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod, "nancumsum": np.nancumsum, "nancumprod": np.nancumprod}


def scan(op):
    f = SCANS[op]
    return lambda x, op, axis=None: f(x, axis=axis)


def top(x, k, axis=-1, split_every=None, arg=False):
    order = np.argsort(-x if k > 0 else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(abs(k)), axis=axis)
    return idx if arg else np.take_along_axis(x, idx, axis=axis)


def quantile_expect(x, op, q, axis=None, keepdims=False, method="linear"):
    f = {"percentile": np.percentile, "nanpercentile": np.nanpercentile,
         "quantile": np.quantile, "nanquantile": np.nanquantile}[op]
    qq = np.asarray(q, dtype=float)
    if op in ("quantile", "nanquantile"):
        qq = qq / 100.0
    return np.asarray(f(x, qq, axis=ax(axis), keepdims=keepdims, method=method))


CASES = []
for op in NANREDUCE:
    src = NA if op not in ("count_nonzero", "ptp") else (A > 0.5 if op == "count_nonzero" else A)
    CASES.append(case("nanreduce", [src], nanreduce(op), {"op": op}))
    for axis in ([0], [1]):
        CASES.append(case("nanreduce", [src], nanreduce(op), {"op": op, "axis": axis}))
    if op not in ("count_nonzero", "ptp"):
        CASES.append(case("nanreduce", [T3], nanreduce(op), {"op": op, "axis": [0, 2], "keepdims": True},
                          name=f"nanreduce[3d][op={op}]"))
CASES.append(case("nanreduce", [NA], nanreduce("nanvar"), {"op": "nanvar", "ddof": 1, "axis": [0]}, name="nanreduce[nanvar ddof]"))
CASES.append(case("nanreduce", [I], nanreduce("ptp"), {"op": "ptp", "axis": [1]}, name="nanreduce[int ptp]"))
CASES.append(case("nanreduce", [I], nanreduce("nansum"), {"op": "nansum", "axis": [0]}, name="nanreduce[int nansum]"))
for op, f in (("nanargmin", np.nanargmin), ("nanargmax", np.nanargmax)):
    CASES.append(case("nanreduce", [NA], nanarg(f), {"op": op}))
    CASES.append(case("nanreduce", [NA], nanarg(f), {"op": op, "axis": 1}))

for op in SCANS:
    src = {"cumsum": A, "cumprod": SMALL, "nancumsum": NA, "nancumprod": with_nans(SMALL, salt=27)}[op]
    CASES.append(case("scan", [src], scan(op), {"op": op}))
    for axis in (0, 1):
        CASES.append(case("scan", [src], scan(op), {"op": op, "axis": axis}))
CASES.append(case("scan", [I], scan("cumsum"), {"op": "cumsum", "axis": 0}, name="scan[int cumsum]"))
CASES.append(case("scan", [A > 0], scan("cumsum"), {"op": "cumsum", "axis": 1}, name="scan[bool cumsum]"))


def push_reference(x, axis=-1, n=0):
    """bottleneck.push: forward fill of NaN along an axis, at most n in a row (0: all)."""
    y = np.moveaxis(np.array(x, dtype=x.dtype, copy=True), axis, -1)
    for row in y.reshape(-1, y.shape[-1]):
        last, gap = np.nan, 0
        for i, v in enumerate(row):
            if not np.isnan(v):
                last, gap = v, 0
                continue
            gap += 1
            if not np.isnan(last) and (n == 0 or gap <= n):
                row[i] = last
    return np.moveaxis(y, -1, axis)


PUSH = rand(12, 5, salt=42)
PUSH[rand(12, 5, salt=43) < 0.55] = np.nan
PUSH[:3, 1] = np.nan  # leading NaN stay
for axis, n in ((0, 0), (0, 2), (1, 0), (-1, 1)):
    CASES.append(case("push_case", [PUSH], push_reference, {"axis": axis, "n": n}, api="push"))
CASES.append(case("push_case", [PUSH.astype("float32")], push_reference, {"axis": 0, "n": 3}, api="push",
                  name="push_case[float32]"))
CASES.append(case("diff", [A], lambda x, n=1, axis=-1: np.diff(x, n=n, axis=axis)))
CASES.append(case("diff", [A], lambda x, n=1, axis=-1: np.diff(x, n=n, axis=axis), {"n": 2, "axis": 0}))
CASES.append(case("diff", [A > 0], lambda x, axis=-1: np.diff(x, axis=axis), {"axis": 0}, name="diff[bool]"))
CASES.append(case("ediff1d", [A], lambda x: np.ediff1d(x)))

for axis in (0, 1, -1):
    CASES.append(case("sort", [NA], lambda x, axis: np.sort(x, axis=axis), {"axis": axis}))
    CASES.append(case("argsort", [NA], lambda x, axis: np.argsort(x, axis=axis, kind="stable"), {"axis": axis}))
CASES.append(case("sort", [I], lambda x, axis: np.sort(x, axis=axis), {"axis": 0}, name="sort[int]"))
for k in (2, -3):
    for axis in (0, 1):
        for split in (0, 2):
            CASES.append(case("topk", [A], lambda x, k, axis, split_every: top(x, k, axis),
                              {"k": k, "axis": axis, "split_every": split}))
            CASES.append(case("argtopk", [A], lambda x, k, axis, split_every: top(x, k, axis, arg=True),
                              {"k": k, "axis": axis, "split_every": split}))
CASES.append(case("topk", [V], lambda x, k: top(x, k), {"k": 4}, name="topk[1d]",
                  chunks=[[(1,)], [(5,)], [(-1,)]]))
# Ties (to the lower index) and NaN (last either way), for few kept and for many (k > 64).
TIES = np.round(rand(9, 14, salt=44) * 2)
TIES[rand(9, 14, salt=45) < -0.8] = np.nan
WIDE = np.round(rand(6, 80, salt=46) * 3)
WIDE[:, ::7] = np.nan
for x, ks in ((TIES, (3, -4, 12)), (WIDE, (70, -66))):
    for k in ks:
        for axis in ((0, 1) if x is TIES else (1,)):
            if abs(k) > x.shape[axis]:
                continue
            CASES.append(case("topk", [x], lambda x, k, axis, split_every: top(x, k, axis),
                              {"k": k, "axis": axis, "split_every": 0}, name=f"topk[ties,{x.shape},{k},{axis}]"))
            CASES.append(case("argtopk", [x], lambda x, k, axis, split_every: top(x, k, axis, arg=True),
                              {"k": k, "axis": axis, "split_every": 0}, name=f"argtopk[ties,{x.shape},{k},{axis}]"))

CASES.append(case("unique", [rand(7, 5, dtype="int64", low=-3, high=4, salt=28)],
                  lambda x: np.unique(x, return_counts=True)))
NAN_DUP = np.array([3.0, np.nan, 1.0, 3.0, np.nan, 0.5, 1.0, 2.0, 3.0])
CASES.append(case("unique", [NAN_DUP], lambda x: np.unique(x, return_counts=True), name="unique[nan]"))
TEST = np.array([1, -2, 5, 3, 3, 0])
CASES.append(case("isin", [I, TEST], lambda a, b, invert=False: np.isin(a, b, invert=invert)))
CASES.append(case("isin", [I, TEST], lambda a, b, invert=False: np.isin(a, b, invert=invert), {"invert": True}))
SORTED = np.sort(rand(9, salt=29))
CASES.append(case("searchsorted", [SORTED, A], lambda a, v, side="left": np.searchsorted(a, v, side=side)))
CASES.append(case("searchsorted", [np.array([1, 2, 2, 3, 5, 8]), I], lambda a, v, side: np.searchsorted(a, v, side=side),
                  {"side": "right"}, name="searchsorted[int right]"))
for bins in ([-2, 0, 1, 3], [3, 1, 0, -2]):
    for right in (False, True):
        CASES.append(case("digitize", [A], lambda x, bins, right: np.digitize(x, np.asarray(bins) * 0.5, right=right),
                          {"bins": bins, "right": right}))

for axis in (None, [0], [1]):
    params = {} if axis is None else {"axis": axis}
    CASES.append(case("median", [A], lambda x, axis=None, keepdims=False: np.asarray(np.median(x, axis=ax(axis))), params,
                      api="median"))
    CASES.append(case("median", [NA], lambda x, nan, axis=None: np.asarray(np.nanmedian(x, axis=ax(axis))),
                      dict(params, nan=True), api="nanmedian"))
CASES.append(case("median", [T3], lambda x, axis, keepdims: np.median(x, axis=ax(axis), keepdims=keepdims),
                  {"axis": [0, 2], "keepdims": True}, name="median[3d keepdims]"))
for method in ("linear", "lower", "higher", "nearest", "midpoint"):
    CASES.append(case("quantile", [A], quantile_expect, {"op": "percentile", "q": [0, 10, 50, 75, 100], "axis": [1],
                                                         "method": method}))
CASES.append(case("quantile", [I], quantile_expect, {"op": "percentile", "q": [30, 60]}, name="quantile[int]"))
CASES.append(case("quantile", [A], quantile_expect, {"op": "quantile", "q": [25, 90], "axis": [0], "keepdims": True}))
CASES.append(case("quantile", [NA], quantile_expect, {"op": "nanpercentile", "q": [20, 50], "axis": [1]}))
CASES.append(case("quantile", [NA], quantile_expect, {"op": "nanquantile", "q": [50], "axis": [0]}))

W = rand(7, 5, low=0.1, high=2.0, salt=30)
WROW = rand(5, low=0.1, high=2.0, salt=31)
CASES.append(case("average", [A], lambda x, axis=None: np.asarray(np.average(x, axis=axis))))
CASES.append(case("average", [A, W], lambda x, w, axis=None: np.asarray(np.average(x, axis=axis, weights=w)), name="average[weights]"))
CASES.append(case("average", [A, WROW], lambda x, w, axis: np.average(x, axis=axis, weights=w), {"axis": 1}, name="average[1d weights]"))
CASES.append(case("average", [I, W], lambda x, w, axis, returned: np.average(x, axis=axis, weights=w, returned=True),
                  {"axis": 0, "returned": True}, name="average[returned]"))
CASES.append(case("cov", [A], lambda x: np.cov(x)))
CASES.append(case("cov", [A], lambda x, rowvar, bias: np.cov(x, rowvar=rowvar, bias=bias), {"rowvar": False, "bias": True}))
CASES.append(case("cov", [A[0], A[1]], lambda x, y, ddof: np.cov(x, y, ddof=ddof), {"ddof": 0}, name="cov[x y]"))
CASES.append(case("corrcoef", [A], lambda x: np.corrcoef(x)))
CASES.append(case("corrcoef", [A], lambda x, rowvar: np.corrcoef(x, rowvar=rowvar), {"rowvar": False}))
H = rand(7, 5, low=-1.0, high=3.0, salt=32)
CASES.append(case("histogram", [H], lambda x, bins, lo, hi: np.histogram(x, bins=bins, range=(lo, hi)),
                  {"bins": 6, "lo": -0.5, "hi": 2.5}))
CASES.append(case("histogram", [H, W], lambda x, w, bins, lo, hi, density: np.histogram(x, bins=bins, range=(lo, hi), weights=w, density=density),
                  {"bins": 4, "lo": -1.0, "hi": 3.0, "density": True}, name="histogram[weights density]"))
CASES.append(case("histogram", [H], lambda x, edges: np.histogram(x, bins=np.asarray(edges) * 0.25),
                  {"edges": [-4, 0, 1, 2, 6, 12]}, name="histogram[edges]"))
HX = rand(7, 5, low=-1.0, high=3.0, salt=35)
HY = rand(7, 5, low=0.0, high=2.0, salt=36)
HZ = rand(7, 5, low=-2.0, high=2.0, salt=37)


def hist_dd(*arrays, bins, lo, hi, dims=2, weighted=False, density=False, as_2d=False):
    coords = arrays[:dims]
    w = arrays[dims] if weighted else None
    rng = [(0.25 * a, 0.25 * b) for a, b in zip(lo, hi)]
    if as_2d:
        h, ex, ey = np.histogram2d(np.ravel(coords[0]), np.ravel(coords[1]), bins=bins, range=rng,
                                   weights=None if w is None else np.ravel(w), density=density)
        return (h.astype(np.float64 if (weighted or density) else np.int64), ex, ey)
    h, edges = np.histogramdd([np.ravel(c) for c in coords], bins=bins, range=rng,
                              weights=None if w is None else np.ravel(w), density=density)
    return (h.astype(np.float64 if (weighted or density) else np.int64),) + tuple(edges)


CASES.append(case("histogramdd", [HX, HY], hist_dd, {"bins": [4, 3], "lo": [-2, 0], "hi": [10, 6], "as_2d": True},
                  name="histogram2d", api="histogram2d"))
CASES.append(case("histogramdd", [HX, HY, W], hist_dd,
                  {"bins": [5, 2], "lo": [0, 1], "hi": [8, 7], "as_2d": True, "weighted": True, "density": True},
                  name="histogram2d[weights density]", api="histogram2d"))
CASES.append(case("histogramdd", [HX, HY, HZ], hist_dd, {"dims": 3, "bins": [3, 2, 4], "lo": [-4, 0, -8], "hi": [12, 8, 8]},
                  name="histogramdd"))
CASES.append(case("histogramdd", [HX, HY, HZ, W], hist_dd,
                  {"dims": 3, "bins": [2, 3, 2], "lo": [-4, 0, -4], "hi": [8, 6, 4], "weighted": True},
                  name="histogramdd[weights]"))
X = rand(13, dtype="int64", low=0, high=9, salt=33)
CASES.append(case("bincount", [X], lambda x: np.bincount(x)))
CASES.append(case("bincount", [X, rand(13, salt=34)], lambda x, w, minlength: np.bincount(x, weights=w, minlength=minlength),
                  {"minlength": 12}, name="bincount[weights minlength]"))
