"""The pybind11 extension builds against this machine's Python and imports."""
import sys

import pytest

from host import _tileinfer


def test_gpu_count_is_a_count():
    n = _tileinfer.gpu_count()
    assert isinstance(n, int) and n >= 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
