"""Tests for the planner CLI and build_package, on tiny HF checkpoints written to disk."""

import os
import pathlib
import subprocess
import sys

import pytest

from planner import main as planner_main
from planner import package
from planner import validate
from tests.reference.tiny_models import write_tiny_checkpoint

MAIN = str(pathlib.Path(planner_main.__file__))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck")
    write_tiny_checkpoint(d, hidden=72, ffn=100, layers=2, heads=9, kv_heads=3, vocab=97)
    return d


def test_build_package(checkpoint, tmp_path):
    out = tmp_path / "m.tpkg"
    r = planner_main.build_package(str(checkpoint), "rtx3050", str(out), 64, progress=False)
    assert r.file_bytes == out.stat().st_size
    view = package.read_package(str(out))
    validate.validate_plan(view)
    assert view.meta["plan"]["max_context"] == 64
    assert view.meta["stop_token_ids"] == [2]
    assert view.tokenizer["kind"] == "byte_level_bpe" and len(view.tokenizer["vocab"]) == 97
    assert "local directory" in view.meta["planner"]["source"]
    # max_context 64: one chunk a K/V head by default (ceil(64 / 192)), 3 ATTENTION tasks a layer
    for text in ("166 tasks in 10 waves", "attention 3 kv heads x 1 chunks", "20 workers",
                 "RMSNORM_GEMV", "floor at 212.9 GB/s",
                 "weights: 158,736 bytes packed"):
        assert text in r.summary, r.summary


def test_build_package_errors(checkpoint, tmp_path):
    with pytest.raises(ValueError, match="shipped targets are"):
        planner_main.build_package(str(checkpoint), "a100", str(tmp_path / "m.tpkg"), 64)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        planner_main.build_package(str(checkpoint), "h200", str(tmp_path / "m.tpkg"), 10**6)
    assert os.listdir(tmp_path) == []


def run_cli(*args, cwd=None, env=None):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    e.update(env or {})
    return subprocess.run([sys.executable, MAIN, *args], capture_output=True, text=True,
                          cwd=cwd, env=e, timeout=120)


def test_a_bos_id_without_a_token_leaves_no_chat_format(caplog):
    """A config BOS id past the tokenizer's tokens (a padded embedding row) has no text for the
    template to write: no chat format, with a warning, where an IndexError stopped the planner."""
    import types
    tok = types.SimpleNamespace(chat_template="{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}",
                                bos_id=55, eos_ids=[2], vocab=[f"t{i}" for i in range(50)])
    assert planner_main._chat_format(tok) is None
    assert "the BOS id 55 has no token in the tokenizer (50 tokens)" in caplog.text


