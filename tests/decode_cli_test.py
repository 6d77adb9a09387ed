"""The decode command line (host/decode.cc) on a tiny package: a normal run's lines, and bad
options refused with a clear error on stderr, nothing dangling on stdout."""
import json
import os
import subprocess
import sys

import pytest

from planner import main as planner_main
from tests.reference import tiny_models


GOLDEN = "tests/golden/tiny_9x3.tpkg"  # a package whose tokenizer has no token for "\n"


def decode_binary():
    """host/decode in the test's runfiles (bazel test), else in bazel-bin (plain pytest)."""
    for path in ("host/decode", "bazel-bin/host/decode"):
        if os.access(path, os.X_OK):
            return path
    pytest.fail("host/decode not found: run under bazel test, or bazel build //host:decode first")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode_cli")
    tiny_models.write_tiny_checkpoint(root / "ckpt", hidden=64, ffn=96, layers=1, heads=4,
                                      kv_heads=2, vocab=120, seed=5)
    pkg = root / "tiny.tpkg"
    planner_main.build_package(str(root / "ckpt"), "h200", str(pkg), 64, progress=False)
    return pkg


def run(package, *flags, stdin=None):
    p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", *flags],
                       capture_output=True, text=True, timeout=120, input=stdin)
    return p.returncode, p.stdout, p.stderr


def test_a_non_finite_logit_after_streamed_tokens_counts_them_and_ends_the_output_line(tmp_path):
    """Token 2 of this checkpoint puts the residual out of range, so a generation that emits it
    (and feeds it on: --ignore_eos) stops at the next logits. The error used to say that no
    token was emitted, on the output line's end."""
    tiny_models.write_residual_overflow_checkpoint(tmp_path / "ckpt")
    pkg = tmp_path / "overflow.tpkg"
    planner_main.build_package(str(tmp_path / "ckpt"), "h200", str(pkg), 64, progress=False)
    for first in range(3, 60):  # a one-token prompt whose greedy continuation reaches token 2
        rc, out, err = run(pkg, f"--prompt_ids={first}", "--max_new_tokens=12", "--ignore_eos")
        if rc == 1 and "\noutput: " in out:
            break
    else:
        pytest.fail("no one-token prompt of the overflow checkpoint emits token 2 within 12 tokens")
    message = err.splitlines()[-1]
    pos = int(message.split("non-finite logit at position ")[1].split(":")[0])
    # A one-token prompt: the logits at position p follow p emitted tokens.
    assert f"the request stopped after {pos} token{' was' if pos == 1 else 's were'} emitted, with none " \
           "for this position" in message, message
    assert out.endswith("\n") and not out.splitlines()[-1].startswith("ids:"), repr(out)


@pytest.mark.parametrize("ids", [" 3, 7 ,11", "3,\t7,\n11\n"])
def test_blanks_around_prompt_ids_are_fine(package, ids):
    rc, out, err = run(package, f"--prompt_ids={ids}", "--max_new_tokens=2", "--ignore_eos")
    assert rc == 0 and out.splitlines()[-1].startswith("prompt: 3 tokens"), err


def test_a_run_prints_prompt_output_ids_and_times(package):
    rc, out, err = run(package, "--prompt_ids=3,7,11", "--max_new_tokens=4", "--ignore_eos")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("prompt: ") and lines[1].startswith("output: ")
    ids = lines[2].removeprefix("ids: ").split(",")
    assert lines[2].startswith("ids: ") and len(ids) == 4 and all(i.isdigit() for i in ids)
    assert lines[3].startswith("prompt: 3 tokens in ") and "decode: 3 tokens in " in lines[3]


@pytest.mark.parametrize("flag, message", [
    ("--max_new_tokens=0", "max_new_tokens must be at least 1"),
    ("--top_p=1.5", "top_p must be in (0, 1]"),
    ("--temperature=-1", "temperature must be a finite number >= 0"),
    ("--temperature=1e308", "--temperature=1e+308 is beyond a float's range"),
    ("--top_p=-1e39", "--top_p=-1e+39 is beyond a float's range"),
    ("--temperature=1e-50", "--temperature=1e-50 is too small for a float (it would be 0): give 0, or at least"),
    # top_p may not be 0, so its advice does not offer it.
    ("--top_p=1e-300", "--top_p=1e-300 is too small for a float (it would be 0): give at least 1.5e-45"),
    ("--max_new_tokens=62", "exceeds the package's max context"),  # refused inside Generate
])
def test_a_bad_request_option_leaves_no_dangling_output_line(package, flag, message):
    rc, out, err = run(package, "--prompt_ids=3,7,11", flag)
    assert rc != 0 and message in err, err
    assert "output:" not in out and message not in out


