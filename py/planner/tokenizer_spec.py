"""The model's tokenizer, reduced to what a runtime needs to encode, decode and chat.

Read from an HF directory (`tokenizer.json` in the Hugging Face `tokenizers` format, plus
`tokenizer_config.json`). Only byte-level BPE (GPT-2 / Llama 3 / SmolLM family) is
supported; SentencePiece-style BPE (byte_fallback, Metaspace), WordPiece, Unigram and
normalizers are refused with `TokenizerError` rather than approximated, because a wrong
token id is a silently wrong answer.

Pre-tokenization is recorded as an ordered list of regexes, each applied to the pieces the
previous one produced, keeping matches and the gaps between them (HF Split "Isolated";
llama.cpp `unicode_regex_split` does the same). Sources: HF tokenizers `ByteLevel`
(GPT-2 pattern), `Digits`, `Split` pre-tokenizers.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Mapping

from absl import logging
import regex

from planner import json_files
from planner.model_config import LlamaConfig

# HF tokenizers `ByteLevel(use_regex=True)`: the GPT-2 pattern.
GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


class TokenizerError(ValueError):
    """A tokenizer that TileInfer cannot reproduce exactly."""


def _is_token_id(i: Any) -> bool:
    """An int >= 0 (a JSON true is not 1 here)."""
    return isinstance(i, int) and not isinstance(i, bool) and i >= 0


@dataclasses.dataclass
class TokenizerSpec:
    """A byte-level BPE tokenizer.

    vocab[i] is the byte-level (GPT-2 unicode-mapped) string of token id i, for every id
    including added tokens; merges are "left right" strings in rank order; special_tokens
    maps id -> content for added tokens marked special (matched verbatim before BPE, never
    split); added_tokens the same for added tokens not marked special. eos_ids is the union
    (order kept) of the model config's EOS ids and the tokenizer's eos_token.
    ignore_merges: a whole pre-token found in vocab is emitted as is (Llama 3 sets this).
    """
    kind: str
    vocab: list[str]
    merges: list[str]
    special_tokens: dict[int, str]
    added_tokens: dict[int, str]
    bos_id: int | None
    eos_ids: tuple[int, ...]
    add_bos: bool
    chat_template: str | None
    pre_tokenizer_regexes: tuple[str, ...]
    ignore_merges: bool

    @classmethod
    def from_hf_dir(cls, directory: str | pathlib.Path,
                    config: LlamaConfig | None = None) -> "TokenizerSpec":
        """Reads tokenizer.json + tokenizer_config.json (+ chat_template.jinja) of `directory`.

        Args:
          config: when given, its eos_token_ids are merged in first, and the tokenizer's
            vocabulary must fit in config.vocab_size embedding rows.
        Raises:
          TokenizerError naming the file and field for unsupported or inconsistent tokenizers.
        """
        root = pathlib.Path(directory)
        tok_path = root / "tokenizer.json"
        tok = _read_json(tok_path, required=True)
        tok_cfg = _read_json(root / "tokenizer_config.json", required=False) or {}
        try:
            return cls._from_hf_json(root, tok_path, tok, tok_cfg, config)
        except (AttributeError, TypeError, KeyError, IndexError) as e:
            # A field of another type or a missing key inside the files' objects: the layout
            # is not a Hugging Face tokenizer's. The checks below name the fields they know.
            raise TokenizerError(
                f"{tok_path} (or {root / 'tokenizer_config.json'}): a field has an unexpected "
                f"type or is missing ({type(e).__name__}: {e}); TileInfer reads the files that "
                f"Hugging Face tokenizers writes (model an object with vocab and merges, "
                f"added_tokens a list of objects with id and content): save the tokenizer again "
                f"with transformers or tokenizers") from e

    @classmethod
    def _from_hf_json(cls, root: pathlib.Path, tok_path: pathlib.Path, tok: dict, tok_cfg: dict,
                      config: LlamaConfig | None) -> "TokenizerSpec":
        """from_hf_dir's checks and conversion on the files' parsed JSON objects."""
        model = tok.get("model") or {}
        if not isinstance(model, dict):
            raise TokenizerError(f"{tok_path}: model={model!r} must be an object (type, vocab, "
                                 f"merges)")
        if model.get("type") != "BPE":
            raise TokenizerError(f"{tok_path}: model type {model.get('type')!r} is not supported; "
                                 f"only byte-level BPE tokenizers are")
        if model.get("byte_fallback"):
            raise TokenizerError(f"{tok_path}: BPE with byte_fallback (SentencePiece-style, e.g. "
                                 f"Llama 2) is not supported; only byte-level BPE is")
        for key in ("continuing_subword_prefix", "end_of_word_suffix"):
            if model.get(key):
                raise TokenizerError(f"{tok_path}: model.{key}={model[key]!r} is not supported")
        if tok.get("normalizer") is not None:
            raise TokenizerError(f"{tok_path}: normalizer {tok['normalizer'].get('type')!r} is "
                                 f"not supported (byte-level BPE tokenizers of the Llama family "
                                 f"use none)")
        regexes = _pre_tokenizer_regexes(tok.get("pre_tokenizer"), tok_path)

        vocab_map = model.get("vocab")
        if not isinstance(vocab_map, dict):
            raise TokenizerError(f"{tok_path}: model.vocab must be an object token -> id")
        by_id: dict[int, str] = {}
        for content, i in vocab_map.items():
            if not _is_token_id(i):
                raise TokenizerError(f"{tok_path}: model.vocab gives {content!r} the id {i!r}; ids "
                                     f"are ints >= 0")
            if i in by_id:
                raise TokenizerError(f"{tok_path}: id {i} is used by {by_id[i]!r} and {content!r}")
            by_id[i] = content
        special, added = {}, {}
        for entry in tok.get("added_tokens") or []:
            i, content = entry["id"], entry["content"]
            if not _is_token_id(i):
                raise TokenizerError(f"{tok_path}: added token {content!r} has the id {i!r}; ids "
                                     f"are ints >= 0")
            flags = [f for f in ("lstrip", "rstrip", "single_word") if entry.get(f)]
            if flags:
                # They change where HF cuts the token out of the text; the runtime cuts
                # verbatim only.
                raise TokenizerError(f"{tok_path}: added token {content!r} sets {flags}; not "
                                     f"supported")
            if i in by_id and by_id[i] != content:
                raise TokenizerError(f"{tok_path}: added token {content!r} has id {i}, which the "
                                     f"vocab gives to {by_id[i]!r}")
            by_id[i] = content
            (special if entry.get("special") else added)[i] = content
        n = max(by_id) + 1 if by_id else 0
        if n > len(by_id):
            # Ids are not dense. The first gaps lie below len(by_id) + 5 (pigeonhole), so no list
            # of all n ids is built: one id of 1e9 in a broken file would fill the memory.
            gaps = [i for i in range(min(n, len(by_id) + 5)) if i not in by_id]
            raise TokenizerError(f"{tok_path}: token ids {gaps[:5]} have no token (the largest id is "
                                 f"{n - 1}, with {len(by_id)} tokens); ids must be dense")
        vocab = [by_id[i] for i in range(n)]
        if config is not None and n > config.vocab_size:
            raise TokenizerError(f"{tok_path}: {n} tokens but the model has only "
                                 f"vocab_size={config.vocab_size} embedding rows")

        # Content -> id; added tokens win over a vocab entry with the same text, as in HF.
        id_of = {content: i for i, content in enumerate(vocab)}
        id_of.update({content: i for i, content in {**added, **special}.items()})

        merges = []
        for m in model.get("merges") or []:
            # tokenizers >= 0.20 may write merges as [left, right] pairs instead of "left right".
            pair = m.split(" ") if isinstance(m, str) else list(m)
            if len(pair) != 2 or not all(isinstance(p, str) and p and " " not in p for p in pair):
                raise TokenizerError(f"{tok_path}: merge {m!r} is not two non-empty tokens "
                                     f"without spaces (byte-level BPE writes a space as 'Ġ')")
            # HF tokenizers refuses a merge whose parts or result are not tokens
            # (MergeTokenOutOfVocabulary), and so does the runtime (host/tokenizer.cc).
            for token in (pair[0], pair[1], pair[0] + pair[1]):
                if token not in id_of:
                    raise TokenizerError(f"{tok_path}: merge {m!r} uses {token!r}, which is not "
                                         f"a token of the vocabulary (model.vocab, added_tokens)")
            merges.append(f"{pair[0]} {pair[1]}")

        def token_id(field: str) -> int | None:
            value = tok_cfg.get(field)
            if isinstance(value, dict):
                value = value.get("content")
            if value is None:
                return None
            if value not in id_of:
                raise TokenizerError(f"{root / 'tokenizer_config.json'}: {field}={value!r} is "
                                     f"not a token of {tok_path}")
            return id_of[value]

        bos_id = token_id("bos_token")
        eos_tok = token_id("eos_token")
        template_bos = _template_bos(tok.get("post_processor"), tok_path)
        if tok_cfg.get("add_bos_token") is not None:  # null: the post_processor decides, as absent
            add_bos = tok_cfg["add_bos_token"]
            if not isinstance(add_bos, bool):
                raise TokenizerError(f"{root / 'tokenizer_config.json'}: add_bos_token={add_bos!r} "
                                     f"must be true, false or null")
            if template_bos is not None and not add_bos:
                logging.warning("%s: add_bos_token=false but tokenizer.json's post_processor "
                                "prepends id %d; following tokenizer_config.json", root,
                                template_bos)
        else:
            add_bos = template_bos is not None
        if template_bos is not None:
            bos_id = template_bos if bos_id is None else bos_id
            if template_bos != bos_id:
                raise TokenizerError(f"{tok_path}: post_processor prepends id {template_bos} but "
                                     f"bos_token is id {bos_id}")
        if add_bos and bos_id is None:
            raise TokenizerError(f"{root}: add_bos is set but no bos_token is defined")
        if bos_id is None and config is not None:
            bos_id = config.bos_token_id

        eos_ids: list[int] = list(config.eos_token_ids) if config is not None else []
        if eos_tok is not None and eos_tok not in eos_ids:
            eos_ids.append(eos_tok)
        for i in eos_ids:
            if not 0 <= i < n:
                raise TokenizerError(f"{root}: EOS id {i} is not a token id (tokenizer has {n} "
                                     f"tokens)")

        return cls(kind="byte_level_bpe", vocab=vocab, merges=merges, special_tokens=special,
                   added_tokens=added, bos_id=bos_id, eos_ids=tuple(eos_ids), add_bos=add_bos,
                   chat_template=_chat_template(root, tok_cfg),
                   pre_tokenizer_regexes=tuple(regexes),
                   ignore_merges=bool(model.get("ignore_merges", False)))

    def to_json(self) -> dict:
        """A JSON-serialisable dict (special/added token keys become decimal strings)."""
        d = dataclasses.asdict(self)
        d["special_tokens"] = {str(k): v for k, v in sorted(self.special_tokens.items())}
        d["added_tokens"] = {str(k): v for k, v in sorted(self.added_tokens.items())}
        d["eos_ids"] = list(self.eos_ids)
        d["pre_tokenizer_regexes"] = list(self.pre_tokenizer_regexes)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TokenizerSpec":
        kw = dict(d)
        kw.pop("chat", None)  # the runtime's reduced chat format (main._chat_format)
        kw["special_tokens"] = {int(k): v for k, v in d["special_tokens"].items()}
        kw["added_tokens"] = {int(k): v for k, v in d["added_tokens"].items()}
        kw["eos_ids"] = tuple(d["eos_ids"])
        kw["pre_tokenizer_regexes"] = tuple(d["pre_tokenizer_regexes"])
        return cls(**kw)


def _read_json(path: pathlib.Path, required: bool) -> dict | None:
    return json_files.read_json_object(path, TokenizerError, required)


def _pre_tokenizer_regexes(pre: Mapping | None, path: pathlib.Path) -> list[str]:
    """Ordered split regexes equivalent to the HF pre_tokenizer; requires a ByteLevel step."""
    steps = [] if pre is None else (pre.get("pretokenizers") if pre.get("type") == "Sequence"
                                    else [pre])
    regexes: list[str] = []
    byte_level = False
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            if step.get("add_prefix_space"):
                raise TokenizerError(f"{path}: ByteLevel add_prefix_space=true is not supported")
            byte_level = True
            if step.get("use_regex", True):
                regexes.append(GPT2_REGEX)
        elif kind == "Digits":
            regexes.append(r"\p{N}" if step.get("individual_digits") else r"\p{N}+")
        elif kind == "Split":
            pattern = step.get("pattern") or {}
            if "Regex" not in pattern or step.get("behavior") != "Isolated" or step.get("invert"):
                raise TokenizerError(f"{path}: Split pre-tokenizer {step!r} is not supported (only "
                                     f"Regex patterns, behavior Isolated, invert false)")
            regex_text = pattern["Regex"]
            if not isinstance(regex_text, str):
                raise TokenizerError(f"{path}: Split pre-tokenizer pattern {regex_text!r} is not a string")
            try:  # the runtime compiles it with ICU; Python's regex module takes the same syntax
                regex.compile(regex_text)  # for what tokenizers use (\p{..}, possessive, atomic)
            except regex.error as e:
                raise TokenizerError(f"{path}: Split pre-tokenizer pattern {regex_text!r} does not "
                                     f"compile ({e})") from None
            regexes.append(regex_text)
        else:
            raise TokenizerError(f"{path}: pre-tokenizer {kind!r} is not supported")
    if not byte_level:
        raise TokenizerError(f"{path}: no ByteLevel pre-tokenizer; only byte-level BPE is "
                             f"supported")
    return regexes


def _template_bos(post: Mapping | None, path: pathlib.Path) -> int | None:
    """Id that a TemplateProcessing post_processor prepends to a single sequence, if any."""
    if post is None:
        return None
    procs = post.get("processors") if post.get("type") == "Sequence" else [post]
    for proc in procs or []:
        if proc.get("type") != "TemplateProcessing":
            continue
        single = proc.get("single") or []
        if single and "SpecialToken" in single[0]:
            name = single[0]["SpecialToken"]["id"]
            ids = ((proc.get("special_tokens") or {}).get(name) or {}).get("ids") or []
            if len(ids) != 1:
                raise TokenizerError(f"{path}: post_processor special token {name!r} has ids {ids}")
            return ids[0]
        if any("SpecialToken" in piece for piece in single):
            # e.g. an appended EOS: the runtime would have to add it too; refuse loudly.
            raise TokenizerError(f"{path}: post_processor template {single!r} adds tokens after "
                                 f"the text; not supported")
    return None


def _chat_template(root: pathlib.Path, tok_cfg: Mapping) -> str | None:
    template = tok_cfg.get("chat_template")
    if isinstance(template, list):
        # Multiple named templates (tool use etc.): the runtime chats with "default".
        named = {t.get("name"): t.get("template") for t in template}
        template = named.get("default") or (template[0].get("template") if template else None)
    if template is not None and not isinstance(template, str):
        raise TokenizerError(f"{root / 'tokenizer_config.json'}: chat_template={template!r} must be "
                             f"a string, or a list of objects with name and template")
    if template is None and (root / "chat_template.jinja").is_file():
        try:
            template = (root / "chat_template.jinja").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise TokenizerError(f"{root / 'chat_template.jinja'}: cannot read it as UTF-8 text: "
                                 f"{e}") from e
    return template

