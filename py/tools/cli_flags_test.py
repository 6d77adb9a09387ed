"""Tools that import another tool's module refuse that module's flags (planner.cli
refuse_flags_of): gguf_export and smollm2_package take no gguf_import flag, trace_compare and
ncu_regions no trace_report flag; before, each accepted such a flag and ignored it."""
import os
import pathlib
import subprocess
import sys

import pytest

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
