"""The pure parts of timing: the ring of copies, --repeat's summary, the host-bound note, a
failed timing's record, do_bench's keywords, and the row kernels' warps."""

import unittest

from kernlab_baselines.contract import check_contract, make_record
from kernlab_baselines.timing import (CPU_MIN_CALLS, HOST_BOUND, cpu_call_counts, cycling,
                                      do_bench_kwargs, host_bound_note, quantile,
                                      summarise_rounds, timing_failed)

DOC = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
       "device": "NVIDIA H200", "seed": 7}


class Cycling(unittest.TestCase):
    def test_fills_the_ring_then_takes_the_copies_in_turn(self):
        seen, synced = [], []
        call = cycling(lambda a, b: seen.append((a, b)) or [a], [(1, None), (2, None), (3, None)],
                       lambda: synced.append(len(seen)))
        self.assertEqual(seen, [(1, None), (2, None), (3, None)])
        self.assertEqual(synced, [3])
        for _ in range(4):
            call()
        self.assertEqual([a for a, _ in seen[3:]], [1, 2, 3, 1])

    def test_one_copy_is_the_plain_call(self):
        got = []
        call = cycling(lambda a: got.append(a), [(7,)], lambda: got.append("sync"))
        self.assertEqual(got, [])
        call()
        self.assertEqual(got, [7])


class Rounds(unittest.TestCase):
    def test_three_rounds_keep_the_median_one(self):
        mid, meds, spread = summarise_rounds([(3.0, 2.9, 3.1), (1.0, 0.9, 1.1), (2.0, 1.9, 2.1)])
        self.assertEqual((mid, meds, spread), ((2.0, 1.9, 2.1), [3.0, 1.0, 2.0], 1.0))

    def test_two_rounds_keep_the_lower_middle_one(self):
        mid, _, spread = summarise_rounds([(4.0, 3.0, 5.0), (2.0, 1.0, 3.0)])
        self.assertEqual((mid, spread), ((2.0, 1.0, 3.0), 1.0))

    def test_one_round_and_none(self):
        self.assertEqual(summarise_rounds([(5.0, None, None)]), ((5.0, None, None), [5.0], 0.0))
        with self.assertRaises(ValueError):
            summarise_rounds([])


class HostBound(unittest.TestCase):
    def test_a_host_keeping_ahead_is_not_flagged(self):
        self.assertIsNone(host_bound_note(20.0, 80.0, 5.0, 5.0))
        self.assertIsNone(host_bound_note(84.0, 80.0, 30.0, 5.0))

    def test_a_host_behind_with_a_median_above_the_queued_one_is(self):
        n = host_bound_note(130.0, 80.0, 65.0, 20.0)
        self.assertIsNotNone(n)
        self.assertTrue(n.startswith(HOST_BOUND + ":"), n)
        self.assertIn("65.0 µs against 20.0", n)

    def test_within_the_noise_is_not(self):
        self.assertIsNone(host_bound_note(130.0, 80.0, 5.4, 5.0))

    def test_a_missing_figure_is_not(self):
        self.assertIsNone(host_bound_note(None, 80.0, 5.0, 5.0))
        self.assertIsNone(host_bound_note(90.0, 80.0, 30.0, None))


class FailedTiming(unittest.TestCase):
    def test_records_whose_timing_raised_keep_the_contract_as_errors(self):
        row = make_record("softmax", "triton", "f32", (4096, 256), None)
        row.update(status="ok", validated=True, max_rel_err=3e-7, median_ms=0.011, p20_ms=0.009,
                   p80_ms=0.012, gbps=1.0, repeat_medians_ms=[0.011, 0.01, 0.012], spread=0.2,
                   rotate_copies=3, queued_ms=0.006, settled_ms=0.005)
        gemm = make_record("linear", "triton", "bf16", (127, 255, 63), None, "gelu-tanh")
        gemm.update(status="ok", validated=True, max_rel_err=1.1e-3, validated_rows=127,
                    median_ms=0.01, gbps=1.0, tflops=1.0, rotate_copies=3, queued_ms=0.006,
                    settled_ms=0.005)
        for what, r in (("row", row), ("gemm", gemm)):
            with self.subTest(what):
                check_contract(dict(DOC, records=[r]))  # valid before
                timing_failed(r, RuntimeError("out of memory"))
                check_contract(dict(DOC, records=[r]))
                self.assertEqual((r["status"], r["validated"]), ("error", False))
                self.assertTrue(r["note"].endswith("timing: RuntimeError: out of memory"), r["note"])
                for k in ("median_ms", "gbps", "tflops", "rotate_copies", "queued_ms",
                          "settled_ms", "repeat_medians_ms", "spread", "validated_rows"):
                    self.assertIsNone(r[k], k)

    def test_a_note_is_appended(self):
        r = make_record("gelu", "triton", "f32", (2, 2), "tanh")
        r["note"] = "BLOCK_SIZE=1024"
        timing_failed(r, ValueError(""))
        self.assertEqual(r["note"], "BLOCK_SIZE=1024; timing: ValueError")


class DoBenchKeywords(unittest.TestCase):
    def test_triton_3_takes_quantiles(self):
        kw = do_bench_kwargs({"fn", "warmup", "rep", "quantiles", "return_mode"}, 25.0, 100.0)
        self.assertEqual(kw, {"warmup": 25.0, "rep": 100.0, "quantiles": [0.5, 0.2, 0.8],
                              "return_mode": "median"})

    def test_triton_2_took_percentiles(self):
        kw = do_bench_kwargs({"fn", "warmup", "rep", "percentiles"}, 1.0, 2.0)
        self.assertEqual(kw, {"warmup": 1.0, "rep": 2.0, "percentiles": [0.2, 0.8]})

    def test_an_unreadable_signature_asks_quantiles(self):
        self.assertEqual(do_bench_kwargs({}, 1.0, 2.0)["quantiles"], [0.5, 0.2, 0.8])


if __name__ == "__main__":
    unittest.main()


class CpuCounts(unittest.TestCase):
    """The CPU timer's counts and quantiles, as kernlab's CPU timer has them."""

    def test_quantiles_interpolate_like_numpy(self):
        v = [1.0, 2.0, 3.0, 4.0, 5.0]
        self.assertEqual(quantile(v, 0.5), 3.0)
        self.assertAlmostEqual(quantile(v, 0.2), 1.8)
        self.assertAlmostEqual(quantile(v, 0.8), 4.2)
        self.assertEqual(quantile([7.0], 0.2), 7.0)
        with self.assertRaises(ValueError):
            quantile([], 0.5)

    def test_calls_fill_the_budgets_within_their_bounds(self):
        # 25 ms of warm-up at 2 ms a call, 100 ms of cycles at 4 ms (the flush included).
        self.assertEqual(cpu_call_counts(25.0, 100.0, 2.0, 4.0), (12, 25))
        # A slow call still gets the least number of timed calls, and one warm-up call.
        self.assertEqual(cpu_call_counts(25.0, 100.0, 500.0, 600.0), (1, CPU_MIN_CALLS))
        # A call too quick to measure is capped.
        self.assertEqual(cpu_call_counts(25.0, 100.0, 0.0, 0.0), (10000, 10000))

