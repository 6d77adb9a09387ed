"""The public API through Python (host/api.h via the pybind11 module): text and chat
prompts, streaming, stop text, seeded sampling, exactly one BOS, errors as exceptions."""
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from host import _tileinfer
from planner import main as planner_main
from tests import forked
from tests.reference import tiny_models
from tools import gguf_import, smollm2


@pytest.fixture(scope="module")
def smol_pkg(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("smollm2")
    hf_dir = gguf_import.import_gguf(smollm2.gguf_path(), root / "hf")
    pkg = root / "smollm2.tpkg"
    planner_main.build_package(str(hf_dir), "h200", str(pkg), 512, progress=False)
    return str(pkg)


@pytest.fixture(scope="module")
def smol(smol_pkg):
    return _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads=2)


def test_chat_answers_and_stops_at_end_of_turn(smol):
    streamed = []
    r = smol.generate(chat=[{"role": "user", "content": "What is the capital of France?"}],
                      max_new_tokens=48, on_token=lambda i, piece: streamed.append(i))
    assert "Paris" in r["text"], r["text"]
    assert r["stopped"] and r["tokens"][-1] == 2  # <|im_end|>
    assert "<|im_end|>" not in r["text"]
    assert streamed == r["tokens"]
    # A second turn with the history: the engine keeps serving.
    chat = [{"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": r["text"]},
            {"role": "user", "content": "And of Italy?"}]
    assert "Rome" in smol.generate(chat=chat, max_new_tokens=48)["text"]


def test_chat_renders_the_model_template_with_a_system_message_anywhere(smol, smol_pkg):
    """The chat's prompt ids are those of SmolLM2's own Jinja template rendered by jinja2 (as
    Hugging Face renders it), also where a system message is not first (each message of that
    template opens with <|im_start|>)."""
    from planner import chat_template
    import pathlib
    cfg = json.loads((pathlib.Path(smol_pkg).parent / "hf" / "tokenizer_config.json").read_text())
    render = chat_template._render_fn(cfg["chat_template"], cfg["bos_token"], cfg["eos_token"])
    def m(role, content):
        return {"role": role, "content": content}
    for chat in ([m("user", "a"), m("system", "mid"), m("user", "c")],
                 [m("system", "first"), m("system", "second"), m("user", "c")],
                 [m("user", "2+2?"), m("assistant", "4"), m("system", "Be verbose."), m("user", "3+3?")],
                 [m("system", "Be brief."), m("user", "Hi")]):
        want = smol.encode(render(chat, add_generation_prompt=True))
        got = smol.generate(chat=chat, max_new_tokens=1, stop_at_eos=False)["prompt_ids"]
        assert got == want, (chat, smol.decode(got), smol.decode(want))


