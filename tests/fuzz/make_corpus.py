"""Writes the package fuzzer's seed corpus (tests/fuzz/corpus): the golden packages, a much
smaller package, and variants that reach the checks a random byte flip seldom does.

Edits are made in place with the checksums left stale: the fuzzer opens with
verify_checksums=false. Run from the repository root:
  python3 tests/fuzz/make_corpus.py --corpus_dir=tests/fuzz/corpus
"""

import json
import os
import shutil
import struct
import sys

from absl import app, flags

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [os.path.join(_ROOT, "py"), _ROOT]
from planner import format_spec as spec  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus_dir", "tests/fuzz/corpus", "directory to (re)write")
flags.DEFINE_string("golden_dir", "tests/golden", "directory of the golden .tpkg files")

_HDR = struct.Struct(spec.struct_format("FileHeader"))
_ENT = struct.Struct(spec.struct_format("SectionEntry"))
_BUF = struct.Struct(spec.struct_format("BufferRecord"))
_TASK = struct.Struct(spec.struct_format("TaskRecord"))
_WAVE = struct.Struct(spec.struct_format("WaveRecord"))
_TASK_FIELDS = [f[0] for f in spec.RECORDS["TaskRecord"]]


def _table(b: bytes) -> dict:
    """Section name -> (table index, offset, bytes)."""
    out = {}
    for i in range(_HDR.unpack_from(b, 0)[3]):
        name, off, n, _ = _ENT.unpack_from(b, _HDR.size + i * _ENT.size)
        out[name.rstrip(b"\0").decode()] = (i, off, n)
    return out


def section(b: bytes, name: str) -> bytes:
    _, off, n = _table(b)[name]
    return b[off:off + n]


def replace_section(b: bytes, name: str, data: bytes) -> bytes:
    """`b` with section `name` replaced in place; it may grow into its alignment padding."""
    out = bytearray(b)
    i, off, n = _table(b)[name]
    room = min([o for _, o, _ in _table(b).values() if o > off] + [len(b)]) - off
    assert len(data) <= room, (name, len(data), room)
    out[off:off + max(n, len(data))] = data.ljust(n, b"\0")
    at = _HDR.size + i * _ENT.size
    raw_name, _, _, sha = _ENT.unpack_from(out, at)
    _ENT.pack_into(out, at, raw_name, off, len(data), sha)
    return bytes(out)


def edit_meta(b: bytes, fn) -> bytes:
    meta = json.loads(section(b, "meta"))
    fn(meta)
    return replace_section(b, "meta", json.dumps(meta, separators=(",", ":")).encode())


def edit_meta_text(b: bytes, old: str, new: str) -> bytes:
    text = section(b, "meta").decode()
    assert old in text, old
    return replace_section(b, "meta", text.replace(old, new, 1).encode())


def edit_records(b: bytes, name: str, rec: struct.Struct, fn) -> bytes:
    data = section(b, name)
    rows = [list(rec.unpack_from(data, k * rec.size)) for k in range(len(data) // rec.size)]
    fn(rows)
    return replace_section(b, name, b"".join(rec.pack(*r) for r in rows))


def variants(g: bytes) -> dict:
    """name -> bytes, each reaching a different check of the reader or the validator."""
    nbuf = len(section(g, "buffers")) // _BUF.size
    ibuf = _TASK_FIELDS.index("in_buf")

    def grow_buffers(rows):
        rows.append([b"extra", 1, 2, 1 << 40])

    def embed_reads_extra(rows):
        rows[0][ibuf] = nbuf

    def wave1_no_barrier(rows):
        rows[1][2] = spec.SYNC["SYNC_NONE"]

    huge = edit_records(g, "buffers", _BUF, grow_buffers)
    huge = edit_records(huge, "tasks", _TASK, embed_reads_extra)
    kv = json.loads(section(g, "meta"))["plan"]["buffers"]["kv_cache"]
    return {
        "header_only": g[:_HDR.size],
        "header_and_table": g[:4096],
        "meta_float_for_int": edit_meta_text(g, '"hidden_size":', '"hidden_size":7e99,"x":'),
        "meta_logits_is_kv_cache": edit_meta(
            g, lambda m: m["plan"]["buffers"].__setitem__("logits", kv)),
        "extra_buffer_2e40": huge,
        "wave1_sync_none": edit_records(g, "waves", _WAVE, wave1_no_barrier),
    }


def write_micro(path: str) -> None:
    """A 1-layer, hidden-16 package (about 40 KB): most of a golden's 200 KB are weights,
    which nothing parses, so mutations of this one hit the structure far more often."""
    import tempfile
    from planner import main as planner_main
    from tests.reference.tiny_models import write_tiny_checkpoint
    with tempfile.TemporaryDirectory() as d:
        write_tiny_checkpoint(d, hidden=16, ffn=24, layers=1, heads=2, kv_heads=1, vocab=20,
                              tied=True, seed=7)
        planner_main.build_package(d, "rtx3050", path, 8, created="2026-11-29T00:00:00+00:00",
                                   progress=False, source="tests/fuzz/make_corpus.py micro")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    os.makedirs(FLAGS.corpus_dir, exist_ok=True)
    goldens = sorted(f for f in os.listdir(FLAGS.golden_dir) if f.endswith(".tpkg"))
    for f in goldens:
        shutil.copyfile(os.path.join(FLAGS.golden_dir, f), os.path.join(FLAGS.corpus_dir, f))
    with open(os.path.join(FLAGS.golden_dir, goldens[0]), "rb") as f:
        g = f.read()
    write_micro(os.path.join(FLAGS.corpus_dir, "micro.tpkg"))
    for name, data in variants(g).items():
        with open(os.path.join(FLAGS.corpus_dir, f"{goldens[0][:-5]}.{name}"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    app.run(main)
