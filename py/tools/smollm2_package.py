"""One step from the installed SmolLM2-135M-Instruct GGUF to a TileInfer package.

  bazel run //py/tools:smollm2_package -- --out=out/smollm2.tpkg [--target=h200] [--max_context=4096]

(--out, --target and --max_context are the planner's own flags.)

Imports the GGUF (dequantised to BF16, Q/K rotary rows un-permuted) into an HF directory
next to the package (reused when present), plans it for --target (a shipped name or a probe
JSON) and writes the package. Paths are relative to where `bazel run` was started.
"""
import os

from absl import app, flags, logging

from planner import main as planner_main
from planner import paths
from tools import gguf_import, smollm2

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Where the imported HF directory goes (default: OUT without "
                    ".tpkg, plus -hf).")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if not FLAGS.out:
        raise app.UsageError("--out is required (the .tpkg to write)")
    out = paths.from_invocation_dir(FLAGS.out)
    hf_dir = paths.from_invocation_dir(FLAGS.hf_dir) if FLAGS.hf_dir else out.removesuffix(".tpkg") + "-hf"
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    if not os.path.exists(os.path.join(hf_dir, "config.json")):
        logging.info("importing %s into %s", smollm2.gguf_path(), hf_dir)
        gguf_import.import_gguf(smollm2.gguf_path(), hf_dir)
    target = FLAGS.target
    if target.endswith(".json"):
        target = paths.from_invocation_dir(target)
    result = planner_main.build_package(hf_dir, target, out, FLAGS.max_context)
    print(result.summary)
    print(f"wrote {out}")


if __name__ == "__main__":
    app.run(main)
