"""The PyTorch peer's decode step against the numpy reference (needs torch: tagged manual).

Run: bazel test //py/tools:peers_bench_test (with torch installed) or, from the repo root,
PYTHONPATH=py:. python3 py/tools/peers_bench_test.py
"""
import io
import json
import sys

import numpy as np
import pytest
import torch

from planner import checkpoint as ckpt_lib
from tests.reference import numpy_llama, tiny_models
from tools import peers_bench

TINY = dict(hidden=64, ffn=96, layers=2, heads=4, kv_heads=2, vocab=60)


@pytest.fixture(name="ck")
def fixture_ck(tmp_path):
    tiny_models.write_tiny_checkpoint(tmp_path, seed=5, **TINY)
    return ckpt_lib.load_checkpoint(str(tmp_path))


def test_step_matches_numpy_reference(ck):
    c = ck.config
    inv = numpy_llama.inv_freq_table(c.head_dim, c.rope_theta, c.rope_scaling)
    step = peers_bench.TorchStep(ck, "cpu", inv)
    state = step.state(12)
    ref = numpy_llama.NumpyLlama(c, ck.weights)
    for pos, token in enumerate([1, 7, 33, 5, 59, 2, 14, 8]):
        got = step.step(torch.tensor([token]), torch.tensor([pos]), *state).numpy()
        want = ref.step(token)
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-2, (pos, err)  # BF16 activations into each matmul (~3e-3 seen)
        assert got.argmax() == want.argmax()


def test_server_protocol(ck):
    c = ck.config
    inv = numpy_llama.inv_freq_table(c.head_dim, c.rope_theta, c.rope_scaling)
    runner = peers_bench.GraphRunner(ck, "cpu", False, inv)
    tokens = list(range(3, 43))
    out = io.StringIO()
    peers_bench.FLAGS.mark_as_parsed()
    peers_bench.serve(runner, tokens, [1, 5, 7], lambda: 0, out=out,
                      inp=io.StringIO("context 20 2\ncontext 3 1\ngenerate 4\nnope\ncontext 99 1\nquit\n"))
    lines = [json.loads(l) for l in out.getvalue().splitlines()]
    assert lines[0]["ready"]
    assert lines[1]["context"] == 20 and lines[1]["window"] == [5, 20] and len(lines[1]["ms_per_token"]) == 2
    assert lines[2]["window"] == [1, 16]  # every runtime times contexts L-15..L, L = max(C, 16)
    assert len(lines[3]["tokens"]) == 4 and lines[3]["tokens_per_s"] > 0
    # The same greedy tokens as the numpy reference.
    ref = numpy_llama.NumpyLlama(c, ck.weights)
    assert lines[3]["tokens"] == ref.greedy([1, 5, 7], 4)
    assert "unknown command" in lines[4]["error"] and "context must be" in lines[5]["error"]


def test_compiled_step_one_compilation_for_every_cache_length(ck):
    """torch_compile's runner: cache length dynamic, so contexts 20, 3 and a generation of
    another length reuse one compiled graph; tokens still equal the numpy reference's."""
    c = ck.config
    inv = numpy_llama.inv_freq_table(c.head_dim, c.rope_theta, c.rope_scaling)
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    runner = peers_bench.GraphRunner(ck, "cpu", True, inv, max_len=40)
    tokens = list(range(3, 43))
    runner.context(20, 1, tokens)
    assert runner.filled == 20
    runner.context(3, 1, tokens)
    got = runner.generate([1, 5, 7], 4)[0]
    assert got == numpy_llama.NumpyLlama(c, ck.weights).greedy([1, 5, 7], 4)
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    with pytest.raises(ValueError, match="outside 1..40, the K/V cache"):
        runner.context(41, 1, tokens + [0])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
