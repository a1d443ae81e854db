"""Conformance of fancy indexing, chunks of unknown size, halos and blockwise."""
import numpy as np

from conformance import case, rand

X = rand(7, 5, salt=40)
XI = rand(7, 5, dtype="int64", low=-3, high=4, salt=41)
MASK = rand(7, 5, salt=42) > 0
ROWMASK = rand(7, salt=43) > 0
COND = np.array([True, False, True, True, False])
IDX = np.array([6, -1, 0, 3, 3, -7, 2], dtype="int64")
IDX_COLS = np.array([4, 0, -2, 4], dtype="int64")

CASES = []
for axis, idx in ((0, [6, 0, 3, 3, -1]), (1, [4, -5, 2, 2, 0, 1]), (0, []), (1, [0, 1, 2, 3, 4]), (-1, [3])):
    CASES.append(case("take_list", [X], lambda x, indices, axis: np.take(x, indices, axis=axis),
                      {"indices": idx, "axis": axis}, api="take", name=f"take_list[{axis}][{idx}]"))
CASES.append(case("take_list", [XI], lambda x, indices, axis: np.take(x, indices, axis=axis),
                  {"indices": [2, 2, 6], "axis": 0}, api="take", name="take_list[int]"))
CASES.append(case("take_array", [X, IDX], lambda x, i: x[i], api=("take", "Array.__getitem__")))
CASES.append(case("take_array", [X, IDX_COLS], lambda x, i, axis: np.take(x, i, axis=axis), {"axis": 1}, api="take"))
CASES.append(case("take_array", [X, IDX[:6].reshape(2, 3)], lambda x, i: x[i], api="Array.__getitem__",
                  name="take_array[2-d indices]"))
CASES.append(case("take_array", [X, IDX_COLS.reshape(2, 2)], lambda x, i, axis: np.take(x, i, axis=axis), {"axis": 1},
                  api="take", name="take_array[2-d indices][axis=1]"))
CASES.append(case("mask_index", [X, MASK], lambda x, m: x[m], api="Array.__getitem__"))
CASES.append(case("mask_index", [XI, MASK], lambda x, m: x[m], api="Array.__getitem__", name="mask_index[int]"))
CASES.append(case("mask_index", [X, ROWMASK], lambda x, m: x[m], api="Array.__getitem__", name="mask_index[rows]"))
X3 = rand(4, 3, 5, salt=48)
CASES.append(case("mask_index", [X3, rand(4, 3, 5, salt=49) > 0.3], lambda x, m: x[m], api="Array.__getitem__",
                  name="mask_index[3-d]", chunks=[[(-1, -1, -1)] * 2, [(2, 2, 2)] * 2, [(3, 2, 3), (1, 3, 2)],
                                                  [(1, 1, 1)] * 2]))
CASES.append(case("compress_case", [X, ROWMASK], lambda x, c, axis: np.compress(c, x, axis=axis), {"axis": 0},
                  api="compress"))
CASES.append(case("compress_case", [X, COND], lambda x, c, axis: np.compress(c, x, axis=axis), {"axis": 1},
                  api="compress", name="compress_case[axis=1]"))
CASES.append(case("compress_case", [X, COND[:3]], lambda x, c, axis: np.compress(c, x, axis=axis), {"axis": 1},
                  api="compress", name="compress_case[short]"))
CASES.append(case("compress_case", [X], lambda x, condition, axis: np.compress(condition, x, axis=axis),
                  {"condition": [0, 1, 1, 0, 0, 0, 1], "axis": 0}, api="compress"))
CASES.append(case("compress_case", [X], lambda x, condition: np.compress(condition, x),
                  {"condition": [0, 1, 1, 0, 1]}, api="compress"))
for op, f in (("argwhere", np.argwhere), ("nonzero", np.nonzero), ("where", np.where),
              ("flatnonzero", np.flatnonzero)):
    CASES.append(case("coordinates", [XI], lambda x, op, f=f: f(x), {"op": op}))
    CASES.append(case("coordinates", [MASK], lambda x, op, f=f: f(x), {"op": op}, name=f"coordinates[bool][{op}]"))
