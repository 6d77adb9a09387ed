"""Writes the GPU checks' checkpoints and plans them for a target (runs on the GPU machine).

Usage: python3 tests/gpu/make_models.py --target_file=T.json --out_dir=DIR --models=tiny,smollm2_shape,llama1b_shape
(also llama3b_shape, llama8b_shape: Llama 3.2 3B's and Llama 3.1 8B's exact configs)

Random BF16 weights with the exact configs of SmolLM2-135M and Llama-3.2-1B stream the
same bytes as the real models; tiny ones cover odd shapes (9:3 heads, sizes not multiples
of 32).
"""
import os
import sys
import time

from absl import app, flags, logging

from planner import cli
from planner import known_configs
from planner import main as planner_main
from tests.reference import tiny_models

FLAGS = flags.FLAGS
flags.DEFINE_string("target_file", None, "Target JSON (from the probe).")
flags.DEFINE_string("out_dir", None, "Output folder.")
flags.DEFINE_list("models", ["tiny"], "Which models.")
flags.DEFINE_integer("big_max_context", 4096, "K/V cache positions of the big models.")



def shape_of(hf: dict) -> dict:
    """write_tiny_checkpoint's arguments for an HF config of py/planner/known_configs.py."""
    return dict(hidden=hf["hidden_size"], ffn=hf["intermediate_size"], layers=hf["num_hidden_layers"],
                heads=hf["num_attention_heads"], kv_heads=hf["num_key_value_heads"],
                vocab=hf["vocab_size"], head_dim=hf.get("head_dim"), tied=hf["tie_word_embeddings"],
                rope_theta=float(hf["rope_theta"]), rope_scaling=hf["rope_scaling"],
                max_position_embeddings=hf["max_position_embeddings"])

MODELS = {
    "tiny_9x3": dict(hidden=72, ffn=100, layers=2, heads=9, kv_heads=3, vocab=97, max_context=600),
    "tiny_untied": dict(hidden=64, ffn=128, layers=2, heads=4, kv_heads=2, vocab=50, tied=False,
                        max_context=600),
    "tiny_ties": dict(hidden=64, ffn=96, layers=1, heads=4, kv_heads=2, vocab=60, tied=False,
                      paired_lm_head_rows=True, max_context=600),
    "tiny_inf": dict(hidden=64, ffn=96, layers=1, heads=4, kv_heads=2, vocab=60, tied=False,
                     max_context=64, poison=("lm_head.weight", 17)),
    # Token 2's embedding beyond the FIXED64 residual's range (format_spec: |v| <= 2^21).
    "tiny_big": dict(hidden=64, ffn=96, layers=1, heads=4, kv_heads=2, vocab=60, tied=False,
                     max_context=64, poison=("model.embed_tokens.weight", 2, 4.0e6)),
    "smollm2_shape": shape_of(known_configs.SMOLLM2_135M_HF),
    "llama1b_shape": shape_of(known_configs.LLAMA_3_2_1B_HF),
}

# Two tiny shapes again with longer attention chunks than the planner's default: 3-5 positions
# per warp (attention batches of 4 with slots past the chunk's end, two batches at 72).
MODELS["tiny_9x3_mc72"] = dict(MODELS["tiny_9x3"], min_chunk=72)
MODELS["tiny_untied_mc40"] = dict(MODELS["tiny_untied"], min_chunk=40)
# A head_dim above 64 and more than 4 query heads per K/V head, which the shapes above skip: the
# wide worker kernel's widest ATTENTION template (8 heads, 4 dims per lane) and its one-pass tiles
# at 4 lanes a position (cuda/worker.h WorkerWide).
MODELS["tiny_hd80_g6"] = dict(hidden=480, ffn=64, layers=1, heads=6, kv_heads=1, vocab=50, max_context=600)
# More than 4 query heads per K/V head at a head_dim of 64 or less (TinyLlama-1.1B's 8 at its 64):
# ATTENTION's AttendChunk<8, 2, *>, which no other tiny shape runs.
MODELS["tiny_g8"] = dict(hidden=128, ffn=64, layers=1, heads=8, kv_heads=1, vocab=50, max_context=600)
# A head_dim that is not a multiple of 8: no tiles (cuda/op_attention.cuh), so its long chunks
# take the batches of positions at every threshold.
MODELS["tiny_hd12"] = dict(hidden=48, ffn=64, layers=1, heads=4, kv_heads=2, vocab=50, max_context=600)
# A hidden size that is not a multiple of 4 (head_dim 8, so the narrow worker kernel): the
# worker's element-by-element fallbacks (RmsNormToShared's last form, WarpDotBf16's scalar part,
# the FFN's scalar down projection; cuda/common.cuh, op_ffn.cuh), which no other shape reaches.
MODELS["tiny_h38"] = dict(hidden=38, ffn=52, layers=2, heads=4, kv_heads=2, head_dim=8, vocab=61, max_context=600)
# head_dim 128, the GPU path's largest (worker.h kGpuMaxHeadDim), with Llama 3.2 3B's 3 and
# Llama 3.1 8B's 4 query heads a K/V head; the second with an lm_head of its own, as the 8B.
MODELS["tiny_hd128_g3"] = dict(hidden=192, ffn=80, layers=2, heads=6, kv_heads=2, head_dim=128, vocab=70,
                               max_context=600)
