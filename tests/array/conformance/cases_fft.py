"""Conformance of tessera::fft against numpy.fft (dask.array.fft's functions)."""
import numpy as np

from conformance import case, rand

X = rand(6, 8, salt=1)
Z = rand(6, 8, salt=2) + 1j * rand(6, 8, salt=3)
Z3 = rand(3, 4, 5, salt=4) + 1j * rand(3, 4, 5, salt=5)
R3 = rand(3, 4, 5, salt=6)
F32 = rand(6, 8, dtype="float32", salt=7)
I = rand(6, 8, dtype="int64", low=-5, high=5, salt=8)
H = np.fft.rfft(rand(6, 9, salt=9))  # a half spectrum of odd length 9

# The transformed axis whole, the other chunked (2 and 3) or whole.
LAST = [[(2, -1)], [(3, -1)], [(-1, -1)]]
FIRST = [[(-1, 2)], [(-1, 3)]]
ALL3 = [[(-1, -1, -1)]]
LAST2 = [[(1, -1, -1)], [(2, -1, -1)]]

CASES = []
for op, f in {"fft": np.fft.fft, "ifft": np.fft.ifft}.items():
    for norm in ("backward", "ortho", "forward"):
        CASES.append(case("fft1", [Z], lambda x, op, norm, f=f: f(x, norm=norm), {"op": op, "norm": norm},
                          chunks=LAST, api=f"fft.{op}"))
    for n in (5, 11):
        CASES.append(case("fft1", [Z], lambda x, op, n, f=f: f(x, n=n), {"op": op, "n": n}, chunks=LAST, api=f"fft.{op}"))
    CASES.append(case("fft1", [Z], lambda x, op, axis, f=f: f(x, axis=axis), {"op": op, "axis": 0}, chunks=FIRST,
                      api=f"fft.{op}"))
CASES.append(case("fft1", [X], lambda x, op: np.fft.fft(x), {"op": "fft"}, name="fft1[float64]", chunks=LAST, api="fft.fft"))
CASES.append(case("fft1", [F32], lambda x, op: np.fft.fft(x), {"op": "fft"}, name="fft1[float32]", chunks=LAST,
                  api="fft.fft", rtol=1e-5))
CASES.append(case("fft1", [I], lambda x, op: np.fft.fft(x), {"op": "fft"}, name="fft1[int64]", chunks=LAST, api="fft.fft"))
for norm in ("backward", "ortho", "forward"):
    CASES.append(case("fft1", [X], lambda x, op, norm: np.fft.rfft(x, norm=norm), {"op": "rfft", "norm": norm},
                      chunks=LAST, api="fft.rfft"))
    CASES.append(case("fft1", [H], lambda x, op, norm, n: np.fft.irfft(x, n=n, norm=norm), {"op": "irfft", "norm": norm, "n": 9},
                      chunks=LAST, api="fft.irfft"))
CASES.append(case("fft1", [X], lambda x, op, n: np.fft.rfft(x, n=n), {"op": "rfft", "n": 5}, chunks=LAST, api="fft.rfft"))
CASES.append(case("fft1", [X], lambda x, op, axis: np.fft.rfft(x, axis=axis), {"op": "rfft", "axis": 0}, chunks=FIRST,
                  api="fft.rfft"))
CASES.append(case("fft1", [F32], lambda x, op: np.fft.rfft(x), {"op": "rfft"}, name="fft1[float32][op=rfft]",
                  chunks=LAST, api="fft.rfft", rtol=1e-5))
CASES.append(case("fft1", [H], lambda x, op: np.fft.irfft(x), {"op": "irfft"}, chunks=LAST, api="fft.irfft"))
for norm in ("backward", "ortho", "forward"):
    CASES.append(case("fft1", [H], lambda x, op, norm: np.fft.hfft(x, norm=norm), {"op": "hfft", "norm": norm},
                      chunks=LAST, api="fft.hfft"))
    CASES.append(case("fft1", [X], lambda x, op, norm: np.fft.ihfft(x, norm=norm), {"op": "ihfft", "norm": norm},
                      chunks=LAST, api="fft.ihfft"))
