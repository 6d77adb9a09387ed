"""Reference byte-level BPE encoder/decoder over a TokenizerSpec, for tests only.

Slow and simple on purpose: it is the second path that checks HF `tokenizers`, llama.cpp
and (later) the runtime's tokenizer agree on ids. Algorithm (openai/gpt-2 encoder.py, HF
tokenizers BPE):
  1. split the text on special and added tokens (longest match first), emitted verbatim;
  2. split the rest with each pre-tokenizer regex in turn, keeping matches and the gaps
     between them (HF Split "Isolated");
  3. map each piece's UTF-8 bytes to GPT-2's printable unicode symbols;
  4. a piece found whole in the vocab is one token when ignore_merges is set; otherwise
     repeatedly merge the adjacent pair of lowest merge rank, all occurrences at once.
Needs the third-party `regex` module (\\p{L} classes); tests importorskip it.
"""

from __future__ import annotations

import functools

import regex


@functools.lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode map."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _isolate(pieces: list[str], pattern: str) -> list[str]:
    compiled = regex.compile(pattern)
    out = []
    for piece in pieces:
        pos = 0
        for m in compiled.finditer(piece):
            if m.start() > pos:
                out.append(piece[pos:m.start()])
            if m.end() > m.start():
                out.append(m.group())
            pos = m.end()
        if pos < len(piece):
            out.append(piece[pos:])
    return out


def _bpe(word: str, ranks: dict[tuple[str, str], int]) -> list[str]:
    symbols = list(word)
    while len(symbols) > 1:
        pairs = [(ranks.get((a, b), None), i) for i, (a, b) in
                 enumerate(zip(symbols, symbols[1:]))]
        best = min((r for r, _ in pairs if r is not None), default=None)
        if best is None:
            break
        a, b = next((symbols[i], symbols[i + 1]) for r, i in pairs if r == best)
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


def encode(spec, text: str, add_bos: bool | None = None) -> list[int]:
    """Token ids of `text` under `spec` (a TokenizerSpec or anything with its fields).

    add_bos: None follows spec.add_bos. Raises KeyError for a symbol not in the vocab.
    """
    ids_of = {t: i for i, t in enumerate(spec.vocab)}
    verbatim = {**spec.added_tokens, **spec.special_tokens}
    verbatim_ids = {content: i for i, content in verbatim.items()}
    ranks = {tuple(m.split(" ")): r for r, m in enumerate(spec.merges)}
    b2u = byte_to_unicode()
    out = [spec.bos_id] if (spec.add_bos if add_bos is None else add_bos) else []
    if verbatim:
        alternation = "|".join(regex.escape(c) for c in sorted(verbatim.values(), key=len,
                                                               reverse=True))
        chunks = regex.split(f"({alternation})", text)
    else:
        chunks = [text]
    for k, chunk in enumerate(chunks):
        if k % 2 == 1 and verbatim:  # a captured special/added token
            out.append(verbatim_ids[chunk])
            continue
        if not chunk:
            continue
        pieces = [chunk]
        for pattern in spec.pre_tokenizer_regexes:
            pieces = _isolate(pieces, pattern)
        for piece in pieces:
            word = "".join(b2u[b] for b in piece.encode("utf-8"))
            if spec.ignore_merges and word in ids_of:
                out.append(ids_of[word])
                continue
            out.extend(ids_of[s] for s in _bpe(word, ranks))
    return out


def decode(spec, ids: list[int], skip_special: bool = False) -> str:
    """Text of `ids`: byte-level symbols back to bytes, then UTF-8 (invalid -> U+FFFD)."""
    u2b = {u: b for b, u in byte_to_unicode().items()}
    verbatim = {**spec.added_tokens, **spec.special_tokens}
    out, buf = [], bytearray()
    for i in ids:
        if i in verbatim:
            out.append(buf.decode("utf-8", errors="replace"))
            buf = bytearray()
            if not (skip_special and i in spec.special_tokens):
                out.append(verbatim[i])
            continue
        buf.extend(u2b[c] for c in spec.vocab[i])
    out.append(buf.decode("utf-8", errors="replace"))
    return "".join(out)
