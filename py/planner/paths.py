"""Paths given on the command line of a `bazel run` tool."""
import os


def from_invocation_dir(path: str) -> str:
    """`bazel run` starts a tool in its runfiles tree; a relative path means the directory the
    user ran bazel from ($BUILD_WORKING_DIRECTORY). `~` is expanded; absolute paths stay."""
    path = os.path.expanduser(path)
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if base and not os.path.isabs(path):
        return os.path.normpath(os.path.join(base, path))
    return path