CASES.append(case("fft1", [H], lambda x, op, n: np.fft.hfft(x, n=n), {"op": "hfft", "n": 9}, chunks=LAST, api="fft.hfft"))
CASES.append(case("fft1", [X], lambda x, op, n: np.fft.hfft(x, n=n), {"op": "hfft", "n": 7}, name="fft1[real input][op=hfft]",
                  chunks=LAST, api="fft.hfft"))
CASES.append(case("fft1", [X], lambda x, op, axis, n: np.fft.ihfft(x, n=n, axis=axis), {"op": "ihfft", "axis": 0, "n": 5},
                  chunks=FIRST, api="fft.ihfft"))
CASES.append(case("fft1", [F32], lambda x, op: np.fft.ihfft(x), {"op": "ihfft"}, name="fft1[float32][op=ihfft]",
                  chunks=LAST, api="fft.ihfft", rtol=1e-5))
CASES.append(case("fft1", [Z], None, {"op": "fft"}, name="fft1[chunked axis]", chunks=[[(2, 3)]], raises="ShapeError", api=()))

for op, f in {"fftn": np.fft.fftn, "ifftn": np.fft.ifftn}.items():
    CASES.append(case("fftn", [Z3], lambda x, op, f=f: f(x), {"op": op}, chunks=ALL3, api=f"fft.{op}"))
    CASES.append(case("fftn", [Z3], lambda x, op, axes, f=f: f(x, axes=axes), {"op": op, "axes": [0, 2]},
                      chunks=[[(-1, 2, -1)], [(-1, 1, -1)]], api=f"fft.{op}"))
    CASES.append(case("fftn", [Z3], lambda x, op, s, axes, f=f: f(x, s=s, axes=axes), {"op": op, "s": [3, 6], "axes": [1, 2]},
                      chunks=LAST2, api=f"fft.{op}"))
for op, f in {"fft2": np.fft.fft2, "ifft2": np.fft.ifft2}.items():
    for norm in ("backward", "ortho"):
        CASES.append(case("fftn", [Z3], lambda x, op, norm, f=f: f(x, norm=norm), {"op": op, "norm": norm}, chunks=LAST2,
                          api=f"fft.{op}"))
CASES.append(case("fftn", [R3], lambda x, op: np.fft.rfftn(x), {"op": "rfftn"}, chunks=ALL3, api="fft.rfftn"))
CASES.append(case("fftn", [R3], lambda x, op: np.fft.rfft2(x), {"op": "rfft2"}, chunks=LAST2, api="fft.rfft2"))
CASES.append(case("fftn", [np.fft.rfftn(R3)], lambda x, op, s, axes: np.fft.irfftn(x, s=s, axes=axes),
                  {"op": "irfftn", "s": [3, 4, 5], "axes": [0, 1, 2]},
                  chunks=ALL3, api="fft.irfftn"))
CASES.append(case("fftn", [np.fft.rfft2(R3)], lambda x, op, s: np.fft.irfft2(x, s=s), {"op": "irfft2", "s": [4, 5]},
                  chunks=LAST2, api="fft.irfft2"))
CASES.append(case("fftn", [np.fft.rfft2(R3)], lambda x, op: np.fft.irfft2(x), {"op": "irfft2"}, chunks=LAST2,
                  name="fftn[op=irfft2][default s]", api="fft.irfft2"))

for n, d in ((5, 0.1), (6, 1.0), (1, 2.0)):
    for chunk in (-1, 2):
        CASES.append(case("fftfreq", [], lambda op, n, d, chunk: np.fft.fftfreq(n, d), {"op": "fftfreq", "n": n, "d": d, "chunk": chunk},
                          chunks=[[]], api="fft.fftfreq"))
        CASES.append(case("fftfreq", [], lambda op, n, d, chunk: np.fft.rfftfreq(n, d), {"op": "rfftfreq", "n": n, "d": d, "chunk": chunk},
                          chunks=[[]], api="fft.rfftfreq"))
for op, f in {"fftshift": np.fft.fftshift, "ifftshift": np.fft.ifftshift}.items():
    CASES.append(case("fftshift", [X], lambda x, op, f=f: f(x), {"op": op}, api=f"fft.{op}"))
    CASES.append(case("fftshift", [Z3], lambda x, op, axes, f=f: f(x, axes=axes), {"op": op, "axes": [1, 2]}, api=f"fft.{op}"))