def test_a_request_keeps_the_kv_rows_its_prompt_shares_with_the_last_one(smol_pkg):
    """reuse_kv_cache (the default) runs only the prompt tokens whose K/V rows the engine's last
    request did not leave: a chat's next turn runs only that turn. The tokens are those of an
    engine that runs every position (a row depends only on the tokens up to it)."""
    engine = _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads=2)
    fresh = _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads=2)
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    r1 = engine.generate(chat=chat, max_new_tokens=12)
    assert r1["prompt_reused"] == 0 and r1["stopped"]  # a new engine holds no rows
    chat += [{"role": "assistant", "content": r1["text"]}, {"role": "user", "content": "And of Italy?"}]
    r2 = engine.generate(chat=chat, max_new_tokens=12)
    held = r1["prompt_ids"] + r1["tokens"][:-1]  # the last new token (<|im_end|>) never ran
    assert r2["prompt_reused"] == len(held) and r2["prompt_ids"][:len(held)] == held
    want = fresh.generate(chat=chat, max_new_tokens=12, reuse_kv_cache=False)
    assert want["prompt_reused"] == 0 and want["prompt_ids"] == r2["prompt_ids"]
    assert r2["tokens"] == want["tokens"] and "Rome" in want["text"]
    # The same prompt again: only its last position runs (for its logits).
    again = engine.generate(chat=chat, max_new_tokens=12)
    assert again["prompt_reused"] == len(r2["prompt_ids"]) - 1 and again["tokens"] == want["tokens"]
    assert engine.generate(chat=chat, max_new_tokens=12, reuse_kv_cache=False)["prompt_reused"] == 0
    # A prompt that leaves the last one mid-way keeps the rows before the first other token only.
    france, spain = engine.encode("The capital of France is"), engine.encode("The capital of Spain is")
    first_other = next(i for i, (a, b) in enumerate(zip(france, spain)) if a != b)
    assert first_other > 0
    for ids in (france, spain):
        r = engine.generate(prompt_ids=ids, max_new_tokens=6, stop_at_eos=False)
        assert r["tokens"] == fresh.generate(prompt_ids=ids, max_new_tokens=6, stop_at_eos=False,
                                             reuse_kv_cache=False)["tokens"]
    assert r["prompt_reused"] == first_other  # Spain's prompt after France's


def test_after_an_error_the_next_request_runs_every_position(tmp_path):
    """A residual out of the FIXED64 range (token 2's embedding row) makes the request's later
    logits non-finite until position 0 runs again: a next request that shares the failed one's
    first token must run it again rather than keep its row."""
    ckpt = tmp_path / "big"
    tiny_models.write_residual_overflow_checkpoint(ckpt)
    pkg = tmp_path / "big.tpkg"
    planner_main.build_package(str(ckpt), "h200", str(pkg), 16, progress=False)
    engine = _tileinfer.Engine(str(pkg), device="cpu", cpu_threads=2)
    with pytest.raises(RuntimeError, match="non-finite logit at position 2"):
        engine.generate(prompt_ids=[1, 2, 3], max_new_tokens=4, stop_at_eos=False)
    r = engine.generate(prompt_ids=[1, 5, 6], max_new_tokens=1, stop_at_eos=False)
    assert r["prompt_reused"] == 0 and 0 <= r["tokens"][0] < 60
    # Without an error in between, the same pair of requests keeps the shared row.
    assert engine.generate(prompt_ids=[1, 5, 7], max_new_tokens=1, stop_at_eos=False)["prompt_reused"] == 2


def test_a_refused_request_keeps_the_kv_rows(smol):
    """A request refused before it runs (too long, no new tokens, a bad temperature, an id outside
    the vocabulary, two prompt kinds) changes nothing: the next request keeps the rows the last
    one that ran left."""
    ids = smol.encode("The capital of France is")
    first = smol.generate(prompt_ids=ids, max_new_tokens=4, stop_at_eos=False)
    refusals = [dict(max_new_tokens=600), dict(max_new_tokens=0), dict(temperature=-1.0),
                dict(prompt_ids=ids[:-1] + [10 ** 6]), dict(prompt="x")]
    for refused in refusals:
        kwargs = dict(dict(prompt_ids=ids, max_new_tokens=4), **refused)
        with pytest.raises((RuntimeError, ValueError)):
            smol.generate(**kwargs)
        again = smol.generate(prompt_ids=ids, max_new_tokens=4, stop_at_eos=False)
        assert again["prompt_reused"] == len(ids) - 1, refused  # all but the last, which runs for its logits
        assert again["tokens"] == first["tokens"]


def test_text_prompt_equals_ids_prompt(smol):
    text = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    ids = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
    assert smol.encode(text) == ids
    a = smol.generate(prompt=text, max_new_tokens=16)
    b = smol.generate(prompt_ids=ids, max_new_tokens=16)
    assert a["prompt_ids"] == ids and a["tokens"] == b["tokens"]
    assert a["text"] == "The capital of France is Paris."