CASES.append(case("coordinates", [MASK, X], lambda c, x, op: np.extract(c, x), {"op": "extract"}))
for op, f in (("elementwise", lambda s: s * s + 1.0), ("sum", np.sum), ("mean", np.mean), ("max", np.max),
              ("compute_chunk_sizes", lambda s: s[1:])):
    CASES.append(case("unknown_chunks", [X], lambda x, op, threshold, f=f: f(x[x > threshold]),
                      {"op": op, "threshold": -0.5}, api=()))
CASES.append(case("unknown_chunks", [X], lambda x, op, threshold: (
    x[x.sum(axis=1) > threshold].sum(axis=1), x[x.sum(axis=1) > threshold] * 2.0), {"op": "rows", "threshold": 0.0},
    api=()))


def five_point(x, mode, value=0.0):
    if mode == "none":
        out = x.astype("float64").copy()
        out[1:-1, 1:-1] += x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]
        return out
    pad = {"reflect": "symmetric", "periodic": "wrap", "nearest": "edge", "constant": "constant"}[mode]
    kw = {"constant_values": value} if mode == "constant" else {}
    p = np.pad(x.astype("float64"), 1, mode=pad, **kw)
    return p[1:-1, 1:-1] + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


for b in ("reflect", "periodic", "nearest", "none", "constant"):
    CASES.append(case("map_overlap_case", [X], lambda x, boundary, value: five_point(x, boundary, value),
                      {"boundary": b, "value": 1.5}, api="map_overlap"))
    CASES.append(case("overlap_trim", [XI], lambda x, boundary, depth, value: x,
                      {"boundary": b, "depth": [1, 2], "value": -4.0}, api=("overlap.overlap", "overlap.trim_internal"),
                      chunks=[[(3, 3)], [(2, 3)], [(-1, -1)]]))
A = rand(5, 6, salt=44)
B = rand(6, 3, salt=45)
CASES.append(case("blockwise_case", [A, B], lambda a, b, op: a @ b, {"op": "dot"}, api="blockwise"))
CASES.append(case("blockwise_case", [rand(5, salt=46), rand(4, salt=47)], lambda u, v, op: np.outer(u, v),
                  {"op": "outer"}, api="blockwise"))

# shuffle: groups of an indexer made contiguous, each in one chunk (the C++ case checks that).
for axis, groups, chunk_size in ((0, [[6, 0], [3], [1, 5, 2], [4]], 0), (1, [[4, 0, 2], [1, 3]], 2),
                                 (1, [[0], [4, 4, -1], [2]], 0), (0, [[1, 2, 3, 4, 5, 6]], 2), (-1, [], 0)):
    order = [i for g in groups for i in g]
    CASES.append(case("shuffle_case", [X], lambda x, order, groups, axis, chunk_size: np.take(x, order, axis=axis),
                      {"order": order, "groups": [len(g) for g in groups], "axis": axis, "chunk_size": chunk_size},
                      api="shuffle", name=f"shuffle_case[{axis}][{groups}][{chunk_size}]"))
CASES.append(case("shuffle_case", [X], None, {"order": [7], "groups": [1], "axis": 0}, raises="IndexError", api=(),
                  name="shuffle_case[out of bounds]"))


def stored(x, shape, offset=None):
    t = np.full(shape, -1, dtype=x.dtype)
    o = offset or [0] * x.ndim
    t[tuple(slice(a, a + n) for a, n in zip(o, x.shape))] = x
    return t


CASES.append(case("store_case", [X], lambda x, shape: stored(x, shape), {"shape": [7, 5]}, api="store"))
CASES.append(case("store_case", [X], lambda x, shape, offset: stored(x, shape, offset), {"shape": [9, 8], "offset": [2, 1]},
                  api="store", name="store_case[region]"))
CASES.append(case("store_case", [XI], lambda x, shape, offset: stored(x, shape, offset), {"shape": [7, 6], "offset": [0, 1]},
                  api="store", name="store_case[int]"))
CASES.append(case("store_case", [X], None, {"shape": [7, 5], "offset": [1, 0]}, raises="ShapeError", api=(),
                  name="store_case[does not fit]"))
