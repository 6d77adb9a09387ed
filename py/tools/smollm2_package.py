"""One step from the installed SmolLM2-135M-Instruct GGUF to a TileInfer package.

  bazel run //py/tools:smollm2_package -- --out=out/smollm2.tpkg [--target=h200] [--max_context=4096]
      [--hf_dir=DIR] [the planner's plan flags: --workers, --attention_chunks, ...]

Imports the GGUF (dequantised to BF16, Q/K rotary rows un-permuted) into an HF directory
(--hf_dir, default OUT without .tpkg plus -hf; reused when it holds an intact import of that
same GGUF: its import_provenance.json names the GGUF's SHA-256 and every other file's, and the
files still have them; refused when it holds anything else), plans it
for --target (a shipped name or a probe JSON) with the planner's flags (py/planner/main.py;
all but --checkpoint and --revision, which this tool sets) and writes the package. Paths are
relative to where `bazel run` was started. Errors: one line, exit status 1.
"""
import json
import os
import sys

from planner import signals  # first: its quiet start covers the slow imports below

signals.quiet_until_main(__name__)

from absl import app, flags, logging

from planner import cli
from planner import known_configs
from planner import main as planner_main
from planner import package
from planner import paths
from planner import target as target_lib
from tools import gguf_import, smollm2

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Where the imported HF directory goes (default: OUT without "
                    ".tpkg, plus -hf); an existing intact import of the same GGUF is planned as it is.")


def check_reusable(hf_dir: str, gguf) -> None:
    """Refuses an existing hf_dir that is not an intact gguf_import import of `gguf`.

    The import's import_provenance.json must name the GGUF's SHA-256 (source_sha256), so that a
    folder holding another model (or another GGUF's import) is never packed as SmolLM2, and the
    SHA-256 of each file the import wrote (files), which the files must still have: a file
    deleted or edited since (an interrupted copy, a config changed by hand) is never planned.

    Raises:
      ValueError: hf_dir is not a directory, its provenance is missing, unreadable or names
        another file, or a file is missing or changed; the message says what to do.
    """
    fix = "remove that folder to import the GGUF again, or give another --hf_dir"
    if not os.path.isdir(hf_dir):
        raise ValueError(f"--hf_dir {hf_dir} exists and is not a directory: give another --hf_dir")
    where = os.path.join(hf_dir, "import_provenance.json")
    try:
        with open(where, encoding="utf-8") as f:
            provenance = json.load(f)
        source = provenance["source_sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--hf_dir {hf_dir} exists but is not an import of the SmolLM2 "
                         f"GGUF ({where}: {type(e).__name__}: {e}): {fix}") from None
    if source != gguf_import.file_sha256(gguf):
        raise ValueError(f"--hf_dir {hf_dir} is an import of another file (SHA-256 {str(source)[:16]}...), "
                         f"not of {gguf}: {fix}")
    recorded = provenance.get("files")
    expected = {n for n in gguf_import.OUTPUT_FILES if n != "import_provenance.json"}
    if not isinstance(recorded, dict) or set(recorded) != expected:
        raise ValueError(f"--hf_dir {hf_dir}: its import_provenance.json records no SHA-256 of the "
                         f"import's files (an import by an earlier TileInfer), so the import cannot be "
                         f"checked: {fix}")
    for name, digest in sorted(recorded.items()):
        try:
            now = gguf_import.file_sha256(os.path.join(hf_dir, name))
        except OSError as e:
            raise ValueError(f"--hf_dir {hf_dir}: {name} of the import cannot be read ({e.strerror}): "
                             f"{fix}") from None
        if now != digest:
            raise ValueError(f"--hf_dir {hf_dir}: {name} has changed since the import (its SHA-256 "
                             f"is not the one import_provenance.json records): {fix}")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if not FLAGS.out:
        raise app.UsageError("--out is required (the .tpkg to write)")
    cli.refuse_flags_of(["tools.gguf_import"], "smollm2_package")
    for name in ("checkpoint", "revision"):
        if getattr(FLAGS, name):
            raise app.UsageError(f"--{name}: smollm2_package plans the installed SmolLM2 GGUF; "
                                 f"plan another checkpoint with bazel run //py/planner")
    out = paths.from_invocation_dir(FLAGS.out)
    hf_dir = paths.from_invocation_dir(FLAGS.hf_dir) if FLAGS.hf_dir else out.removesuffix(".tpkg") + "-hf"
    target = planner_main.target_from_flag(FLAGS.target)
    signals.install()  # SIGTERM / SIGHUP end it as Ctrl-C does: no temporary file left
    imported = False  # by this run
    try:
        if os.path.realpath(hf_dir) == os.path.realpath(out):
            raise ValueError(f"--hf_dir and --out name the same path {out}: the import is a folder "
                             f"and the package a file; give the import its own --hf_dir")
        target = target_lib.resolve_target(target)  # loaded once, before the import: a bad one fails at once
        # The plan flags against SmolLM2's known config, before the import, which takes a while
        # and 259 MB (the import's own config is planned below, as the planner would).
        planner_main.check_plan_flags(known_configs.smollm2_135m(), target, FLAGS.max_context,
                                      **planner_main.plan_flag_values())
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        package.check_out_path(out)  # before the import, which takes a while and 259 MB
        gguf = smollm2.gguf_path()
        if os.path.lexists(hf_dir):
            check_reusable(hf_dir, gguf)
        else:
            logging.info("importing %s into %s", gguf, hf_dir)
            gguf_import.import_gguf(gguf, hf_dir)
            imported = True
        result = planner_main.build_package(hf_dir, target, out, FLAGS.max_context,
                                            **planner_main.plan_flag_values())
    except (ValueError, OSError) as e:  # every error here says what to do; no traceback
        kept = f" (the import in {hf_dir} is complete and kept: the next run reuses it)" if imported else ""
        print(f"smollm2_package: error: {e}{kept}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP
        print(f"smollm2_package: interrupted ({signals.name_of(e)}): neither {out} nor {hf_dir} "
              f"holds a partial result", file=sys.stderr)
        return signals.end_by(e)
    print(result.summary)
    print(f"wrote {out}")


if __name__ == "__main__":
    app.run(main)
