"""The showcase harness: TileInfer against its peers and the floor, in one run.

Usage (on the GPU machine; tests/gpu/showcase.sh runs it for both models):
  python3 py/tools/showcase.py --bench=.gpu/bin/bench --package=M.tpkg --checkpoint=HF_DIR \
      --floor_json=floor.json --out_dir=DIR [--runtimes=tileinfer,torch_compile,torch_graph,hf_eager]
      [--contexts=1,64,256,384,385,512,1024,2048,4096] [--blocks=3] [--reps=5] [--device=cuda]
      [--bench_flags=--attention_tile_min=96]   (more flags for TileInfer's bench)

Every runtime stays resident in its own process (host/bench.cc, py/tools/peers_bench.py,
py/tools/llamacpp_bench.py: one line protocol) so that loading and compiling happen once; the harness then measures in
interleaved blocks: for each block, each context, each runtime in a rotating order, `reps`
samples of the same 16-step window (contexts L-15 .. L, L = max(C, 16); the harness refuses
answers for different windows). Reported per runtime and context: the median ms/token over all
samples, floor / time, and for each peer the mean of the per-block median differences
against TileInfer with its 95% confidence half-width (Student t over the blocks). Then a
64-token greedy generation per runtime (tokens/s, and whether all chose the same tokens),
and the kernels each peer launches per token (torch.profiler).

The floor at context C = (weight bytes read per token + K/V bytes at C) / the best measured
streaming read (tests/bench/floor). Writes results.json (every number and its conditions),
results.md (the table), latency.png and bandwidth.png (the floor against active SMs;
matplotlib) to --out_dir.

  python3 py/tools/showcase.py --redraw=DIR/results.json
rewrites DIR/results.md and the figures from a results.json (e.g. one whose phases came
from two calls and were merged by hand); nothing is measured.
"""
import datetime
import json
import math
import os
import select
import statistics
import subprocess
import sys
import time

from absl import app, flags

from planner import plan as plan_lib
from planner import weights as weights_lib
from planner.model_config import LlamaConfig
from tools import bench_protocol, plot

FLAGS = flags.FLAGS
flags.DEFINE_string("bench", None, "TileInfer's benchmark server (host/bench.cc).")
flags.DEFINE_string("package", None, "TileInfer package (planned for this GPU).")
flags.DEFINE_string("checkpoint", None, "The HF checkpoint the package was planned from (peers).")
flags.DEFINE_string("floor_json", None, "tests/bench/floor output of this run (best_gbps).")
flags.DEFINE_string("out_dir", None, "Where results.json, results.md, latency.png go.")
flags.DEFINE_list("runtimes", ["tileinfer", "torch_compile", "torch_graph", "hf_eager"], "Runtimes.")
flags.DEFINE_list("contexts", ["1", "64", "256", "384", "385", "512", "1024", "2048", "4096"],
                  "Contexts of the fixed-context latency.")
flags.DEFINE_integer("blocks", 3, "Interleaved blocks (2..31; >= 2 for a confidence interval).")
flags.DEFINE_integer("reps", 5, "Samples per runtime, context and block.")
flags.DEFINE_integer("generate", 64, "New tokens of the generation comparison.")
flags.DEFINE_string("prompt_ids", bench_protocol.PROMPT_IDS,
                    "Prompt of the generation comparison (ids, valid for the model's vocabulary).")
flags.DEFINE_string("device", "cuda", "cuda, or cpu (to try the harness without a GPU).")
flags.DEFINE_float("timeout_s", 500, "Longest wait for one answer of a runtime (below a GPU "
                   "call's 600 s, so that a stuck runtime is reported, not cut off).")
flags.DEFINE_list("bench_flags", [], "More flags for TileInfer's bench, comma-separated, each --name=value "
                  "(e.g. --attention_tile_min=96); recorded in results.json.")
flags.DEFINE_string("llama_bench", None, "llama.cpp's llama-bench (runtime llamacpp).")
flags.DEFINE_string("llamacpp_gguf", None, "The model as GGUF for llama.cpp (py/tools/gguf_export.py).")
flags.DEFINE_string("redraw", None, "Only rewrite results.md and the figures beside this results.json.")

# Two-sided 95% Student t quantiles by degrees of freedom (standard tables); --blocks <= 31.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
       18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
       26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}