def test_stop_text_and_callback_stop(smol):
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    r = smol.generate(chat=chat, max_new_tokens=48, stop="France")
    assert r["stopped"] and r["text"].endswith("France")
    r = smol.generate(chat=chat, max_new_tokens=48, on_token=lambda i, p: False)
    assert len(r["tokens"]) == 1
    assert not r["stopped"]  # "stopped": by an end-of-turn token or the stop text only
    r = smol.generate(chat=chat, max_new_tokens=3, stop_at_eos=False)
    assert len(r["tokens"]) == 3 and not r["stopped"]  # the token budget ran out


def test_seeded_sampling_is_reproducible(smol):
    prompt = "Once upon a time"
    runs = [smol.generate(prompt=prompt, max_new_tokens=20, temperature=1.0, top_p=0.95, seed=s,
                          stop_at_eos=False)["tokens"] for s in (7, 7, 8, 9)]
    assert runs[0] == runs[1]
    assert runs[2] != runs[0] or runs[3] != runs[0]
    greedy = smol.generate(prompt=prompt, max_new_tokens=20, stop_at_eos=False)["tokens"]
    zero = smol.generate(prompt=prompt, max_new_tokens=20, temperature=0.0, seed=5,
                         stop_at_eos=False)["tokens"]
    assert greedy == zero


def test_errors_are_exceptions_and_the_engine_goes_on(smol):
    with pytest.raises(RuntimeError, match="exactly one of"):
        smol.generate(prompt="a", prompt_ids=[1])
    with pytest.raises(RuntimeError, match="the prompt is empty"):
        smol.generate(prompt="")
    with pytest.raises(RuntimeError, match="top_p"):
        smol.generate(prompt="a", temperature=1.0, top_p=0.0)
    # Values with the digits that show why they are refused (six decimals printed 1.000000).
    with pytest.raises(RuntimeError, match=r"top_p must be in \(0, 1\] .*not 1\.00000012"):
        smol.generate(prompt="a", temperature=1.0, top_p=1.0000001)
    with pytest.raises(RuntimeError, match=r"not -9\.99999972e-10"):
        smol.generate(prompt="a", temperature=-1e-9)
    with pytest.raises(RuntimeError, match=r"temperature=1e\+308 is beyond a float's range"):
        smol.generate(prompt="a", temperature=1e308)
    with pytest.raises(TypeError, match=r"on_token must return True .*not 1 \(int\)"):
        smol.generate(prompt="a", max_new_tokens=2, on_token=lambda i, p: 1)
    assert (smol.vocab_size, smol.max_context) == (49152, 512)  # SmolLM2's vocabulary, the planned context
    with pytest.raises(RuntimeError, match="max context"):
        smol.generate(prompt="a", max_new_tokens=600)
    with pytest.raises(RuntimeError, match="not one of system, user, assistant"):
        smol.generate(chat=[{"role": "tool", "content": "x"}])
    assert smol.generate(prompt="Hello", max_new_tokens=2)["tokens"]
    with pytest.raises(RuntimeError, match="cannot open package"):
        _tileinfer.Engine("/nonexistent.tpkg")


def test_a_callback_that_raises_stops_the_request_with_its_own_exception(smol):
    class Mine(Exception):
        pass

    for exc in (Mine, KeyboardInterrupt):
        def raising(i, piece, exc=exc):
            raise exc("from the callback")
        with pytest.raises(exc, match="from the callback"):
            smol.generate(prompt="Hello", max_new_tokens=4, on_token=raising)
    with pytest.raises(TypeError, match=r"on_token must return True .* not 'no' \(str\)"):
        smol.generate(prompt="Hello", max_new_tokens=4, on_token=lambda i, p: "no")
    with pytest.raises(TypeError, match=r"on_token must be callable as on_token\(id, piece\), not 5 \(int\)"):
        smol.generate(prompt="Hello", max_new_tokens=4, on_token=5)
    assert smol.generate(prompt="Hello", max_new_tokens=2)["tokens"]  # still serving


