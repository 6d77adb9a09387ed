"""The decode command line (host/decode.cc) on a tiny package: a normal run's lines, and bad
options refused with a clear error on stderr, nothing dangling on stdout."""
import os
import subprocess
import sys

import pytest

from planner import main as planner_main
from tests.reference import tiny_models


def decode_binary():
    """host/decode in the test's runfiles (bazel test), else in bazel-bin (plain pytest)."""
    for path in ("host/decode", "bazel-bin/host/decode"):
        if os.access(path, os.X_OK):
            return path
    pytest.fail("host/decode not found: run under bazel test, or bazel build //host:decode first")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode_cli")
    tiny_models.write_tiny_checkpoint(root / "ckpt", hidden=64, ffn=96, layers=1, heads=4,
                                      kv_heads=2, vocab=120, seed=5)
    pkg = root / "tiny.tpkg"
    planner_main.build_package(str(root / "ckpt"), "h200", str(pkg), 64, progress=False)
    return pkg


def run(package, *flags, stdin=None):
    p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", *flags],
                       capture_output=True, text=True, timeout=120, input=stdin)
    return p.returncode, p.stdout, p.stderr


def test_a_run_prints_prompt_output_ids_and_times(package):
    rc, out, err = run(package, "--prompt_ids=3,7,11", "--max_new_tokens=4", "--ignore_eos")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("prompt: ") and lines[1].startswith("output: ")
    ids = lines[2].removeprefix("ids: ").split(",")
    assert lines[2].startswith("ids: ") and len(ids) == 4 and all(i.isdigit() for i in ids)
    assert lines[3].startswith("prompt: 3 tokens in ") and "decode: 3 tokens in " in lines[3]


@pytest.mark.parametrize("flag, message", [
    ("--max_new_tokens=0", "max_new_tokens must be at least 1"),
    ("--top_p=1.5", "top_p must be in (0, 1]"),
    ("--temperature=-1", "temperature must be a finite number >= 0"),
])
def test_a_bad_request_option_leaves_no_dangling_output_line(package, flag, message):
    rc, out, err = run(package, "--prompt_ids=3,7,11", flag)
    assert rc != 0 and message in err, err
    assert "output:" not in out and message not in out


@pytest.mark.parametrize("threads", ["-1", "1025", "2147483647"])
def test_cpu_threads_out_of_range_are_refused(package, threads):
    rc, out, err = run(package, "--prompt_ids=3", f"--threads={threads}")
    assert rc != 0 and f"CPU executor threads {threads}: give 0" in err, err
    assert "prompt:" not in out


def test_chat_with_piped_turns_shows_no_terminal_prompt(package):
    rc, out, err = run(package, "--chat", "--max_new_tokens=3", "--ignore_eos", stdin="hi\nand you?\n\n")
    assert rc == 0, err
    assert out.count("prompt: ") == 2, out  # one timing line a turn
    assert "> " not in err, err


def test_a_missing_package_says_how_to_make_one(tmp_path):
    rc, _, err = run(tmp_path / "nope.tpkg", "--prompt_ids=3")
    assert rc != 0 and "cannot open package" in err and "bazel run //py/planner" in err, err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
