"""Conformance of the creation and shape functions (creation_more.hpp, shape.hpp) and of
irregular and automatic chunks (chunks.hpp)."""
import numpy as np

from conformance import case, rand

LIKE = np.zeros(1)  # creation cases' only input: it carries the target (host or device)
A = rand(7, 5)
I = rand(6, 4, dtype="int64", low=-9, high=9, salt=1)
T3 = rand(3, 4, 5, salt=2)
S = rand(1, 4, 1, 3, salt=3)
V = rand(5, salt=4)
W = rand(3, salt=5)
SQ = rand(6, 6, salt=6)
B = rand(4, 5, dtype="int32", low=-5, high=5, salt=7) > 0
CHUNKS = ("auto", [2], [3])

CASES = []


def creation(fn, expect, params, chunks=CHUNKS, **kw):
    for c in chunks:
        CASES.append(case(fn, [LIKE], lambda like, **p: expect(**{k: v for k, v in p.items() if k != "chunks"}),
                          dict(params, chunks=c), **kw))


def lin(start, stop, num, endpoint=True, dtype=None):
    y, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True, dtype=dtype)
    return y, np.asarray(step, dtype="float64")


for start, stop, num, endpoint in ((0, 1, 5, True), (2.0, 3.0, 4, False), (-1, 7.5, 13, True), (0.1, 0.7, 7, True),
                                   (5, -5, 9, False), (3, 3, 4, True), (1, 2, 1, True), (1, 2, 0, True)):
    creation("linspace", lin, {"start": start, "stop": stop, "num": num, "endpoint": endpoint})
creation("linspace", lin, {"start": -2.5, "stop": 2.5, "num": 6, "dtype": "int64"})
creation("linspace", lin, {"start": 0, "stop": 1, "num": 5, "dtype": "float32"})
creation("logspace", lambda start, stop, num, endpoint=True, base=10.0: np.logspace(start, stop, num, endpoint, base),
         {"start": 0, "stop": 3, "num": 7})
creation("logspace", lambda start, stop, num, endpoint=True, base=10.0: np.logspace(start, stop, num, endpoint, base),
         {"start": 1, "stop": 4, "num": 3, "endpoint": False, "base": 2.0})
for start, stop, num, endpoint in ((1, 1000, 4, True), (3, 7, 9, True), (-1, -1000, 5, False), (2, 0.5, 6, True)):
    creation("geomspace", lambda start, stop, num, endpoint=True: np.geomspace(start, stop, num, endpoint),
             {"start": start, "stop": stop, "num": num, "endpoint": endpoint})
CASES.append(case("geomspace", [LIKE], None, {"start": 0, "stop": 1, "num": 3}, name="geomspace[zero]", raises="Error",
                  executors=(("threads", "host"),)))
for N, M, k in ((4, None, 0), (5, 3, 1), (3, 6, -2), (4, 5, 7), (0, 3, 0)):
    p = {"N": N, "k": k}
    if M is not None:
        p["M"] = M
    creation("eye", lambda N, k, M=None: np.eye(N, M, k), p)
    creation("tri", lambda N, k, M=None, dtype=None: np.tri(N, M, k, dtype=dtype or float), dict(p, dtype="int32"))
creation("identity", lambda n, dtype=None: np.identity(n, dtype=dtype), {"n": 4, "dtype": "bool"})
creation("indices", lambda dims, dtype=None: np.indices(dims, dtype=dtype or int), {"dims": [2, 3]})
creation("indices", lambda dims, dtype=None: np.indices(dims, dtype=dtype), {"dims": [3, 1, 4], "dtype": "int32"})

for k in (-2, 0, 1, 3):
    CASES.append(case("tril", [I], lambda x, k: np.tril(x, k), {"k": k}))
    CASES.append(case("triu", [I], lambda x, k: np.triu(x, k), {"k": k}))
CASES.append(case("triu", [T3], lambda x, k: np.triu(x, k), {"k": 1}, name="triu[3d]"))
CASES.append(case("tril", [V], lambda x: np.tril(x), name="tril[1d]"))
for k in (0, 2, -1):
    CASES.append(case("diag", [V], lambda x, k: np.diag(x, k), {"k": k}))
for k in (0, 1, 4, -2, -5, 9):
    CASES.append(case("diag", [A], lambda x, k: np.diag(x, k), {"k": k}, name=f"diag[2d][k={k}]"))
CASES.append(case("diagonal", [T3], lambda x, **p: np.diagonal(x, p["offset"], p["axis1"], p["axis2"]),
                  {"offset": 1, "axis1": 1, "axis2": 2}))
CASES.append(case("diagonal", [T3], lambda x, **p: np.diagonal(x, p["offset"], p["axis1"], p["axis2"]),
                  {"offset": -1, "axis1": 2, "axis2": 0}))
CASES.append(case("diagonal", [T3], None, {"axis1": 1, "axis2": 1}, name="diagonal[same axes]", raises="ShapeError",
                  executors=(("threads", "host"),)))
