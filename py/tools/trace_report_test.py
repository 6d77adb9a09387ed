"""trace_report on a hand-made trace whose split is known."""
import gzip
import json
import lzma
import sys

import pytest

from planner import format_spec as spec
from tools import trace_report


def make_trace():
    # 2 workers, 3 waves: EMBED, QKV (one 2-row task each, hidden 4: 16 bytes), LM_HEAD.
    # Times in ns. Wave v's barrier: arrival a, exit e per worker.
    tasks = [
        [0, 0, 1, 0, 0, 1, 0, 0, 100, 300, 0, 0],
        [0, 1, 2, 0, 0, 2, 0, 0, 1200, 2200, 0, 0],
        [1, 1, 2, 0, 2, 4, 0, 0, 1300, 3200, 0, 0],
        [0, 2, 7, 0, 0, 5, 0, 0, 4300, 5300, 0, 0],
        [1, 2, 7, 0, 5, 10, 1, 0, 4400, 6300, 0, 0],
    ]
    barriers = [
        [0, 0, 400, 1000, 0, 0], [1, 0, 200, 1100, 0, 0],
        [0, 1, 2300, 4100, 0, 0], [1, 1, 3300, 4000, 0, 0],
        [0, 2, 5400, 7000, 0, 0], [1, 2, 6400, 7100, 0, 0],
    ]
    return dict(package="p", gpu="g", context=5, decode_ms_per_token=0.007, hidden=4, ffn=8,
                layers=1, heads=2, kv_heads=1, head_dim=2, vocab=10, workers=2, waves=3,
                attention_min_chunk=4, tasks=tasks, barriers=barriers)


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".xz", lzma.open), ("", open)])
def test_split_of_a_known_trace(tmp_path, suffix, opener):
    path = tmp_path / ("t.json" + suffix)
    with opener(path, "wt") as f:
        json.dump(make_trace(), f)
    trace = trace_report.load(str(path))
    rows, split = trace_report.analyse(trace, bandwidth_gbps=0.1)  # 100 bytes/us
    assert [r["kind"] for r in rows] == ["EMBED", "QKV (RMSNORM_GEMV)", "LM_HEAD"]
    embed, qkv, lm = rows
    # EMBED: from the first task (100) to the first exit (1000); last arrival 400.
    assert embed["span"] == pytest.approx(0.9) and embed["work"] == pytest.approx(0.3)
    assert embed["barrier"] == pytest.approx(0.6)
    # QKV: from 1000 to the first exit 4000; last arrival 3300; 4 rows x 4 x 2 = 32 bytes.
    assert qkv["span"] == pytest.approx(3.0) and qkv["work"] == pytest.approx(2.3)
    assert qkv["bytes"] == 32 and qkv["ideal"] == pytest.approx(0.32)
    assert qkv["first_task_delay"] == pytest.approx(0.2)  # worker 1: exit 1100, task 1300
    assert lm["bytes"] == 10 * 4 * 2 and lm["work"] == pytest.approx(2.4)
    total = sum(r["span"] for r in rows)
    assert sum(split.values()) == pytest.approx(total)
    assert split["barriers"] == pytest.approx(0.6 + 0.7 + 0.6)
    assert split["rest"] == pytest.approx(0.3)  # EMBED's work
    assert split["ideal streaming"] == pytest.approx(0.32 + 0.8)
    assert split["GEMV below the roofline"] == pytest.approx(2.3 - 0.32 + 2.4 - 0.8)
    text = trace_report.report(trace, rows, split)
    assert "LM_HEAD" in text and "token:" in text


def test_a_wave_without_a_barrier_ends_with_its_slowest_worker():
    trace = make_trace()
    trace["no_barrier_waves"] = [1]  # QKV: each worker's "barrier" is its end of the wave
    trace["barriers"][2:4] = [[0, 1, 2300, 2300, 0, 0], [1, 1, 3300, 3300, 0, 0]]
    rows, split = trace_report.analyse(trace, bandwidth_gbps=0.1)
    embed, qkv, lm = rows
    assert qkv["span"] == pytest.approx(2.3) and qkv["work"] == pytest.approx(2.3) and qkv["barrier"] == 0
    assert lm["span"] == pytest.approx(3.7)  # from QKV's slowest end (3300) to LM_HEAD's first exit (7000)
    assert sum(split.values()) == pytest.approx(6.9)  # the first task (100) to the last exit (7000)
    assert split["barriers"] == pytest.approx(0.6 + 0.6)
    assert "1 waves have no grid barrier" in trace_report.report(trace, rows, split)
    plain = make_trace()
    assert "no grid barrier" not in trace_report.report(plain, *trace_report.analyse(plain, bandwidth_gbps=0.1))


