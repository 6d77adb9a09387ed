"""Writes the golden tiny packages the C++ tests read (tests/golden/*.tpkg).

    bazel run //py/planner:make_golden            # rewrites tests/golden/ in the source tree
    bazel run //py/planner:make_golden -- --out_dir=/tmp/golden

Each package goes through the real pipeline (HF checkpoint on disk -> load_checkpoint ->
TokenizerSpec -> plan -> validate -> write), from seeded random weights with a fixed
'created' and 'source', so rebuilding gives the same bytes; golden_test checks that the
committed files are up to date.
"""

import os
import pathlib
import tempfile
from typing import Dict

from absl import app
from absl import flags
from absl import logging

FLAGS = flags.FLAGS
flags.DEFINE_string("out_dir", None, "Where to write; default tests/golden of the source tree.")

CREATED = "2026-11-29T00:00:00+00:00"  # fixed: golden files must be byte-identical per build

# name -> (write_tiny_checkpoint kwargs, target, max_context, attention_chunks)
# The chunk counts are set rather than the planner's default (which gives these short
# max_contexts one chunk a K/V head), so that the C++ tests' plans keep several chunks a head
# and workers // kv_heads attention tasks, as when the files were first written.
GOLDEN: Dict[str, tuple] = {
    # 9:3 GQA, head_dim 8, FFN 100 (not a multiple of 32), tied, 20 workers.
    "tiny_9x3": (dict(hidden=72, ffn=100, layers=2, heads=9, kv_heads=3, vocab=97, tied=True,
                      seed=93), "rtx3050", 64, 6),
    # Untied lm_head, 4:2 heads, head_dim 16.
    "tiny_untied": (dict(hidden=64, ffn=128, layers=2, heads=4, kv_heads=2, vocab=50,
                         tied=False, seed=42), "rtx3050", 32, 10),
}


def _repo_root() -> pathlib.Path:
    # bazel run: the user's workspace; otherwise this file's checkout.
    ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    return pathlib.Path(ws) if ws else pathlib.Path(__file__).resolve().parents[2]


def write_golden(name: str, out_path: str) -> int:
    """Writes golden package `name` (a key of GOLDEN) to out_path; returns its size."""
    from planner import main as planner_main
    from tests.reference.tiny_models import write_tiny_checkpoint

    kwargs, target, max_context, attention_chunks = GOLDEN[name]
    with tempfile.TemporaryDirectory() as d:
        write_tiny_checkpoint(d, **kwargs)
        args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        result = planner_main.build_package(
            d, target, out_path, max_context, attention_chunks=attention_chunks, created=CREATED,
            progress=False,
            source=f"tests/reference/tiny_models.py write_tiny_checkpoint({args})")
    return result.file_bytes


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    out_dir = pathlib.Path(FLAGS.out_dir) if FLAGS.out_dir else _repo_root() / "tests" / "golden"
    if FLAGS.out_dir and not out_dir.is_absolute():
        out_dir = pathlib.Path(os.environ.get("BUILD_WORKING_DIRECTORY", ".")) / out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in GOLDEN:
        path = out_dir / f"{name}.tpkg"
        size = write_golden(name, str(path))
        logging.info("wrote %s (%d bytes)", path, size)
        print(f"{path}: {size:,} bytes")


if __name__ == "__main__":
    app.run(main)
