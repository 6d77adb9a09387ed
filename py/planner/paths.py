"""Paths given on the command line of a `bazel run` tool, and the temporaries the tools write
beside their outputs."""
import os


def from_invocation_dir(path: str) -> str:
    """`bazel run` starts a tool in its runfiles tree; a relative path means the directory the
    user ran bazel from ($BUILD_WORKING_DIRECTORY). `~` is expanded; absolute paths stay."""
    path = os.path.expanduser(path)
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if base and not os.path.isabs(path):
        return os.path.normpath(os.path.join(base, path))
    return path


def process_runs(pid: int) -> bool:
    """Whether a process `pid` runs (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def temporaries(directory: str, prefix: str) -> list[tuple[str, int, bool]]:
    """The temporaries other processes named `prefix` + PID (or `prefix` + PID + "-" + more) in
    `directory`: (path, PID, whether process PID runs), sorted by name; this process's own are
    left out. A tool killed by a signal it cannot catch (SIGKILL, the OOM killer) leaves its
    temporary behind; one whose process runs may be another run's (or a reused PID's), so
    callers keep those. An unreadable directory gives [] (the tool's own write says why)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_text = name[len(prefix):].split("-", 1)[0]
        if not (pid_text.isascii() and pid_text.isdigit()) or int(pid_text) == os.getpid():
            continue
        found.append((os.path.join(directory, name), int(pid_text), process_runs(int(pid_text))))
    return found