def test_a_skipped_wave_is_left_out():
    # Wave 1 did not run (no task times, no barrier): wave 2's first-task delay counts from
    # wave 0's exit, the last one that ran (worker 1, the slowest in wave 2: 1100 -> 4400).
    trace = make_trace()
    for t in trace["tasks"]:
        if t[1] == 1:
            t[8] = t[9] = 0
    for b in trace["barriers"]:
        if b[1] == 1:
            b[2] = b[3] = 0
    rows, _ = trace_report.analyse(trace, bandwidth_gbps=0.1)
    assert [r["kind"] for r in rows] == ["EMBED", "LM_HEAD"]
    assert rows[1]["first_task_delay"] == pytest.approx(3.3)
    assert rows[1]["span"] == pytest.approx(6.0)  # from wave 0's first exit (1000) to 7000


def test_a_format_1_trace_with_its_reduction_wave_still_reads():
    # Traces in results/ before package format 2 hold FFN_REDUCE waves (opcode 6).
    trace = make_trace()
    for t in trace["tasks"]:
        if t[1] == 1:
            t[2] = 6
    rows, split = trace_report.analyse(trace, bandwidth_gbps=0.1)
    assert [r["kind"] for r in rows] == ["EMBED", "FFN_REDUCE", "LM_HEAD"]
    assert split["rest"] == pytest.approx(0.3 + 2.3)  # EMBED's and the reduction's work


def test_balance_of_a_known_trace():
    grid, ratio = trace_report.balance(make_trace())
    # Wave 1: each worker 2 rows x hidden 4 x 2 bytes; wave 2: 5 rows each (LM_HEAD).
    assert grid[1] == [16, 16] and grid[2] == [40, 40] and ratio[1] == 1.0
    assert grid[0] == [8, 0] and ratio[0] == 2.0  # EMBED on worker 0 alone: 8 bytes


def test_empty_trace_is_refused(tmp_path):
    trace = make_trace()
    for t in trace["tasks"]:
        t[8] = t[9] = 0
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(ValueError, match="no traced task"):
        trace_report.load(str(path))


# report()'s text for make_trace() at 0.1 GB/s before the phase trace existed: a trace without phase
# marks must still read exactly so.
OLD_REPORT = (
    "p: context 5, 2 workers, 3 waves run; 0.0070 ms/token in that generation\n"
    "wave kind            waves   span us   work us barrier us  ideal us    GB/s "
    "1st task delay us task us (median)\n"
    "EMBED                    1       0.9       0.3        0.6       0.1       0              0.00"
    "             0.20\n"
    "QKV (RMSNORM_GEMV)       1       3.0       2.3        0.7       0.3       0              0.20"
    "             1.45\n"
    "LM_HEAD                  1       3.0       2.4        0.6       0.8       0              0.40"
    "             1.45\n"
    "token: 6.9 us = ideal streaming 1.1 (16%), GEMV below the roofline 3.6 (52%), "
    "attention 0.0 (0%), barriers 1.9 (28%), rest 0.3 (4%)")


def make_phase_trace():
    # make_trace() with SM clocks (2 per ns, except the second LM_HEAD task at 3 per ns: the
    # trace-wide median, 2, converts every task) and phase marks (0 = none).
    trace = make_trace()
    for t, (begin_clk, end_clk) in zip(trace["tasks"], [(200, 600), (2400, 4400), (2600, 6400),
                                                        (8600, 10600), (13200, 18900)]):
        t[10], t[11] = begin_clk, end_clk
    trace["phases_clk"] = [
        [0] * 6,                     # EMBED: no phases
        [3000, 0, 0, 0, 0, 0],       # QKV: norm 300 ns, gemv 700 ns
        [3600, 0, 0, 0, 0, 0],       # QKV: norm 500 ns, gemv 1400 ns
        [0] * 6,                     # LM_HEAD: its mark missing, left out
        [14400, 0, 0, 0, 0, 0],      # LM_HEAD: norm 600 ns, gemv+argmax 2250 ns
    ]
    return trace


def test_ns_per_clock_is_the_trace_wide_median():
    assert trace_report.ns_per_clock(make_phase_trace()) == pytest.approx(0.5)


