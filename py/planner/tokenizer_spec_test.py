"""Tests for planner.tokenizer_spec: reading HF tokenizers, refusals, and the reference BPE."""

import copy
import json
import sys


import pytest

from planner.model_config import LlamaConfig
from planner.tokenizer_spec import GPT2_REGEX, TokenizerError, TokenizerSpec
from tests.reference import tiny_models

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?"
                r"[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def write(tmp_path, tok_json, tok_cfg):
    (tmp_path / "tokenizer.json").write_text(json.dumps(tok_json))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    return tmp_path


def config(vocab=300, eos=(7,)):
    return LlamaConfig(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=2,
                       num_kv_heads=1, head_dim=4, vocab_size=vocab, rms_norm_eps=1e-5,
                       rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=True,
                       max_position_embeddings=64, bos_token_id=1, eos_token_ids=eos)


def llama3_style(vocab_size=300):
    """The tiny tokenizer dressed as Llama 3: Split regex + ByteLevel, BOS template."""
    tok, cfg = tiny_models.tiny_tokenizer(vocab_size)
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}
    tok["model"]["ignore_merges"] = True
    tok["model"]["merges"] = [m.split(" ") for m in tok["model"]["merges"]]  # pair form
    tok["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [],
         "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1],
                                             "tokens": ["<|im_start|>"]}}}]}
    del cfg["add_bos_token"]
    cfg["chat_template"] = [{"name": "tool_use", "template": "T"},
                            {"name": "default", "template": "D"}]
    return tok, cfg


def test_tiny_tokenizer(tmp_path):
    write(tmp_path, *tiny_models.tiny_tokenizer(300))
    spec = TokenizerSpec.from_hf_dir(tmp_path, config(eos=(7, 2)))
    assert spec.kind == "byte_level_bpe"
    assert len(spec.vocab) == 300 and spec.vocab[:3] == list(tiny_models.SPECIAL_TOKENS)
    assert spec.vocab[3] == "Ġ" and spec.merges[0] == "Ġ e"
    assert spec.special_tokens == {0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>"}
    assert spec.added_tokens == {}
    assert spec.bos_id == 1 and spec.add_bos is False
    assert spec.eos_ids == (7, 2)  # config's first, then the tokenizer's eos_token
    assert spec.chat_template == tiny_models.CHAT_TEMPLATE
    assert spec.pre_tokenizer_regexes == (GPT2_REGEX,) and spec.ignore_merges is False
    assert TokenizerSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_llama3_style(tmp_path):
    write(tmp_path, *llama3_style())
    spec = TokenizerSpec.from_hf_dir(tmp_path)
    assert spec.add_bos is True and spec.bos_id == 1
    assert spec.pre_tokenizer_regexes == (LLAMA3_SPLIT,)  # ByteLevel without its own regex
    assert spec.ignore_merges is True
    assert spec.merges[0] == "Ġ e"
    assert spec.chat_template == "D"
    assert spec.eos_ids == (2,)


def test_digits_then_byte_level(tmp_path):
    tok, cfg = tiny_models.tiny_tokenizer(300)
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, tok["pre_tokenizer"]]}
    spec = TokenizerSpec.from_hf_dir(write(tmp_path, tok, cfg))
    assert spec.pre_tokenizer_regexes == (r"\p{N}", GPT2_REGEX)


def break_model_type(tok):
    tok["model"]["type"] = "Unigram"


def break_byte_fallback(tok):
    tok["model"]["byte_fallback"] = True


def break_metaspace(tok):
    tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁"}


def break_normalizer(tok):
    tok["normalizer"] = {"type": "NFC"}


def break_gap(tok):
    tok["model"]["vocab"].pop("Ġe")


def break_duplicate_id(tok):
    tok["model"]["vocab"]["extra"] = 5


def break_huge_id(tok):  # one id of 1e9: refused at once, without a list of every id below it
    tok["model"]["vocab"]["zzz"] = 1_000_000_000


def break_string_id(tok):
    tok["model"]["vocab"]["zzz"] = "7"


def break_negative_added_id(tok):
    tok["added_tokens"][0]["id"] = -1


def break_merge(tok):
    tok["model"]["merges"][3] = "abc"


def break_lstrip(tok):
    tok["added_tokens"][1]["lstrip"] = True


def break_subword_prefix(tok):
    tok["model"]["continuing_subword_prefix"] = "##"


def break_prefix_space(tok):
    tok["pre_tokenizer"]["add_prefix_space"] = True


