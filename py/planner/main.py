"""The planner: checkpoint + target -> validated package (.tpkg).

    bazel run //py/planner -- --checkpoint=DIR_OR_HUB_ID [--revision=SHA] \\
        --target=h200|rtx3050|PATH.json --out=PATH.tpkg [--max_context=4096]

Relative paths are taken from the directory `bazel run` was started in. Prints a summary:
tasks, waves, workers, weight bytes, bytes per worker in each weight wave (the balance
table), and the predicted floor in ms/token at --bandwidth_gbps (default: the target's).
"""

import dataclasses
import math
import os
import sys
from typing import Optional

from planner import signals  # first: its quiet start covers the slow imports below

signals.quiet_until_main(__name__)

from absl import app
from absl import flags
from absl import logging

from planner import model_config
from planner import package as package_lib
from planner import paths
from planner import plan as plan_lib
from planner import target as target_lib
from planner import validate as validate_lib

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", None, "HF checkpoint directory, or hub id org/name "
                    "(then --revision is a 40-hex commit sha).")
flags.DEFINE_string("revision", None, "Commit sha of a hub checkpoint.")
flags.DEFINE_string("target", "h200", "Shipped target name (h200, rtx3050) or a target "
                    ".json file.")
flags.DEFINE_string("out", None, "Package file to write (.tpkg).")
flags.DEFINE_integer("max_context", 4096, "K/V cache length in positions.")
flags.DEFINE_integer("attention_chunks", None, "Context chunks per K/V head; default "
                     "min(workers // kv_heads, ceil(max_context / 192)), at least 1.")
flags.DEFINE_integer("attention_min_chunk", None, "Smallest attention chunk, in positions; "
                     "default 128 for models with 8 or more K/V heads, else 32.")
flags.DEFINE_integer("workers", None, "Thread blocks the plan uses, at most the target's SMs x "
                     "workers per SM; default the largest multiple of 32 keeping 95% of them "
                     "(128 of the H200's 132), else all; at most 511 (one FFN part a "
                     "worker) unless --ffn_parts is 511 or less.")
flags.DEFINE_integer("qkv_parts", None, "At most this many tasks in each QKV wave (RMSNorm + "
                     "GEMV), 1..workers; default workers. A measurement knob "
                     "(tests/gpu/sweep_parts.sh).")
flags.DEFINE_integer("attn_out_parts", None, "At most this many tasks in each ATTN_OUT wave, "
                     "1..workers; default workers.")
flags.DEFINE_integer("ffn_parts", None, "At most this many tasks in each FFN wave, 1..workers "
                     "and at most 511; default workers.")
flags.DEFINE_integer("lm_head_slots", None, "At most this many tasks in the LM_HEAD wave, "
                     "1..workers; default workers.")
flags.DEFINE_float("bandwidth_gbps", None, "Memory bandwidth (GB/s) for the predicted floor; "
                   "default the target file's bandwidth_gbps.")
flags.DEFINE_string("created", None, "meta planner.created (default: now, UTC); fix it for "
                    "byte-identical rebuilds.")


@dataclasses.dataclass
class BuildResult:
    """What build_package made: the plan, the file, its size, and the printed summary."""
    plan: plan_lib.Plan
    path: str
    file_bytes: int
    summary: str


def summary_text(plan: plan_lib.Plan, bandwidth_gbps: Optional[float]) -> str:
    """The planner's report for people (the same numbers as meta["summary"])."""
    c, p = plan.config, plan.params
    streamed = plan_lib.streamed_bytes_per_token(plan)
    lines = [
        f"model: {c.num_layers} layers, hidden {c.hidden_size}, heads "
        f"{c.num_heads}/{c.num_kv_heads} x {c.head_dim}, FFN {c.intermediate_size}, vocab "
        f"{c.vocab_size}, {'tied' if c.tie_word_embeddings else 'untied'}",
        f"target: {plan.target.name} (cc {plan.target.compute_capability[0]}."
        f"{plan.target.compute_capability[1]}), {p['workers']} workers",
        f"plan: {p['tasks']} tasks in {p['waves']} waves; attention {c.num_kv_heads} kv heads "
        f"x {p['attention_chunks']} chunks (min {p['attention_min_chunk']} positions); "
        f"{p['ffn_parts']} FFN parts; {p['lm_head_slots']} lm_head slots; max_context "
        f"{p['max_context']}",
        "tasks a wave: " + ", ".join(f"{k} {n}" for k, n in plan_lib.tasks_by_wave_kind(plan)),
        f"weights: {plan.weights_bytes:,} bytes packed, {streamed:,} streamed per token "
        f"(+{plan_lib.kv_bytes_per_position(c):,} K/V bytes per context position)",
        "bytes per worker per weight wave (identical layers folded):",
        plan_lib.format_balance(plan_lib.byte_balance(plan)),
    ]
    if bandwidth_gbps:
        lines.append(
            f"floor at {bandwidth_gbps:g} GB/s: "
            f"{plan_lib.floor_ms_per_token(plan, bandwidth_gbps, 1):.3g} ms/token at ctx 1, "
            f"{plan_lib.floor_ms_per_token(plan, bandwidth_gbps, p['max_context']):.3g} at ctx "
            f"{p['max_context']}")
    return "\n".join(lines)


