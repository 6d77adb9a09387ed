"""Paths given on the command line of a `bazel run` tool, and the temporaries the tools write
beside their outputs."""
import os
import shutil
import stat

from absl import logging


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


def remove_dead_temporaries(directory: str, prefix: str, *, directories: bool, what: str, output: str) -> None:
    """Removes the temporaries(directory, prefix) whose process no longer runs: regular files, or
    with `directories` directories and all they hold (other entries, links among them, stay).
    Logs each removal, and each one whose process runs (another run writing `output`, or a
    reused PID), which stays; `what` names them in the log ("a temporary package file"). One
    that cannot be removed is logged, not raised: the tool's own write does not need it."""
    for path, pid, runs in temporaries(directory, prefix):
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # gone since the listing (its run finished meanwhile)
            continue
        if not (stat.S_ISDIR(mode) if directories else stat.S_ISREG(mode)):
            continue
        if runs:
            logging.warning("%s: %s of process %d, which still runs (another run writing %s?); left as it is",
                            path, what, pid, output)
            continue
        try:
            if directories:
                shutil.rmtree(path)
            else:
                os.remove(path)
            logging.warning("removed %s, %s that process %d left when it ended without cleaning up (killed?)",
                            path, what, pid)
        except OSError as e:
            logging.warning("cannot remove %s, left by process %d: %s", path, pid, e.strerror)