def _in_forked_child(child, what: str, seconds: float = 60) -> str:
    """Runs child() -> str in a fork()ed child and returns its text; fails the test if the child
    does not end within `seconds` (a hang) or dies before writing."""
    text = forked.run_in_forked_child(child, seconds)
    if text is None:
        pytest.fail(f"{what} in a forked child hung")
    return text


def test_a_forked_child_gets_an_error_not_a_hang(smol):
    """The engine's CPU threads do not survive fork(): a child's generate used to wait forever."""
    smol.generate(prompt="Hello", max_new_tokens=2)  # the executor's threads have started

    def child():
        try:
            smol.generate(prompt="Hello", max_new_tokens=2)
            return "no error"
        except RuntimeError as e:
            return str(e)

    message = _in_forked_child(child, "generate")
    assert "cannot serve another process, such as a fork()ed child" in message, message
    assert smol.generate(prompt="Hello", max_new_tokens=2)["tokens"]  # the parent's engine still serves


def test_a_forked_child_drops_the_inherited_engine_and_opens_its_own(smol_pkg):
    """What the README tells a child to do: dropping the parent's engine there used to hang in
    the CPU executor's destructor (its condition variables held the parent's waiters)."""
    engine = _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads=2)
    want = engine.generate(prompt="Hello", max_new_tokens=3)["tokens"]  # its threads wait now
    session = _tileinfer.CpuSession(smol_pkg, 2)
    session.step(1, 0, False)

    def child():
        nonlocal engine, session
        try:
            session.step(2, 1, False)
            stepped = "no error"
        except RuntimeError as e:
            stepped = str(e)
        engine = None  # the inherited engine's destructor runs here
        session = None
        own = _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads=2)
        return json.dumps({"step": stepped, "tokens": own.generate(prompt="Hello", max_new_tokens=3)["tokens"]})

    got = json.loads(_in_forked_child(child, "dropping the inherited engine or session"))
    assert "cannot run in another, such as a fork()ed child" in got["step"], got
    assert got["tokens"] == want
    assert engine.generate(prompt="Hello", max_new_tokens=3)["tokens"] == want  # the parent's still serves
    session.step(2, 1, True)


def test_interpreter_exit_during_a_streamed_request_is_clean(tmp_path):
    """A daemon thread generating with on_token while the interpreter exits: it used to abort
    (SIGABRT, 'terminate called without an active exception') as it took the GIL back."""
    pkg = tmp_path / "tiny.tpkg"
    tiny_models.write_tiny_checkpoint(tmp_path / "ckpt", hidden=256, ffn=512, layers=4, heads=4, kv_heads=2,
                                      vocab=120, seed=5)
    planner_main.build_package(str(tmp_path / "ckpt"), "h200", str(pkg), 1024, progress=False)
    script = (
        "import threading, time\n"
        "from host import _tileinfer\n"
        f"e = _tileinfer.Engine({str(pkg)!r}, device='cpu')\n"
        "started = threading.Event()\n"
        "def run():\n"
        "    e.generate(prompt_ids=[1, 5, 6], max_new_tokens=1000, stop_at_eos=False,\n"
        "               on_token=lambda i, p: started.set())\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "started.wait(30)\n"
        "print('main exits')\n")
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        assert p.returncode == 0 and "main exits" in p.stdout, (p.returncode, p.stderr[-500:])


