"""Conformance of the element-wise functions beyond arithmetic (cases_elementwise_more.cpp).

NumPy gives float16 for transcendentals of bools and int8 for shifts, fmod and reciprocal of
bools; Tessera has neither dtype and gives float64 and int64 there, so those expectations are
NumPy's results for the bools as float64 / int64.
"""
import numpy as np

from conformance import case as conformance_case, rand, with_nans

A = rand(6, 5, salt=40)
F32 = rand(6, 5, salt=41).astype("float32")
UNIT = rand(6, 5, salt=42, low=-1.0, high=1.0)
ABOVE1 = rand(6, 5, salt=43, low=1.0, high=40.0)
POS = rand(6, 5, salt=44, low=0.01, high=50.0)
I64 = rand(6, 5, dtype="int64", low=-40, high=40, salt=45)
I32 = rand(6, 5, dtype="int32", low=-40, high=40, salt=46)
SMALL = rand(6, 5, dtype="int64", low=1, high=6, salt=47)
BOOL = rand(6, 5, salt=48) > 0
BOOL2 = rand(6, 5, salt=49) > 0
SPECIAL = np.array([[0.0, -0.0, 1.0, -1.0, 0.5], [np.inf, -np.inf, np.nan, 1e300, -1e-300],
                    [2.5, -2.5, 3.5, -7.25, 1e-5], [0.999, -0.999, 710.0, -745.0, 1e154]])
HALVES = np.array([[0.5, 1.5, 2.5, -0.5, -1.5], [3.5, -3.5, 4.5, 1.25, -2.675]])

CASES = []


def quiet(f):
    """f without NumPy's warnings (invalid value, divide by zero, overflow: the edge cases are the point)."""
    def g(*args, **kwargs):
        with np.errstate(all="ignore"):
            return f(*args, **kwargs)
    return g


def case(*args, **kwargs):
    if len(args) > 2 and args[2] is not None:
        args = args[:2] + (quiet(args[2]),) + args[3:]
    return conformance_case(*args, **kwargs)


def unary(op, f, inputs, **kw):
    for label, x in inputs:
        CASES.append(case("ew_unary", [x], lambda x, op, f=f: f(x), {"op": op}, name=f"ew_unary[{label}][{op}]", **kw))


def float64_of(f):
    """NumPy's answer for bools computed as float64 (Tessera has no float16)."""
    return lambda x: f(x.astype("float64"))


TRANSCENDENTAL = {
    "arcsin": (np.arcsin, UNIT), "arccos": (np.arccos, UNIT), "arctan": (np.arctan, A),
    "arcsinh": (np.arcsinh, A), "arccosh": (np.arccosh, ABOVE1), "arctanh": (np.arctanh, UNIT * 0.99),
    "sinh": (np.sinh, A), "cosh": (np.cosh, A), "log2": (np.log2, POS), "log10": (np.log10, POS),
    "exp2": (np.exp2, A), "expm1": (np.expm1, A), "cbrt": (np.cbrt, A), "deg2rad": (np.deg2rad, A * 90),
    "rad2deg": (np.rad2deg, A), "radians": (np.radians, A * 90), "degrees": (np.degrees, A),
    "sinc": (np.sinc, A), "rint": (np.rint, A * 3), "sin": (np.sin, A), "cos": (np.cos, A),
    "tan": (np.tan, A), "tanh": (np.tanh, A), "exp": (np.exp, A), "log": (np.log, POS), "log1p": (np.log1p, POS),
}
for op, (f, x) in TRANSCENDENTAL.items():
    unary(op, f, [("f64", x), ("f32", x.astype("float32")), ("special", SPECIAL)])
    unary(op, f, [("i64", I64), ("i32", I32)])
    CASES.append(case("ew_unary", [BOOL], lambda x, op, f=f: float64_of(f)(x), {"op": op}, name=f"ew_unary[bool][{op}]"))

for op, f in (("trunc", np.trunc), ("isinf", np.isinf), ("isposinf", np.isposinf), ("isneginf", np.isneginf),
              ("signbit", np.signbit), ("negative", np.negative), ("square", np.square), ("positive", np.positive)):
    unary(op, f, [("f64", A * 3), ("f32", F32 * 3), ("special", SPECIAL), ("i64", I64), ("i32", I32)])
