"""Conformance of the linear algebra: products, norms and dask.array.linalg's decompositions.

Decompositions whose factors NumPy defines only up to signs (qr, svd, svd_compressed) and
Dask's lu (pivoting inside diagonal blocks only, so its P differs from LAPACK's) are checked by
their defining properties and against NumPy's invariants (|R|'s diagonal, singular values);
cholesky, solve, inv, solve_triangular and lstsq have unique answers compared directly.
"""
import numpy as np

from conformance import case, rand

A = rand(7, 5)
B = rand(5, 4, salt=1)
T3 = rand(3, 4, 5, salt=2)
T4 = rand(4, 5, 2, salt=3)
V = rand(5, salt=4)
W = rand(4, salt=5)
S = rand(6, 6, salt=6)
I = rand(4, 5, dtype="int64", low=-5, high=6, salt=7)
J = rand(5, 3, dtype="int64", low=-5, high=6, salt=8)
F32 = rand(6, 4, dtype="float32", salt=9)
TALL = rand(11, 4, salt=10)
WIDE = rand(3, 8, salt=11)
BATCH_A = rand(3, 4, 5, salt=12)
BATCH_B = rand(3, 5, 2, salt=13)
SPD = (lambda m: m @ m.T + 7 * np.eye(7))(rand(7, 7, salt=14))
SPD32 = SPD.astype("float32")
SQUARE = rand(7, 7, salt=15) + 8 * np.eye(7)
RHS = rand(7, 3, salt=16)
RHS1 = rand(7, salt=17)
LOWER = np.tril(SQUARE)
UPPER = np.triu(SQUARE)
LOW_RANK = rand(12, 2, salt=18) @ rand(2, 6, salt=19)

CASES = []

# ---- products ---------------------------------------------------------------------------------
CASES.append(case("tensordot", [T3, T4], lambda a, b, axes_a, axes_b: np.tensordot(a, b, (axes_a, axes_b)),
                  {"axes_a": [1, 2], "axes_b": [0, 1]}))
CASES.append(case("tensordot", [T3, B], lambda a, b, axes_a, axes_b: np.tensordot(a, b, (axes_a, axes_b)),
                  {"axes_a": [-1], "axes_b": [0]}))
CASES.append(case("tensordot", [A, B], lambda a, b, n: np.tensordot(a, b, n), {"n": 1}))
CASES.append(case("tensordot", [V, W], lambda a, b, n: np.tensordot(a, b, n), {"n": 0}))
CASES.append(case("tensordot", [F32, rand(4, 3, dtype="float32", salt=31)], lambda a, b, n: np.tensordot(a, b, n), {"n": 1}))
CASES.append(case("tensordot", [I, rand(5, 3, salt=32)], lambda a, b, n: np.tensordot(a, b, n), {"n": 1}))
CASES.append(case("tensordot", [I, J], lambda a, b, n: np.tensordot(a, b, n), {"n": 1}))
for subscripts, inputs in [("ij,jk->ik", [A, B]), ("ij->ji", [A]), ("ii->i", [S]), ("ij->", [A]), ("i,i->", [V, V]),
                           ("ij,ij->ij", [A, A]), ("bij,bjk->bik", [BATCH_A, BATCH_B]), ("i,j->ij", [V, W]),
                           ("ij,jk", [A, B]), ("ii", [S]), ("ij,j->i", [A.T, rand(7, salt=20)]),
                           ("ij,jk,kl->il", [A, B, rand(4, 2, salt=21)]), ("bij,bjk->ikb", [BATCH_A, BATCH_B]),
                           ("ij,jk->ik", [I, J]), ("ij,ij->i", [A, rand(7, 5, salt=30)]), ("ij,ij->", [I, I])]:
    CASES.append(case("einsum", inputs, lambda *xs, subscripts: np.einsum(subscripts, *xs), {"subscripts": subscripts}))
CASES.append(case("linalg_product", [T3, T4], lambda a, b, op: np.dot(a, b), {"op": "dot"}))
CASES.append(case("linalg_product", [A, V], lambda a, b, op: np.dot(a, b), {"op": "dot"}))
CASES.append(case("linalg_product", [A, W], lambda a, b, op: np.outer(a, b), {"op": "outer"}))
CASES.append(case("linalg_product", [A, rand(3, 5, salt=22)], lambda a, b, op: np.inner(a, b), {"op": "inner"}))
CASES.append(case("linalg_product", [A, rand(5, 7, salt=23)], lambda a, b, op: np.asarray(np.vdot(a, b)), {"op": "vdot"}))
CASES.append(case("linalg_product", [rand(2, 3, salt=24), rand(3, 2, salt=25)], lambda a, b, op: np.kron(a, b),
                  {"op": "kron"}))
CASES.append(case("matmul", [BATCH_A, BATCH_B], lambda a, b: a @ b, name="matmul[batched]"))
CASES.append(case("matmul", [BATCH_A, rand(1, 5, 2, salt=26)], lambda a, b: a @ b, name="matmul[broadcast batch]"))
# Sums and means of products, which Tessera computes from sums of the operands
# (src/array/product_sums.cpp): the same numbers as summing NumPy's whole product.
PRODUCTS = {"matmul": lambda a, b: a @ b, "tensordot0": lambda a, b: np.tensordot(a, b, ([0], [0])),
            "batched": lambda a, b: np.einsum("bij,bjk->bik", a, b)}


