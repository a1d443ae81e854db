#!/usr/bin/env python3
"""Tests of benchmarks/compare_array_workloads.py's value check, run by ctest (array_workloads_check).

Tessera and Dask draw different random numbers, so the script checks each value against the
expected value of its statistic: these tests make sure that check passes values drawn from the
workload's distribution and fails values a wrong computation would give.
"""
import math
import os
import random
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import compare_array_workloads as caw  # noqa: E402


class ValueCheck(unittest.TestCase):
    def test_deterministic_result_needs_1e_6(self):
        self.assertTrue(caw.check("trig_chain", 1000, 1.0000000000000009)[0])
        self.assertFalse(caw.check("trig_chain", 1000, 1.00001)[0])
        self.assertFalse(caw.check("trig_chain", 1000, None)[0])

    def test_sampled_values_pass_and_wrong_ones_fail(self):
        # Small n, drawn here in pure Python, against the script's expected value and error.
        rng = random.Random(3)
        n = 60
        x = [[rng.random() for _ in range(n)] for _ in range(n)]
        total = sum(map(sum, x))
        self.assertTrue(caw.check("transpose_sum", n, 2 * total)[0])
        self.assertFalse(caw.check("transpose_sum", n, total)[0])  # x.T forgotten
        self.assertTrue(caw.check("rechunk_sum", n, total)[0])
        kept = sum(sum(row[100:-100]) for row in x[::3])  # n < 200: nothing kept
        self.assertEqual(caw.expected("slice_sum", n)[0], 0)
        self.assertEqual(kept, 0)
        y = [[rng.random() for _ in range(n)] for _ in range(n)]
        matmul_sum = sum(sum(x[i][k] for i in range(n)) * sum(y[k]) for k in range(n))
        self.assertTrue(caw.check("matmul_sum", n, matmul_sum)[0])
        self.assertFalse(caw.check("matmul_sum", n, matmul_sum * 1.2)[0])
        u = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
        f = sum(math.exp(-v * v) / (1 + abs(v)) for row in u for v in row)
        self.assertTrue(caw.check("elementwise_exp", n, f)[0])
        self.assertFalse(caw.check("elementwise_exp", n, sum(math.exp(-v * v) for row in u for v in row))[0])
        z = [[rng.gauss(10, 1) for _ in range(n)] for _ in range(n)]
        flat = [v for row in z for v in row]
        mean = sum(flat) / len(flat)
        self.assertTrue(caw.check("mean_axis0", n, sum(flat) / n)[0])
        std = math.sqrt(sum((v - mean) ** 2 for v in flat) / len(flat))
        self.assertTrue(caw.check("std_all", n, std)[0])
        self.assertFalse(caw.check("std_all", n, std * std + 0.1)[0])  # variance, not std


if __name__ == "__main__":
    unittest.main()