MODELS["tiny_hd128_g4"] = dict(hidden=256, ffn=96, layers=2, heads=8, kv_heads=2, head_dim=128, vocab=60,
                               tied=False, max_context=600)
# A hidden size above 2,048: RmsNormToShared's path for those (the 3B's 3,072, the 8B's 4,096),
# which no other tiny shape takes; head_dim 128 with 3 query heads a K/V head as the 3B: the wide
# worker kernel (cuda/worker.h WorkerWide) at a hidden size that needs it, its norm and its one-pass
# tiles (tiny_hd80_g6, tiny_g8, tiny_hd12 and tiny_hd128_* run that kernel for their attention).
MODELS["tiny_h2304"] = dict(hidden=2304, ffn=64, layers=1, heads=18, kv_heads=6, vocab=50, max_context=600)
# tiny_9x3 with a tokenizer of every byte (vocab 300: the 256 byte symbols and merges; the other
# tiny vocabularies lack "\n", which the chat template writes): the text and chat paths of decode
# (device_checks.sh api_gpu), and a vocabulary that is not a multiple of 4 or 8.
MODELS["tiny_bytes"] = dict(MODELS["tiny_9x3"], vocab=300)
# Llama 3.2 3B and Llama 3.1 8B with random weights (py/planner/known_configs.py): 6.4 and 16.1
# GB of BF16 (checkpoint and package ~95 s and ~250 s on the GPU machine, drawn sequentially);
# make them only by name (not in "tiny").
MODELS["llama3b_shape"] = shape_of(known_configs.LLAMA_3_2_3B_HF)
MODELS["llama8b_shape"] = shape_of(known_configs.LLAMA_3_1_8B_HF)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    cli.refuse_flags_of(["planner.main"], "make_models")
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    wanted = []
    for m in FLAGS.models:
        wanted += [k for k in MODELS if k.startswith(m)] if m == "tiny" else [m]
    for name in wanted:
        spec = dict(MODELS[name])
        max_context = spec.pop("max_context", FLAGS.big_max_context)
        ckpt = os.path.join(FLAGS.out_dir, name)
        t0 = time.time()
        poison = spec.pop("poison", None)
        min_chunk = spec.pop("min_chunk", None)
        if not os.path.exists(os.path.join(ckpt, "config.json")):
            # Every *_shape checkpoint (the 1B's and SmolLM2's too) drawn in parallel since
            # 2026-12-01: faster, the same distributions, other values than the sequential draw
            # of the earlier sessions' results.
            tiny_models.write_tiny_checkpoint(ckpt, seed=11, parallel=name.endswith("_shape"), **spec)
            if poison:
                tiny_models.poison_row(ckpt, *poison)
        t1 = time.time()
        package = os.path.join(FLAGS.out_dir, name + ".tpkg")
        # The target the package was planned for, beside it: a probe that printed the same
        # target again (each script of a call probes) does not make the package stale.
        stamp = package + ".target.json"
        target = open(FLAGS.target_file).read()
        if (os.path.exists(package) and os.path.exists(stamp) and open(stamp).read() == target and
                os.path.getmtime(package) > os.path.getmtime(os.path.join(ckpt, "config.json"))):
            # Planned earlier in this call for this target: not again (the 1B plan takes ~12 s,
            # and several stages of one call use it).
            logging.info("%s: package up to date", name)
            continue
        chunking = {} if min_chunk is None else {"attention_min_chunk": min_chunk}
        planner_main.build_package(ckpt, FLAGS.target_file, package, max_context, progress=False,
                                   **chunking)
        with open(stamp, "w") as f:  # after the package: a stamp never vouches for an older one
            f.write(target)
        logging.info("%s: checkpoint %.1fs, package %.1fs", name, t1 - t0, time.time() - t1)


if __name__ == "__main__":
    flags.mark_flags_as_required(["target_file", "out_dir"])
    app.run(main)