for indexing in ("xy", "ij"):
    CASES.append(case("meshgrid", [V, W, rand(2, salt=9)], lambda *xs, indexing: np.meshgrid(*xs, indexing=indexing),
                      {"indexing": indexing}))
    CASES.append(case("meshgrid", [V, W], lambda *xs, indexing: np.meshgrid(*xs, indexing=indexing),
                      {"indexing": indexing}, name=f"meshgrid[2][{indexing}]"))
CASES.append(case("like", [A], lambda x, f: np.zeros_like(x), {"f": "zeros"}))
CASES.append(case("like", [I], lambda x, f, dtype: np.ones_like(x, dtype=dtype), {"f": "ones", "dtype": "float32"}))
CASES.append(case("like", [I], lambda x, f, value: np.full_like(x, value), {"f": "full", "value": 2.75}))
CASES.append(case("like", [A], lambda x, f, dtype: np.empty_like(x, dtype=dtype), {"f": "empty", "dtype": "int32"},
                  compare=lambda got, exp, inputs, params: None
                  if got[0].shape == exp[0].shape and got[0].dtype == exp[0].dtype else "shape or dtype differs"))

CASES.append(case("squeeze", [S], lambda x: np.squeeze(x)))
CASES.append(case("squeeze", [S], lambda x, axis: np.squeeze(x, tuple(axis)), {"axis": [0, -2]}))
CASES.append(case("squeeze", [S], None, {"axis": [1]}, name="squeeze[not one]", raises="ShapeError",
                  executors=(("threads", "host"),)))
CASES.append(case("expand_dims", [A], lambda x, axis: np.expand_dims(x, tuple(axis)), {"axis": [0, 3]}))
CASES.append(case("expand_dims", [V], lambda x, axis: np.expand_dims(x, tuple(axis)), {"axis": [-1]}))
for n, f in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
    for x, tag in ((V, "1d"), (A, "2d")):
        CASES.append(case("atleast", [x], lambda x, n, f=f: f(x), {"n": n}, name=f"atleast[{n}][{tag}]"))
CASES.append(case("ravel", [T3], lambda x: np.ravel(x)))
CASES.append(case("flip", [T3], lambda x: np.flip(x)))
CASES.append(case("flip", [T3], lambda x, axis: np.flip(x, tuple(axis)), {"axis": [0, -1]}))
CASES.append(case("fliplr", [A], np.fliplr))
CASES.append(case("flipud", [T3], np.flipud))
for k in (1, 2, 3, -1, 4):
    CASES.append(case("rot90", [A], lambda x, k: np.rot90(x, k), {"k": k}))
CASES.append(case("rot90", [T3], lambda x, k, axes: np.rot90(x, k, tuple(axes)), {"k": 1, "axes": [2, 0]}))
CASES.append(case("swapaxes", [T3], lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2), {"axis1": 0, "axis2": -1}))
CASES.append(case("moveaxis", [T3], lambda x, source, destination: np.moveaxis(x, source, destination),
                  {"source": [0, 1], "destination": [-1, 0]}))
CASES.append(case("rollaxis", [T3], lambda x, axis, start: np.rollaxis(x, axis, start), {"axis": 2, "start": 0}))
CASES.append(case("rollaxis", [T3], lambda x, axis, start: np.rollaxis(x, axis, start), {"axis": 0, "start": 3}))
for shift in (1, -3, 12):
    CASES.append(case("roll", [A], lambda x, shift: np.roll(x, shift), {"shift": shift}))
    CASES.append(case("roll", [A], lambda x, shift, axis: np.roll(x, shift[0], axis[0]), {"shift": [shift], "axis": [1]}))
CASES.append(case("roll", [T3], lambda x, shift, axis: np.roll(x, tuple(shift), tuple(axis)),
                  {"shift": [1, -2, 3], "axis": [0, 2, 0]}))
for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    for width in ([2, 1, 0, 3], [1, 1], [7, 9, 4, 6]):
        CASES.append(case("pad", [A], lambda x, width, mode, value=0.0: np.pad(
            x, [(width[i], width[i + 1]) for i in range(0, len(width), 2)] if len(width) > 2 else [tuple(width)],
            mode, **({"constant_values": value} if mode == "constant" else {})),
            {"width": width, "mode": mode, **({"value": 1.5} if mode == "constant" else {})}))
CASES.append(case("pad", [I], lambda x, width, mode, value: np.pad(x, [tuple(width)], mode, constant_values=value),
                  {"width": [1, 2], "mode": "constant", "value": 2.7}, name="pad[int constant]"))
CASES.append(case("pad", [rand(1, 3, salt=11)], lambda x, width, mode: np.pad(x, [(2, 1), (0, 0)], mode),
                  {"width": [2, 1, 0, 0], "mode": "reflect"}, name="pad[reflect one row]"))
for reps in ([2], [2, 1, 3], [3, 0]):
    CASES.append(case("tile", [A], lambda x, reps: np.tile(x, reps), {"reps": reps}))