def _chat_format(tok) -> Optional[dict]:
    """The chat template reduced for the runtime (planner/chat_template.py), or None."""
    from planner import chat_template
    if not tok.chat_template:
        return None
    for what, i in (("BOS", tok.bos_id), ("EOS", tok.eos_ids[0] if tok.eos_ids else None)):
        if i is not None and not 0 <= i < len(tok.vocab):  # a padded embedding row: no text
            logging.warning("no chat format in the package: the %s id %d has no token in the "
                            "tokenizer (%d tokens), so the template cannot write it", what, i, len(tok.vocab))
            return None
    bos = tok.vocab[tok.bos_id] if tok.bos_id is not None else None
    eos = tok.vocab[tok.eos_ids[0]] if tok.eos_ids else None
    try:
        return chat_template.derive(tok.chat_template, bos, eos)
    except chat_template.ChatTemplateError as e:
        logging.warning("no chat format in the package: %s", e)
        return None


def _check_bandwidth(bandwidth_gbps: Optional[float]) -> None:
    if bandwidth_gbps is not None and not (bandwidth_gbps > 0 and math.isfinite(bandwidth_gbps)):
        raise ValueError(f"--bandwidth_gbps={bandwidth_gbps}: give a positive, finite bandwidth "
                         f"in GB/s, or leave it out for the target's")


def check_plan_flags(config: model_config.LlamaConfig, target: target_lib.Target, max_context: int,
                     **plan_flags) -> None:
    """Raises the ValueError that build_package would raise for max_context and plan_flags
    (PLAN_FLAGS by name) when planning `config` for `target`, without a checkpoint: a tool that
    knows its model's config checks its flags before a slow import or download."""
    _check_bandwidth(plan_flags.get("bandwidth_gbps"))
    plan_lib.make_plan(config, target, max_context=max_context,
                       **{k: v for k, v in plan_flags.items() if k not in ("bandwidth_gbps", "created")})


def build_package(checkpoint_source: str, target_path_or_name, out: str, max_context: int,
                  *, revision: Optional[str] = None, attention_chunks: Optional[int] = None,
                  attention_min_chunk: Optional[int] = None, workers: Optional[int] = None,
                  qkv_parts: Optional[int] = None, attn_out_parts: Optional[int] = None,
                  ffn_parts: Optional[int] = None, lm_head_slots: Optional[int] = None,
                  bandwidth_gbps: Optional[float] = None,
                  created: Optional[str] = None, source: Optional[str] = None,
                  progress: Optional[bool] = None, verify: bool = True) -> BuildResult:
    """Loads a checkpoint, plans it for a target, validates, writes and re-reads the package.

    Args:
      checkpoint_source: HF directory or hub id (see checkpoint.load_checkpoint).
      target_path_or_name: a Target, a shipped target name, or a target .json path.
      out: the .tpkg path.
      max_context: K/V cache positions.
      revision: hub commit sha.
      attention_chunks, attention_min_chunk, workers, qkv_parts, attn_out_parts, ffn_parts,
        lm_head_slots: see plan.make_plan.
      bandwidth_gbps: for the summary's floor; default the target's.
      created: meta planner.created (fixed for reproducible files).
      source: meta planner.source; default where the checkpoint was loaded from.
      progress: progress bars (None: only on a terminal).
      verify: read the written file back, check its checksums and validate it again, before
        it replaces `out` (a file that fails leaves `out` as it was).
    Raises:
      CheckpointError, ConfigError, TokenizerError, TargetError, PlanError, PackageError,
      OSError: each names what is wrong. ValueError: bandwidth_gbps not positive and finite, or a plan
      parameter out of range (plan.make_plan).
    """
    from planner import checkpoint as checkpoint_lib  # heavy (safetensors); only here
    from planner import tokenizer_spec

    _check_bandwidth(bandwidth_gbps)
    package_lib.check_out_path(out)  # before the slow part: the checkpoint and the plan
    target = (target_path_or_name if isinstance(target_path_or_name, target_lib.Target)
              else target_lib.resolve_target(target_path_or_name))
    ck = checkpoint_lib.load_checkpoint(checkpoint_source, revision)
    if (ck.tokenizer_dir / "tokenizer.json").is_file():
        tok = tokenizer_spec.TokenizerSpec.from_hf_dir(ck.tokenizer_dir, ck.config)
        tokenizer_json, stop_ids = tok.to_json(), list(tok.eos_ids)
        tokenizer_json["chat"] = _chat_format(tok)
    else:
        logging.warning("no tokenizer.json: the package's tokenizer section is {} (token "
                        "ids in and out only)")
        tokenizer_json, stop_ids = {}, []
    logging.info("planning for %s (%d workers available), max_context %d", target.name,
                 target.workers, max_context)
    plan = plan_lib.make_plan(ck.config, target, max_context=max_context,
                              attention_chunks=attention_chunks,
                              attention_min_chunk=attention_min_chunk, workers=workers,
                              qkv_parts=qkv_parts, attn_out_parts=attn_out_parts,
                              ffn_parts=ffn_parts, lm_head_slots=lm_head_slots)
    validate_lib.validate_plan(plan)
    logging.info("plan valid: %d tasks in %d waves; writing %s", len(plan.tasks),
                 len(plan.waves), out)
    def reread(path):  # the finished file, before it replaces `out`
        try:
            view = package_lib.read_package(path, verify=True)
            validate_lib.validate_plan(view, positions=[0, max_context - 1])
        except ValueError as e:
            raise package_lib.PackageError(
                f"{out}: the written package failed its re-read check and was not installed "
                f"(a planner bug, or the disk changed it; {out} is as it was): {e}") from e
        logging.info("re-read %s: checksums and plan valid", path)

    size = package_lib.write_package(out, plan, ck.weights, ck.config, target, tokenizer_json,
                                     source or ck.source_description, stop_token_ids=stop_ids,
                                     created=created, validate=False, progress=progress,
                                     check=reread if verify else None)
    bw = bandwidth_gbps or target.bandwidth_gbps
    return BuildResult(plan=plan, path=out, file_bytes=size, summary=summary_text(plan, bw))


