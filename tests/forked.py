"""One function run in a fork()ed child, for the checks that a child can drop the engines it
inherited and serve itself (tests/engine_test.py under pytest; tests/gpu/python_gpu.py on the GPU
machine, where pytest is not installed, so nothing here needs it)."""
import os
import signal
import time
from typing import Callable, Optional


def run_in_forked_child(child: Callable[[], str], seconds: float = 60) -> Optional[str]:
    """Runs child() in a fork()ed child and returns the text it returned ("" if it raised or
    died before returning), or None if the child had not ended after `seconds` (a hang; it is
    killed). The child leaves by os._exit, so no test teardown or atexit handler runs there."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            os.write(write_end, child().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + seconds
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            return None
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as f:
        return f.read().decode()