def test_sampler_flags_in_a_greedy_run_get_a_note_and_change_nothing(package):
    flags = ("--prompt_ids=3,7,11", "--max_new_tokens=4", "--ignore_eos")
    rc, greedy, err = run(package, *flags)
    assert rc == 0 and "note:" not in err, err
    rc, out, err = run(package, *flags, "--top_k=2", "--seed=9")
    assert rc == 0, err
    assert "note: --top_k, --seed only apply when sampling (--temperature > 0)" in err
    assert out.splitlines()[:3] == greedy.splitlines()[:3]  # the same prompt, text and ids
    rc, _, err = run(package, *flags, "--top_p=0.5")
    assert rc == 0 and "note: --top_p only applies when sampling" in err, err
    rc, _, err = run(package, *flags, "--temperature=0.7", "--top_k=2", "--seed=9")
    assert rc == 0 and "note:" not in err, err


@pytest.mark.parametrize("threads", ["-1", "1025", "2147483647"])
def test_cpu_threads_out_of_range_are_refused(package, threads):
    rc, out, err = run(package, "--prompt_ids=3", f"--threads={threads}")
    assert rc != 0 and f"--threads={threads}: give 0 (one per hardware thread) or 1 to 1024" in err, err
    assert "prompt:" not in out


def test_chat_from_an_unreadable_stdin_is_an_error_not_an_empty_chat(package, tmp_path):
    directory = os.open(tmp_path, os.O_RDONLY)  # opens; reading it fails (EISDIR)
    try:
        p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", "--chat"],
                           capture_output=True, text=True, timeout=120, stdin=directory)
    finally:
        os.close(directory)
    assert p.returncode == 1, p.stderr
    assert "error: cannot read the chat from stdin (Is a directory)" in p.stderr, p.stderr


def test_invalid_utf8_is_placed_in_what_the_user_typed(package):
    p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", "--chat", "--max_new_tokens=2",
                        "--ignore_eos"], capture_output=True, timeout=120, input=b"hi\xff\xfe\nhello\n\n")
    err = p.stderr.decode()
    assert p.returncode == 1 and "error: this line is not valid UTF-8 (its byte 2)" in err, err
    assert p.stdout.decode(errors="replace").count("prompt: ") == 1  # the next turn is answered
    p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", b"--prompt=ok\xff"],
                       capture_output=True, timeout=120)
    assert p.returncode != 0 and "--prompt is not valid UTF-8 (its byte 2)" in p.stderr.decode(), p.stderr
    p = subprocess.run([decode_binary(), f"--package={package}", "--device=cpu", "--chat", b"--system=\xff"],
                       capture_output=True, timeout=120, input=b"hi\n\n")
    assert p.returncode != 0 and "--system is not valid UTF-8 (its byte 0)" in p.stderr.decode(), p.stderr


def test_a_chat_goes_on_after_an_answer_that_is_not_utf8(tmp_path):
    """A sampled answer of byte tokens can be ill-formed UTF-8 (or end inside a character); the
    next turns re-encode the conversation, and used to fail on it for good ("text to encode is
    not valid UTF-8"). The answer now goes into the conversation with U+FFFD in their place."""
    tiny_models.write_tiny_checkpoint(tmp_path / "ckpt", hidden=64, ffn=96, layers=1, heads=4,
                                      kv_heads=2, vocab=300, seed=5)  # all 256 byte tokens
    pkg = tmp_path / "bytes.tpkg"
    planner_main.build_package(str(tmp_path / "ckpt"), "h200", str(pkg), 256, progress=False)
    for seed in range(200):  # a seed whose first answer is not UTF-8
        p = subprocess.run([decode_binary(), f"--package={pkg}", "--device=cpu", "--chat", "--max_new_tokens=6",
                            "--temperature=10", f"--seed={seed}"], capture_output=True, timeout=120,
                           input=b"hi\nhello\nthird\n")
        first_answer = p.stdout.split(b"prompt: ")[0]
        try:
            first_answer.decode("utf-8")
        except UnicodeDecodeError:
            break
    else:
        pytest.fail("no seed below 200 samples an ill-formed first answer")
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0 and "error" not in err, err
    assert p.stdout.count(b"\nprompt: ") + p.stdout.startswith(b"prompt: ") == 3, p.stdout  # three turns


