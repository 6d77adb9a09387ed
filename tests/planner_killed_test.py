"""Issue 8: a planner killed midway (SIGKILL: no cleanup code runs) leaves no package that
loads. The writer builds `<out>.tmp-<pid>` and renames it only once complete, so the out
path either does not exist or still holds the previous, complete package."""
import os
import signal
import subprocess
import sys
import time

import pytest

from host import _tileinfer
from tests.reference import tiny_models

PLANNER = """
import sys
from planner import main
main.build_package(sys.argv[1], "h200", sys.argv[2], 64, progress=False)
"""


def run_planner(ckpt, out):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-c", PLANNER, str(ckpt), str(out)], env=env,
                            stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("previous", [False, True])
def test_killed_planner_leaves_no_loadable_partial_package(tmp_path, previous):
    # Large enough (~100 MB) that writing takes a while on two cores.
    ckpt = tmp_path / "ckpt"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=1024, ffn=4096, layers=4, heads=8,
                                      kv_heads=2, vocab=4000, seed=9)
    out = tmp_path / "model.tpkg"
    if previous:  # an earlier, complete package at the same path must survive
        small = tmp_path / "small"
        tiny_models.write_tiny_checkpoint(small, hidden=64, ffn=96, layers=1, heads=4,
                                          kv_heads=2, vocab=60, seed=1)
        assert run_planner(small, out).wait(timeout=120) == 0
        before = out.read_bytes()
    proc = run_planner(ckpt, out)
    deadline = time.time() + 120
    temp = None
    while time.time() < deadline and temp is None:  # wait until the writer has started
        temp = next((p for p in tmp_path.glob("model.tpkg.tmp-*") if p.stat().st_size > 0), None)
        time.sleep(0.01)
    assert temp is not None, "the planner never started writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the planner finished before it was killed"
    if previous:
        assert out.read_bytes() == before
        _tileinfer.validate_package(str(out))
    else:
        assert not out.exists()
    # The leftover temp file is not a package: the reader refuses it.
    with pytest.raises(RuntimeError):
        _tileinfer.validate_package(str(temp))



@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signalled_planner_removes_its_temp_file_and_says_so(tmp_path, signum):
    """SIGTERM (timeout, kill, CI cancellation), SIGHUP and Ctrl-C run the writer's cleanup:
    no temporary file is left, the message says what happened, without a traceback, and the
    planner then ends by that signal."""
    from planner import main as planner_main
    ckpt = tmp_path / "ckpt"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=1024, ffn=4096, layers=4, heads=8,
                                      kv_heads=2, vocab=4000, seed=9)
    out = tmp_path / "model.tpkg"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, planner_main.__file__, f"--checkpoint={ckpt}",
                             "--target=h200", "--max_context=64", f"--out={out}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not any(
            p.stat().st_size > 0 for p in tmp_path.glob("model.tpkg.tmp-*")):
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signum, err  # ended by the signal, as a shell loop expects
    assert f"planner: interrupted ({signal.Signals(signum).name})" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
