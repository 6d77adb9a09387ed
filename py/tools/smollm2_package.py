"""One step from the installed SmolLM2-135M-Instruct GGUF to a TileInfer package.

  bazel run //py/tools:smollm2_package -- --out=out/smollm2.tpkg [--target=h200] [--max_context=4096]
      [--hf_dir=DIR] [the planner's plan flags: --workers, --attention_chunks, ...]

Imports the GGUF (dequantised to BF16, Q/K rotary rows un-permuted) into an HF directory
(--hf_dir, default OUT without .tpkg plus -hf; reused when it holds an import of that same GGUF,
as its import_provenance.json says; refused when it holds anything else), plans it
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
from planner import main as planner_main
from planner import paths
from tools import gguf_import, smollm2

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Where the imported HF directory goes (default: OUT without "
                    ".tpkg, plus -hf); an existing import of the same GGUF is planned as it is.")


def check_reusable(hf_dir: str, gguf) -> None:
    """Refuses an existing hf_dir that is not gguf_import's import of `gguf`.

    The import's import_provenance.json must name the GGUF's SHA-256 (source_sha256), so that a
    folder holding another model (or another GGUF's import) is never packed as SmolLM2.

    Raises:
      ValueError: the provenance is missing, unreadable or names another file; the message
        says what to do.
    """
    where = os.path.join(hf_dir, "import_provenance.json")
    fix = "remove that folder to import the GGUF again, or give another --hf_dir"
    try:
        with open(where, encoding="utf-8") as f:
            source = json.load(f)["source_sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--hf_dir {hf_dir} holds a config.json but is not an import of the SmolLM2 "
                         f"GGUF ({where}: {type(e).__name__}: {e}): {fix}") from None
    if source != gguf_import.file_sha256(gguf):
        raise ValueError(f"--hf_dir {hf_dir} is an import of another file (SHA-256 {str(source)[:16]}...), "
                         f"not of {gguf}: {fix}")


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
    try:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        gguf = smollm2.gguf_path()
        if os.path.exists(os.path.join(hf_dir, "config.json")):
            check_reusable(hf_dir, gguf)
        else:
            logging.info("importing %s into %s", gguf, hf_dir)
            gguf_import.import_gguf(gguf, hf_dir)
        result = planner_main.build_package(hf_dir, target, out, FLAGS.max_context,
                                            **planner_main.plan_flag_values())
    except (ValueError, OSError) as e:  # every error here says what to do; no traceback
        print(f"smollm2_package: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP
        print(f"smollm2_package: interrupted ({signals.name_of(e)}): neither {out} nor {hf_dir} "
              f"holds a partial result", file=sys.stderr)
        return signals.end_by(e)
    print(result.summary)
    print(f"wrote {out}")


if __name__ == "__main__":
    app.run(main)