class Runtime:
    """One resident benchmark server (a child process speaking the line protocol)."""

    def __init__(self, name, argv, timeout_s):
        self.name, self.timeout_s, self.buffer = name, timeout_s, b""
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=sys.stderr)
        try:
            ready = self._read()
            if not ready.get("ready"):
                raise RuntimeError(f"{name}: did not start: {ready}")
        except BaseException:
            self.proc.kill()  # never leave a half-started runtime holding the GPU
            raise

    def _read(self):
        """The next answer line, within timeout_s (the child is killed otherwise)."""
        deadline = time.monotonic() + self.timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
            if not ready:
                self.proc.kill()
                raise RuntimeError(f"{self.name}: no answer within {self.timeout_s} s (killed)")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"{self.name}: exited (code {self.proc.wait()}); see its stderr above")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, command):
        self.proc.stdin.write((command + "\n").encode())
        self.proc.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"{self.name}: {command}: {answer['error']}")
        return answer

    def close(self):
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def tileinfer_argv():
    """host/bench's command line: the package, the prompt, the device, then --bench_flags.
    Raises app.UsageError for a bench flag that is not of the form --name=value."""
    for f in FLAGS.bench_flags:
        if not bench_protocol.is_bench_flag(f):
            raise app.UsageError(f"--bench_flags: '{f}' is not --name=value (e.g. --attention_tile_min=96)")
    return [FLAGS.bench, f"--package={FLAGS.package}", f"--prompt_ids={FLAGS.prompt_ids}",
            f"--device={'gpu' if FLAGS.device.startswith('cuda') else 'cpu'}", *FLAGS.bench_flags]


def launch(name):
    if name == "tileinfer":
        argv = tileinfer_argv()
    elif name == "llamacpp":
        if not FLAGS.llama_bench or not FLAGS.llamacpp_gguf:
            raise app.UsageError("runtime llamacpp needs --llama_bench and --llamacpp_gguf")
        argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_bench.py"),
                f"--llama_bench={FLAGS.llama_bench}", f"--gguf={FLAGS.llamacpp_gguf}",
                f"--prompt_ids={FLAGS.prompt_ids}",
                f"--gpu_layers={99 if FLAGS.device.startswith('cuda') else 0}"]
    else:
        argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers_bench.py"),
                f"--checkpoint={FLAGS.checkpoint}", f"--runtime={name}", f"--device={FLAGS.device}",
                f"--prompt_ids={FLAGS.prompt_ids}"]
    return Runtime(name, argv, FLAGS.timeout_s)


def stream_bytes(config):
    """(weight bytes read per token, K/V bytes per position) of a LlamaConfig: every tensor
    of the checkpoint once in BF16 (planner.weights.expected_tensors), of an untied embedding
    table only the row EMBED reads, as planner.plan.streamed_bytes_per_token counts a plan
    (which adds its 128-byte RoPE table)."""
    total = 0
    for name, shape in weights_lib.expected_tensors(config):
        elements = math.prod(shape)
        if name == weights_lib.EMBED_NAME and not config.tie_word_embeddings:
            elements = config.hidden_size
        total += 2 * elements
    return total, plan_lib.kv_bytes_per_position(config)


def paired(tileinfer_blocks, peer_blocks):
    """Mean of per-block (peer - tileinfer) medians and its 95% half-width (ms)."""
    diffs = [p - t for t, p in zip(tileinfer_blocks, peer_blocks)]
    mean = statistics.fmean(diffs)
    if len(diffs) < 2:
        return mean, float("nan")
    return mean, T95[len(diffs) - 1] * statistics.stdev(diffs) / len(diffs) ** 0.5