def test_one_request_at_a_time_per_engine(smol):
    ref = smol.generate(prompt="Once upon a time", max_new_tokens=6, stop_at_eos=False)["tokens"]

    def reenter(i, piece):
        smol.generate(prompt="The capital of France is", max_new_tokens=2)
        return True

    with pytest.raises(RuntimeError, match="this engine is already generating"):
        smol.generate(prompt="Once upon a time", max_new_tokens=6, stop_at_eos=False, on_token=reenter)
    # Two threads on one engine: each gets the right tokens or the busy error, never a mix.
    results, errors = [], []

    def worker():
        try:
            results.append(smol.generate(prompt="Once upon a time", max_new_tokens=6, stop_at_eos=False,
                                         on_token=lambda i, p: time.sleep(0.005) is None)["tokens"])
        except RuntimeError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == ref for r in results), (results, ref)
    assert all("already generating" in e for e in errors) and len(results) + len(errors) == 2
    assert errors, "both requests ran one after the other: the test did not overlap them"


@pytest.mark.parametrize("kwargs, needle", [
    (dict(prompt_ids="1,2,3"), "prompt_ids must be a list of int token ids"),
    (dict(prompt_ids={1, 2}), "prompt_ids must be a list of int token ids"),
    (dict(prompt_ids=[1.5]), r"prompt_ids\[0\] must be an int, not 1\.5 \(float\)"),
    (dict(prompt_ids=[1, True]), r"prompt_ids\[1\] must be an int, not True \(bool\)"),
    (dict(prompt_ids=b"\x01"), r"prompt_ids must be a list of int token ids, e\.g\. \[1, 504\], not b'\\x01'"),
    (dict(chat="hello"), "chat must be a list of"),
    (dict(chat=[("user", "hi")]), "each chat message must be a dict with 'role' and 'content'"),
    (dict(chat=[{"role": "user"}]), "each chat message must be a dict with 'role' and 'content'"),
    (dict(chat=[{"role": "user", "content": 5}]), "a chat message's content must be a str"),
    (dict(prompt_ids=[1], temperature=True), r"temperature must be a float \(or an int\), not True \(bool\)"),
    (dict(prompt_ids=[1], top_p=np.True_), r"top_p must be a float \(or an int\), not"),
    (dict(prompt_ids=[1], temperature="0.5"), r"temperature must be a float \(or an int\), not '0\.5'"),
    (dict(prompt_ids=[1], top_p=None), r"top_p must be a float \(or an int\), not None"),
    (dict(prompt_ids=[1], temperature=np.array([0.5, 0.7])), r"temperature must be a float \(or an int\)"),
])
def test_argument_types_are_named(smol, kwargs, needle):
    with pytest.raises(TypeError, match=needle):
        smol.generate(max_new_tokens=2, **kwargs)


def test_sampling_numbers_may_be_ints_and_numpy_scalars(smol):
    want = smol.generate(prompt_ids=[1, 2], max_new_tokens=3, temperature=1.0, top_p=1.0, seed=3)["tokens"]
    for t, p in ((1, 1), (np.float32(1.0), np.float64(1.0)), (np.int64(1), np.int8(1))):
        assert smol.generate(prompt_ids=[1, 2], max_new_tokens=3, temperature=t, top_p=p, seed=3)["tokens"] == want


def test_package_paths_may_be_path_like(smol, smol_pkg):
    import pathlib
    path = pathlib.Path(smol_pkg)
    e = _tileinfer.Engine(path, device="cpu", cpu_threads=1)
    assert e.generate(prompt_ids=[1, 504], max_new_tokens=2)["tokens"] == \
        smol.generate(prompt_ids=[1, 504], max_new_tokens=2)["tokens"]
    assert _tileinfer.Tokenizer(path).encode("Hello") == smol.encode("Hello")
    assert _tileinfer.CpuSession(path, threads=1) is not None
    bytes_path_like = type("BytesPath", (), {"__fspath__": lambda self: os.fsencode(smol_pkg)})()
    assert _tileinfer.Tokenizer(bytes_path_like).vocab_size == smol.vocab_size
    for bad in (None, 5):
        with pytest.raises(TypeError, match="path must be a str, bytes or an os.PathLike such as pathlib.Path, not "):
            _tileinfer.Engine(bad, device="cpu")
    with pytest.raises(TypeError, match=r"__fspath__\(\) to return str or bytes, not int"):  # os.fspath's own
        _tileinfer.Engine(type("NotAPath", (), {"__fspath__": lambda self: 5})(), device="cpu")