def test_cli_writes_and_summarises(checkpoint, tmp_path):
    # Relative --out resolves against BUILD_WORKING_DIRECTORY, as under `bazel run`.
    r = run_cli(f"--checkpoint={checkpoint}", "--target=h200", "--out=rel.tpkg",
                "--max_context=32", "--bandwidth_gbps=1000",
                env={"BUILD_WORKING_DIRECTORY": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rel.tpkg").is_file()
    assert "floor at 1000 GB/s" in r.stdout and "128 workers" in r.stdout, r.stdout
    # hidden 72, 120 QKV rows, FFN 100, vocabulary 97: one row a task at most on 128 workers
    assert "tasks a wave: EMBED 72, QKV 120, ATTENTION 3, ATTN_OUT 72, FFN 100, LM_HEAD 97" \
        in r.stdout, r.stdout


def test_cli_wave_parts(checkpoint, tmp_path):
    out = tmp_path / "parts.tpkg"
    r = run_cli(f"--checkpoint={checkpoint}", "--target=h200", f"--out={out}", "--max_context=32",
                "--qkv_parts=96", "--attn_out_parts=64", "--ffn_parts=50", "--lm_head_slots=7")
    assert r.returncode == 0, r.stderr
    assert "QKV 96, ATTENTION 3, ATTN_OUT 64, FFN 50, LM_HEAD 7" in r.stdout, r.stdout
    assert "50 FFN parts; 7 lm_head slots" in r.stdout, r.stdout
    validate.validate_plan(package.read_package(str(out)))
    r = run_cli(f"--checkpoint={checkpoint}", "--target=h200", f"--out={tmp_path / 'bad.tpkg'}",
                "--max_context=32", "--qkv_parts=129")
    assert r.returncode == 1, r.stderr
    assert "qkv_parts=129 must be an int in [1, workers=128]" in r.stderr, r.stderr
    assert not (tmp_path / "bad.tpkg").exists()


def test_plan_flags_are_build_package_keywords_and_flags():
    # PLAN_FLAGS feeds build_package(**plan_flag_values()) in the planner and smollm2_package.
    import inspect
    keywords = inspect.signature(planner_main.build_package).parameters
    for name in planner_main.PLAN_FLAGS:
        assert keywords[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert name in planner_main.FLAGS, name
    plan_params = set(inspect.signature(planner_main.plan_lib.make_plan).parameters)
    assert plan_params - {"config", "target", "max_context"} <= set(planner_main.PLAN_FLAGS)


def test_cli_rejects_stray_arguments_and_reports_errors(checkpoint, tmp_path):
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={tmp_path / 'm.tpkg'}", "oops")
    assert r.returncode != 0 and "unexpected arguments: oops" in r.stderr
    r = run_cli(f"--checkpoint={tmp_path / 'nowhere'}", f"--out={tmp_path / 'm.tpkg'}")
    assert r.returncode == 1 and "planner: error:" in r.stderr and "Traceback" not in r.stderr
    r = run_cli(f"--checkpoint={checkpoint}")
    assert r.returncode != 0 and "--out" in r.stderr
    r = run_cli(f"--checkpoint={checkpoint}", "--out=")
    assert r.returncode != 0 and "--out is empty" in r.stderr
    r = run_cli("--checkpoint=", f"--out={tmp_path / 'm.tpkg'}")  # it planned the current directory
    assert r.returncode != 0 and "--checkpoint is empty" in r.stderr
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={tmp_path / 'm.tpkg'}", "--bandwidth_gbps=-5")
    assert r.returncode != 0 and "--bandwidth_gbps=-5.0: give a positive, finite bandwidth" in r.stderr
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={tmp_path / 'm.tpkg'}", "--bandwidth_gbps=inf")
    assert r.returncode == 1 and "--bandwidth_gbps=inf: give a positive, finite bandwidth" in r.stderr
    notes = tmp_path / "notes.txt"
    notes.write_text("keep")
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={notes}")
    assert r.returncode == 1 and "exists and is not a TileInfer package" in r.stderr
    assert notes.read_text() == "keep"
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={tmp_path / 'no' / 'm.tpkg'}")
    assert r.returncode == 1 and "does not exist: create it first" in r.stderr
    r = run_cli(f"--checkpoint={checkpoint}", f"--out={tmp_path / 'm.tpkg'}", "--revision=abc")
    assert r.returncode == 1 and "--revision=abc is for hub ids" in r.stderr and "leave --revision out" in r.stderr
    assert not (tmp_path / "m.tpkg").exists()


_SIGNAL_AFTER_RENAME = """
import os, sys
from absl import app
from planner import main as m
def build(checkpoint, target, out, *args, **kw):
    with open(out + ".tmp", "wb") as f:
        f.write(b"new")
    os.replace(out + ".tmp", out)  # as write_package's rename
    raise KeyboardInterrupt  # Ctrl-C just after it
m.build_package = build
sys.argv = ["planner", "--checkpoint=" + sys.argv[1], "--out=" + sys.argv[2]]
app.run(m.main)
"""


@pytest.mark.parametrize("replaced", [False, True])
def test_an_interrupt_says_whether_out_was_replaced(checkpoint, tmp_path, replaced):
    out = tmp_path / "m.tpkg"
    out.write_bytes(b"old")
    script = _SIGNAL_AFTER_RENAME if replaced else _SIGNAL_AFTER_RENAME.replace(
        '    os.replace(out + ".tmp", out)  # as write_package\'s rename\n', "")
    r = subprocess.run([sys.executable, "-c", script, str(checkpoint), str(out)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == -2, r.stderr  # ended by SIGINT, as a shell expects
    if replaced:
        assert "already holds the new package, complete and checked (it replaced the earlier file)" in r.stderr, r.stderr
        assert out.read_bytes() == b"new"
    else:
        assert "holds no partial package" in r.stderr, r.stderr
        assert out.read_bytes() == b"old"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
