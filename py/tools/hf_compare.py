"""TileInfer's GPU logits and greedy tokens against Hugging Face transformers in FP32.

Runs on the GPU machine (torch + transformers there):
  python3 py/tools/hf_compare.py --checkpoint=HF_DIR --logits=FILE --tokens=FILE

--logits is written by `gpu_check --logits_out`: int32 header (n_contexts, prompt_len, vocab),
the contexts, the prompt ids, then float32 logits (n_contexts, vocab). --tokens is written by
`gpu_check --tokens_out`: the generation's prompt ids, then its greedy tokens.

Per context: max|ours - hf| / max|hf| and whether the argmax agrees. Greedy: HF's own greedy
continuation (FP32) for --steps tokens against ours; at every step where they differ, HF's
top-2 margin there, so near-ties (below BF16 noise) can be told from real mismatches.
"""
import json
import sys

import numpy as np
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", None, "HF directory the package was made from.")
flags.DEFINE_string("logits", None, "gpu_check --logits_out file.")
flags.DEFINE_string("tokens", None, "gpu_check --tokens_out file.")
flags.DEFINE_integer("steps", 64, "Greedy steps to compare.")
flags.DEFINE_string("json_out", None, "Write the results here as JSON.")


def read_logits(path):
    raw = open(path, "rb").read()
    n, prompt_len, vocab = np.frombuffer(raw[:12], dtype="<i4")
    off = 12
    contexts = np.frombuffer(raw[off:off + 4 * n], dtype="<i4"); off += 4 * n
    prompt = np.frombuffer(raw[off:off + 4 * prompt_len], dtype="<i4"); off += 4 * prompt_len
    logits = np.frombuffer(raw[off:], dtype="<f4").reshape(n, vocab)
    return contexts, prompt, logits


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(FLAGS.checkpoint, torch_dtype=torch.float32,
                                                 attn_implementation="eager").cuda().eval()
    result = {"checkpoint": FLAGS.checkpoint, "contexts": []}
    if FLAGS.logits:
        contexts, prompt, ours = read_logits(FLAGS.logits)
        with torch.no_grad():
            ids = torch.tensor(prompt, dtype=torch.long, device="cuda")[None]
            hf_all = model(input_ids=ids).logits[0].float().cpu().numpy()
        for i, ctx in enumerate(contexts):
            hf = hf_all[ctx - 1]
            err = float(np.max(np.abs(ours[i] - hf)) / np.max(np.abs(hf)))
            top = np.argsort(hf)[-2:]
            row = {"context": int(ctx), "max_rel_error": err, "argmax_ours": int(np.argmax(ours[i])),
                   "argmax_hf": int(top[-1]), "hf_top2_margin": float(hf[top[-1]] - hf[top[-2]])}
            result["contexts"].append(row)
            print(f"context {ctx:5d}: max rel error vs HF FP32 {err:.3e}; argmax ours {row['argmax_ours']} "
                  f"hf {row['argmax_hf']} (hf top-2 margin {row['hf_top2_margin']:.4f})")
    if FLAGS.tokens:
        lines = open(FLAGS.tokens).read().split("\n")
        prompt = [int(x) for x in lines[0].split(",")]
        ours = [int(x) for x in lines[1].split(",")][:FLAGS.steps]
        with torch.no_grad():
            ids = torch.tensor(prompt, dtype=torch.long, device="cuda")[None]
            seq = ids
            hf_tokens, margins = [], []
            for _ in range(len(ours)):
                logits = model(input_ids=seq).logits[0, -1].float()
                top2 = torch.topk(logits, 2)
                hf_tokens.append(int(top2.indices[0]))
                margins.append(float(top2.values[0] - top2.values[1]))
                # Teacher-force our token so that one near-tie does not derail the rest.
                seq = torch.cat([seq, torch.tensor([[ours[len(hf_tokens) - 1]]], device="cuda")], dim=1)
        diffs = [(i, ours[i], hf_tokens[i], margins[i]) for i in range(len(ours)) if ours[i] != hf_tokens[i]]
        result["greedy"] = {"steps": len(ours), "mismatches": [
            {"step": i, "ours": a, "hf": b, "hf_top2_margin": m} for i, a, b, m in diffs]}
        print(f"greedy: {len(ours) - len(diffs)}/{len(ours)} steps agree with HF FP32 (teacher-forced on ours)")
        for i, a, b, m in diffs:
            print(f"  step {i}: ours {a}, hf {b}, hf top-2 margin {m:.4f}")
    if FLAGS.json_out:
        with open(FLAGS.json_out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    flags.mark_flags_as_required(["checkpoint"])
    app.run(main)
