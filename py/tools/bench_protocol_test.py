"""The benchmark servers' line protocol, and llama.cpp's server on a stand-in llama-bench."""
import io
import json
import os
import stat
import sys

import pytest

from tools import bench_protocol, llamacpp_bench


def run(answer, commands):
    out = io.StringIO()
    bench_protocol.serve("r", answer, inp=io.StringIO(commands), out=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve_answers_each_command_and_reports_errors():
    def answer(parts):
        if parts[0] == "echo":
            return {"words": parts[1:]}
        if parts[0] == "boom":
            raise RuntimeError("it broke")
        raise bench_protocol.unknown(parts)

    lines = run(answer, "echo a b\n\n   \nboom\nwhat 1\necho c\nquit\necho never\n")
    assert lines[0] == {"ready": True, "runtime": "r"}
    assert lines[1] == {"words": ["a", "b"]}
    assert lines[2] == {"error": "it broke"}
    assert "unknown command 'what 1'" in lines[3]["error"]
    assert lines[4] == {"words": ["c"]}
    assert len(lines) == 5  # nothing after quit, nothing for blank lines


def test_serve_ends_at_end_of_input():
    assert run(lambda parts: {"ok": 1}, "x\n") == [{"ready": True, "runtime": "r"}, {"ok": 1}]


@pytest.fixture
def fake_llama_bench(tmp_path):
    """A llama-bench stand-in: echoes its -n, -d and -r as one JSON result with -r samples of
    (1 + d) ms per generated token, or fails when -d is 999."""
    path = tmp_path / "llama-bench"
    path.write_text(f"""#!{sys.executable}
import json, sys
a = sys.argv
n, d, r = (int(a[a.index(f) + 1]) for f in ("-n", "-d", "-r"))
if d == 999:
    sys.exit("no memory")
print(json.dumps([{{"n_gen": n, "n_depth": d, "samples_ns": [n * (1 + d) * 1e6] * r}}]))
""")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    llamacpp_bench.FLAGS.mark_as_parsed()
    llamacpp_bench.FLAGS.llama_bench, llamacpp_bench.FLAGS.gguf = str(path), "m.gguf"
    return path


def test_llamacpp_server_windows_and_errors(fake_llama_bench):
    lines = run(llamacpp_bench.answer, "context 1 2\ncontext 40 1\ngenerate 8\ncontext 1015 1\nkernels\n")
    assert lines[1] == {"context": 1, "window": [1, 16], "ms_per_token": [1.0, 1.0]}
    assert lines[2] == {"context": 40, "window": [25, 40], "ms_per_token": [25.0]}  # depth 24
    prompt = len(llamacpp_bench.FLAGS.prompt_ids)
    assert lines[3]["tokens"] is None and lines[3]["ms_per_token"] == pytest.approx(1 + prompt)
    assert "llama-bench exited 1" in lines[4]["error"] and "no memory" in lines[4]["error"]
    assert lines[5] == {"kernels": None}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
