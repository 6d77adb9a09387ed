"""trace_compare on hand-made traces whose task times are known."""
import json
import lzma
import sys

import pytest

from tools import trace_compare


def make_trace(qkv_ns=(1000, 1900), context=5):
    """2 workers, 3 waves (EMBED, QKV, LM_HEAD); the QKV tasks last qkv_ns (ns). The barriers
    follow the tasks, so the token's span grows with the slower QKV task."""
    q0, q1 = qkv_ns
    qkv_end = 1300 + max(q0 + 100, q1)
    tasks = [
        [0, 0, 1, 0, 0, 1, 0, 0, 100, 300, 0, 0],
        [0, 1, 2, 0, 0, 2, 0, 0, 1200, 1200 + q0, 0, 0],
        [1, 1, 2, 0, 2, 4, 0, 0, 1300, 1300 + q1, 0, 0],
        [0, 2, 7, 0, 0, 5, 0, 0, qkv_end + 300, qkv_end + 1300, 0, 0],
        [1, 2, 7, 0, 5, 10, 1, 0, qkv_end + 400, qkv_end + 2300, 0, 0],
    ]
    barriers = [
        [0, 0, 400, 1000, 0, 0], [1, 0, 200, 1100, 0, 0],
        [0, 1, qkv_end - 100, qkv_end + 200, 0, 0], [1, 1, qkv_end, qkv_end + 100, 0, 0],
        [0, 2, qkv_end + 1400, qkv_end + 3000, 0, 0], [1, 2, qkv_end + 2400, qkv_end + 3100, 0, 0],
    ]
    return dict(package="p", gpu="g", context=context, decode_ms_per_token=0.007, hidden=4, ffn=8,
                layers=1, heads=2, kv_heads=1, head_dim=2, vocab=10, workers=2, waves=3,
                attention_min_chunk=4, tasks=tasks, barriers=barriers)


QKV = "QKV (RMSNORM_GEMV)"


def test_medians_per_kind_and_the_token():
    values = trace_compare.task_medians(make_trace((1000, 1900)))
    assert values[QKV] == pytest.approx(1.45)  # median of 1.0 and 1.9 us
    assert values["EMBED"] == pytest.approx(0.2)
    assert values["LM_HEAD"] == pytest.approx(1.45)  # 1.0 and 1.9 us
    assert values[trace_compare.TOKEN] > values[QKV]


def test_a_difference_beyond_the_null_builds_is_marked_and_one_within_is_not():
    traces = [("A", make_trace((1000, 1900))), ("B", make_trace((1500, 2400))),  # QKV +0.5 us
              ("P", make_trace((1100, 2000))),  # a null build: QKV +0.1 us
              ("C", make_trace((1050, 1950)))]  # +0.05 us: within the noise
    names, kinds, table, noise = trace_compare.compare(traces, null=["P"])
    assert names == ["A", "B", "P", "C"]
    assert kinds[-1] == trace_compare.TOKEN
    assert noise[QKV] == pytest.approx(0.1)
    assert noise["EMBED"] == pytest.approx(0.0)
    v, d, mark = table["B"][QKV]
    assert v == pytest.approx(1.95) and d == pytest.approx(0.5) and mark
    assert table["C"][QKV][1] == pytest.approx(0.05) and not table["C"][QKV][2]
    assert not table["P"][QKV][2]  # a null build is never marked
    assert table["A"][QKV][1] is None  # the baseline has no difference
    assert not table["B"]["EMBED"][2]  # EMBED unchanged: 0 is not beyond a noise of 0
    text = trace_compare.render(names, kinds, table, noise, "A")
    assert "+0.50*" in text and "+0.05 " in text


def test_rounds_are_averaged_and_their_spread_is_noise():
    traces = [("A", make_trace((1000, 1900))), ("A", make_trace((1200, 2100))),  # rounds: 1.45, 1.65
              ("B", make_trace((1250, 2150))),  # 1.70: +0.15 from the mean 1.55, inside the spread 0.2
              ("C", make_trace((1350, 2250)))]  # 1.80: +0.25, beyond it
    names, _, table, noise = trace_compare.compare(traces)
    assert names == ["A", "B", "C"]
    assert table["A"][QKV][0] == pytest.approx(1.55)
    assert noise[QKV] == pytest.approx(0.2)
    assert table["B"][QKV][1] == pytest.approx(0.15) and not table["B"][QKV][2]
    assert table["C"][QKV][1] == pytest.approx(0.25) and table["C"][QKV][2]


def test_without_null_builds_or_rounds_nothing_is_marked():
    traces = [("A", make_trace((1000, 1900))), ("B", make_trace((3000, 3900)))]
    names, kinds, table, noise = trace_compare.compare(traces, baseline="B")
    assert all(n is None for n in noise.values())
    assert table["A"][QKV][1] == pytest.approx(-2.0) and not table["A"][QKV][2]
    assert " - " in trace_compare.render(names, kinds, table, noise, "B")


@pytest.mark.parametrize("traces, baseline, null, message", [
    ([("A", make_trace()), ("B", make_trace(context=6))], None, [], "context 6 differs"),
    ([("A", make_trace())], "Z", [], "'Z' is not among"),
    ([("A", make_trace())], None, ["Q"], "'Q' is not among"),
    ([("A", make_trace()), ("B", make_trace())], "A", ["A"], "cannot also be a null build"),
    ([], None, [], "no --named_trace"),
])
def test_bad_inputs_say_what_is_wrong(traces, baseline, null, message):
    with pytest.raises(ValueError, match=message):
        trace_compare.compare(traces, baseline, null)


@pytest.mark.parametrize("text", ["A", "=x.json", "A=", "A B=x.json"])
def test_malformed_named_trace(text):
    with pytest.raises(ValueError, match="give NAME=PATH"):
        trace_compare.parse_trace_arg(text)


def test_main_reads_compressed_traces(tmp_path, capsys):
    paths = {}
    for name, qkv in (("A", (1000, 1900)), ("B", (1500, 2400))):
        paths[name] = tmp_path / f"{name}.json.xz"
        with lzma.open(paths[name], "wt") as f:
            json.dump(make_trace(qkv), f)
    trace_compare.FLAGS([
        "trace_compare", f"--named_trace=A={paths['A']}", f"--named_trace=B={paths['B']}"])
    try:
        trace_compare.main(["trace_compare"])
    finally:
        trace_compare.FLAGS.unparse_flags()
    out = capsys.readouterr().out
    assert "baseline A" in out and "+0.50" in out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
