"""Tools that import another tool's module refuse that module's flags (planner.cli
refuse_flags_of): gguf_export and smollm2_package take no gguf_import flag, trace_compare and
ncu_regions no trace_report flag; before, each accepted such a flag and ignored it. And Ctrl-C
while a writing tool is still importing ends it quietly."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from planner import signals

# The tools beside this file, run by path, not imported here: two of them define flags of the
# same name (--checkpoint) and cannot share one process.
TOOLS = pathlib.Path(__file__).parent


def run_tool(tool, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, str(TOOLS / f"{tool}.py"), *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("tool, args, flag, owner", [
    ("gguf_export", ["--checkpoint=/nowhere", "--gguf_out=/tmp/x.gguf", "--gguf=/tmp/y.gguf"],
     "gguf", "tools.gguf_import"),
    ("gguf_export", ["--checkpoint=/nowhere", "--gguf_out=/tmp/x.gguf", "--overwrite"],
     "overwrite", "tools.gguf_import"),
    ("trace_compare", ["--named_trace=a=/nowhere.json", "--trace=/nowhere.json"],
     "trace", "tools.trace_report"),
    ("ncu_regions", ["--build=a=/nowhere.sass:/nowhere.csv", "--png=/tmp/x.png"],
     "png", "tools.trace_report"),
    ("smollm2_package", ["--out=/tmp/never.tpkg", "--hf_out=/tmp/h"], "hf_out", "tools.gguf_import"),
])
def test_a_flag_of_an_imported_tool_is_refused(tool, args, flag, owner):
    r = run_tool(tool, *args)
    assert r.returncode != 0, r.stdout
    assert f"--{flag} is a flag of {owner}, not of {tool}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_own_flags_still_work():
    # trace_compare's own error for a missing file: it got past the flag check.
    r = run_tool("trace_compare", "--named_trace=a=/nowhere.json")
    assert r.returncode != 0 and "is a flag of" not in r.stderr
    assert "/nowhere.json" in r.stderr, r.stderr


# A stand-in for absl, first on the path: it says that the tool has reached its third-party
# imports, then holds it there, so that the signal comes during the imports without racing them.
SLOW_ABSL = """import os, time
open(os.environ["TILEINFER_TEST_MARK"], "w").close()
time.sleep(60)
"""


@pytest.mark.parametrize("script", ["gguf_import.py", "smollm2_package.py", "../planner/main.py"])
def test_ctrl_c_during_the_imports_ends_quietly(tmp_path, script):
    """Ctrl-C before main() runs (the imports take ~0.3 s; nothing is written yet) ends the
    tool by SIGINT without a traceback; before, Python printed KeyboardInterrupt's."""
    fake = tmp_path / "slow" / "absl"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(SLOW_ABSL)
    mark = tmp_path / "importing"
    env = dict(os.environ, TILEINFER_TEST_MARK=str(mark),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "slow")] + [p for p in sys.path if p]))
    proc = subprocess.Popen([sys.executable, str(TOOLS / script), "--help"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 60
    while not mark.exists():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail(f"{script} never reached its absl import: {proc.communicate()[1]}")
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_install_puts_the_keyboard_interrupt_handler_back():
    """After the quiet start, main()'s signals.install() makes Ctrl-C raise KeyboardInterrupt
    again, so that the writers' cleanup runs; any other SIGINT handler is left alone."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signals.install()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signals.install()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