def test_phase_medians_of_a_known_trace():
    table = trace_report.phases(make_phase_trace())
    qkv, lm = spec.OPCODES["RMSNORM_GEMV"], spec.OPCODES["LM_HEAD"]
    assert sorted(table) == [qkv, lm]  # EMBED has no phases
    n, medians, task = table[qkv]
    assert n == 2 and medians == pytest.approx([0.4, 1.05]) and task == pytest.approx(1.45)
    n, medians, task = table[lm]
    assert n == 1 and medians == pytest.approx([0.6, 2.25]) and task == pytest.approx(2.85)
    text = trace_report.phase_report(make_phase_trace())
    assert "QKV (RMSNORM_GEMV)       2     1.45  norm 0.40 | gemv 1.05" in text
    assert "LM_HEAD                  1     2.85  norm 0.60 | gemv+argmax 2.25" in text
    assert "2.000 clk/ns" in text
    # The slowest sixteenth: of 2 QKV tasks, the longer one alone (norm 500 ns, gemv 1400 ns).
    n, medians, task = trace_report.phases(make_phase_trace(), slowest=True)[qkv]
    assert n == 1 and medians == pytest.approx([0.5, 1.4]) and task == pytest.approx(1.9)
    assert "QKV (RMSNORM_GEMV)       1     1.90  norm 0.50 | gemv 1.40" in text


def test_attention_and_ffn_phases_follow_their_marks():
    trace = make_phase_trace()
    attention, ffn = trace["tasks"][1], trace["tasks"][2]
    attention[2], ffn[2] = spec.OPCODES["ATTENTION"], spec.OPCODES["FFN"]
    trace["phases_clk"][1] = [2600, 4000, 9999, 9999, 9999, 9999]  # marks past the phases: unused
    trace["phases_clk"][2] = [2800, 6000, 0, 0, 0, 0]
    table = trace_report.phases(trace)
    assert table[spec.OPCODES["ATTENTION"]][1] == pytest.approx([0.1, 0.7, 0.2])
    assert table[spec.OPCODES["FFN"]][1] == pytest.approx([0.1, 1.6, 0.2])
    trace["phases_clk"][2][1] = 0  # FFN's second mark missing: the task is left out
    assert spec.OPCODES["FFN"] not in trace_report.phases(trace)


def run_main(tmp_path, trace, capsys):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    trace_report.FLAGS(["trace_report", f"--trace={path}", "--bandwidth_gbps=0.1"])
    trace_report.main(["trace_report"])
    return capsys.readouterr().out


def test_a_trace_without_phases_reports_as_before(tmp_path, capsys):
    trace = make_trace()
    assert trace_report.phases(trace) is None and trace_report.phase_report(trace) is None
    assert run_main(tmp_path, trace, capsys) == OLD_REPORT + "\n"


def test_a_phase_trace_adds_its_tables_after_the_old_report(tmp_path, capsys):
    trace = make_phase_trace()
    out = run_main(tmp_path, trace, capsys)
    assert out.startswith(OLD_REPORT + "\nphases inside tasks:")
    gap = trace_report.gap_report(*trace_report.analyse(trace, bandwidth_gbps=0.1))
    assert out.endswith(trace_report.phase_report(trace) + "\n" + gap + "\n")


def test_the_gap_by_cause_of_a_phase_trace():
    trace = make_phase_trace()
    rows, split = trace_report.analyse(trace, bandwidth_gbps=0.1)
    kinds = trace_report.gap_by_kind(rows)
    delay, lead, below = trace_report.GAP_CAUSES
    # QKV: the slowest worker is 1 (arrival 3300): its exit 1100 -> task 1300 (0.2 us), norm
    # 1000 clocks at 0.5 ns (0.5 us); work 2.3 - ideal 0.32 - 0.2 - 0.5 below the roofline.
    qkv = kinds["QKV (RMSNORM_GEMV)"]
    assert qkv["waves"] == 1 and qkv["ideal"] == pytest.approx(0.32)
    assert (qkv[delay], qkv[lead], qkv[below]) == pytest.approx((0.2, 0.5, 1.28))
    # LM_HEAD: worker 1 again (arrival 6400): exit 4000 -> task 4400, norm 1200 clocks.
    lm = kinds["LM_HEAD"]
    assert (lm[delay], lm[lead], lm[below]) == pytest.approx((0.4, 0.6, 2.4 - 0.8 - 0.4 - 0.6))
    gap = trace_report.gap_by_cause(rows, split)
    assert list(gap) == ["ideal streaming", delay, lead, below, "attention", "barriers", "rest"]
    assert sum(gap.values()) == pytest.approx(sum(split.values()))
    assert gap[delay] + gap[lead] + gap[below] == pytest.approx(split["GEMV below the roofline"])
    text = trace_report.gap_report(rows, split)
    assert "QKV (RMSNORM_GEMV)       1       0.3        0.2           0.5                    1.3" in text


def test_no_gap_by_cause_without_the_slowest_workers_marks():
    assert trace_report.gap_by_kind(trace_report.analyse(make_trace(), 0.1)[0]) is None
    trace = make_phase_trace()
    trace["phases_clk"][4] = [0] * 6  # LM_HEAD's slowest worker lost its mark; the other has none
    rows, split = trace_report.analyse(trace, bandwidth_gbps=0.1)
    assert trace_report.gap_by_cause(rows, split) is None and trace_report.gap_report(rows, split) is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
