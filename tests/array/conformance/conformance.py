"""The Python side of the NumPy conformance harness: what a case is (README.md beside this file).

A cases_<area>.py module defines CASES, a list of Case objects. Each names a C++ case
(registered with TESSERA_CONFORMANCE_CASE in cases_<area>.cpp), its NumPy inputs, its
parameters and NumPy's answer; run.py runs it for each chunking, on each executor and target,
and compares.
"""
import numpy as np

RNG_SEED = 1234


def rng(salt=0):
    return np.random.default_rng(RNG_SEED + salt)


def rand(*shape, dtype="float64", salt=0, low=-2.0, high=2.0):
    """Uniform floats (or integers in [low, high) for an integer dtype)."""
    g = rng(salt + 7 * len(shape) + sum(shape))
    if np.issubdtype(np.dtype(dtype), np.integer):
        return g.integers(int(low), int(high), size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return g.random(shape) < 0.5
    return g.uniform(low, high, size=shape).astype(dtype)


def with_nans(x, fraction=0.2, salt=0):
    """A float copy of x with about `fraction` of its elements NaN."""
    x = np.array(x, dtype=x.dtype if x.dtype.kind == "f" else "float64")
    mask = rng(salt + 99).random(x.shape) < fraction
    x[mask] = np.nan
    return x


def default_chunkings(shapes):
    """Whole arrays, chunks of 2 and of 3 along every axis (one spec per input)."""
    out = []
    for size in (None, 2, 3):
        spec = []
        for shape in shapes:
            if len(shape) == 0:
                spec.append(())
            elif size is None:
                spec.append(tuple(-1 for _ in shape))
            else:
                spec.append(tuple(min(size, max(n, 1)) for n in shape))
        if spec not in out:
            out.append(spec)
    return out


class Case:
    """One C++ case with given inputs and parameters, checked against NumPy.

    name       a unique id for reports (default: the C++ case name plus parameters)
    fn         the C++ case name
    inputs     NumPy arrays, turned into chunked Arrays by the runner
    expect     NumPy's answer: f(*inputs, **params) -> array or tuple of arrays (one per output)
    params     dict passed to the C++ case (values: int, float, str, bool, or lists of ints)
    chunks     list of chunkings; each a list of per-axis chunk tuples, one per input
    executors  (executor, target) pairs to run on
    rtol, atol tolerances for floats (atol defaults to rtol * max |expected|, scaled by size)
    check_dtype  compare dtypes too
    compare    f(got_list, expected_list, inputs, params) -> None or a message: replaces the
               default comparison (for answers defined up to sign, order...)
    raises     the error type name the C++ case must throw instead ("ShapeError", ...)
    outputs    which outputs to compare (default: all)
    api        the dask.array functions this case checks ("cumsum", "linalg.qr", "fft.rfft",
               "random.poisson"); default: the C++ case name, or params["op"] when given. The
               API report (run.py --api-report) counts a function as done when every run of
               every case naming it passed.
    """

    DEFAULT_EXECUTORS = (("threads", "host"), ("cluster", "host"), ("threads", "device"))

    def __init__(self, fn, inputs, expect=None, params=None, chunks=None, name=None,
                 executors=None, rtol=None, atol=None, check_dtype=True, compare=None,
                 raises=None, outputs=None, api=None):
        self.fn = fn
        self.inputs = [np.asarray(x) for x in inputs]
        self.expect = expect
        self.params = dict(params or {})
        self.chunks = chunks or default_chunkings([x.shape for x in self.inputs])
        self.executors = tuple(executors or self.DEFAULT_EXECUTORS)
        self.rtol = rtol
        self.atol = atol
        self.check_dtype = check_dtype
        self.compare = compare
        self.raises = raises
        self.outputs = outputs
        if api is None:
            api = (self.params["op"],) if "op" in self.params else (fn,)
        self.api = tuple([api] if isinstance(api, str) else api)
        if name is None:
            name = fn + "".join(f"[{k}={v}]" for k, v in sorted(self.params.items()))
        self.name = name


def case(*args, **kwargs):
    return Case(*args, **kwargs)
