"""The Python API (host/python_module.cc) on the GPU executor, ON the GPU machine.

Usage (from the repository root; tests/gpu/README.md, item 7):
  PYTHONPATH=.gpu/py:py:. python3 tests/gpu/python_gpu.py --packages=/tmp/tileinfer_models

.gpu/py/host/_tileinfer.so is `bazel build -c opt //host:_tileinfer.so` from here (the GPU
machine has no Bazel; the module must be built for its Python minor version). The packages are
tests/gpu/make_models.py's tiny_9x3 and tiny_big. Checks, each against an independent run:
  - GPU tokens equal the CPU executor's (greedy, 40 tokens);
  - a request that keeps the last one's K/V rows (reuse_kv_cache, the default) gives the tokens
    of the same request run from position 0, and prompt_reused counts the kept rows;
  - a request stopped by on_token mid-launch, then the next one (also when the stopped
    request's next step is non-finite: tiny_big), gives what a run from position 0 gives;
  - an exception raised in on_token comes out of generate, and the engine serves the next;
  - a non-finite logit's error counts the tokens streamed before it;
  - a fork()ed child: the inherited GPU engine refuses, dropping it returns at once, and a CPU
    engine of the child's own gives the CPU's tokens.
Prints a line per check; exits 1 when one fails.
"""
import json

from absl import app, flags

from host import _tileinfer
from tests import forked

FLAGS = flags.FLAGS
flags.DEFINE_string("packages", "/tmp/tileinfer_models", "Folder of tiny_9x3.tpkg and tiny_big.tpkg.")

_failed = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"{name}: {'ok' if ok else 'FAIL'}{(' (' + detail + ')') if detail else ''}")
    if not ok:
        _failed.append(name)


def stop_after(n: int):
    """on_token that goes on for n - 1 tokens and stops at the n-th."""
    seen = []

    def on_token(token_id, piece):
        seen.append(token_id)
        return len(seen) < n
    return on_token


