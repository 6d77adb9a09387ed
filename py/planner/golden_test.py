"""The committed golden packages (tests/golden/) are valid and exactly what make_golden
writes today; if this fails after an intended change, regenerate them (tests/golden/README.md).
"""

import pathlib
import sys

import pytest

from planner import make_golden
from planner import package
from planner import validate

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden"


@pytest.mark.parametrize("name", sorted(make_golden.GOLDEN))
def test_golden_package_is_valid_and_up_to_date(name, tmp_path):
    committed = GOLDEN_DIR / f"{name}.tpkg"
    assert committed.is_file(), f"{committed} missing: run bazel run //py/planner:make_golden"
    view = package.read_package(str(committed))
    validate.validate_plan(view, positions=range(view.meta["plan"]["max_context"]))
    fresh = tmp_path / f"{name}.tpkg"
    make_golden.write_golden(name, str(fresh))
    assert fresh.read_bytes() == committed.read_bytes(), (
        f"{committed} is stale: bazel run //py/planner:make_golden")


def test_golden_shapes():
    v = package.read_package(str(GOLDEN_DIR / "tiny_9x3.tpkg"))
    m = v.meta["model"]
    assert (m["hidden_size"], m["intermediate_size"], m["num_layers"], m["num_heads"],
            m["num_kv_heads"], m["head_dim"], m["vocab_size"], m["tie_word_embeddings"]) == (
        72, 100, 2, 9, 3, 8, 97, True)
    assert v.meta["plan"]["max_context"] == 64 and v.meta["target"]["sm_count"] == 20
    u = package.read_package(str(GOLDEN_DIR / "tiny_untied.tpkg"))
    m = u.meta["model"]
    assert (m["hidden_size"], m["intermediate_size"], m["num_heads"], m["num_kv_heads"],
            m["vocab_size"], m["tie_word_embeddings"]) == (64, 128, 4, 2, 50, False)
    assert u.meta["plan"]["max_context"] == 32
    assert any(t["name"] == "lm_head" for t in u.tensors)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
