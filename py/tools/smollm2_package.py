"""One step from the installed SmolLM2-135M-Instruct GGUF to a TileInfer package.

  bazel run //py/tools:smollm2_package -- --out=out/smollm2.tpkg [--target=h200] [--max_context=4096]
      [--hf_dir=DIR] [the planner's plan flags: --workers, --attention_chunks, ...]

Imports the GGUF (dequantised to BF16, Q/K rotary rows un-permuted) into an HF directory
(--hf_dir, default OUT without .tpkg plus -hf; reused when it holds a config.json), plans it
for --target (a shipped name or a probe JSON) with the planner's flags (py/planner/main.py;
all but --checkpoint and --revision, which this tool sets) and writes the package. Paths are
relative to where `bazel run` was started. Errors: one line, exit status 1.
"""
import os
import sys

from absl import app, flags, logging

from planner import cli
from planner import main as planner_main
from planner import paths
from planner import signals
from tools import gguf_import, smollm2

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Where the imported HF directory goes (default: OUT without "
                    ".tpkg, plus -hf); an existing one (with config.json) is planned as it is.")


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
        if not os.path.exists(os.path.join(hf_dir, "config.json")):
            logging.info("importing %s into %s", smollm2.gguf_path(), hf_dir)
            gguf_import.import_gguf(smollm2.gguf_path(), hf_dir)
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