def break_split(tok):
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": " "}, "behavior": "Removed", "invert": False},
        tok["pre_tokenizer"]]}


def break_split_regex(tok):  # the runtime's ICU refused it only at the first encode
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(["}, "behavior": "Isolated", "invert": False},
        tok["pre_tokenizer"]]}


def break_split_regex_type(tok):
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": 5}, "behavior": "Isolated", "invert": False},
        tok["pre_tokenizer"]]}


def break_whitespace_step(tok):
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"}, tok["pre_tokenizer"]]}


def break_no_byte_level(tok):
    tok["pre_tokenizer"] = {"type": "Digits", "individual_digits": True}


def break_template_ids(tok):
    tok["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}}],
                             "special_tokens": {"<s>": {"id": "<s>", "ids": [1, 2]}}}


def break_template_suffix(tok):
    tok["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                             "special_tokens": {"</s>": {"id": "</s>", "ids": [2]}}}


@pytest.mark.parametrize("breaker, needle", [
    (break_model_type, "Unigram"), (break_byte_fallback, "byte_fallback"),
    (break_metaspace, "pre-tokenizer 'Metaspace' is not supported"), (break_normalizer, "NFC"),
    (break_gap, "dense"), (break_duplicate_id, "id 5"), (break_merge, "abc"),
    (break_huge_id, r"the largest id is 1000000000, .* ids must be dense"),
    (break_string_id, r"model\.vocab gives 'zzz' the id '7'; ids are ints >= 0"),
    (break_negative_added_id, r"has the id -1; ids are ints >= 0"),
    (break_lstrip, "lstrip"),
    (break_subword_prefix, r"model.continuing_subword_prefix='##' is not supported"),
    (break_prefix_space, "ByteLevel add_prefix_space=true is not supported"),
    (break_split, r"Split pre-tokenizer .* is not supported \(only Regex patterns"),
    (break_whitespace_step, "pre-tokenizer 'Whitespace' is not supported"),
    (break_split_regex, r"Split pre-tokenizer pattern '\(\[' does not compile"),
    (break_split_regex_type, r"Split pre-tokenizer pattern 5 is not a string"),
    (break_no_byte_level, "no ByteLevel pre-tokenizer"),
    (break_template_ids, r"post_processor special token '<s>' has ids \[1, 2\]"),
    (break_template_suffix, "adds tokens after the text; not supported"),
])
def test_unsupported_or_broken_tokenizers(tmp_path, breaker, needle):
    tok, cfg = tiny_models.tiny_tokenizer(300)
    tok = copy.deepcopy(tok)
    breaker(tok)
    with pytest.raises(TokenizerError, match=needle):
        TokenizerSpec.from_hf_dir(write(tmp_path, tok, cfg))


def break_model_string(tok):
    tok["model"] = "BPE"


def break_merge_number(tok):
    tok["model"]["merges"][3] = 7


def break_added_tokens_object(tok):
    tok["added_tokens"] = {"id": 0}


def break_added_token_id(tok):
    del tok["added_tokens"][1]["id"]


def break_merge_pair_with_space(tok):
    tok["model"]["merges"][3] = ["a b", "c"]


def break_merge_unknown_token(tok):
    tok["model"]["merges"].append("zzzq qqqz")


@pytest.mark.parametrize("breaker, needle", [
    (break_model_string, r"model='BPE' must be an object"),
    (break_merge_number, r"a field has an unexpected type or is missing \(TypeError"),
    (break_added_tokens_object, r"a field has an unexpected type or is missing \(TypeError"),
    (break_added_token_id, r"a field has an unexpected type or is missing \(KeyError: 'id'"),
    (break_merge_unknown_token, r"merge 'zzzq qqqz' uses 'zzzq', which is not a token"),
    (break_merge_pair_with_space, r"merge \['a b', 'c'\] is not two non-empty tokens without spaces"),
])
def test_malformed_tokenizer_json_is_named(tmp_path, breaker, needle):
    tok, cfg = tiny_models.tiny_tokenizer(300)
    tok = copy.deepcopy(tok)
    breaker(tok)
    with pytest.raises(TokenizerError, match=needle) as e:
        TokenizerSpec.from_hf_dir(write(tmp_path, tok, cfg))
    assert "tokenizer.json" in str(e.value)


def test_unreadable_or_mistyped_files_are_named(tmp_path):
    tok, cfg = tiny_models.tiny_tokenizer(300)
    write(tmp_path, tok, cfg)
    (tmp_path / "tokenizer.json").write_text("[]")
    with pytest.raises(TokenizerError, match=r"tokenizer.json: expected a JSON object, got list"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, [])
    with pytest.raises(TokenizerError, match=r"tokenizer_config.json: expected a JSON object, got list"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, cfg)
    (tmp_path / "tokenizer_config.json").write_bytes(b'{"bos_token": "\xff"}')
    with pytest.raises(TokenizerError, match=r"tokenizer_config.json: cannot read JSON \(UTF-8\)"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, cfg)  # a lone surrogate escape parses; the package's UTF-8 cannot hold it
    (tmp_path / "tokenizer.json").write_text((tmp_path / "tokenizer.json").read_text().replace(
        '"<|im_end|>"', '"<|im_end|>\\udc80"', 1))
    with pytest.raises(TokenizerError, match=r"tokenizer.json: a string holds a lone UTF-16 surrogate"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, {**cfg, "add_bos_token": "yes"})
    with pytest.raises(TokenizerError, match=r"add_bos_token='yes' must be true, false or null"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, {**cfg, "chat_template": 5})
    with pytest.raises(TokenizerError, match=r"chat_template=5 must be a string"):
        TokenizerSpec.from_hf_dir(tmp_path)


def test_a_null_add_bos_token_leaves_the_post_processor_s_bos(tmp_path):
    tok, cfg = llama3_style()  # its template prepends id 1; no add_bos_token
    assert TokenizerSpec.from_hf_dir(write(tmp_path, tok, cfg)).add_bos
    assert TokenizerSpec.from_hf_dir(write(tmp_path, tok, {**cfg, "add_bos_token": None})).add_bos
    assert not TokenizerSpec.from_hf_dir(write(tmp_path, tok, {**cfg, "add_bos_token": False})).add_bos


def test_bos_and_eos_errors(tmp_path):
    tok, cfg = llama3_style()  # its template prepends id 1
    write(tmp_path, tok, {**cfg, "bos_token": "<|endoftext|>"})  # id 0
    with pytest.raises(TokenizerError, match="post_processor prepends id 1 but bos_token is id 0"):
        TokenizerSpec.from_hf_dir(tmp_path)
    tok, cfg = tiny_models.tiny_tokenizer(300)
    cfg = {k: v for k, v in cfg.items() if k != "bos_token"}
    write(tmp_path, tok, {**cfg, "add_bos_token": True})
    with pytest.raises(TokenizerError, match="add_bos is set but no bos_token is defined"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, *tiny_models.tiny_tokenizer(300))
    with pytest.raises(TokenizerError, match=r"EOS id 999 is not a token id \(tokenizer has 300"):
        TokenizerSpec.from_hf_dir(tmp_path, config(vocab=1000, eos=(999,)))


def test_token_config_errors(tmp_path):
    tok, cfg = tiny_models.tiny_tokenizer(300)
    write(tmp_path, tok, {**cfg, "eos_token": "<|nope|>"})
    with pytest.raises(TokenizerError, match="nope"):
        TokenizerSpec.from_hf_dir(tmp_path)
    write(tmp_path, tok, cfg)
    with pytest.raises(TokenizerError, match="vocab_size=100"):
        TokenizerSpec.from_hf_dir(tmp_path, config(vocab=100, eos=(2,)))
    (tmp_path / "tokenizer.json").unlink()
    with pytest.raises(TokenizerError, match="tokenizer.json"):
        TokenizerSpec.from_hf_dir(tmp_path)


@pytest.mark.parametrize("style", ["gpt2", "llama3"])
def test_reference_bpe_matches_hf_tokenizers(tmp_path, style):
    import tokenizers
    from tests.reference import bpe
    tok, cfg = tiny_models.tiny_tokenizer(600) if style == "gpt2" else llama3_style(600)
    write(tmp_path, tok, cfg)
    spec = TokenizerSpec.from_hf_dir(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ["the cat sat on the mat", "  two  spaces\n\nnew lines 12345!",
                 "<|im_start|>user\nhi there<|im_end|>", "it's 'quoted' ~{}"]:
        ids = bpe.encode(spec, text)
        assert ids == hf.encode(text).ids, text
        assert any(i >= 3 + 256 for i in ids), ids  # merged tokens were used
        assert ids[0] == spec.bos_id or not spec.add_bos
        assert bpe.decode(spec, ids[1:] if spec.add_bos else ids) == text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