unary("trunc", np.trunc, [("bool", BOOL)])
unary("isinf", np.isinf, [("bool", BOOL)])
unary("signbit", np.signbit, [("bool", BOOL)])
unary("reciprocal", np.reciprocal, [("f64", A), ("f32", F32), ("special", SPECIAL),
                                    ("i64", np.where(I64 == 0, 3, I64)), ("i32", np.where(I32 == 0, 3, I32))])
for op, f in (("bitwise_not", np.bitwise_not), ("invert", np.invert)):
    unary(op, f, [("i64", I64), ("i32", I32), ("bool", BOOL)])
# positive of a bool array: NumPy's TypeError.
CASES.append(case("ew_unary", [BOOL], None, {"op": "positive"}, name="ew_unary[bool][positive]", raises="DTypeError"))
for op in ("bitwise_not", "invert"):
    CASES.append(case("ew_unary", [A], None, {"op": op}, name=f"ew_unary[f64][{op}]", raises="DTypeError"))

FLOAT_BINARY = {
    "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "copysign": np.copysign, "fmin": np.fmin, "fmax": np.fmax, "fmod": np.fmod,
    "float_power": np.float_power, "heaviside": np.heaviside,
}
B64 = rand(6, 5, salt=50) * 3
ROW = rand(5, salt=51)
COL_SPECIAL = SPECIAL[:, :1]
for op, f in FLOAT_BINARY.items():
    first = np.abs(A) if op == "float_power" else A
    CASES.append(case("ew_binary", [first, B64], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[f64][{op}]"))
    CASES.append(case("ew_binary", [first.astype("float32"), B64.astype("float32")], lambda a, b, op, f=f: f(a, b),
                      {"op": op}, name=f"ew_binary[f32][{op}]"))
    CASES.append(case("ew_binary", [first, ROW], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[bcast][{op}]"))
    CASES.append(case("ew_binary", [SPECIAL, COL_SPECIAL], lambda a, b, op, f=f: f(a, b), {"op": op},
                      name=f"ew_binary[special][{op}]"))
    CASES.append(case("ew_binary", [SPECIAL, SPECIAL.T.reshape(4, 5)], lambda a, b, op, f=f: f(a, b), {"op": op},
                      name=f"ew_binary[special2][{op}]"))
    CASES.append(case("ew_binary", [I64, SMALL], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[int][{op}]"))
    CASES.append(case("ew_binary", [F32, I32], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[f32,i32][{op}]"))

INT_BINARY = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift, "fmod": np.fmod, "logical_xor": np.logical_xor,
}
SHIFTS = rand(6, 5, dtype="int64", low=-2, high=70, salt=52)
for op, f in INT_BINARY.items():
    second = SHIFTS if "shift" in op else np.where(SMALL == 0, 1, SMALL)
    CASES.append(case("ew_binary", [I64, second], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[i64][{op}]"))
    CASES.append(case("ew_binary", [I32, second.astype("int32")], lambda a, b, op, f=f: f(a, b), {"op": op},
                      name=f"ew_binary[i32][{op}]"))
    CASES.append(case("ew_binary", [I32, second], lambda a, b, op, f=f: f(a, b), {"op": op}, name=f"ew_binary[i32,i64][{op}]"))
    # bools: numpy's int8 results are int64 here.
    CASES.append(case("ew_binary", [BOOL, BOOL2],
                      lambda a, b, op, f=f: (lambda r: r.astype("int64") if r.dtype == np.int8 else r)(f(a, b)),
                      {"op": op}, name=f"ew_binary[bool][{op}]"))
for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
    CASES.append(case("ew_binary", [I64, A], None, {"op": op}, name=f"ew_binary[i64,f64][{op}]", raises="DTypeError"))
CASES.append(case("ew_binary", [with_nans(A), I64], lambda a, b, op: np.logical_xor(a, b), {"op": "logical_xor"},
                  name="ew_binary[nans,i64][logical_xor]"))

# A C++ number beside an array: NumPy 2's weak Python scalars.
for op, f in (("arctan2", np.arctan2), ("hypot", np.hypot), ("logaddexp", np.logaddexp), ("copysign", np.copysign),
              ("fmin", np.fmin), ("fmax", np.fmax), ("fmod", np.fmod), ("float_power", np.float_power),
              ("heaviside", np.heaviside)):
    for label, x in (("f64", with_nans(A)), ("f32", F32), ("i32", I32)):
        for s in (2, -1.5):
            CASES.append(case("ew_binary_scalar", [x], lambda a, op, s, s_is_int, f=f: f(a, int(s) if s_is_int else s),
                              {"op": op, "s": float(s), "s_is_int": isinstance(s, int)}, name=f"ew_binary_scalar[{label}][{op}][{s}]",
                              api=op))
for op, f in (("bitwise_and", np.bitwise_and), ("left_shift", np.left_shift), ("right_shift", np.right_shift)):
    for label, x in (("i64", I64), ("i32", I32)):
        CASES.append(case("ew_binary_scalar", [x], lambda a, op, s, s_is_int, f=f: f(a, int(s)),
                          {"op": op, "s": 3.0, "s_is_int": True}, name=f"ew_binary_scalar[{label}][{op}]", api=op))

for decimals in (0, 1, 2, -1, -2):
    for label, x in (("f64", A * 1000), ("f32", (A * 1000).astype("float32")), ("halves", HALVES), ("special", SPECIAL),
                     ("i64", I64 * 37), ("i32", I32 * 37)):
        CASES.append(case("round_case", [x], lambda x, decimals: np.round(x, decimals), {"decimals": decimals},
                          name=f"round[{label}][{decimals}]", api="round"))
    CASES.append(case("around_case", [A * 1000], lambda x, decimals: np.around(x, decimals), {"decimals": decimals},
                      api="around"))

for label, x in (("f64", with_nans(A)), ("f32", F32), ("special", SPECIAL), ("i32", I32), ("i64", I64)):
    for lo, hi in ((-0.5, 1), (-3, 4)):
        CASES.append(case("clip_scalars", [x], lambda x, lo, hi, lo_is_int, hi_is_int: np.clip(
            x, int(lo) if lo_is_int else lo, int(hi) if hi_is_int else hi),
            {"lo": float(lo), "hi": float(hi), "lo_is_int": isinstance(lo, int), "hi_is_int": isinstance(hi, int)},
            name=f"clip[{label}][{lo},{hi}]", api="clip"))
CASES.append(case("clip_arrays", [with_nans(A), rand(6, 5, salt=53) - 1, ROW + 1], lambda x, lo, hi: np.clip(x, lo, hi),
                  api="clip"))

NEAR = A * (1 + 1e-7)
NEAR[0, 0] = A[0, 0] + 1e-3
for label, (x, y) in (("f64", (with_nans(A), NEAR)), ("special", (SPECIAL, SPECIAL * (1 + 1e-9))),
                      ("f32", (F32, F32 * np.float32(1 + 1e-6))), ("int", (I64, I64.astype("float64") + 1e-9)),
                      ("same", (with_nans(A), with_nans(A)))):
    for equal_nan in (False, True):
        CASES.append(case("isclose_case", [x, y], lambda a, b, equal_nan: np.isclose(a, b, equal_nan=equal_nan),
                          {"equal_nan": equal_nan}, name=f"isclose[{label}][{equal_nan}]", api="isclose"))
        CASES.append(case("allclose_case", [x, y], lambda a, b, equal_nan: np.array(np.allclose(a, b, equal_nan=equal_nan)),
                          {"equal_nan": equal_nan}, name=f"allclose[{label}][{equal_nan}]", api="allclose"))
CASES.append(case("isclose_case", [A, NEAR], lambda a, b, rtol, atol: np.isclose(a, b, rtol=rtol, atol=atol),
                  {"rtol": 1e-3, "atol": 0.0}, name="isclose[rtol]", api="isclose"))

with np.errstate(over="ignore"):  # 1e300 is inf in float32
    SPECIAL32 = SPECIAL.astype("float32")
for label, x in (("f64", SPECIAL), ("f32", SPECIAL32), ("i64", I64)):
    CASES.append(case("nan_to_num_case", [x], lambda x: np.nan_to_num(x), name=f"nan_to_num[{label}]", api="nan_to_num"))
    CASES.append(case("nan_to_num_case", [x], lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
                      {"nan": -1.0, "posinf": 1e300, "neginf": -5.0}, name=f"nan_to_num[{label}][values]", api="nan_to_num"))