for repeats in (0, 1, 3):
    CASES.append(case("repeat", [A], lambda x, repeats, axis: np.repeat(x, repeats, axis), {"repeats": repeats, "axis": 0}))
    CASES.append(case("repeat", [A], lambda x, repeats, axis: np.repeat(x, repeats, axis), {"repeats": repeats, "axis": -1}))
    CASES.append(case("repeat", [A], lambda x, repeats: np.repeat(x, repeats), {"repeats": repeats}))
CASES.append(case("block2x2", [rand(2, 2), rand(2, 3, salt=1), rand(3, 2, salt=2), rand(3, 3, dtype="int32", salt=3)],
                  lambda a, b, c, d: np.block([[a, b], [c, d]])))
CASES.append(case("block1", [V, W], lambda a, b: np.block([a, b])))
CASES.append(case("block1", [A, rand(7, 2, salt=12)], lambda a, b: np.block([a, b]), name="block1[2d]"))
for f in ("hstack", "vstack", "dstack", "column_stack"):
    CASES.append(case("stack_fn", [V, V[::-1].copy()], lambda a, b, f: getattr(np, f)([a, b]), {"f": f},
                      name=f"stack_fn[1d][{f}]"))
    CASES.append(case("stack_fn", [A, A[::-1].copy()], lambda a, b, f: getattr(np, f)([a, b]), {"f": f},
                      name=f"stack_fn[2d][{f}]"))
CASES.append(case("split", [A], lambda x, sections, axis: tuple(np.split(x, sections, axis)), {"sections": 5, "axis": 1}))
CASES.append(case("split", [A], lambda x, indices, axis: tuple(np.split(x, indices, axis)),
                  {"indices": [2, 1, -2], "axis": 0}))
CASES.append(case("split", [A], None, {"sections": 2}, name="split[unequal]", raises="ShapeError",
                  executors=(("threads", "host"),)))
CASES.append(case("array_split", [A], lambda x, sections, axis: tuple(np.array_split(x, sections, axis)),
                  {"sections": 3, "axis": 0}))
CASES.append(case("broadcast_arrays", [rand(3, 1), rand(4, salt=1), rand(2, 1, 1, salt=2)],
                  lambda *xs: tuple(np.broadcast_arrays(*xs))))

for chunks in ("2,3,1,1/4,1", "7/1,1,3", "auto"):
    CASES.append(case("rechunk_irregular", [A], lambda x, chunks: (x, x + np.flip(x)), {"chunks": chunks}))
for axis in (0, 1):
    CASES.append(case("concat_self", [A], lambda x, axis: np.concatenate([x, x], axis), {"axis": axis}))

# The dask.array names each case checks (run.py --api-report).
for _c in CASES:
    if _c.fn == "like":
        _c.api = (_c.params["f"] + "_like",)
    elif _c.fn == "atleast":
        _c.api = (f"atleast_{_c.params['n']}d",)
    elif _c.fn in ("block1", "block2x2"):
        _c.api = ("block",)
    elif _c.fn == "stack_fn":
        _c.api = (_c.params["f"],)


# reshape_blockwise: each chunk reshaped on its own, so the order follows the chunking; NumPy's
# answer is the plain reshape, compared as a multiset, and the blockwise round trip exactly.
def blockwise_reshaped(got, exp, inputs, params):
    y, back = np.asarray(got[0]), np.asarray(got[1])
    if y.shape != exp[0].shape or y.dtype != exp[0].dtype:
        return f"shape {y.shape} {y.dtype}, NumPy {exp[0].shape} {exp[0].dtype}"
    if not np.array_equal(np.sort(y, axis=None), np.sort(exp[0], axis=None)):
        return "not the same elements"
    if not np.array_equal(back, inputs[0]):
        return "the blockwise round trip is not the input"
    return None


for shape_in, shape_out in (((6, 4), (24,)), ((3, 4, 5), (12, 5)), ((3, 4, 5), (3, 20)), ((3, 4, 5), (-1,)),
                            ((3, 1, 4), (3, 4)), ((2, 3, 4, 5), (6, 20))):
    X = np.arange(int(np.prod(shape_in)), dtype="float64").reshape(shape_in)
    CASES.append(case("reshape_blockwise_case", [X], lambda x, shape: (x.reshape(shape), x),
                      {"shape": list(shape_out)}, compare=blockwise_reshaped, api="reshape_blockwise",
                      name=f"reshape_blockwise[{shape_in}->{shape_out}]"))
CASES.append(case("reshape_blockwise_case", [np.zeros((4, 6))], None, {"shape": [6, 4]}, raises="Error", api=(),
                  name="reshape_blockwise[same ndim without chunks]"))
CASES.append(case("reshape_blockwise_case", [np.zeros((4, 6))], None, {"shape": [5, 5]}, raises="ShapeError", api=(),
                  name="reshape_blockwise[wrong size]"))