def test_a_chat_answer_gets_the_room_left_and_a_full_context_ends_the_chat(package):
    """The package holds 64 positions: the first answer gets what its prompt leaves of 60, the
    next turn finds no room and ends the chat (every later turn would be longer still)."""
    rc, out, err = run(package, "--chat", "--max_new_tokens=60", "--ignore_eos", stdin="hi\nagain\nmore\n")
    timings = [line for line in out.splitlines() if line.startswith("prompt: ")]
    assert len(timings) == 1, out
    prompt = int(timings[0].split()[1])
    assert f"this answer gets at most {64 - prompt}" in err, err
    assert f"decode: {64 - prompt - 1} tokens" in timings[0], timings  # the first new token is the prompt's
    assert rc == 1 and "has filled the package's max context of 64: start a new chat" in err, err


def test_an_empty_system_flag_is_an_empty_system_message(package):
    """--system= puts an empty system block before the turn; without the flag there is none
    (the tiny model's template has no default one)."""
    counts = []
    for flags in ((), ("--system=",), ("--system=x",)):
        rc, out, err = run(package, "--chat", "--max_new_tokens=1", "--ignore_eos", *flags, stdin="hi\n\n")
        assert rc == 0, err
        counts.append(int(out.split("prompt: ")[1].split()[0]))
    assert counts[0] < counts[1] < counts[2], counts


def test_chat_with_piped_turns_shows_no_terminal_prompt(package):
    rc, out, err = run(package, "--chat", "--max_new_tokens=3", "--ignore_eos", stdin="hi\nand you?\n\n")
    assert rc == 0, err
    timings = [line for line in out.splitlines() if line.startswith("prompt: ")]
    assert len(timings) == 2, out  # one timing line a turn
    # The second turn keeps the first turn's K/V rows: its prompt less what it runs.
    first = int(timings[0].split()[1])
    assert "kept" not in timings[0] and f" tokens ({first + 2} kept in the K/V cache) in " in timings[1], out
    assert "> " not in err, err


def test_chat_refuses_bad_options_before_reading_and_fails_when_a_turn_fails(package):
    rc, out, err = run(package, "--chat", "--max_new_tokens=0", stdin="hi\n\n")
    assert rc != 0 and "max_new_tokens must be at least 1" in err and "Chat:" not in err, err
    # Text the tiny tokenizer has no token for (its bytes stop at 0x15): each turn fails, and so
    # does the command.
    rc, out, err = run(package, "--chat", "--max_new_tokens=3", stdin="h\u00e9\nh\u00e8\n\n")
    assert rc == 1 and err.count("has no token in this vocabulary") == 2, err
    assert "error: 2 turn(s) failed" in err and out == "", out  # no blank line a refused turn


def test_chat_takes_windows_line_ends_and_says_a_refused_turn_is_left_out(package):
    rc, out, err = run(package, "--chat", "--max_new_tokens=2", "--ignore_eos", stdin="hi\r\n\r\nnot read\n")
    assert rc == 0 and out.count("prompt: ") == 1, (out, err)  # "\r\n" alone is the empty line
    rc, out, err = run(package, "--chat", "--max_new_tokens=3", stdin="h\u00e9\n\n")
    assert rc == 1 and "(this turn is left out of the conversation)" in err, err