def product_reduce(a, b, product, reduce, axis=None, keepdims=False):
    c = PRODUCTS[product](a, b)
    ax = tuple(axis) if axis is not None else None
    return np.asarray(c.sum(axis=ax, keepdims=keepdims) if reduce == "sum" else c.mean(axis=ax, keepdims=keepdims))


for inputs, product in [([A, B], "matmul"), ([I, J], "matmul"), ([F32, rand(4, 3, dtype="float32", salt=33)], "matmul"),
                        ([A, rand(7, 3, salt=34)], "tensordot0"), ([BATCH_A, BATCH_B], "batched")]:
    nd = 3 if product == "batched" else 2
    for axis in [None] + [[k] for k in range(nd)] + ([[1, 2], [0, 2]] if nd == 3 else []):
        for reduce in ("sum", "mean"):
            if reduce == "mean" and inputs[0].dtype.kind == "i":
                continue
            params = {"product": product, "reduce": reduce, "keepdims": axis == [0]}
            if axis is not None:
                params["axis"] = axis
            CASES.append(case("product_reduce", inputs, product_reduce, params, api=("matmul", "sum")))
for offset in (0, 2, -1):
    CASES.append(case("trace", [A], lambda x, offset: np.asarray(np.trace(x, offset)), {"offset": offset}))
CASES.append(case("trace", [T3], lambda x, axis1, axis2: np.asarray(np.trace(x, 0, axis1, axis2)), {"axis1": 0, "axis2": 2}))

# ---- norms ------------------------------------------------------------------------------------
def np_ord(o):
    names = {"none": None, "fro": "fro", "nuc": "nuc", "inf": np.inf, "-inf": -np.inf}
    return names[o] if o in names else float(o)


def norm_expect(x, ord="none", axis=None, keepdims=False):
    ax = tuple(axis) if isinstance(axis, list) and len(axis) > 1 else (axis[0] if isinstance(axis, list) else axis)
    return np.asarray(np.linalg.norm(x, np_ord(ord), ax, keepdims))


for o in ("none", "1", "2", "3", "0", "inf", "-inf", "0.5"):
    CASES.append(case("norm", [V], norm_expect, {"ord": o}, api="linalg.norm"))
for o in ("none", "fro", "nuc", "1", "-1", "2", "-2", "inf", "-inf"):
    CASES.append(case("norm", [A], norm_expect, {"ord": o}, api="linalg.norm"))
CASES.append(case("norm", [A], norm_expect, {"ord": "2", "axis": [1], "keepdims": True}, api="linalg.norm"))
CASES.append(case("norm", [A], norm_expect, {"ord": "inf", "axis": [0, 1], "keepdims": True}, api="linalg.norm"))
CASES.append(case("norm", [A], norm_expect, {"ord": "nuc", "keepdims": True}, api="linalg.norm"))
CASES.append(case("norm", [T3], norm_expect, {"ord": "fro", "axis": [0, 2]}, api="linalg.norm"))
CASES.append(case("norm", [T3], norm_expect, {}, api="linalg.norm"))
CASES.append(case("norm", [F32], norm_expect, {"ord": "1"}, api="linalg.norm"))
CASES.append(case("norm", [I], norm_expect, {"ord": "inf"}, api="linalg.norm"))


# ---- decompositions ---------------------------------------------------------------------------
def close(got, want, tol):
    return np.allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max()) if np.size(want) else 1.0))


def tol_of(x):
    return 2e-4 if x.dtype == np.float32 else 1e-9


def qr_compare(got, exp, inputs, params):
    a = inputs[0].astype(np.float32 if inputs[0].dtype == np.float32 else np.float64)
    q, r = got[0], got[1]
    k = min(a.shape)
    if q.shape != (a.shape[0], k) or r.shape != (k, a.shape[1]):
        return f"shapes {q.shape}, {r.shape}"
    if q.dtype != a.dtype or r.dtype != a.dtype:
        return f"dtypes {q.dtype}, {r.dtype}, expected {a.dtype}"
    tol = tol_of(a)
    if not close(q.T @ q, np.eye(k), tol):
        return "Q is not orthonormal"
    if not close(q @ r, a, tol):
        return "Q R != A"
    if np.abs(np.tril(r, -1)).max(initial=0) > 0:
        return "R is not upper triangular"
    if not close(np.abs(np.diag(r)), np.abs(np.diag(exp[1])), tol):
        return "|diag(R)| differs from NumPy's"
    return None


def svd_compare(got, exp, inputs, params):
    a = inputs[0]
    u, s, v = got
    k = params.get("k", min(a.shape))
    tol = tol_of(a) * (1e3 if "k" in params else 1)
    if u.shape != (a.shape[0], k) or s.shape != (k,) or v.shape != (k, a.shape[1]):
        return f"shapes {u.shape}, {s.shape}, {v.shape}"
    if not close(s, exp[1][:k], tol):
        return f"singular values {s} differ from NumPy's {exp[1][:k]}"
    if not close(u.T @ u, np.eye(k), tol) or not close(v @ v.T, np.eye(k), tol):
        return "U or V is not orthonormal"
    if "k" not in params and not close((u * s) @ v, a, tol):
        return "U S V^T != A"
    return None


