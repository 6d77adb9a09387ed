"""ATTENTION emulator mutants: each __syncthreads of NEW's op_attention.cuh deleted, and one that adds
the warps' states in reverse order (caught only by the bitwise check against OLD).

Usage: B=<build dir of setup.sh> python3 mutate.py [cases]
Builds $B/mut/AT_<name> and runs each on `cases` (default 40) of compare_at.py's cases, every 32nd
(all shapes), through compare_at.py (NEW_BIN=the mutant); prints per mutant how many cases failed. A mutant no
case catches is a barrier (or an order) the suite cannot vouch for.
"""
import os, re, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__)); sys.path.insert(0, os.path.join(HERE, ".."))
from emu_common import syncthreads_mutants

B = os.environ["B"]
N = sys.argv[1] if len(sys.argv) > 1 else "40"


def build(name, text):
    src = f"{B}/mut/{name}.cuh"; os.makedirs(f"{B}/mut", exist_ok=True); open(src, "w").write(text)
    cmd = (f"source {HERE}/../emu_lib.sh; emu_build {B}/mut/AT_{name} {HERE}/at_tu.cc {HERE}/rt_at.cc "
           f"'-DOPFILE=\"{src}\"' {B} {B}/fake_new {B}/real_new")
    subprocess.run(cmd, shell=True, check=True, executable="/bin/bash")


def main():
    lines = open(f"{B}/at_new.cuh").read().split("\n")
    mutants = {f"del_L{n}": "\n".join(v) for n, v in syncthreads_mutants(lines)}
    text = "\n".join(lines)
    order = re.sub(r"for \(int w = 0; w < kWarps; \+\+w\) value \+=",
                   "for (int w = kWarps - 1; w >= 0; --w) value +=", text)
    if order != text: mutants["warps_reversed"] = order
    for name, src in mutants.items():
        build(name, src)
        r = subprocess.run([sys.executable, f"{HERE}/compare_at.py", N], capture_output=True, text=True,
                           env=dict(os.environ, NEW_BIN=f"{B}/mut/AT_{name}", STEP="32"))
        print(name, r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()[-200:], flush=True)


if __name__ == "__main__":
    main()
