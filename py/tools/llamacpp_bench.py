"""llama.cpp (its own `llama-bench`) as a benchmark server for py/tools/showcase.py.

Usage: PYTHONPATH=py python3 py/tools/llamacpp_bench.py --llama_bench=PATH --gguf=MODEL.gguf
           [--gpu_layers=99]

Same line protocol as host/bench.cc (py/tools/bench_protocol.py). Each command runs llama-bench
once (the model loads each time; llama-bench times only the generation):
  context C R   `-p 0 -n 16 -d D -r R` with D = max(C, 16) - 16: R samples of 16 generated
                tokens at contexts D+1 .. D+16, the window every runtime of the showcase times
                -> {"context", "window", "ms_per_token"}
  generate N    `-p 0 -n N -d P` after a P-token context (P = len(--prompt_ids)) ->
                {"tokens": null, "ms_per_token", "tokens_per_s"}: llama-bench's time of the
                N generation steps / N; it does not say which tokens it chose, so the
                showcase cannot compare them
  kernels       {"kernels": null} (needs a CUDA profiler; not measured)
Flash attention on (`-fa 1`), all layers on the GPU (`-ngl`), BF16 weights as written by
py/tools/gguf_export.py.
"""
import json
import subprocess

from absl import app, flags

from tools import bench_protocol
from tools.bench_protocol import WINDOW

FLAGS = flags.FLAGS
flags.DEFINE_string("llama_bench", None, "llama.cpp's llama-bench binary.")
flags.DEFINE_string("gguf", None, "The model as GGUF (py/tools/gguf_export.py).")
flags.DEFINE_integer("gpu_layers", 99, "Layers on the GPU (-ngl); 0 for a CPU build.")
flags.DEFINE_list("prompt_ids", bench_protocol.PROMPT_IDS,
                  "Prompt of `generate` (only its length matters to llama-bench).")
flags.DEFINE_float("timeout_s", 450, "Longest llama-bench run (below the showcase's wait).")


def run_bench(n_gen, depth, reps):
    """Per-repetition milliseconds of `n_gen` generated tokens after `depth` positions."""
    argv = [FLAGS.llama_bench, "-m", FLAGS.gguf, "-ngl", str(FLAGS.gpu_layers), "-fa", "1",
            "-p", "0", "-n", str(n_gen), "-d", str(depth), "-r", str(reps), "-o", "json"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=FLAGS.timeout_s,
                              check=False)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"llama-bench ran past {FLAGS.timeout_s} s") from e
    if done.returncode != 0:
        raise RuntimeError(f"llama-bench exited {done.returncode}: {done.stderr.strip()[-400:]}")
    results = [r for r in json.loads(done.stdout) if r.get("n_gen") == n_gen]
    if len(results) != 1 or len(results[0].get("samples_ns", [])) != reps:
        raise RuntimeError(f"llama-bench gave no single {n_gen}-token result with {reps} samples")
    return [ns / 1e6 for ns in results[0]["samples_ns"]]


def answer(parts):
    """One command of the protocol (tools/bench_protocol.py), split into words."""
    if parts[0] == "context" and len(parts) == 3:
        c, reps = int(parts[1]), int(parts[2])
        if c < 1 or reps < 1:
            raise ValueError("context and reps must be >= 1")
        depth = max(0, c - WINDOW)
        return {"context": c, "window": [depth + 1, depth + WINDOW],
                "ms_per_token": [ms / WINDOW for ms in run_bench(WINDOW, depth, reps)]}
    if parts[0] == "generate" and len(parts) == 2:
        n = int(parts[1])
        ms = run_bench(n, len(FLAGS.prompt_ids), 1)[0] / n
        return {"tokens": None, "ms_per_token": ms, "tokens_per_s": 1e3 / ms}
    if parts[0] == "kernels":
        return {"kernels": None}
    raise bench_protocol.unknown(parts)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    bench_protocol.serve("llamacpp", answer)


if __name__ == "__main__":
    flags.mark_flags_as_required(["llama_bench", "gguf"])
    app.run(main)
