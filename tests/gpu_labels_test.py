#!/usr/bin/env python3
"""Checks tests/gpu_tests.txt, the list of tests that carry the ctest label gpu, against the
test binary itself: on a machine without a GPU, every listed test must skip, and no test of the
GPU suites' files (tests/cuda/) nor any test that skips for want of a GPU or its driver may be
missing from the list. On a machine with a GPU the first half cannot be checked and is left out.

    gpu_labels_test.py TEST_BINARY [TESTS_DIR]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

NO_GPU_REASONS = ("no CUDA device visible", "no NVIDIA driver", "NVML sees no GPU")


def patterns(tests_dir):
    with open(os.path.join(tests_dir, "gpu_tests.txt")) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def run(binary, gtest_filter):
    """Runs the tests gtest_filter selects; returns {name: (result, skip message)}, result being
    OK, FAILED or SKIPPED (GoogleTest's own lines; its JSON report carries no skip message)."""
    proc = subprocess.run([binary, f"--gtest_filter={gtest_filter}"], capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(binary))
    results, message = {}, []
    for line in proc.stdout.splitlines():
        m = re.match(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+\.\S+) \(", line)
        if m:
            results[m.group(2)] = (m.group(1), " ".join(message))
            message = []
        elif line.startswith("[ RUN"):
            message = []
        else:
            message.append(line)
    if proc.returncode not in (0, 1) or (not results and gtest_filter):
        sys.exit(f"gpu_labels_test: {binary} --gtest_filter={gtest_filter} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return results


def suites_in(tests_dir, folder):
    names = set()
    for root, _, files in os.walk(os.path.join(tests_dir, folder)):
        for name in files:
            if name.endswith(".cpp"):
                with open(os.path.join(root, name)) as f:
                    names.update(re.findall(r"^\s*TEST(?:_F|_P)?\((\w+),", f.read(), re.M))
    return names


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    tests_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    listed = patterns(tests_dir)
    problems = []

    gpu = run(binary, ":".join(listed))
    # Without the CUDA back end, tests/cuda/ is not compiled in: its suites' lines name nothing.
    cuda_suites = suites_in(tests_dir, "cuda")
    listing = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True, timeout=120).stdout
    cuda_built = any(re.match(rf"^{s}\.$", ln) for ln in listing.splitlines() for s in cuda_suites)
    for p in listed:
        rx = re.compile("^" + re.escape(p).replace(r"\*", ".*") + "$")
        if not cuda_built and p.split(".")[0] in cuda_suites:
            continue
        if not any(rx.match(n) for n in gpu):
            problems.append(f"gpu_tests.txt: '{p}' names no test of {os.path.basename(binary)}")
    have_gpu = os.path.exists("/proc/driver/nvidia/gpus")
    if not have_gpu:
        for name, (result, _) in sorted(gpu.items()):
            if result != "SKIPPED":
                problems.append(f"{name} is labelled gpu but did not skip on this machine without a GPU ({result})")

    # The rest of the GPU suites' files, and the suites named in the list: none may skip for want
    # of a GPU without being listed.
    suites = cuda_suites | {p.split(".")[0] for p in listed}
    others = run(binary, ":".join(f"{s}.*" for s in sorted(suites)) + "-" + ":".join(listed))
    for name, (result, message) in sorted(others.items()):
        if result == "SKIPPED" and any(r in message for r in NO_GPU_REASONS):
            problems.append(f"{name} skips without a GPU ({message.strip()[:80]}) but is not in gpu_tests.txt")

    for p in problems:
        print(f"gpu_labels_test: {p}")
    if problems:
        return 1
    print(f"gpu_labels_test: OK: {len(listed)} patterns, {len(gpu)} gpu tests, {len(others)} other tests of the GPU suites"
          + ("" if not have_gpu else " (a GPU is here: that the gpu tests skip without one was not checked)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
