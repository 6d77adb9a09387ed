"""Same-run A/B of TileInfer builds and settings on bench windows (runs on the GPU machine).

Usage (from the repository root, PYTHONPATH=py):
  python3 py/tools/bench_windows.py --config=A=.gpu/a --config=B=.gpu/bin:--attention_tile_min=1 \\
      --models=llama1b_shape,smollm2_shape --contexts=256,1024,4096 --out_dir=$OUT/bench

For each of --blocks interleaved blocks, each model and each config (in that order), one
`bench` process (host/bench.cc) answers `context C REPS` for every context: REPS timed
launches of the 16-step window ending at C, ms/token each. Its answers go to
OUT_DIR/MODEL_CONFIG_BLOCK.jsonl. Then the table of medians over all blocks' windows, per
model, config and context, is printed (and returned by summarize()). A config is
NAME=BIN_DIR[:FLAG,FLAG...], FLAG a bench flag (--name=value). Packages are
PACKAGES/MODEL.tpkg (tests/gpu/make_models.py), or DIR/MODEL.tpkg for a config named in
--config_packages=NAME=DIR (builds of different package formats, each with packages made by
its own planner); every bench runs with --check_target=false unless a config sets it.
"""
import collections
import json
import os
import statistics
import subprocess
import sys

from absl import app, flags

from tools import bench_protocol

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("config", [], "NAME=BIN_DIR[:FLAG,FLAG...] (at least one).")
flags.DEFINE_list("models", ["llama1b_shape", "smollm2_shape"], "Packages under --packages, without .tpkg.")
flags.DEFINE_string("packages", "/tmp/tileinfer_models", "Folder of the model packages.")
flags.DEFINE_multi_string("config_packages", [], "NAME=DIR: config NAME reads DIR/MODEL.tpkg instead of "
                          "--packages (a build of another package format).")
flags.DEFINE_list("contexts", ["256", "512", "1024", "2048", "4096"], "Window ends.")
flags.DEFINE_integer("blocks", 3, "Interleaved blocks.")
flags.DEFINE_integer("reps", 7, "Timed windows per context and block.")
flags.DEFINE_integer("timeout_s", 120, "Seconds one bench process may take.")
flags.DEFINE_string("out_dir", None, "Where the .jsonl answers go.")


