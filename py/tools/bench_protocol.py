"""The line protocol of the showcase's resident benchmark servers (py/tools/peers_bench.py,
py/tools/llamacpp_bench.py; host/bench.cc speaks the same in C++).

A server prints {"ready": true, "runtime": NAME} once, then answers each command line on stdin
with one JSON line on stdout: `context C R` (R samples of the WINDOW-step window ending at
context max(C, WINDOW)), `generate N`, `kernels`; `quit` (or the end of input) ends it. A
command that fails is answered {"error": MESSAGE} and the server goes on.
"""
import json
import sys

WINDOW = 16  # timed decode steps per sample, in every runtime (host/bench.cc kWindow)
PROMPT_IDS = "1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198"  # `generate`'s default


def serve(runtime, answer, inp=None, out=None):
    """Runs the protocol: answer(parts) -> dict for each command line split into words
    (never for blank lines or `quit`); ValueError and RuntimeError become {"error": ...}."""
    inp = sys.stdin if inp is None else inp
    out = sys.stdout if out is None else out
    print(json.dumps({"ready": True, "runtime": runtime}), file=out, flush=True)
    for line in inp:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "quit":
            return
        try:
            reply = answer(parts)
        except (ValueError, RuntimeError) as e:
            reply = {"error": str(e)}
        print(json.dumps(reply), file=out, flush=True)


def is_bench_flag(flag):
    """Whether `flag` has the form host/bench's flags take on a command line: --name=value."""
    return flag.startswith("--") and "=" in flag


def unknown(parts):
    """The error for a command no server knows."""
    return ValueError(f"unknown command {' '.join(parts)!r}: context C REPS | generate N | kernels | quit")