def main(argv):
    del argv
    tiny = f"{FLAGS.packages}/tiny_9x3.tpkg"
    gpu = _tileinfer.Engine(tiny, device="gpu", check_target=False)
    cpu = _tileinfer.Engine(tiny, device="cpu")
    print(f"module on {gpu.executor_name}")
    prompt = [1, 5, 7, 11]
    want = cpu.generate(prompt_ids=prompt, max_new_tokens=40, stop_at_eos=False)
    got = gpu.generate(prompt_ids=prompt, max_new_tokens=40, stop_at_eos=False)
    check("GPU tokens = CPU tokens (40, greedy)", got["tokens"] == want["tokens"] and got["prompt_reused"] == 0)

    # The next turn repeats the last request's prompt and tokens (its last token never ran).
    nxt = prompt + got["tokens"] + [3, 9]
    kept = gpu.generate(prompt_ids=nxt, max_new_tokens=30, stop_at_eos=False)
    fresh = gpu.generate(prompt_ids=nxt, max_new_tokens=30, stop_at_eos=False, reuse_kv_cache=False)
    check("kept rows give a run from position 0's tokens",
          kept["prompt_reused"] == len(prompt) + len(got["tokens"]) - 1 and kept["tokens"] == fresh["tokens"]
          and fresh["prompt_reused"] == 0, f"kept {kept['prompt_reused']}")

    # Stopped mid-launch (the 70th of 100 tokens: inside the second 64-step launch).
    stopped = gpu.generate(prompt_ids=prompt, max_new_tokens=100, stop_at_eos=False, on_token=stop_after(70))
    after = gpu.generate(prompt_ids=prompt + stopped["tokens"][:50] + [2], max_new_tokens=20, stop_at_eos=False)
    want_after = cpu.generate(prompt_ids=prompt + stopped["tokens"][:50] + [2], max_new_tokens=20, stop_at_eos=False,
                              reuse_kv_cache=False)
    check("a request stopped mid-launch, then one that keeps its rows",
          len(stopped["tokens"]) == 70 and after["tokens"] == want_after["tokens"]
          and after["prompt_reused"] == len(prompt) + 50, f"kept {after['prompt_reused']}")

    class Stop(Exception):
        pass

    def raising(token_id, piece):
        raise Stop()
    try:
        gpu.generate(prompt_ids=prompt, max_new_tokens=10, on_token=raising)
        check("an exception in on_token comes out of generate", False)
    except Stop:
        again = gpu.generate(prompt_ids=prompt, max_new_tokens=40, stop_at_eos=False)
        check("an exception in on_token comes out of generate; the engine goes on", again["tokens"] == want["tokens"])

    # tiny_big: token 2's embedding overflows the residual. A request stopped at the token whose
    # step is non-finite (the GPU runs that step), then one sharing its first row.
    big = _tileinfer.Engine(f"{FLAGS.packages}/tiny_big.tpkg", device="gpu", check_target=False)
    ids = min(big.vocab_size, 200)  # as gpu_check --stop_before_nonfinite_check searches
    found = None
    for a in range(ids):
        for x in range(ids):
            seen = []
            try:
                big.generate(prompt_ids=[a, x], max_new_tokens=12, stop_at_eos=False,
                             on_token=lambda t, p: seen.append(t) is None)
            except RuntimeError as e:
                if len(seen) >= 2 and "non-finite" in str(e):
                    found = (a, x, len(seen))
                    check("a non-finite logit's error counts the tokens streamed before it",
                          f"after {len(seen)} tokens were emitted" in str(e), str(e)[:120])
                    break
        if found:
            break
    ok_prompt = None
    if found:
        for y in range(ids):
            try:
                big.generate(prompt_ids=[found[0], y], max_new_tokens=12, stop_at_eos=False)
                ok_prompt = [found[0], y]
                break
            except RuntimeError:
                pass
    if ok_prompt is None:
        check("stop before a non-finite step", False, "no prompts found in tiny_big")
    else:
        want_ok = big.generate(prompt_ids=ok_prompt, max_new_tokens=12, stop_at_eos=False, reuse_kv_cache=False)
        big.generate(prompt_ids=list(found[:2]), max_new_tokens=12, stop_at_eos=False, on_token=stop_after(found[2]))
        try:
            got_ok = big.generate(prompt_ids=ok_prompt, max_new_tokens=12, stop_at_eos=False)
            check("stop before a non-finite step, then a request sharing its first row",
                  got_ok["tokens"] == want_ok["tokens"], f"prompts {list(found[:2])} and {ok_prompt}")
        except RuntimeError as e:
            check("stop before a non-finite step, then a request sharing its first row", False, str(e)[:120])

    # A fork()ed child: the GPU engines it inherited refuse to generate, dropping them returns at
    # once (they free nothing there), and a CPU engine of its own serves it.
    def in_child():
        nonlocal gpu, big
        try:
            gpu.generate(prompt_ids=prompt, max_new_tokens=4)
            refused = "no error"
        except RuntimeError as e:
            refused = str(e)
        gpu = big = None  # the inherited engines' destructors run here
        own = _tileinfer.Engine(tiny, device="cpu").generate(prompt_ids=prompt, max_new_tokens=40, stop_at_eos=False)
        return json.dumps({"refused": refused, "tokens": own["tokens"]})

    child = forked.run_in_forked_child(in_child) or ""
    try:
        child = json.loads(child)
        check("a forked child: the GPU engine refuses, dropping it returns, a CPU engine of its own serves",
              "cannot serve another process" in child["refused"] and child["tokens"] == want["tokens"])
    except ValueError:
        check("a forked child: the GPU engine refuses, dropping it returns, a CPU engine of its own serves",
              False, "the child hung or died: " + repr(child[:120]))
    print("python_gpu:", "FAIL: " + ", ".join(_failed) if _failed else "PASS")
    return 1 if _failed else 0


if __name__ == "__main__":
    app.run(main)