# The flags build_package takes as keyword arguments of the same names (smollm2_package
# passes them on too).
PLAN_FLAGS = ("attention_chunks", "attention_min_chunk", "workers", "qkv_parts", "attn_out_parts",
              "ffn_parts", "lm_head_slots", "bandwidth_gbps", "created")


def plan_flag_values() -> dict:
    """{flag: parsed value} of PLAN_FLAGS, for build_package(**...)."""
    return {name: getattr(FLAGS, name) for name in PLAN_FLAGS}


def target_from_flag(value: str) -> str:
    """--target as build_package takes it: a file (a path with a separator, or a .json name)
    relative to where the tool was started, else a shipped target's name as it is."""
    return paths.from_invocation_dir(value) if os.sep in value or value.endswith(".json") else value


def _file_identity(path: str) -> Optional[tuple]:
    """(device, inode) of the file at `path`, None if there is none: write_package's rename
    gives `path` its temporary file's inode, so a change says the new package is in place."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])} (all options are "
                             f"--flags)")
    if not FLAGS.out:
        raise app.UsageError("--out is empty: give the .tpkg file to write")
    if not FLAGS.checkpoint:  # "" would plan the directory the planner was started in
        raise app.UsageError("--checkpoint is empty: give an HF checkpoint directory or hub id")
    signals.install()
    checkpoint = FLAGS.checkpoint
    local = paths.from_invocation_dir(checkpoint)
    if os.path.exists(local):  # else a hub id such as org/name
        checkpoint = local
        if FLAGS.revision:  # the library only warns; on the command line it would go unseen
            print(f"planner: error: --revision={FLAGS.revision} is for hub ids, and {FLAGS.checkpoint} is a "
                  f"local directory, planned as it is: leave --revision out", file=sys.stderr)
            return 1
    target = target_from_flag(FLAGS.target)
    out = paths.from_invocation_dir(FLAGS.out)
    before = _file_identity(out)
    try:
        result = build_package(checkpoint, target, out, FLAGS.max_context,
                               revision=FLAGS.revision, **plan_flag_values())
    except (ValueError, OSError) as e:
        # Every planner error is a ValueError subclass whose message says what to do; a
        # traceback would bury it.
        print(f"planner: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP (signals.install)
        if _file_identity(out) != before:  # the signal came after the rename
            state = (f"{out} already holds the new package, complete and checked"
                     + (" (it replaced the earlier file)" if before is not None else ""))
        else:
            state = (f"{out} holds no partial package (it is replaced only by a complete, "
                     f"checked file), and no temporary file is left")
        print(f"planner: interrupted ({signals.name_of(e)}): {state}", file=sys.stderr)
        return signals.end_by(e)  # a shell loop around the planner stops too
    print(result.summary)
    print(f"wrote {result.path} ({result.file_bytes:,} bytes)")


if __name__ == "__main__":
    flags.mark_flags_as_required(["checkpoint", "out"])
    app.run(main)