def test_flags_take_only_true_or_false(smol, smol_pkg):
    """pybind11's converting bool reads None and 0 as False: check_target=None would turn the
    target check off without a word. True and False (numpy's too) are taken."""
    for value, shown in ((None, r"None \(NoneType\)"), (0, r"0 \(int\)"), ("no", r"'no' \(str\)")):
        with pytest.raises(TypeError, match=r"stop_at_eos must be True or False, not " + shown):
            smol.generate(prompt_ids=[1], max_new_tokens=2, stop_at_eos=value)
    with pytest.raises(TypeError, match=r"check_target must be True or False, not None \(NoneType\)"):
        _tileinfer.Engine(smol_pkg, device="cpu", check_target=None)
    assert _tileinfer.Engine(smol_pkg, device="cpu", check_target=False).vocab_size == smol.vocab_size
    assert smol.generate(prompt_ids=[1], max_new_tokens=2, stop_at_eos=np.False_)["tokens"]
    session, tokenizer = _tileinfer.CpuSession(smol_pkg, 1), _tileinfer.Tokenizer(smol_pkg)
    with pytest.raises(TypeError):
        session.step(1, 0, None)
    with pytest.raises(TypeError):
        tokenizer.encode("x", None)
    session.step(1, 0, np.True_)
    # on_token's answer follows the same rule: numpy's False stops, 0 is refused.
    streamed = []
    r = smol.generate(prompt="Hello", max_new_tokens=8, stop_at_eos=False,
                      on_token=lambda i, p: streamed.append(i) or np.False_)
    assert not r["stopped"] and len(r["tokens"]) == len(streamed) == 1, r  # stopped by the callback
    with pytest.raises(TypeError, match=r"on_token must return True .*not 0 \(int\)"):
        smol.generate(prompt="Hello", max_new_tokens=4, on_token=lambda i, p: 0)


def test_text_arguments_take_str_not_bytes(smol, smol_pkg):
    """pybind11's std::string takes bytes as they are; text arguments take only str (bytes are
    another value: HF tokenizers refuses them too). Paths may still be bytes, as os paths."""
    tokenizer, session = _tileinfer.Tokenizer(smol_pkg), _tileinfer.CpuSession(smol_pkg, 1)
    calls = [(lambda: smol.generate(prompt=b"Hello", max_new_tokens=2), "prompt"),
             (lambda: smol.generate(prompt="a", stop=b"x", max_new_tokens=2), "stop"),
             (lambda: smol.generate(chat=[{"role": b"user", "content": "hi"}]), "a chat message's role"),
             (lambda: smol.encode(b"Hello"), "text"),
             (lambda: session.encode(b"Hello"), "text"),
             (lambda: tokenizer.encode(b"Hello"), "text"),
             (lambda: _tileinfer.Tokenizer.from_json(b"{}"), "section"),
             (lambda: _tileinfer.Engine(smol_pkg, device=b"cpu"), "device")]
    for call, what in calls:
        with pytest.raises(TypeError, match=what + r" must be a str, not b'[^']*' \(bytes\); decode bytes first"):
            call()
    assert _tileinfer.Tokenizer(os.fsencode(smol_pkg)).vocab_size == smol.vocab_size
    # A lone surrogate is not text either (pybind11 said only "Unable to cast").
    with pytest.raises(ValueError, match=r"prompt holds a surrogate code point \(U\+D800 at index 2\), which "
                                         r"UTF-8 cannot encode"):
        smol.generate(prompt="ab\ud800c", max_new_tokens=2)
    with pytest.raises(ValueError, match=r"text holds a surrogate code point \(U\+DFFF at index 0\)"):
        tokenizer.encode("\udfff")


