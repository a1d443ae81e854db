#!/usr/bin/env python3
"""Runs the array layer's NumPy conformance cases (ctest: array_numpy_conformance).

    python3 tests/array/conformance/run.py --runner build/tests/tessera_array_conformance [-k WORD]

Collects CASES from every cases_*.py here, writes each case's inputs as .npy and one manifest
line per (case, chunking, executor, target), runs the C++ runner once over the manifest, then
compares every output with NumPy's answer. Prints one line per failure and a closing
'N passed, M failed'; exits 1 on any failure, 77 (ctest: skipped) without NumPy.
"""
import argparse
import glob
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "dataframe"))
sys.path.insert(0, HERE)
import tessera_pyenv  # noqa: E402

if __name__ == "__main__":
    tessera_pyenv.reexec_in_pyenv()
    try:
        import numpy as np  # noqa: F401
    except ImportError as e:
        print(f"array_numpy_conformance: skipped: {e} (Python environment: {tessera_pyenv.pyenv_dir()})")
        sys.exit(77)

import numpy as np  # noqa: E402


def load_cases(pattern):
    cases = []
    for path in sorted(glob.glob(os.path.join(HERE, "cases_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for c in mod.CASES:
            c.module = name
            if not pattern or any(p in c.name or p in name for p in pattern):
                cases.append(c)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"duplicate case names: {sorted(dup)}")
    return cases


def param_text(params):
    if not params:
        return "-"
    parts = []
    for k, v in sorted(params.items()):
        if isinstance(v, (list, tuple)):
            v = ",".join(str(int(i)) for i in v)
        elif isinstance(v, bool):
            v = "1" if v else "0"
        v = str(v)
        if any(ch in v for ch in " ;\n") or "=" in k:
            raise ValueError(f"parameter {k}={v!r} may not hold spaces, ';' or newlines")
        parts.append(f"{k}={v}")
    return ";".join(parts)


def chunk_text(spec):
    return ",".join(str(int(c)) for c in spec) if len(spec) else "-"


def default_tolerance(dtype):
    if dtype.kind in "fc":
        return 2e-5 if dtype.itemsize <= 4 or dtype == np.complex64 else 1e-9
    return 0.0


def compare_one(got, exp, c):
    exp = np.asarray(exp)
    if c.check_dtype and got.dtype != exp.dtype:
        return f"dtype {got.dtype} != NumPy's {exp.dtype}"
    if got.shape != exp.shape:
        return f"shape {got.shape} != NumPy's {exp.shape}"
    if exp.dtype.kind in "fc" or got.dtype.kind in "fc":
        rtol = c.rtol if c.rtol is not None else default_tolerance(exp.dtype if exp.dtype.kind in "fc" else got.dtype)
        finite = np.abs(exp[np.isfinite(exp)]) if exp.size else np.zeros(0)
        scale = float(finite.max()) if finite.size else 1.0
        atol = c.atol if c.atol is not None else rtol * max(scale, 1.0)
        if not np.allclose(got, exp, rtol=rtol, atol=atol, equal_nan=True):
            # Report the worst of the elements that differ (equal infinities are not among them).
            bad = ~np.isclose(got, exp, rtol=rtol, atol=atol, equal_nan=True)
            diff = np.abs(got.astype(np.complex128) - exp.astype(np.complex128))
            diff[np.isnan(diff)] = np.inf
            diff[~bad] = -1
            i = np.unravel_index(np.argmax(diff), diff.shape) if diff.ndim else ()
            return (f"values differ at {int(bad.sum())} places, the worst at {i}: got {got[i]!r}, NumPy {exp[i]!r} "
                    f"(|diff| {diff[i]:.3g})")
        return None
    if not np.array_equal(got, exp):
        bad = np.argwhere(got != exp)
        i = tuple(bad[0]) if bad.size else ()
        return f"values differ at {len(bad)} places, first {i}: got {got[i]!r}, NumPy {exp[i]!r}"
    return None


# Names in dask.array's namespaces that are not array functions a C++ program would call: dtype
# objects, classes, Python-object machinery (gufuncs, frompyfunc, delayed), Dask internals, and
# stores Tessera has no dependency for (Zarr, TileDB).
NOT_FUNCTIONS = {
    "Array", "PerformanceWarning", "bool", "complex64", "complex128", "float32", "float64", "int8",
    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "array_expr_enabled",
    "assert_eq", "atop", "optimize", "register_chunk_type", "from_tiledb", "to_tiledb", "from_zarr",
    "to_zarr", "from_delayed", "compute", "frompyfunc", "gufunc", "as_gufunc", "apply_gufunc",
}


def dask_api():
    """Public functions of dask.array, dask.array.linalg, dask.array.fft and the random Generator."""
    import inspect
    import dask.array as da
    import dask.array.fft as dfft
    import dask.array.linalg as dla
    import dask.array.random as drandom
    names = {n for n in dir(da) if not n.startswith("_") and callable(getattr(da, n))} - NOT_FUNCTIONS
    names |= {"linalg." + n for n in ("cholesky", "inv", "lstsq", "lu", "norm", "qr", "sfqr", "solve",
                                        "solve_triangular", "svd", "svd_compressed", "tsqr")
              if hasattr(dla, n)}
    names |= {"fft." + n for n in dir(dfft) if not n.startswith("_") and inspect.isfunction(getattr(dfft, n))
              and n not in ("asarray", "derived_from", "fft_wrap", "skip_doctest")}
    names |= {"random." + n for n in dir(drandom.Generator) if not n.startswith("_")}
    return sorted(names)


def write_api_report(path, cases, case_failed):
    try:
        names = dask_api()
    except ImportError as e:
        print(f"api report: skipped ({e})")
        return
    checked = {}
    for c in cases:
        for a in c.api:
            checked.setdefault(a, []).append(c)
    rows, done = [], 0
    for n in names:
        cs = checked.get(n, [])
        ok = bool(cs) and not any(id(c) in case_failed for c in cs)
        done += ok
        status = "yes" if ok else ("FAILING" if cs else "no")
        rows.append(f"| `{n}` | {status} | {len(cs)} |")
    unknown = sorted(set(checked) - set(names))
    with open(path, "w") as f:
        f.write("# dask.array functions checked against NumPy\n\n")
        f.write("Written by `tests/array/conformance/run.py --api-report` (do not edit by hand): each public\n"
                "function of `dask.array`, `dask.array.linalg`, `dask.array.fft` and `dask.array.random`'s\n"
                "Generator, and how many conformance cases check the Tessera version against NumPy for\n"
                "several chunkings, on the thread pool, an in-process cluster and the fake device. \"yes\":\n"
                "every run of every such case passed.\n\n")
        f.write(f"**{done} of {len(names)} ({100.0 * done / len(names):.0f}%)** functions checked.\n\n")
        f.write("| function | checked | cases |\n|---|---|---:|\n")
        f.write("\n".join(rows) + "\n")
        if unknown:
            f.write("\nAlso checked (names not in Dask's namespaces): " + ", ".join(f"`{u}`" for u in unknown) + "\n")
    print(f"api report: {done} of {len(names)} dask.array functions checked ({path})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", required=True, help="the tessera_array_conformance binary")
    ap.add_argument("-k", action="append", default=[], help="only cases whose name or module contains this")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("-v", action="store_true", help="print every run")
    ap.add_argument("--api-report", metavar="FILE",
                    help="write a Markdown table of dask.array's functions and the cases that check each")
    args = ap.parse_args()

    cases = load_cases(args.k)
    work = tempfile.mkdtemp(prefix="tessera-conformance-")
    lines, runs = [], []
    for ci, c in enumerate(cases):
        paths = []
        for ii, x in enumerate(c.inputs):
            path = os.path.join(work, f"c{ci}-in{ii}.npy")
            np.save(path, np.ascontiguousarray(x))
            paths.append(path)
        for ki, chunking in enumerate(c.chunks):
            if len(chunking) != len(c.inputs):
                sys.exit(f"{c.name}: a chunking needs one spec per input")
            for executor, target in c.executors:
                out = os.path.join(work, f"c{ci}-k{ki}-{executor}-{target}")
                fields = [out, c.fn, executor, target, param_text(c.params), str(len(paths))]
                for path, spec in zip(paths, chunking):
                    fields += [path, chunk_text(spec)]
                lines.append(" ".join(fields))
                runs.append((c, chunking, executor, target, out))
    manifest = os.path.join(work, "manifest.txt")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    proc = subprocess.run([args.runner, manifest], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr)
        sys.exit(f"the runner failed (exit {proc.returncode})")

    passed = failed = 0
    case_failed = set()
    expected_cache = {}
    for c, chunking, executor, target, out in runs:
        where = f"{c.module}:{c.name} chunks={chunking} {executor}/{target}"
        err_path = out + ".err"
        err = open(err_path).read().strip() if os.path.exists(err_path) else None
        problem = None
        if c.raises:
            if err is None:
                problem = f"expected {c.raises}, got a result"
            elif not err.startswith(c.raises + ":"):
                problem = f"expected {c.raises}, got {err}"
        elif err is not None:
            problem = f"error: {err}"
        else:
            key = id(c)
            if key not in expected_cache:
                exp = c.expect(*c.inputs, **c.params)
                expected_cache[key] = list(exp) if isinstance(exp, tuple) else [exp]
            exp = expected_cache[key]
            got = []
            i = 0
            while os.path.exists(f"{out}.{i}.npy"):
                got.append(np.load(f"{out}.{i}.npy"))
                i += 1
            which = c.outputs if c.outputs is not None else range(len(exp))
            if c.compare is not None:
                problem = c.compare(got, exp, c.inputs, c.params)
            elif len(got) < len(exp):
                problem = f"{len(got)} outputs, NumPy has {len(exp)}"
            else:
                for j in which:
                    msg = compare_one(got[j], exp[j], c)
                    if msg:
                        problem = f"output {j}: {msg}"
                        break
        if problem:
            case_failed.add(id(c))
            failed += 1
            print(f"FAIL {where}: {problem}")
        else:
            passed += 1
            if args.v:
                print(f"ok   {where}")
    if not args.keep:
        subprocess.run(["rm", "-rf", work])
    else:
        print(f"work directory: {work}")
    if args.api_report:
        write_api_report(args.api_report, cases, case_failed)
    print(f"{len(cases)} cases, {len(runs)} runs")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