def test_a_failed_write_to_stdout_is_an_error():
    """A full disk must not give a cut-off output with exit status 0."""
    if not os.path.exists("/dev/full"):
        pytest.fail("this test needs /dev/full (Linux)")
    with open("/dev/full", "w") as full:
        p = subprocess.run([decode_binary(), f"--package={GOLDEN}", "--device=cpu", "--prompt_ids=3,4",
                            "--max_new_tokens=3"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 1 and "cannot write the output to stdout (No space left on device)" in p.stderr, p.stderr


def test_text_with_a_nul_byte_is_printed_whole(package):
    # The tiny tokenizer's byte symbols: ids 3-97 are bytes 32-126, then bytes 0, 1, ...: id 98 is NUL.
    rc, out, err = run(package, "--prompt_ids=4,98,5", "--max_new_tokens=1")
    assert rc == 0 and out.splitlines()[0] == "prompt: !\0\"", (out, err)


def test_a_chat_the_package_cannot_encode_fails_before_a_turn_is_read():
    rc, out, err = run(GOLDEN, "--chat", stdin="hi\n")  # its chat template has "\n"s
    assert rc == 1 and "byte 10 (0x0a) of the text has no token" in err and "Chat:" not in err, err
    # Nothing was typed yet: the message says so.
    assert "--chat cannot encode a conversation with this package (a first user turn \"hi\")" in err, err


@pytest.mark.parametrize("flags, message", [
    (["--prompt_ids=3,7,"], "'' is not an integer; give comma-separated integers, no empty items"),
    (["--prompt_ids=3,,7"], "'' is not an integer"),
    (["--prompt_ids=99999999999"], "'99999999999' is outside the range of a 32-bit int"),
    (["--prompt_ids=+3"], "'+3' is not an integer"),
    (["--prompt_ids=3 7"], "'3 7' is not an integer"),
    (["--prompt_ids=3", "--system=be brief"], "--system is for --chat only"),
])
def test_bad_prompt_flags_are_refused(package, flags, message):
    rc, out, err = run(package, *flags)
    assert rc != 0 and message in err, err


def plan(ckpt, out):
    planner_main.build_package(str(ckpt), "h200", str(out), 64, progress=False)
    return out


def test_a_package_without_a_tokenizer_takes_ids(tmp_path):
    ckpt = tmp_path / "ckpt"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2,
                                      vocab=120, seed=5)
    (ckpt / "tokenizer.json").unlink()
    pkg = plan(ckpt, tmp_path / "notok.tpkg")
    rc, out, err = run(pkg, "--prompt_ids=3,7", "--max_new_tokens=3", "--ignore_eos")
    assert rc == 0, err
    assert len(out.splitlines()[2].removeprefix("ids: ").split(",")) == 3, out
    rc, out, err = run(pkg, "--prompt=hi")
    assert rc != 0 and "this package has no tokenizer" in err and "token ids" in err, err
    rc, out, err = run(pkg, "--chat", stdin="hi\n")
    assert rc == 1 and "this package has no chat format" in err and "Chat:" not in err, err


def test_ids_beyond_the_tokenizer_but_inside_the_model_have_no_text(tmp_path):
    # A checkpoint whose embedding has 10 rows more than its tokenizer has ids (padding, as
    # many checkpoints do); those rows made large so that greedy decoding picks them.
    from safetensors.numpy import load_file, save_file
    ckpt = tmp_path / "ckpt"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2,
                                      vocab=130, seed=5, dtype="float32")
    tok_json, tok_cfg = tiny_models.tiny_tokenizer(120)
    (ckpt / "tokenizer.json").write_text(json.dumps(tok_json))
    (ckpt / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    tensors = load_file(str(ckpt / "model.safetensors"))
    tensors["model.embed_tokens.weight"][120:] *= 20
    save_file(tensors, str(ckpt / "model.safetensors"), metadata={"format": "pt"})
    pkg = plan(ckpt, tmp_path / "padded.tpkg")
    rc, out, err = run(pkg, "--prompt_ids=3,7", "--max_new_tokens=4", "--ignore_eos")
    assert rc == 0, err
    ids = [int(i) for i in out.splitlines()[2].removeprefix("ids: ").split(",")]
    assert any(i >= 120 for i in ids), ids  # the test's premise: a padded id was generated
    # The text is the tokenizer's decoding of the other ids alone (HF tokenizers, independent
    # of the runtime's tokenizer): a padded id adds nothing to it.
    import tokenizers
    want = tokenizers.Tokenizer.from_str(json.dumps(tok_json)).decode(
        [i for i in ids if i < 120], skip_special_tokens=False)
    assert out.splitlines()[1] == "output: " + want, (out, want)


def test_threads_that_cannot_start_are_an_error_not_a_hang(package):
    # 1,000 threads of 8 MB stacks do not fit 1.5 GB of address space: the executor must
    # say so (it used to hang, destroying a condition variable its started threads waited on).
    p = subprocess.run(["bash", "-c", 'ulimit -v 1500000; exec "$0" "$@"', decode_binary(),
                        f"--package={package}", "--device=cpu", "--prompt_ids=3", "--threads=1000"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "CPU executor: could only start" in p.stderr, p.stderr
    assert "of 1000 threads" in p.stderr and "give fewer threads" in p.stderr


def test_a_missing_package_says_how_to_make_one(tmp_path):
    rc, _, err = run(tmp_path / "nope.tpkg", "--prompt_ids=3")
    assert rc != 0 and "cannot open package" in err and "bazel run //py/planner" in err, err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_decode_flags_and_succeeds(flag):
    p = subprocess.run([decode_binary(), flag], capture_output=True, text=True, timeout=60)
    usage = p.stdout + p.stderr
    assert p.returncode == 0 and "--package=PATH" in usage and "max_new_tokens" in usage, usage
    assert "gflags.cc" not in usage, usage  # decode's own flags, not every library's


def test_a_prompt_of_dash_h_is_a_prompt(package):
    rc, out, err = run(package, "--prompt", "-h", "--max_new_tokens=1")
    assert rc == 0 and "--package=PATH" not in out + err, out + err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
