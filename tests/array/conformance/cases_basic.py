"""Conformance of the operations the array layer had before the harness."""
import numpy as np

from conformance import case, rand, with_nans

A = rand(7, 5)
B = rand(7, 5, salt=1)
POS = rand(7, 5, low=0.1, high=3.0, salt=2)
I = rand(7, 5, dtype="int64", low=-9, high=9, salt=3)
J = rand(7, 5, dtype="int64", low=1, high=5, salt=4)
ROW = rand(5, salt=5)
M = rand(6, 4, salt=6)
N = rand(4, 3, salt=7)
T3 = rand(4, 3, 5, salt=8)

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "floor_divide": np.floor_divide, "mod": np.mod, "minimum": np.minimum,
    "maximum": np.maximum, "lt": np.less, "eq": np.equal,
}
UNARY = {
    "negative": (np.negative, A), "abs": (np.abs, A), "exp": (np.exp, A), "log": (np.log, POS),
    "log1p": (np.log1p, POS), "sqrt": (np.sqrt, POS), "square": (np.square, A), "sin": (np.sin, A),
    "cos": (np.cos, A), "tan": (np.tan, A), "tanh": (np.tanh, A), "floor": (np.floor, A),
    "ceil": (np.ceil, A), "sign": (np.sign, A), "isnan": (np.isnan, with_nans(A)),
}
REDUCE = {
    "sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "mean": np.mean,
    "var": np.var, "std": np.std, "any": np.any, "all": np.all,
}


# Dask's names where the C++ case's op differs.
DASK_NAME = {"sub": ("subtract",), "mul": ("multiply",), "div": ("divide", "true_divide"), "lt": ("less",),
             "eq": ("equal",), "abs": ("abs", "absolute"), "mod": ("mod", "remainder")}


def api(op):
    return DASK_NAME.get(op, (op,))


def binary(op):
    f = BINARY[op]
    return lambda a, b, op: f(a, b)


def unary(op):
    f = UNARY[op][0]
    return lambda x, op: f(x)


def reduce(op):
    f = REDUCE[op]

    def expect(x, op, axis=None, keepdims=False, ddof=None, split_every=None):
        kw = {"ddof": ddof} if ddof is not None else {}
        ax = tuple(axis) if isinstance(axis, list) else axis
        return np.asarray(f(x, axis=ax, keepdims=keepdims, **kw))
    return expect


CASES = []
for op in BINARY:
    CASES.append(case("binary", [A, B], binary(op), {"op": op}, api=api(op)))
    CASES.append(case("binary", [I, J], binary(op), {"op": op}, name=f"binary[int64][op={op}]", api=api(op)))
CASES.append(case("binary", [A, ROW], binary("add"), {"op": "add"}, name="binary[broadcast row]", api=("add", "broadcast_to"),
                  chunks=[[(3, 2), (2,)], [(-1, -1), (-1,)]]))
CASES.append(case("binary", [POS, B], lambda a, b, op: np.power(a, b), {"op": "power"}))
for op, (_, x) in UNARY.items():
    CASES.append(case("unary", [x], unary(op), {"op": op}, api=api(op)))
CASES.append(case("where3", [A > 0, A, B], lambda c, a, b: np.where(c, a, b), api="where"))
for op in REDUCE:
    src = (A > 0) if op in ("any", "all") else A
    CASES.append(case("reduce", [src], reduce(op), {"op": op}))
    for axis in ([0], [1]):
        CASES.append(case("reduce", [src], reduce(op), {"op": op, "axis": axis}))
    CASES.append(case("reduce", [T3 if op not in ("any", "all") else T3 > 0], reduce(op),
                      {"op": op, "axis": [0, 2], "keepdims": True}, name=f"reduce[3d][op={op}]"))
CASES.append(case("reduce", [A], reduce("var"), {"op": "var", "ddof": 1}))
CASES.append(case("reduce", [A], reduce("std"), {"op": "std", "ddof": 1, "axis": [0]}))
CASES.append(case("reduce", [I], reduce("sum"), {"op": "sum", "axis": [1]}, name="reduce[int64 sum]"))
for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
    CASES.append(case("reduce", [A], lambda x, op, f=f: np.asarray(f(x)), {"op": op}))
    CASES.append(case("reduce", [A], lambda x, op, axis, f=f: f(x, axis=axis[0]), {"op": op, "axis": [1]}))
# Long rows (blocks of 16 passed over at once), ties (the first wins) and NaN (the first NaN wins).
WIDE_ARG = np.round(rand(5, 70, salt=47) * 2)
WIDE_ARG[1, 33] = np.nan
WIDE_ARG[3, 5] = WIDE_ARG[3, 60] = np.nan
WIDE_ARG[4, 69] = np.nan
for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
    for x, tag in ((WIDE_ARG, "nan"), (np.nan_to_num(WIDE_ARG), "ties")):
        CASES.append(case("reduce", [x], lambda x, op, f=f: np.asarray(f(x)), {"op": op}, name=f"reduce[wide {tag}][{op}]"))
        CASES.append(case("reduce", [x], lambda x, op, axis, f=f: f(x, axis=axis[0]), {"op": op, "axis": [1]},
                          name=f"reduce[wide {tag}][{op}, axis 1]"))
CASES.append(case("transpose", [A], lambda x: x.T))
CASES.append(case("transpose", [T3], lambda x, axes: np.transpose(x, axes), {"axes": [1, 2, 0]}))
CASES.append(case("slice2d", [A], lambda x, **p: x[1:6:2, ::-1], {"start0": 1, "stop0": 6, "step0": 2, "step1": -1}, api="getitem"))
CASES.append(case("slice2d", [A], lambda x, **p: x[-1:0:-3, 1:4], {"start0": -1, "stop0": 0, "step0": -3, "start1": 1, "stop1": 4}, api="getitem"))
CASES.append(case("rechunk_sum", [A], lambda x, chunks: (x, np.asarray(x.sum())), {"chunks": [4, 3]}, api="rechunk"))
CASES.append(case("concatenate", [A, B], lambda a, b, axis: np.concatenate([a, b], axis), {"axis": 1}))
CASES.append(case("stack", [A, B], lambda a, b, axis: np.stack([a, b], axis), {"axis": 2}))
CASES.append(case("reshape", [A], lambda x, shape: x.reshape(shape), {"shape": [35]}, chunks=[[(-1, -1)], [(1, 5)]]))
CASES.append(case("matmul", [M, N], lambda a, b: a @ b))
CASES.append(case("astype", [A], lambda x, dtype: x.astype(dtype), {"dtype": "int32"}, api="Array.astype"))
CASES.append(case("transpose_sum", [rand(6, 6)], lambda x: np.asarray((x + x.T).sum()), api=("transpose", "sum")))
# Errors: shapes that do not broadcast.
CASES.append(case("binary", [A, rand(3, 5)], None, {"op": "add"}, name="binary[bad broadcast]", raises="ShapeError", api=(),
                  chunks=[[(-1, -1), (-1, -1)]]))