def parse_config(text):
    """NAME=BIN_DIR[:FLAG,FLAG...] -> (name, bin_dir, [flags]); ValueError when malformed."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest or not name.replace("_", "").isalnum():
        raise ValueError(f"--config {text!r}: give NAME=BIN_DIR[:FLAG,FLAG...], NAME letters, digits or _")
    bin_dir, _, flag_text = rest.partition(":")
    extra = [f for f in flag_text.split(",") if f] if flag_text else []
    for f in extra:
        if not bench_protocol.is_bench_flag(f):
            raise ValueError(f"--config {text!r}: flag {f!r} is not --name=value")
    return name, bin_dir, extra


def missing_packages(packages, models):
    """The PACKAGES/MODEL.tpkg paths of `models` that are not files (a fresh GPU machine has none)."""
    return [p for p in (os.path.join(packages, m + ".tpkg") for m in models) if not os.path.isfile(p)]


def run(configs, models, packages, contexts, blocks, reps, out_dir, timeout_s=120, packages_for=None):
    """Runs every (block, model, config) bench once; returns the failures as strings.
    packages_for: {config name: folder} overriding `packages` for that config."""
    packages_for = packages_for or {}
    os.makedirs(out_dir, exist_ok=True)
    commands = "".join(f"context {c} {reps}\n" for c in contexts) + "quit\n"
    failures = []
    for block in range(1, blocks + 1):
        for model in models:
            for name, bin_dir, extra in configs:
                folder = packages_for.get(name, packages)
                argv = [os.path.join(bin_dir, "bench"), f"--package={os.path.join(folder, model + '.tpkg')}"]
                if not any(f.startswith("--check_target=") for f in extra):
                    argv.append("--check_target=false")
                argv += extra
                path = os.path.join(out_dir, f"{model}_{name}_{block}.jsonl")
                try:
                    r = subprocess.run(argv, input=commands, capture_output=True, text=True, timeout=timeout_s)
                    ok, why = r.returncode == 0, (r.stderr.strip().splitlines() or ["no message"])[-1]
                except (OSError, subprocess.TimeoutExpired) as e:
                    r, ok, why = None, False, str(e)
                if r is not None:
                    with open(path + ".part", "w") as f:
                        f.write(r.stdout)
                    os.replace(path + ".part", path)
                if not ok:
                    failures.append(f"{model} {name} block {block}: {why}")
    return failures


def summarize(out_dir, models, names, contexts):
    """{(model, name, context): median ms/token} over every window of every block's .jsonl;
    a missing or empty entry is None. Raises ValueError on a line that is not an answer."""
    samples = collections.defaultdict(list)
    files = sorted(os.listdir(out_dir))
    for model in models:
        for name in names:
            prefix = f"{model}_{name}_"
            for fn in files:
                if not (fn.startswith(prefix) and fn.endswith(".jsonl") and fn[len(prefix):-6].isdigit()):
                    continue
                with open(os.path.join(out_dir, fn)) as f:
                    for line in f:
                        reply = json.loads(line)
                        if "error" in reply:
                            raise ValueError(f"{fn}: bench answered an error: {reply['error']}")
                        if "context" in reply:
                            samples[(model, name, int(reply["context"]))] += reply["ms_per_token"]
    return {(m, n, int(c)): (statistics.median(samples[(m, n, int(c))]) if samples[(m, n, int(c))] else None)
            for m in models for n in names for c in contexts}


def table(medians, models, names, contexts):
    """The medians as text, one block per model: a row per config, a column per context."""
    lines = []
    for m in models:
        lines.append(f"{m}: median ms/token")
        lines.append("config   " + "  ".join(f"{int(c):>7d}" for c in contexts))
        for n in names:
            cells = [medians[(m, n, int(c))] for c in contexts]
            lines.append(f"{n:<8s} " + "  ".join("      -" if v is None else f"{v:7.4f}" for v in cells))
    return "\n".join(lines)


def main(argv):
    del argv
    if not FLAGS.config or not FLAGS.out_dir:
        raise app.UsageError("give at least one --config and --out_dir")
    try:
        configs = [parse_config(c) for c in FLAGS.config]
    except ValueError as e:
        raise app.UsageError(str(e))
    names = [c[0] for c in configs]
    if len(set(names)) != len(names):
        raise app.UsageError(f"config names repeat: {names}")
    packages_for = {}
    for text in FLAGS.config_packages:
        name, sep, folder = text.partition("=")
        if not sep or name not in names or not folder:
            raise app.UsageError(f"--config_packages {text!r}: give NAME=DIR with NAME one of {names}")
        packages_for[name] = folder
    missing = missing_packages(FLAGS.packages, FLAGS.models) + [
        p for folder in packages_for.values() for p in missing_packages(folder, FLAGS.models)]
    if missing:
        raise app.UsageError(f"no package {', '.join(missing)}: make them first, e.g. `python3 tests/gpu/make_models.py "
                             f"--target_file=T --out_dir={FLAGS.packages} --models={','.join(FLAGS.models)}` with T "
                             "from the worker build's `probe` (ab_compare.sh and device_checks.sh leave them)")
    failures = run(configs, FLAGS.models, FLAGS.packages, FLAGS.contexts, FLAGS.blocks, FLAGS.reps, FLAGS.out_dir,
                   FLAGS.timeout_s, packages_for)
    for f in failures:
        print(f"bench failed: {f}", file=sys.stderr)
    print(table(summarize(FLAGS.out_dir, FLAGS.models, names, FLAGS.contexts), FLAGS.models, names, FLAGS.contexts))
    return 1 if failures else 0


if __name__ == "__main__":
    app.run(main)
