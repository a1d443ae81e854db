"""Conformance of the random distributions and of array I/O (raw files, .npy stacks, HDF5).

Random arrays are compared in distribution: a two-sample Kolmogorov-Smirnov test against as
many samples from NumPy's Generator (p about 1e-4), and the dtype and the support. Files are
compared with what NumPy writes (tofile, save) and reads (fromfile, load).
"""
import atexit
import json
import os
import shutil
import tempfile

import numpy as np

from conformance import case, rand

TMP = tempfile.mkdtemp(prefix="tessera-rngio-conformance-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)

SHAPE = (60, 50)  # 3000 samples per run
LIKE = np.zeros(SHAPE)
CHUNKS = [[(-1, -1)], [(16, 50)], [(7, 9)]]


def ks_two_sample(x, y):
    x = np.sort(np.ravel(x).astype("float64"))
    y = np.sort(np.ravel(y).astype("float64"))
    grid = np.concatenate([x, y])
    fx = np.searchsorted(x, grid, side="right") / x.size
    fy = np.searchsorted(y, grid, side="right") / y.size
    return np.max(np.abs(fx - fy))


def same_distribution(support=None):
    def compare(got, exp, inputs, params):
        x, y = np.asarray(got[0]), np.asarray(exp[0])
        if x.shape != y.shape:
            return f"shape {x.shape}, NumPy {y.shape}"
        if x.dtype != y.dtype:
            return f"dtype {x.dtype}, NumPy {y.dtype}"
        if support is not None and not support(x):
            return "values outside the support"
        d = ks_two_sample(x, y)
        limit = 2.23 * np.sqrt(2.0 / x.size)
        if d > limit:
            return f"KS distance {d:.4f} > {limit:.4f} from NumPy's samples"
        return None
    return compare


def dist(name, params, support=None, executors=None):
    def expect(like, dist, seed, **p):
        g = np.random.default_rng(int(seed) + 1000)
        f = getattr(g, dist)
        if dist == "permutation":
            return g.permutation(like.shape[0])
        if dist == "integers":
            return g.integers(p["low"], p["high"], size=like.shape, endpoint=bool(p.get("endpoint")))
        if dist == "choice":
            return g.choice(p["a"], size=like.shape, replace=bool(p.get("replace", True)))
        return f(size=like.shape, **p)
    full = {"dist": name, "seed": 3, **params}
    label = "random_dist[" + name + "".join(f",{k}={v}" for k, v in sorted(params.items())) + "]"
    return case("random_dist", [LIKE], expect, full, chunks=CHUNKS, name=label,
                compare=same_distribution(support), executors=executors)


positive = lambda x: np.all(x >= 0)  # noqa: E731
unit = lambda x: np.all((x >= 0) & (x <= 1))  # noqa: E731

CASES = [
    dist("random", {}, lambda x: np.all((x >= 0) & (x < 1))),
    dist("standard_normal", {}),
    dist("integers", {"low": -3, "high": 4}),
    dist("integers", {"low": -3, "high": 4, "endpoint": True}),
    dist("standard_exponential", {}, positive),
    dist("exponential", {"scale": 2.5}, positive),
    dist("standard_gamma", {"shape": 0.5}, positive),
    dist("gamma", {"shape": 3.0, "scale": 2.0}, positive),
    dist("beta", {"a": 0.5, "b": 0.5}, unit),
    dist("beta", {"a": 2.0, "b": 5.0}, unit),
    dist("chisquare", {"df": 3.0}, positive),
    dist("standard_t", {"df": 5.0}),
    dist("lognormal", {"mean": 0.5, "sigma": 0.4}, positive),
    dist("poisson", {"lam": 3.5}, positive),
    dist("poisson", {"lam": 120.0}, positive),
    dist("binomial", {"n": 20, "p": 0.3}, positive),
    dist("binomial", {"n": 1000, "p": 0.6}, positive),
    dist("geometric", {"p": 0.3}, lambda x: np.all(x >= 1)),
    dist("choice", {"a": 7}, lambda x: np.all((x >= 0) & (x < 7))),
    dist("normal", {"loc": -2.0, "scale": 3.0}),
    dist("uniform", {"low": -1.5, "high": 4.0}, lambda x: np.all((x >= -1.5) & (x < 4.0))),
    dist("laplace", {"loc": 1.0, "scale": 2.0}),
    dist("logistic", {"loc": 1.0, "scale": 0.5}),
    dist("gumbel", {"loc": 0.5, "scale": 2.0}),
    dist("rayleigh", {"scale": 1.5}, positive),
    dist("weibull", {"a": 0.7}, positive),
    dist("weibull", {"a": 3.0}, positive),
    dist("pareto", {"a": 3.0}, positive),
    dist("power", {"a": 0.5}, unit),
    dist("power", {"a": 4.0}, unit),
    dist("standard_cauchy", {}),
    dist("wald", {"mean": 1.5, "scale": 2.0}, positive),
    dist("triangular", {"left": -1.0, "mode": 0.5, "right": 3.0}, lambda x: np.all((x >= -1) & (x <= 3))),
    dist("f", {"dfnum": 5.0, "dfden": 8.0}, positive),
    dist("noncentral_f", {"dfnum": 3.0, "dfden": 20.0, "nonc": 3.0}, positive),
    dist("noncentral_chisquare", {"df": 3.0, "nonc": 2.0}, positive),
    dist("noncentral_chisquare", {"df": 0.5, "nonc": 1.5}, positive),
    dist("noncentral_chisquare", {"df": 2.0, "nonc": 0.0}, positive),
    dist("vonmises", {"mu": 1.0, "kappa": 4.0}, lambda x: np.all((x >= -np.pi) & (x < np.pi))),
    dist("vonmises", {"mu": -3.0, "kappa": 0.5}, lambda x: np.all((x >= -np.pi) & (x < np.pi))),
    dist("negative_binomial", {"n": 5, "p": 0.4}, positive),
    dist("negative_binomial", {"n": 0.7, "p": 0.05}, positive),
    dist("zipf", {"a": 2.5}, lambda x: np.all(x >= 1)),
    dist("logseries", {"p": 0.6}, lambda x: np.all(x >= 1)),
    dist("logseries", {"p": 0.99}, lambda x: np.all(x >= 1)),
    # Both of the sampler's paths: item by item (fewer than 10 draws) and ratio-of-uniforms.
    dist("hypergeometric", {"ngood": 7, "nbad": 12, "nsample": 5}, lambda x: np.all((x >= 0) & (x <= 5))),
    dist("hypergeometric", {"ngood": 7, "nbad": 12, "nsample": 16}, lambda x: np.all((x >= 4) & (x <= 7))),
    dist("hypergeometric", {"ngood": 400, "nbad": 900, "nsample": 300}, lambda x: np.all((x >= 0) & (x <= 300))),
    dist("hypergeometric", {"ngood": 900, "nbad": 400, "nsample": 1000}, lambda x: np.all((x >= 600) & (x <= 900))),
]


def is_permutation(got, exp, inputs, params):
    x = np.asarray(got[0])
    if x.dtype != np.int64 or not np.array_equal(np.sort(x), np.arange(x.size)):
        return "not a permutation of range(n)"
    return None


def distinct_in_range(got, exp, inputs, params):
    x = np.ravel(np.asarray(got[0]))
    if np.unique(x).size != x.size or x.min() < 0 or x.max() >= params["a"]:
        return "not distinct values of range(a)"
    return None


CASES.append(case("random_dist", [np.zeros(97)], lambda like, **p: np.arange(97),
                  {"dist": "permutation", "seed": 5}, chunks=[[(-1,)], [(10,)], [(33,)]],
                  compare=is_permutation, name="random_dist[permutation]"))
CASES.append(case("random_dist", [np.zeros((6, 5))], lambda like, **p: like,
                  {"dist": "choice", "seed": 5, "a": 40, "replace": False},
                  compare=distinct_in_range, name="random_dist[choice,replace=False]"))

# ---- raw files -----------------------------------------------------------------------------------

RAW = rand(9, 7, salt=11)
RAW_PATH = os.path.join(TMP, "numpy.raw")
with open(RAW_PATH, "wb") as f:
    f.write(b"HEADER!!")  # 8 bytes before the array
    RAW.tofile(f)
for chunks in ([-1, -1], [4, 3], [1, 7]):
    CASES.append(case("raw_read", [], lambda **p: RAW,
                      {"path": RAW_PATH, "dtype": "float64", "shape": [9, 7], "chunks": chunks, "offset": 8},
                      name=f"raw_read[chunks={chunks}]"))
INTS = rand(5, 4, 3, dtype="int32", low=-100, high=100, salt=12)
INTS_PATH = os.path.join(TMP, "ints.raw")
INTS.tofile(INTS_PATH)
CASES.append(case("raw_read", [], lambda **p: INTS,
                  {"path": INTS_PATH, "dtype": "int32", "shape": [5, 4, 3], "chunks": [2, 3, 2]},
                  name="raw_read[int32 3d]"))


def file_holds(reader):
    def compare(got, exp, inputs, params):
        if not np.array_equal(np.asarray(got[0]), inputs[0]):
            return "read back differently"
        on_disk = reader(inputs[0], params)
        if on_disk.dtype != inputs[0].dtype or not np.array_equal(on_disk, inputs[0]):
            return "NumPy reads something else from the file"
        return None
    return compare


def raw_from_numpy(x, params):
    return np.fromfile(params["path"], dtype=x.dtype).reshape(x.shape)


for i, x in enumerate([rand(7, 5, salt=13), rand(6, 4, dtype="int64", low=-50, high=50, salt=14),
                       rand(8, 3, salt=15) > 0, rand(5, 6, salt=16).astype("float32")]):
    CASES.append(case("raw_roundtrip", [x], lambda x, **p: x, {"path": os.path.join(TMP, f"rt{i}.raw")},
                      compare=file_holds(raw_from_numpy), name=f"raw_roundtrip[{x.dtype}]"))

# ---- .npy stacks ------------------------------------------------------------------------------------


def stack_from_numpy(x, params):
    with open(os.path.join(params["dir"], "info.json")) as f:
        info = json.load(f)
    parts = [np.load(os.path.join(params["dir"], f"{i}.npy")) for i in range(len(info["chunks"]))]
    return np.concatenate(parts, axis=info["axis"])


for i, (x, axis) in enumerate([(rand(9, 4, salt=17), 0), (rand(5, 8, dtype="int32", low=-9, high=9, salt=18), 1),
                               (rand(4, 3, 5, salt=19) > 0, 2)]):
    CASES.append(case("npy_stack_roundtrip", [x], lambda x, **p: x,
                      {"dir": os.path.join(TMP, f"stack{i}"), "axis": axis},
                      compare=file_holds(stack_from_numpy), name=f"npy_stack_roundtrip[{x.dtype},axis={axis}]"))

STACK = rand(10, 3, salt=20)
STACK_DIR = os.path.join(TMP, "numpy_stack")
os.makedirs(STACK_DIR)
for i, part in enumerate(np.split(STACK, [4, 8])):
    np.save(os.path.join(STACK_DIR, f"{i}.npy"), part)
with open(os.path.join(STACK_DIR, "info.json"), "w") as f:
    json.dump({"format": "tessera-npy-stack", "version": 1, "dtype": "<f8", "shape": [10, 3], "axis": 0,
               "chunks": [4, 4, 2]}, f)
CASES.append(case("npy_stack_read", [], lambda **p: STACK, {"dir": STACK_DIR}))

# ---- HDF5 (h5py is not in the environment: Tessera reads back what it wrote) -----------------------

for i, x in enumerate([rand(7, 5, salt=21), rand(6, 4, dtype="int32", low=-50, high=50, salt=22),
                       rand(8, 3, salt=23) > 0]):
    CASES.append(case("hdf5_roundtrip", [x], lambda x, **p: x, {"path": os.path.join(TMP, f"data{i}.h5")},
                      name=f"hdf5_roundtrip[{x.dtype}]"))

# ---- rows of counts ----------------------------------------------------------------------------

def same_rows(total):
    """Counts (size + (k,)) that add up to `total` per row, each column distributed as NumPy's."""
    def compare(got, exp, inputs, params):
        x, y = np.asarray(got[0]), np.asarray(exp[0])
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"shape {x.shape} {x.dtype}, NumPy {y.shape} {y.dtype}"
        if np.any(x < 0) or np.any(x.sum(axis=-1) != total(params)):
            return "a row's counts are negative or do not add up"
        if "colors" in params and np.any(x > np.array(params["colors"])):
            return "more of a colour than there is"
        for j in range(x.shape[-1]):
            d = ks_two_sample(x[..., j], y[..., j])
            limit = 2.23 * np.sqrt(2.0 / x[..., j].size)
            if d > limit:
                return f"column {j}: KS distance {d:.4f} > {limit:.4f} from NumPy's samples"
        return None
    return compare


def rows(name, params, total):
    def expect(like, dist, seed, **p):
        g = np.random.default_rng(int(seed) + 1000)
        if dist == "multinomial":
            return g.multinomial(p["n"], [float(v) for v in p["pvals"].split(",")], size=like.shape)
        return g.multivariate_hypergeometric(p["colors"], p["nsample"], size=like.shape,
                                             method=p.get("method", "marginals"))
    label = "random_rows[" + name + "".join(f",{k}={v}" for k, v in sorted(params.items())) + "]"
    return case("random_rows", [LIKE], expect, {"dist": name, "seed": 4, **params}, chunks=CHUNKS, name=label,
                compare=same_rows(total), api=("random." + name,))


CASES += [
    rows("multinomial", {"n": 20, "pvals": "0.2,0.5,0.3"}, lambda p: p["n"]),
    rows("multinomial", {"n": 500, "pvals": "0.05,0.15,0.6,0.2"}, lambda p: p["n"]),
    rows("multivariate_hypergeometric", {"colors": [5, 9, 3], "nsample": 8}, lambda p: p["nsample"]),
    rows("multivariate_hypergeometric", {"colors": [300, 120, 500, 80], "nsample": 400}, lambda p: p["nsample"]),
    rows("multivariate_hypergeometric", {"colors": [5, 9, 3], "nsample": 8, "method": "count"}, lambda p: p["nsample"]),
]
CASES.append(case("random_rows", [LIKE], None, {"dist": "multinomial", "seed": 1, "n": 5, "pvals": "0.9,0.9,0.1"},
                  raises="Error", api=(), name="random_rows[multinomial,pvals>1]"))
CASES.append(case("random_rows", [LIKE], None, {"dist": "multivariate_hypergeometric", "seed": 1, "colors": [2, 3],
                                                "nsample": 6}, raises="Error", api=(),
                  name="random_rows[multivariate_hypergeometric,nsample>total]"))
CASES.append(case("random_dist", [LIKE], None, {"dist": "hypergeometric", "seed": 1, "ngood": 2, "nbad": 3, "nsample": 6},
                  raises="Error", api=(), name="random_dist[hypergeometric,nsample>total]"))

# The dask.array names each case checks (run.py --api-report).
for _c in CASES:
    if _c.fn == "random_dist" and _c.raises is None:
        _c.api = ("random." + _c.params["dist"],)
    elif _c.fn == "npy_stack_roundtrip":
        _c.api = ("to_npy_stack", "from_npy_stack")
    elif _c.fn == "npy_stack_read":
        _c.api = ("from_npy_stack",)
    elif _c.fn == "hdf5_roundtrip":
        _c.api = ("to_hdf5",)