def test_integer_arguments_name_their_range(smol, smol_pkg):
    """An int out of the C++ type's range, or a value that is not an int, names the argument
    (pybind11's own error listed the signatures only); numpy's integers are ints."""
    session = _tileinfer.CpuSession(smol_pkg, 1)
    cases = [(lambda: smol.generate(prompt="a", max_new_tokens=2**40), ValueError,
              r"max_new_tokens = 1099511627776 does not fit a 32-bit int \(-2147483648\.\.2147483647\)"),
             (lambda: smol.generate(prompt="a", seed=-1), ValueError,
              r"seed = -1 does not fit a 64-bit unsigned int \(0\.\.18446744073709551615\)"),
             (lambda: smol.generate(prompt="a", top_k=2.0), TypeError, r"top_k must be an int, not 2\.0 \(float\)"),
             (lambda: smol.generate(prompt="a", max_new_tokens=True), TypeError,
              r"max_new_tokens must be an int, not True \(bool\)"),
             (lambda: session.step(1, 2**32), ValueError, r"pos = 4294967296 does not fit a 32-bit int"),
             (lambda: session.generate([1, "2"], 2), TypeError, r"prompt\[1\] must be an int, not '2' \(str\)"),
             (lambda: smol.decode([1, -2**63 - 1]), ValueError, r"ids\[1\] = -9223372036854775809 does not fit a 32-bit int"),
             (lambda: smol.decode("12"), TypeError, r"ids must be a list of int token ids, e\.g\. \[1, 504\], not '12'"),
             (lambda: _tileinfer.Engine(smol_pkg, device="cpu", cpu_threads="2"), TypeError,
              r"cpu_threads must be an int, not '2' \(str\)")]
    for call, error, needle in cases:
        with pytest.raises(error, match=needle):
            call()
    assert smol.generate(prompt="Hello", max_new_tokens=np.int64(2), seed=np.uint64(5))["tokens"]
    assert session.decode((np.int32(1), 2)) == smol.decode([1, 2]) == smol.decode(np.array([1, 2]))
    assert smol.decode(i for i in (1, 2)) == smol.decode(map(int, "1 2".split())) == smol.decode([1, 2])
    assert smol.generate(prompt_ids=(i for i in [1]), max_new_tokens=2)["prompt_ids"] == [1]
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int, not array\(\[1, 2\]\) \(ndarray\)"):
        smol.decode(np.array([[1, 2]]))
    with pytest.raises(ValueError, match=r"prompt_ids\[0\] = 2147483648 does not fit a 32-bit int"):
        smol.generate(prompt_ids=[2**31], max_new_tokens=2)
    with pytest.raises(TypeError, match=r"ids must be a list of int token ids, e\.g\. \[1, 504\], not b'\\x01'"):
        smol.decode(b"\x01")


@pytest.mark.parametrize("name", ["Engine", "CpuSession", "Tokenizer"])
def test_new_without_init_is_refused_not_a_crash(name):
    """pybind11 lets cls.__new__(cls) make an object whose C++ part was never constructed; a
    method of it segfaulted. It is refused now."""
    cls = getattr(_tileinfer, name)
    with pytest.raises(TypeError, match=name + r"\(\) takes its constructor's arguments"):
        cls.__new__(cls)


@pytest.mark.parametrize("name", ["Engine", "CpuSession", "Tokenizer"])
def test_the_classes_cannot_be_subclassed(name):
    """A subclass's __new__ would be pybind11's, which leaves the C++ part unconstructed."""
    with pytest.raises(TypeError):
        type("Sub", (getattr(_tileinfer, name),), {})