def conditions():
    c = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "device": FLAGS.device, "package": FLAGS.package, "checkpoint": FLAGS.checkpoint,
         "blocks": FLAGS.blocks, "reps": FLAGS.reps, "window_steps": bench_protocol.WINDOW,
         "bench_flags": list(FLAGS.bench_flags),
         "python": sys.version.split()[0]}
    try:
        c["gpu"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        c["gpu"] = "none (nvidia-smi unavailable)"
    for module in ("torch", "transformers"):
        try:
            c[module] = __import__(module).__version__
        except ImportError:
            c[module] = None
    return c


def table(results):
    names = results["runtimes"]
    head = ("| context | timed window | floor ms | " + " | ".join(f"{n} ms (floor/time)" for n in names)
            + " |")
    lines = [head, "|" + "---|" * (len(names) + 3)]
    for c in results["contexts"]:
        row = results["latency"][str(c)]
        cells = []
        for n in names:
            r = row[n]
            cell = f"{r['median_ms']:.3f} ({100 * r['floor_ratio']:.0f}%)"
            if "vs_tileinfer_ms" in r:
                cell += f", {r['vs_tileinfer_ms']:+.3f} ± {r['ci95_ms']:.3f}"
            cells.append(cell)
        window = row.get("window", ["?", "?"])
        lines.append(f"| {c} | {window[0]}-{window[1]} | {row['floor_ms']:.3f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| runtime | generation tokens/s | ms/token | same tokens as TileInfer | kernels/token |")
    lines.append("|---|---|---|---|---|")
    for n in names:
        g = results["generation"].get(n)  # absent when the run stopped before this phase
        gen = (f"{g['tokens_per_s']:.1f} | {g['ms_per_token']:.3f} | {g['same_as_tileinfer']}" if g
               else "not measured | - | -")
        lines.append(f"| {n} | {gen} | {results['kernels'].get(n, 'not measured')} |")
    return "\n".join(lines) + "\n"


def figure(results, path):
    plt = plot.pyplot()
    contexts = results["contexts"]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    ax.plot(contexts, [results["latency"][str(c)]["floor_ms"] for c in contexts], "k--", label="floor")
    for n in results["runtimes"]:
        ys = [results["latency"][str(c)][n]["median_ms"] for c in contexts]
        ax.plot(contexts, ys, "o-", label=n)
        for c, y in zip(contexts, ys):
            if c in (contexts[0], contexts[-1]):
                ax.annotate(f"{100 * results['latency'][str(c)][n]['floor_ratio']:.0f}%", (c, y),
                            textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (positions)")
    ax.set_ylabel("ms per token (median), logits ready")
    package = os.path.basename(results["conditions"]["package"])
    ax.set_title(f"{package}: latency against context (labels: floor / time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def bandwidth_figure(floor, path):
    """The floor's streaming read: GB/s against active SMs (with linear scaling from one SM),
    and GB/s per launch shape (tests/bench/floor's JSON)."""
    plt = plot.pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    sms = [r["sms"] for r in floor["by_active_sms"]]
    gbps = [r["gbps"] for r in floor["by_active_sms"]]
    ax.plot(sms, gbps, "o-", label="measured")
    ax.plot(sms, [gbps[0] * n / sms[0] for n in sms], "k:", label="linear from the first point")
    ax.axhline(floor["best_gbps"], color="gray", linestyle="--", label=f"best {floor['best_gbps']:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, floor["best_gbps"] * 1.15)
    ax.set_xlabel("active SMs (one block each)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"{floor['gpu']}: streaming read of {floor['bytes'] / 1e9:.2f} GB")
    ax.legend(fontsize=8)
    labels = [f"{r['blocks_per_sm']}x{r['threads']}" for r in floor["shapes"]]
    bx.bar(labels, [r["gbps"] for r in floor["shapes"]])
    bx.set_xlabel("blocks per SM x threads per block")
    bx.set_ylabel("GB/s")
    bx.tick_params(axis="x", labelrotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def write_outputs(results, out_dir):
    """results.md, latency.png and (with the floor's data) bandwidth.png into out_dir; the
    figures are skipped without matplotlib."""
    md = table(results)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(md)
    print(md)
    try:
        figure(results, os.path.join(out_dir, "latency.png"))
        if "floor" in results:
            bandwidth_figure(results["floor"], os.path.join(out_dir, "bandwidth.png"))
    except ImportError:
        print("figures skipped: matplotlib is not installed", file=sys.stderr)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if FLAGS.redraw:
        with open(FLAGS.redraw) as f:
            write_outputs(json.load(f), os.path.dirname(os.path.abspath(FLAGS.redraw)))
        return
    missing = [n for n in ("bench", "package", "checkpoint", "floor_json", "out_dir") if not getattr(FLAGS, n)]
    if missing:
        raise app.UsageError(f"missing flags: {', '.join('--' + n for n in missing)} (or --redraw)")
    if FLAGS.runtimes[0] != "tileinfer":
        raise app.UsageError("--runtimes must start with tileinfer (the reference of the differences)")
    if not 2 <= FLAGS.blocks <= 31:
        raise app.UsageError("--blocks must be in 2..31 (a confidence interval needs two)")
    contexts = [int(c) for c in FLAGS.contexts]
    with open(os.path.join(FLAGS.checkpoint, "config.json")) as f:
        weights, kv = stream_bytes(LlamaConfig.from_hf(json.load(f)))
    with open(FLAGS.floor_json) as f:
        floor = json.load(f)
    gbps = float(floor["best_gbps"])
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    results = {"conditions": conditions(), "floor_gbps": gbps, "floor": floor, "weight_bytes": weights,
               "kv_bytes_per_position": kv, "contexts": contexts, "runtimes": list(FLAGS.runtimes),
               "latency": {}, "generation": {}, "kernels": {}}

    def save():  # after every phase: a late failure or a call's limit keeps what was measured
        tmp = os.path.join(FLAGS.out_dir, ".results.json.tmp")
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, os.path.join(FLAGS.out_dir, "results.json"))
        with open(os.path.join(FLAGS.out_dir, "results.md"), "w") as f:  # the table so far
            f.write(table(results))

    runtimes = {}
    try:
        for name in FLAGS.runtimes:
            t0 = time.time()
            runtimes[name] = launch(name)
            print(f"{name}: ready in {time.time() - t0:.0f} s", file=sys.stderr)
        for rt in runtimes.values():  # warm-up: every context once (graph capture, compile)
            for c in contexts:
                rt.ask(f"context {c} 1")
        samples = {n: {c: [] for c in contexts} for n in runtimes}
        block_medians = {n: {c: [] for c in contexts} for n in runtimes}
        windows = {}
        names = list(runtimes)
        for b in range(FLAGS.blocks):
            for c in contexts:
                order = names[b % len(names):] + names[:b % len(names)]
                for n in order:
                    answer = runtimes[n].ask(f"context {c} {FLAGS.reps}")
                    samples[n][c] += answer["ms_per_token"]
                    block_medians[n][c].append(statistics.median(answer["ms_per_token"]))
                    windows[(n, c)] = answer["window"]
                    if windows[(n, c)] != windows[(names[0], c)]:
                        raise RuntimeError(f"{n} timed contexts {windows[(n, c)]} at context {c}, "
                                           f"tileinfer {windows[(names[0], c)]}: not comparable")
            print(f"block {b + 1}/{FLAGS.blocks} done", file=sys.stderr)
        for c in contexts:
            floor_ms = (weights + kv * c) / gbps / 1e6
            row = {"floor_ms": floor_ms, "window": windows[(names[0], c)]}
            for n in names:
                med = statistics.median(samples[n][c])
                r = {"median_ms": med, "floor_ratio": floor_ms / med, "samples_ms": samples[n][c],
                     "block_medians_ms": block_medians[n][c]}
                if n != "tileinfer":
                    r["vs_tileinfer_ms"], r["ci95_ms"] = paired(block_medians["tileinfer"][c],
                                                                block_medians[n][c])
                row[n] = r
            results["latency"][str(c)] = row
        save()
        generation = {n: runtimes[n].ask(f"generate {FLAGS.generate}") for n in names}
        for n in names:  # llama-bench does not report its tokens: "not checked"
            generation[n]["same_as_tileinfer"] = ("not checked" if generation[n]["tokens"] is None
                                                  else generation[n]["tokens"] == generation["tileinfer"]["tokens"])
        results["generation"] = generation
        save()
        if FLAGS.device.startswith("cuda"):
            for n in names:
                if n != "tileinfer":
                    results["kernels"][n] = runtimes[n].ask("kernels")["kernels"] or "not measured"
            results["kernels"]["tileinfer"] = "1 launch per <= 64 tokens"
        save()
        write_outputs(results, FLAGS.out_dir)  # before the runtimes close (seconds each)
    finally:
        for rt in runtimes.values():
            rt.close()


if __name__ == "__main__":
    app.run(main)
