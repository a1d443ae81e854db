"""Conformance of numpy_names.hpp and of existing operations under their NumPy names."""
import numpy as np

from conformance import case, rand, with_nans

A = rand(6, 4, salt=20)
B = rand(6, 4, salt=21, low=0.5, high=3.0)
I = rand(6, 4, dtype="int64", low=-7, high=7, salt=22)
J = rand(6, 4, dtype="int64", low=1, high=4, salt=23)
SPECIAL = np.array([[0.5, -0.5, 2.25, -2.25], [np.inf, -np.inf, np.nan, 0.0], [1e300, -3.0, 7.75, -0.0]])
BOOLS = (rand(6, 4, salt=24) > 0, rand(6, 4, salt=25) > 0)

CASES = []
for op, f in (("true_divide", np.true_divide), ("remainder", np.remainder), ("greater", np.greater),
              ("greater_equal", np.greater_equal), ("less_equal", np.less_equal), ("not_equal", np.not_equal)):
    CASES.append(case("names_binary", [A, B], lambda a, b, op, f=f: f(a, b), {"op": op}))
    CASES.append(case("names_binary", [I, J], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"names_binary[int][{op}]"))
CASES.append(case("names_binary", [A, B], lambda a, b, op: np.divmod(a, b), {"op": "divmod"}))
CASES.append(case("names_binary", [I, J], lambda a, b, op: np.divmod(a, b), {"op": "divmod"}, name="names_binary[int][divmod]"))
CASES.append(case("names_binary", [A, J], lambda a, b, op: np.ldexp(a, b), {"op": "ldexp"}))
for op, f in (("logical_and", np.logical_and), ("logical_or", np.logical_or)):
    CASES.append(case("names_binary", list(BOOLS), lambda a, b, op, f=f: f(a, b), {"op": op}))