@pytest.mark.parametrize("name", ["Engine", "CpuSession", "Tokenizer"])
def test_new_with_arguments_constructs_or_raises(name, smol_pkg):
    """cls.__new__(cls, path) left an unconstructed object whose methods segfaulted (Engine,
    CpuSession) or read zeroed memory (Tokenizer: a vocabulary of 0). It constructs now, once:
    a bad path raises the constructor's error, a good one gives a working object. In a child
    process, so that a regression is a failed test, not a crashed run."""
    code = ("import sys; from host import _tileinfer as t\n"
            f"cls = t.{name}\n"
            "try:\n"
            "    cls.__new__(cls, '/nonexistent.tpkg')\n"
            "except RuntimeError as e:\n"
            "    print('refused:', e)\n"
            "obj = cls.__new__(cls, sys.argv[1])\n"
            "print('vocab', obj.vocab_size, obj.decode([504]) == cls(sys.argv[1]).decode([504]))\n")
    run = subprocess.run([sys.executable, "-c", code, smol_pkg], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr)
    assert "refused: /nonexistent.tpkg: cannot open package" in run.stdout, run.stdout
    assert "vocab 49152 True" in run.stdout, run.stdout


def test_signatures_name_the_types():
    """help() shows what each argument takes, not `object`."""
    init, generate = _tileinfer.Engine.__init__.__doc__, _tileinfer.Engine.generate.__doc__
    assert "check_target: bool = True" in init, init
    for name, default in (("temperature", "0.0"), ("top_p", "1.0")):  # pybind11 3 says typing.SupportsFloat
        assert re.search(rf"{name}: (float|typing\.SupportsFloat) = {default}", generate), generate
    for needle in ("prompt: str | None", "chat: list[dict[str, str]] | None", "stop_at_eos: bool = True",
                   "reuse_kv_cache: bool = True",
                   "on_token: collections.abc.Callable[", "bool | None] | None = None"):
        assert needle in generate, (needle, generate)


def test_device_auto_says_no_gpu_once_a_process(smol_pkg):
    """Without a GPU, device="auto" says so on stderr once, however many engines a process opens."""
    code = ("import sys; from host import _tileinfer as t\n"
            "for _ in range(3): t.Engine(sys.argv[1], device='auto', cpu_threads=1)\n"
            "print(t.gpu_count())")
    run = subprocess.run([sys.executable, "-c", code, smol_pkg], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stderr
    said = run.stderr.count("No usable GPU")
    assert said == (1 if run.stdout.split()[-1] == "0" else 0), run.stderr


def test_exactly_one_bos(tmp_path):
    """A tokenizer that adds BOS and a template that writes it: one BOS, never two."""
    ckpt = tmp_path / "bos"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2,
                                      vocab=120, seed=2)
    cfg = json.loads((ckpt / "tokenizer_config.json").read_text())
    cfg.update(add_bos_token=True, bos_token="<|endoftext|>",
               chat_template="{{ bos_token }}" + tiny_models.CHAT_TEMPLATE)
    (ckpt / "tokenizer_config.json").write_text(json.dumps(cfg))
    model_cfg = json.loads((ckpt / "config.json").read_text())
    model_cfg["bos_token_id"] = 0
    (ckpt / "config.json").write_text(json.dumps(model_cfg))
    gen_cfg = json.loads((ckpt / "generation_config.json").read_text())
    gen_cfg["bos_token_id"] = 0
    (ckpt / "generation_config.json").write_text(json.dumps(gen_cfg))
    pkg = tmp_path / "bos.tpkg"
    planner_main.build_package(str(ckpt), "h200", str(pkg), 64, progress=False)
    e = _tileinfer.Engine(str(pkg), device="cpu", cpu_threads=1)
    for kwargs in (dict(chat=[{"role": "user", "content": "hi"}]), dict(prompt="hi"),
                   dict(prompt="<|endoftext|>hi")):
        ids = e.generate(max_new_tokens=1, stop_at_eos=False, **kwargs)["prompt_ids"]
        assert ids[0] == 0 and ids.count(0) == 1, (kwargs, ids)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
