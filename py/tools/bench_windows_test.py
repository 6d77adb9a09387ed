"""bench_windows: config parsing, the bench processes it starts (a fake bench script that
records its arguments and stdin), and the medians it reports."""
import json
import os
import stat

import pytest

from tools import bench_windows


def test_parse_config():
    assert bench_windows.parse_config("A=.gpu/bin") == ("A", ".gpu/bin", [])
    assert bench_windows.parse_config("T_1=.gpu/b:--attention_tile_min=1,--seed=7") == (
        "T_1", ".gpu/b", ["--attention_tile_min=1", "--seed=7"])


def test_missing_packages(tmp_path):
    (tmp_path / "a.tpkg").write_bytes(b"x")
    (tmp_path / "b.tpkg").mkdir()  # not a file
    assert bench_windows.missing_packages(str(tmp_path), ["a", "b", "c"]) == [
        str(tmp_path / "b.tpkg"), str(tmp_path / "c.tpkg")]


@pytest.mark.parametrize("bad", ["A", "=.gpu/bin", "A=", "A=.gpu/bin:attention_tile_min=1", "A=.gpu/bin:--x",
                                 "A-B=.gpu/bin"])
def test_parse_config_refuses(bad):
    with pytest.raises(ValueError):
        bench_windows.parse_config(bad)


FAKE_BENCH = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.jsonl")
stdin = sys.stdin.read()
with open(log, "a") as f:
    f.write(json.dumps({"args": args, "stdin": stdin}) + "\\n")
if "--fail=true" in args:
    print("bench: no such package", file=sys.stderr)
    sys.exit(3)
scale = 2.0 if "--slow=true" in args else 1.0
for line in stdin.splitlines():
    parts = line.split()
    if parts and parts[0] == "context":
        c, r = int(parts[1]), int(parts[2])
        print(json.dumps({"context": c, "window": [c - 15, c], "ms_per_token": [scale * (c / 1000 + k) for k in range(r)]}))
"""


@pytest.fixture
def fake_bin(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    b = d / "bench"
    b.write_text(FAKE_BENCH)
    b.chmod(b.stat().st_mode | stat.S_IXUSR)
    return d


def test_run_and_summarize(tmp_path, fake_bin):
    out = tmp_path / "out"
    configs = [("A", str(fake_bin), []), ("M", str(fake_bin), ["--slow=true"])]
    failures = bench_windows.run(configs, ["m1", "m2"], "/pkgs", [256, 1024], 2, 3, str(out))
    assert failures == []
    calls = [json.loads(line) for line in open(fake_bin / "calls.jsonl")]
    # blocks x models x configs, interleaved in that order
    assert [(c["args"][0], "--slow=true" in c["args"]) for c in calls] == [
        ("--package=/pkgs/m1.tpkg", False), ("--package=/pkgs/m1.tpkg", True),
        ("--package=/pkgs/m2.tpkg", False), ("--package=/pkgs/m2.tpkg", True)] * 2
    assert all("--check_target=false" in c["args"] for c in calls)
    assert calls[0]["stdin"] == "context 256 3\ncontext 1024 3\nquit\n"
    assert sorted(os.listdir(out)) == sorted(f"{m}_{n}_{b}.jsonl" for m in ("m1", "m2") for n in "AM" for b in (1, 2))
    med = bench_windows.summarize(str(out), ["m1", "m2"], ["A", "M"], [256, 1024])
    assert med[("m1", "A", 256)] == pytest.approx(1.256)  # windows 0.256 + (0, 1, 2), twice: median 1.256
    assert med[("m2", "M", 1024)] == pytest.approx(2 * 2.024)
    text = bench_windows.table(med, ["m1"], ["A", "M"], [256, 1024])
    assert "1.2560" in text and "4.0480" in text


def test_run_reports_a_failed_bench_and_keeps_going(tmp_path, fake_bin):
    out = tmp_path / "out"
    configs = [("A", str(fake_bin), ["--fail=true"]), ("B", str(fake_bin), [])]
    failures = bench_windows.run(configs, ["m1"], "/pkgs", [256], 1, 2, str(out))
    assert failures == ["m1 A block 1: bench: no such package"]
    med = bench_windows.summarize(str(out), ["m1"], ["A", "B"], [256])
    assert med[("m1", "A", 256)] is None and med[("m1", "B", 256)] == pytest.approx(0.756)
    assert "      -" in bench_windows.table(med, ["m1"], ["A", "B"], [256])


def test_check_target_from_a_config_is_kept(tmp_path, fake_bin):
    bench_windows.run([("A", str(fake_bin), ["--check_target=true"])], ["m1"], "/p", [256], 1, 1, str(tmp_path / "o"))
    args = json.loads(open(fake_bin / "calls.jsonl").readline())["args"]
    assert "--check_target=true" in args and "--check_target=false" not in args


def test_packages_for_a_config(tmp_path, fake_bin):
    # A build of another package format reads its own planner's packages.
    configs = [("A", str(fake_bin), []), ("B", str(fake_bin), [])]
    bench_windows.run(configs, ["m1"], "/p2", [256], 1, 1, str(tmp_path / "o"), packages_for={"A": "/p1"})
    calls = [json.loads(line)["args"][0] for line in open(fake_bin / "calls.jsonl")]
    assert calls == ["--package=/p1/m1.tpkg", "--package=/p2/m1.tpkg"]


def test_summarize_refuses_an_error_answer(tmp_path):
    (tmp_path / "m1_A_1.jsonl").write_text(json.dumps({"error": "context must be in 1..600"}) + "\n")
    with pytest.raises(ValueError, match="context must be in"):
        bench_windows.summarize(str(tmp_path), ["m1"], ["A"], [256])
