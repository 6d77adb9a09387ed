"""The main of every py_pytest test (third_party/tileinfer.bzl): pytest on the test file given
as the argument, quiet and without a cache directory. Exits with pytest's status, which is
nonzero also when the file holds no test that ran (5, no tests collected): a test target
passes only if its tests ran and passed."""
import sys

import pytest


def main(argv):
    if len(argv) < 2:
        print(f"{argv[0]}: give the test file(s) to run", file=sys.stderr)
        return 2
    return int(pytest.main([*argv[1:], "-q", "-p", "no:cacheprovider"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