for op, f in (("fabs", np.fabs), ("fix", np.fix), ("isnull", np.isnan), ("notnull", lambda x: ~np.isnan(x)),
              ("isfinite", np.isfinite), ("modf", np.modf)):
    CASES.append(case("names_unary", [SPECIAL], lambda x, op, f=f: f(x), {"op": op}))
    CASES.append(case("names_unary", [with_nans(A)], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[nans][{op}]"))
CASES.append(case("names_unary", [I], lambda x, op: np.fabs(x), {"op": "fabs"}, name="names_unary[int][fabs]"))

# Functions that step between neighbouring floats: exact, in each float dtype, at the edges of
# the formats (zeros, subnormals, powers of two, the greatest finite value, infinities, NaN).
def edges(dtype):
    fi = np.finfo(dtype)
    tiny = fi.smallest_subnormal
    v = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.75, -3.5, float(tiny), -float(tiny), float(tiny) * 3,
         float(fi.tiny), -float(fi.tiny), float(fi.tiny) * 1.5, float(fi.max), -float(fi.max), np.inf, -np.inf, np.nan,
         1e-3, 12345.678, -6.25e-5]
    a = np.array(v, dtype=dtype)
    return a.reshape(2, 11)
TOWARD = np.array([[1.0, -1.0, 0.0, 2.0, 1.0, np.inf, 0.0, -np.inf, 0.0, 0.0, np.inf],
                   [0.0, 0.0, -np.inf, 0.0, 0.0, np.inf, -np.inf, 0.0, np.nan, 5.0, -1.0]])
for dt in ("float64", "float32", "float16"):
    E = edges(dt)
    for op, f in (("spacing", np.spacing), ("frexp", np.frexp)):
        CASES.append(case("names_unary", [E], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[{dt}][{op}]",
                          rtol=0, atol=0))
    CASES.append(case("names_binary", [E, TOWARD.astype(dt)], lambda a, b, op: np.nextafter(a, b), {"op": "nextafter"},
                      name=f"names_binary[{dt}][nextafter]", rtol=0, atol=0))
    CASES.append(case("names_binary", [E, E[::-1]], lambda a, b, op: np.nextafter(a, b), {"op": "nextafter"},
                      name=f"names_binary[{dt}][nextafter][reversed]", rtol=0, atol=0))
for op, f in (("spacing", np.spacing), ("frexp", np.frexp), ("i0", np.i0)):
    CASES.append(case("names_unary", [I], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[int][{op}]",
                      rtol=0 if op != "i0" else None, atol=0 if op != "i0" else None))
    CASES.append(case("names_unary", [with_nans(A)], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[nans][{op}]"))
I0X = np.concatenate([np.linspace(-30, 30, 37), np.array([0.0, 19.99, 20.0, 20.01, 100.0, -500.0, 709.0, 710.0, np.inf, -np.inf, np.nan])]).reshape(4, 12)
CASES.append(case("names_unary", [I0X], lambda x, op: np.i0(x), {"op": "i0"}, name="names_unary[wide][i0]", rtol=1e-14))
CASES.append(case("names_unary", [I0X.astype("float32")], lambda x, op: np.i0(x), {"op": "i0"}, name="names_unary[float32][i0]",
                  rtol=1e-6))
CASES.append(case("names_binary", [A, B], lambda a, b, op: np.nextafter(a, b), {"op": "nextafter"}, rtol=0, atol=0))
CASES.append(case("names_unary", [BOOLS[0]], lambda x, op: np.logical_not(x), {"op": "logical_not"}))

CASES.append(case("select_case", [A], lambda x, lo, hi, default: np.select([x < lo, x > hi], [-x, x * 2.0], default),
                  {"lo": -0.5, "hi": 0.5, "default": 7.0}, api="select"))
CHOICE_IDX = rand(6, 4, dtype="int64", low=-1, high=4, salt=26)
C0, C1, C2 = rand(6, 4, salt=27), rand(6, 4, salt=28), rand(4, salt=29)
CASES.append(case("choose_case", [CHOICE_IDX, C0, C1, C2], lambda a, c0, c1, c2, mode: np.choose(a, [c0, c1, c2], mode=mode),
                  {"mode": "clip"}, api="choose", chunks=[[(3, 2), (3, 2), (3, 2), (2,)], [(-1, -1)] * 3 + [(-1,)]]))
CASES.append(case("choose_case", [CHOICE_IDX, C0, C1, C2], lambda a, c0, c1, c2, mode: np.choose(a, [c0, c1, c2], mode=mode),
                  {"mode": "wrap"}, api="choose", chunks=[[(3, 2), (3, 2), (3, 2), (2,)]]))
PW = rand(5, 6, salt=30, low=-1.5, high=2.5)
CASES.append(case("piecewise_case", [PW], lambda x: np.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * v]),
                  api="piecewise"))
CASES.append(case("piecewise_case", [PW], lambda x, with_default: np.piecewise(
    x, [x < 0, x > 1], [lambda v: -v, lambda v: v * v, lambda v: v + 100]), {"with_default": True}, api="piecewise"))
R0 = rand(7, dtype="int64", low=-1, high=5, salt=31)
R1 = rand(7, dtype="int64", low=0, high=6, salt=32)
CASES.append(case("ravel_multi_index_case", [R0, R1],
                  lambda a, b, dims, mode: np.ravel_multi_index((a, b), dims, mode=mode), {"dims": [4, 5], "mode": "clip"},
                  api="ravel_multi_index"))
CASES.append(case("ravel_multi_index_case", [R0, R1],
                  lambda a, b, dims, mode: np.ravel_multi_index((a, b), dims, mode=mode), {"dims": [3, 4], "mode": "wrap"},
                  api="ravel_multi_index"))
FLAT = rand(9, dtype="int64", low=0, high=60, salt=33)
CASES.append(case("unravel_index_case", [FLAT], lambda i, dims: np.unravel_index(i, dims), {"dims": [3, 4, 5]},
                  api="unravel_index"))
for which in ("tril", "triu"):
    f = np.tril_indices if which == "tril" else np.triu_indices
    for n, k, m in ((4, 0, -1), (5, 1, 3), (3, -1, 6)):
        CASES.append(case("triangle_indices", [np.zeros(1)],
                          lambda _, which, n, k, m, chunk, f=f: f(n, k, None if m < 0 else m),
                          {"which": which, "n": n, "k": k, "m": m, "chunk": 2}, api=f"{which}_indices",
                          chunks=[[(1,)]]))
    g = np.tril_indices_from if which == "tril" else np.triu_indices_from
    CASES.append(case("triangle_indices_from", [rand(4, 6, salt=34)], lambda a, which, k, g=g: g(a, k),
                      {"which": which, "k": 1}, api=f"{which}_indices_from"))
X3 = rand(5, 4, 3, salt=35)
for order in (0, 1, 2, 3, 4):
    CASES.append(case("moment_case", [X3], lambda x, order, axis: np.mean(
        (x - x.mean(axis=tuple(axis), keepdims=True)) ** order, axis=tuple(axis)), {"order": order, "axis": [0, 2]},
        api="moment"))
CASES.append(case("moment_case", [A], lambda x, order, ddof: np.sum((x - x.mean()) ** order) / (x.size - ddof),
                  {"order": 2, "ddof": 1}, api="moment"))
CASES.append(case("apply_over_axes_case", [X3], lambda x, axes: np.apply_over_axes(np.sum, x, axes), {"axes": [0, 2]},
                  api="apply_over_axes"))
CO = rand(6, 9, salt=36)
for kind, f in (("sum", np.sum), ("mean", np.mean), ("min", np.min), ("max", np.max), ("prod", np.prod)):
    CASES.append(case("coarsen_case", [CO], lambda x, kind, factors, f=f: f(x.reshape(3, 2, 3, 3), axis=(1, 3)),
                      {"kind": kind, "factors": [2, 3]}, api="coarsen"))
CASES.append(case("coarsen_case", [rand(7, 10, salt=37)], lambda x, kind, factors, trim: x[:6, :9].reshape(2, 3, 3, 3).sum(axis=(1, 3)),
                  {"kind": "sum", "factors": [3, 3], "trim": True}, api="coarsen"))
CASES.append(case("coarsen_case", [rand(7, 10, salt=37)], None, {"kind": "sum", "factors": [3, 3]}, raises="ShapeError",
                  api=(), chunks=[[(-1, -1)]], name="coarsen[not a multiple]"))
CASES.append(case("map_blocks_case", [A], lambda x: 2 * x + 1, api="map_blocks"))


def _row_summary(v):
    return np.array([v.sum(), v.max() - v.min(), v[0]])


for _axis in (0, 1, -1):
    CASES.append(case("apply_along_axis_case", [A], lambda x, axis, summary: np.apply_along_axis(_row_summary, axis, x),
                      {"axis": _axis, "summary": True}, api="apply_along_axis"))
CASES.append(case("apply_along_axis_case", [A], lambda x, axis, summary: np.apply_along_axis(lambda v: (v * v).sum(), axis, x),
                  {"axis": 1, "summary": False}, api="apply_along_axis"))
CASES.append(case("result_type_case", [A.astype("float32"), I.astype("int32")], lambda a, b: np.zeros((), np.result_type(a, b)),
                  api="result_type"))
CASES.append(case("dot_case", [rand(5, 3, salt=38), rand(3, 4, salt=39)], lambda a, b: np.dot(a, b), api=("dot", "matmul")))
CASES.append(case("broadcast_to_case", [rand(1, 4, salt=40)], lambda x, shape: np.broadcast_to(x, shape), {"shape": [3, 4]},
                  api="broadcast_to"))
CASES.append(case("names_binary", [A, B], lambda a, b, op: a, {"op": "nope"}, raises="invalid_argument", api=(),
                  chunks=[[(-1, -1), (-1, -1)]], name="names_binary[unknown op is an error]"))

E = rand(5, 6, salt=41)
for idx, axis in (([2], 0), ([0, 3, 3, 6], 1), ([-1], 1), ([5], 0)):
    CASES.append(case("insert_case", [E], lambda x, indices, value, axis: np.insert(x, indices, value, axis),
                      {"indices": idx, "value": 9.5, "axis": axis}, api="insert"))
CASES.append(case("insert_case", [E, rand(6, salt=42)], lambda x, v, indices, axis: np.insert(x, indices, v, axis),
                  {"indices": [1, 4], "axis": 0}, api="insert", chunks=[[(2, 3), (3,)], [(-1, -1), (-1,)]]))
CASES.append(case("insert_case", [E], None, {"indices": [7], "value": 1, "axis": 0}, raises="IndexError", api=(),
                  chunks=[[(-1, -1)]], name="insert[out of bounds]"))
for idx, axis in (([0], 0), ([1, 3, 3], 1), ([-1, 0], 1), ([0, 1, 2, 3, 4], 0)):
    CASES.append(case("delete_case", [E], lambda x, indices, axis: np.delete(x, indices, axis),
                      {"indices": idx, "axis": axis}, api="delete"))
CASES.append(case("append_case", [E, rand(5, 2, salt=43)], lambda a, b, axis: np.append(a, b, axis), {"axis": 1},
                  api="append", chunks=[[(2, 2), (2, 2)], [(-1, -1), (-1, -1)]]))
G = rand(6, 5, 4, salt=44)
CASES.append(case("gradient_case", [G], lambda f: np.gradient(f), api="gradient"))
CASES.append(case("gradient_case", [G], lambda f, axes, h: np.gradient(f, h, axis=tuple(axes)), {"axes": [1], "h": 0.5},
                  api="gradient"))
CASES.append(case("gradient_case", [rand(2, 7, salt=45)], lambda f, axes: np.gradient(f, axis=tuple(axes)), {"axes": [0, 1]},
                  api="gradient"))

ONE = np.zeros(1)
for f, extra, expect in (("zeros", {}, lambda shape, dtype: np.zeros(shape, dtype)),
                         ("ones", {}, lambda shape, dtype: np.ones(shape, dtype)),
                         ("full", {"value": 2.5}, lambda shape, dtype, value: np.full(shape, value, dtype))):
    for dtype in ("float64", "int32"):
        CASES.append(case("creation_case", [ONE], lambda _, f, f2=expect, **p: f2(**p),
                          {"f": f, "shape": [5, 3], "dtype": dtype, **extra}, api=f, chunks=[[(1,)]],
                          name=f"creation[{f}][{dtype}]"))
for start, stop, step in ((0, 10, 1), (-3.5, 7.25, 0.75), (10, 0, -3)):
    CASES.append(case("creation_case", [np.zeros(4)], lambda _, f, start, stop, step, shape: np.arange(start, stop, step),
                      {"f": "arange", "start": start, "stop": stop, "step": step, "shape": []}, api="arange",
                      chunks=[[(4,)]], check_dtype=False, name=f"creation[arange {start},{stop},{step}]"))


def same_shape_and_dtype(got, exp, inputs, params):
    if got[0].shape != exp[0].shape or got[0].dtype != exp[0].dtype:
        return f"got {got[0].dtype}{got[0].shape}, NumPy's empty is {exp[0].dtype}{exp[0].shape}"
    return None


CASES.append(case("empty_case", [np.zeros(2)], lambda _, shape, dtype: np.empty(shape, dtype),
                  {"shape": [4, 3], "dtype": "int32"}, api="empty", chunks=[[(1,)], [(2,)]],
                  compare=same_shape_and_dtype))

RX = rand(7, 6, salt=46)
CASES.append(case("reduction_case", [RX], lambda x: np.asarray((x ** 2).sum()), api="reduction"))
CASES.append(case("reduction_case", [RX], lambda x, axis, keepdims: (x ** 2).sum(axis=tuple(axis), keepdims=keepdims),
                  {"axis": [1], "keepdims": True}, api="reduction"))
CASES.append(case("reduction_case", [RX], lambda x, axis, split_every: (x ** 2).sum(axis=tuple(axis)),
                  {"axis": [0], "split_every": 2}, api="reduction", chunks=[[(1, 3)], [(2, 2)]]))

CPLX = (rand(4, 3, salt=47) + 1j * np.where(rand(4, 3, salt=48) > 0, rand(4, 3, salt=49), 0)).astype("complex128")
for op, f in (("iscomplex", np.iscomplex), ("isreal", np.isreal)):
    CASES.append(case("names_unary", [CPLX], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[complex][{op}]"))
    CASES.append(case("names_unary", [A], lambda x, op, f=f: f(x), {"op": op}, name=f"names_unary[real][{op}]"))
CASES.append(case("names_unary", [X3], lambda x, op: np.array(np.shape(x)), {"op": "shape"}))
CASES.append(case("names_unary", [X3], lambda x, op: np.asarray(np.ndim(x)), {"op": "ndim"}))

U1 = rand(9, dtype="int64", low=-4, high=6, salt=40)
CASES.append(case("union1d_case", [I, U1], lambda a, b: np.union1d(a, b), api="union1d"))
CASES.append(case("union1d_case", [with_nans(A), rand(5, salt=41)], lambda a, b: np.union1d(a, b), api="union1d",
                  name="union1d_case[nans]"))
for shape, chunk in (([5, 7], 3), ([4, 4], 4), ([1, 6], 2)):
    CASES.append(case("fromfunction_case", [], lambda shape, chunk: np.fromfunction(lambda i, j: i * 10.0 + j * j, shape),
                      {"shape": shape, "chunk": chunk}, api="fromfunction"))
CASES.append(case("unify_chunks_case", [A, B], lambda a, b: (a, b, a + b), api="unify_chunks",
                  chunks=[[(3, 2), (2, 3)], [(4, 4), (6, 1)], [(6, 4), (1, 1)]]))
_A3 = rand(5, 4, 3, salt=41)
CASES.append(case("apply_along_axis_case", [_A3], lambda x, axis, summary: np.apply_along_axis(_row_summary, axis, x),
                  {"axis": 1, "summary": True}, api="apply_along_axis", name="apply_along_axis_case[3d axis=1]"))
for _fn in ("from_array", "asarray", "asanyarray", "array"):
    CASES.append(case("from_array_case", [A], lambda x, fn: x, {"fn": _fn}, api=_fn))
CASES.append(case("from_array_case", [rand(4, 3, 2, dtype="int32", low=-5, high=5, salt=44)], lambda x, fn: x,
                  {"fn": "from_array"}, api="from_array", name="from_array_case[int32 3d]"))