def lu_compare(got, exp, inputs, params):
    a = inputs[0]
    p, l, u = got
    tol = tol_of(a)
    if not np.array_equal(p @ p.T, np.eye(a.shape[0])) or set(np.unique(p)) - {0.0, 1.0}:
        return "P is not a permutation"
    if np.abs(np.triu(l, 1)).max(initial=0) > 0 or not np.all(np.diag(l) == 1):
        return "L is not unit lower triangular"
    if np.abs(np.tril(u, -1)).max(initial=0) > 0:
        return "U is not upper triangular"
    if not close(p @ l @ u, a, tol):
        return "P L U != A"
    return None


for m, chunks in [(TALL, None), (F32, None), (WIDE, None), (rand(9, 3, dtype="int64", low=-4, high=5, salt=27), None)]:
    CASES.append(case("qr", [m], lambda x: np.linalg.qr(x), compare=qr_compare, api="linalg.qr"))
CASES.append(case("qr", [TALL], lambda x, how: np.linalg.qr(x), {"how": "tsqr"}, compare=qr_compare, api="linalg.tsqr"))
CASES.append(case("qr", [WIDE], lambda x, how: np.linalg.qr(x), {"how": "sfqr"}, compare=qr_compare, api="linalg.sfqr"))
CASES.append(case("qr", [TALL], None, {"how": "sfqr"}, name="sfqr[tall]", raises="ShapeError", api=(),
                  executors=(("threads", "host"),)))
for m in (TALL, WIDE, F32):
    CASES.append(case("svd", [m], lambda x: np.linalg.svd(x, full_matrices=False), compare=svd_compare, api="linalg.svd"))
CASES.append(case("svd_compressed", [LOW_RANK], lambda x, k, n_power_iter, seed: np.linalg.svd(x, full_matrices=False),
                  {"k": 2, "n_power_iter": 1, "seed": 3}, compare=svd_compare, api="linalg.svd_compressed"))
CASES.append(case("cholesky", [SPD], lambda x, lower: np.linalg.cholesky(x), {"lower": True}, api="linalg.cholesky"))
CASES.append(case("cholesky", [SPD], lambda x, lower: np.linalg.cholesky(x).T, {"lower": False}, api="linalg.cholesky"))
CASES.append(case("cholesky", [SPD32], lambda x, lower: np.linalg.cholesky(x), {"lower": True}, api="linalg.cholesky",
                  rtol=1e-4))
CASES.append(case("cholesky", [-np.eye(4)], None, {"lower": True}, name="cholesky[not positive definite]", raises="TaskError",
                  api=(), executors=(("threads", "host"),)))
CASES.append(case("lu", [SQUARE], lambda x: (x, x, x), compare=lu_compare, api="linalg.lu"))
for lower, m in ((True, LOWER), (False, UPPER)):
    CASES.append(case("solve_triangular", [m, RHS], lambda a, b, lower: np.linalg.solve(a, b), {"lower": lower},
                      api="linalg.solve_triangular"))
    CASES.append(case("solve_triangular", [m, RHS1], lambda a, b, lower: np.linalg.solve(a, b), {"lower": lower},
                      api="linalg.solve_triangular"))
CASES.append(case("solve", [SQUARE, RHS], lambda a, b: np.linalg.solve(a, b), api="linalg.solve"))
CASES.append(case("solve", [SQUARE, RHS1], lambda a, b: np.linalg.solve(a, b), api="linalg.solve"))
CASES.append(case("solve", [SQUARE.astype("float32"), RHS.astype("float32")], lambda a, b: np.linalg.solve(a, b),
                  api="linalg.solve", rtol=1e-4))
CASES.append(case("inv", [SQUARE], lambda a: np.linalg.inv(a), api="linalg.inv"))
CASES.append(case("lstsq", [TALL, rand(11, 2, salt=28)],
                  lambda a, b: tuple(np.asarray(r) for r in np.linalg.lstsq(a, b, rcond=None)), api="linalg.lstsq"))
CASES.append(case("lstsq", [TALL, rand(11, salt=29)],
                  lambda a, b: tuple(np.asarray(r) for r in np.linalg.lstsq(a, b, rcond=None)), api="linalg.lstsq"))


def _unique_names(cases):
    """Cases that differ only in their inputs are named after them (names must be unique)."""
    seen = {}
    for c in cases:
        seen[c.name] = seen.get(c.name, 0) + 1
    for c in cases:
        if seen[c.name] > 1:
            c.name += "[" + ",".join(f"{x.dtype}{list(x.shape)}" for x in c.inputs).replace(" ", "") + "]"
    counts = {}
    for c in cases:
        counts[c.name] = counts.get(c.name, 0) + 1
        if counts[c.name] > 1:
            c.name += f"#{counts[c.name]}"


_unique_names(CASES)
