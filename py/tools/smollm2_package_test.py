"""smollm2_package's command line: the planner's plan flags reach the plan, flags it would
ignore are refused, errors are one line. An existing intact import of the installed GGUF in
--hf_dir is planned as it is, so a tiny checkpoint with that GGUF's provenance (and its own
files' SHA-256s, as gguf_import records them) stands in for the imported SmolLM2 (the GGUF is
only hashed here, not imported); another folder, or an import changed since, is refused."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from planner import package
from tests.reference.tiny_models import write_tiny_checkpoint
from tools import gguf_import, smollm2, smollm2_package

TOOL = str(pathlib.Path(smollm2_package.__file__))


def run_tool(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("hf")
    write_tiny_checkpoint(d, hidden=72, ffn=100, layers=2, heads=9, kv_heads=3, vocab=97)
    (d / "import_provenance.json").write_text(json.dumps(
        {"source_sha256": gguf_import.file_sha256(smollm2.gguf_path()),
         "files": gguf_import.content_hashes(d)}))
    return d


def test_a_folder_that_is_not_an_import_of_the_gguf_is_refused(tmp_path):
    d = tmp_path / "other"
    write_tiny_checkpoint(d, hidden=72, ffn=100, layers=2, heads=9, kv_heads=3, vocab=97)
    out = tmp_path / "s.tpkg"
    r = run_tool(f"--out={out}", f"--hf_dir={d}", "--target=rtx3050", "--max_context=64")
    assert r.returncode == 1 and "exists but is not an import of the SmolLM2 GGUF" in r.stderr, r.stderr
    assert "remove that folder to import the GGUF again, or give another --hf_dir" in r.stderr
    (d / "import_provenance.json").write_text(json.dumps({"source_sha256": "ab" * 32}))
    r = run_tool(f"--out={out}", f"--hf_dir={d}", "--target=rtx3050", "--max_context=64")
    assert r.returncode == 1 and "is an import of another file (SHA-256 abababab" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_plan_flags_reach_the_plan(hf_dir, tmp_path):
    out = tmp_path / "s.tpkg"
    r = run_tool(f"--out={out}", f"--hf_dir={hf_dir}", "--target=rtx3050", "--max_context=64",
                 "--workers=7", "--ffn_parts=5", "--attention_min_chunk=16",
                 "--created=2026-01-01T00:00:00Z")
    assert r.returncode == 0, r.stderr
    assert "7 workers" in r.stdout and "5 FFN parts" in r.stdout and "min 16 positions" in r.stdout, r.stdout
    meta = package.read_package(str(out)).meta
    assert meta["plan"]["workers"] == 7 and meta["plan"]["ffn_parts"] == 5
    assert meta["planner"]["created"] == "2026-01-01T00:00:00Z"


def test_flags_it_would_ignore_and_errors(hf_dir, tmp_path):
    r = run_tool(f"--out={tmp_path / 's.tpkg'}", f"--hf_dir={hf_dir}", f"--checkpoint={hf_dir}")
    assert r.returncode != 0 and "--checkpoint: smollm2_package plans the installed SmolLM2" in r.stderr
    r = run_tool(f"--out={tmp_path / 's.tpkg'}", f"--hf_dir={hf_dir}", "--target=rtx3050",
                 "--workers=999")
    assert r.returncode == 1, r.stderr
    assert "smollm2_package: error: workers=999 must be in [1, 20]" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "s.tpkg").exists()


@pytest.mark.parametrize("damage, needle", [
    (lambda d: (d / "tokenizer.json").unlink(), "tokenizer.json of the import cannot be read"),
    (lambda d: (d / "config.json").write_text((d / "config.json").read_text().replace(
        '"rope_theta": ', '"rope_theta": 1')), "config.json has changed since the import"),
    (lambda d: (d / "import_provenance.json").write_text(json.dumps(
        {k: v for k, v in json.loads((d / "import_provenance.json").read_text()).items() if k != "files"})),
     "records no SHA-256 of the import's files"),
])
def test_an_import_changed_since_is_refused(hf_dir, tmp_path, damage, needle):
    d = tmp_path / "hf"
    shutil.copytree(hf_dir, d)
    damage(d)
    out = tmp_path / "s.tpkg"
    r = run_tool(f"--out={out}", f"--hf_dir={d}", "--target=rtx3050", "--max_context=64")
    assert r.returncode == 1 and needle in r.stderr, r.stderr
    assert "remove that folder to import the GGUF again, or give another --hf_dir" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_an_out_path_it_may_not_write_is_refused_before_importing(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    r = run_tool(f"--out={notes}", "--target=rtx3050")
    assert r.returncode == 1 and "notes.md exists and is not a TileInfer package" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]  # no notes.md-hf import
    assert notes.read_text() == "my notes\n"


@pytest.mark.parametrize("flags, needle", [
    (["--hf_dir={out}"], "--hf_dir and --out name the same path"),  # an import there blocked every later run
    (["--target=nonexist"], "nonexist"),
    (["--target=rtx3050", "--workers=999"], "workers=999 must be in [1, 20]"),  # once only after the import
    (["--max_context=1"], "max_context=1 must be in [2, 8192]"),
    (["--ffn_parts=0"], "ffn_parts=0 must be an int in [1, workers=128]"),
    (["--bandwidth_gbps=-1"], "--bandwidth_gbps=-1.0: give a positive, finite bandwidth"),
])
def test_refusals_before_importing(tmp_path, flags, needle):
    out = tmp_path / "x.tpkg"
    r = run_tool(f"--out={out}", *[f.format(out=out) for f in flags])
    assert r.returncode == 1 and needle in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing imported, nothing written


def test_an_hf_dir_that_is_a_file_is_named_by_this_tool_s_flag(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("x")
    r = run_tool(f"--out={tmp_path / 's.tpkg'}", f"--hf_dir={notes}", "--target=rtx3050")
    assert r.returncode == 1 and "exists and is not a directory: give another --hf_dir" in r.stderr, r.stderr
    assert "--hf_out" not in r.stderr and notes.read_text() == "x"
