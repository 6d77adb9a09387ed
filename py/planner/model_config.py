"""Llama-family model configuration: parsed once from HF files, validated, frozen.

Every other part of the planner sizes itself from `LlamaConfig`; nothing downstream reads
`config.json` again. Parsing is strict on purpose: a config this module does not fully
understand (an unknown RoPE scaling, a bias term, another architecture) is refused with a
`ConfigError` that names the key and says what to do, because a silently wrong plan decodes
garbage that no later check can catch.

Sources for the formulas:
  * RoPE inverse frequencies: f_i = theta ** (-2i / head_dim), i in [0, head_dim/2)
    (Su et al., RoFormer; HF `_compute_default_rope_parameters`).
  * llama3 scaling: Meta's llama3 reference `apply_scaling` (llama-models, model.py) and
    HF `transformers.modeling_rope_utils._compute_llama3_parameters`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from planner import format_spec as spec


class ConfigError(ValueError):
    """A checkpoint configuration that TileInfer cannot (or must not) decode."""


# HF `LlamaConfig.__init__` defaults for keys that real Llama checkpoints may omit. The
# five size keys (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
# vocab_size) have no safe default and are required.
# float32's range for values the runtime holds as float (np.finfo(np.float32)).
_FLOAT32_MIN_NORMAL = float(np.finfo(np.float32).tiny)
_FLOAT32_MAX = float(np.finfo(np.float32).max)

_HF_DEFAULTS = {
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}
_REQUIRED_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers",
                  "num_attention_heads", "vocab_size")
_SUPPORTED_ROPE_TYPES = ("default", "llama3")
_LLAMA3_KEYS = ("factor", "low_freq_factor", "high_freq_factor",
                "original_max_position_embeddings")


def _as_id_tuple(value: Any, key: str, source: str) -> tuple[int, ...]:
    """An HF token-id field (int, list of ints or null) as a tuple, order kept."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        # bool is an int subclass; `true` as a token id is a broken file, not id 1.
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"{source}: {key}={value!r} must be a non-negative int or a list of "
                              f"them; fix the file")
    return tuple(items)


def _union(*seqs: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for seq in seqs:
        for v in seq:
            if v not in out:
                out.append(v)
    return tuple(out)


def _refuse_partial_rotary(factor: Any, where: str) -> None:
    """Raises ConfigError unless `factor` (a partial_rotary_factor; `where` prefixes its name in
    the message) is 1. Llama's RoPE turns every dimension of a head; HF derives a partial
    rotation's frequencies from head_dim * partial_rotary_factor, which no reading of the
    full-head formula gives."""
    if factor != 1.0:
        raise ConfigError(f"config.json: {where}partial_rotary_factor={factor!r}: TileInfer's RoPE "
                          f"rotates the whole head; partial rotary embeddings are not supported")


def _normalise_rope_scaling(rope: Any, key: str = "rope_scaling") -> dict | None:
    """Validated copy of an HF `rope_scaling` dict; None for no scaling (or 'default').

    `key` names the config.json key it came from in messages (rope_scaling, or
    rope_parameters: transformers>=5's object of the same keys plus rope_theta).
    """
    if rope is None:
        return None
    if not isinstance(rope, Mapping):
        raise ConfigError(f"config.json: {key}={rope!r} must be an object or null")
    _refuse_partial_rotary(rope.get("partial_rotary_factor", 1.0), f"{key} ")
    # `type` is older transformers' spelling of `rope_type`; both mean the same.
    rope_type = rope.get("rope_type", rope.get("type"))
    if rope_type is None:
        raise ConfigError(f"config.json: {key}={dict(rope)!r} has neither 'rope_type' nor "
                          f"'type'; set rope_type to one of {_SUPPORTED_ROPE_TYPES}")
    if rope_type not in _SUPPORTED_ROPE_TYPES:
        raise ConfigError(
            f"config.json: {key} rope_type={rope_type!r} is not supported (supported: "
            f"{', '.join(_SUPPORTED_ROPE_TYPES)}). Linear/dynamic/yarn/longrope scaling change "
            f"the attention math; TileInfer refuses rather than decode wrongly. Use a checkpoint "
            f"with rope_type 'llama3' or no rope_scaling.")
    if rope_type == "default":
        return None
    out: dict[str, Any] = {"rope_type": "llama3"}
    for field in _LLAMA3_KEYS:
        if field not in rope:
            raise ConfigError(f"config.json: {key} (llama3) is missing {field!r}; the llama3 "
                              f"formula needs {', '.join(_LLAMA3_KEYS)}")
        v = rope[field]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"config.json: {key} {field}={v!r} must be a positive number")
        out[field] = v
    original = out["original_max_position_embeddings"]
    if not float(original).is_integer():  # a count of positions; HF would divide by the fraction
        raise ConfigError(f"config.json: {key} original_max_position_embeddings={original!r} "
                          f"must be a whole number of positions")
    out["original_max_position_embeddings"] = int(original)
    if not out["high_freq_factor"] > out["low_freq_factor"]:
        # The smoothing band divides by (high - low); equal factors make it 0/0.
        raise ConfigError(f"config.json: {key} high_freq_factor={out['high_freq_factor']} "
                          f"must exceed low_freq_factor={out['low_freq_factor']}")
    return out


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Shapes and constants of one Llama-family decoder.

    Sizes are element counts. H = hidden_size, F = intermediate_size, hd = head_dim.
    Q has num_heads * hd rows, K and V num_kv_heads * hd rows (grouped-query attention).
    `rope_scaling` is None (plain RoPE) or a validated llama3 dict with keys rope_type,
    factor, low_freq_factor, high_freq_factor, original_max_position_embeddings.
    `eos_token_ids` is the union of generation_config.json's ids (first, in their order; what
    HF generation stops on) and config.json's. `bos_token_id` prefers generation_config.json.
    """
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    # A dict cannot be hashed; leave it out of the generated __hash__, keep it in __eq__.
    rope_scaling: dict | None = dataclasses.field(hash=False)
    tie_word_embeddings: bool
    max_position_embeddings: int
    bos_token_id: int | None
    eos_token_ids: tuple[int, ...]

    def __post_init__(self):
        for name in ("hidden_size", "intermediate_size", "num_layers", "num_heads",
                     "num_kv_heads", "head_dim", "vocab_size", "max_position_embeddings"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{name}={v!r} must be a positive int")
            limit = spec.META_LIMITS.get(f"model.{name}")
            if limit is not None and v > limit:
                raise ConfigError(f"{name}={v} is beyond the runtime's limit of {limit} "
                                  f"(format_spec.META_LIMITS): this model cannot be planned")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(f"num_attention_heads={self.num_heads} is not divisible by "
                              f"num_key_value_heads={self.num_kv_heads}; grouped-query attention "
                              f"needs whole groups. The checkpoint's config.json is inconsistent.")
        if self.head_dim % 2:
            raise ConfigError(f"head_dim={self.head_dim} must be even (RoPE rotates pairs)")
        # The runtime computes in float32: eps must be a positive float32 (normal) number.
        if not _FLOAT32_MIN_NORMAL <= self.rms_norm_eps <= _FLOAT32_MAX:
            raise ConfigError(f"rms_norm_eps={self.rms_norm_eps!r} must be a positive number "
                              f"that float32 holds ({_FLOAT32_MIN_NORMAL:.3g} to "
                              f"{_FLOAT32_MAX:.3g})")
        if not (self.rope_theta > 1 and math.isfinite(self.rope_theta)):
            raise ConfigError(f"rope_theta={self.rope_theta!r} must be a number > 1")
        if not self.eos_token_ids:
            raise ConfigError("no eos_token_id in config.json or generation_config.json; decoding "
                              "would never stop. Add eos_token_id to generation_config.json.")
        ids = self.eos_token_ids + (() if self.bos_token_id is None else (self.bos_token_id,))
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise ConfigError(f"token id {i} (bos/eos) is outside vocab_size={self.vocab_size}")
        # Copy so that a caller mutating its dict cannot change a frozen config.
        object.__setattr__(self, "rope_scaling", _normalise_rope_scaling(self.rope_scaling))
        object.__setattr__(self, "eos_token_ids", tuple(self.eos_token_ids))

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_hf(cls, config: Mapping[str, Any],
                generation_config: Mapping[str, Any] | None = None) -> "LlamaConfig":
        """Parses HF `config.json` (+ optional `generation_config.json`) dicts.

        Accepts `architectures` containing LlamaForCausalLM, or no `architectures` and
        model_type 'llama'. Missing optional keys take HF LlamaConfig's defaults; head_dim
        defaults to hidden_size // num_attention_heads. Accepts the transformers>=5
        `rope_parameters` object as well as `rope_theta` + `rope_scaling`.

        Raises:
          ConfigError: another architecture, a missing size key, bias terms, an activation
            other than SiLU, unsupported RoPE scaling, or inconsistent head counts.
        """
        if not isinstance(config, Mapping):
            raise ConfigError(f"config.json must hold a JSON object, got {type(config).__name__}")
        archs = config.get("architectures")
        model_type = config.get("model_type")
        if archs is not None:
            if not isinstance(archs, list) or "LlamaForCausalLM" not in archs:
                raise ConfigError(f"config.json: architectures={archs!r} is not LlamaForCausalLM; "
                                  f"TileInfer decodes the Llama family only")
        if model_type is not None and model_type != "llama":
            raise ConfigError(f"config.json: model_type={model_type!r} is not 'llama'; TileInfer "
                              f"decodes the Llama family only")
        if archs is None and model_type is None:
            raise ConfigError("config.json has neither 'architectures' nor 'model_type'; cannot "
                              "tell that this is a Llama checkpoint")
        missing = [k for k in _REQUIRED_KEYS if config.get(k) is None]
        if missing:
            raise ConfigError(f"config.json is missing required key(s) {', '.join(missing)}")
        for key in ("attention_bias", "mlp_bias"):
            value = config.get(key)
            if not (value is False or value is None):  # true, or not a JSON bool ("false" is a string)
                raise ConfigError(f"config.json: {key}={value!r}; TileInfer's Llama has no bias tensors "
                                  f"(give false, or leave it out)")
        act = config.get("hidden_act", "silu")
        if act not in ("silu", "swish"):  # transformers' ACT2FN: both are SiLU
            raise ConfigError(f"config.json: hidden_act={act!r}; only 'silu' (or 'swish', the same "
                              f"function: SwiGLU) is supported")
        _refuse_partial_rotary(config.get("partial_rotary_factor", 1.0), "")  # rope_parameters' below

        # transformers>=5 moves rope_theta/rope_scaling into one `rope_parameters` object.
        # Normalised here, so that messages name the key the scaling came from.
        rope_params = config.get("rope_parameters")
        if rope_params is not None and not isinstance(rope_params, Mapping):
            raise ConfigError(f"config.json: rope_parameters={rope_params!r} must be an object")
        if isinstance(rope_params, Mapping):
            rope_theta = rope_params.get("rope_theta", config.get("rope_theta"))
            rope_scaling = _normalise_rope_scaling(
                {k: v for k, v in rope_params.items() if k != "rope_theta"}, "rope_parameters")
            # transformers 4 reads only rope_scaling, 5 takes rope_scaling over rope_parameters
            # when both are set: a checkpoint whose two disagree means different models to them.
            legacy = config.get("rope_scaling")
            if legacy is not None and _normalise_rope_scaling(legacy) != rope_scaling:
                raise ConfigError(f"config.json: rope_scaling={legacy!r} and rope_parameters="
                                  f"{dict(rope_params)!r} disagree (transformers releases read "
                                  f"different ones); keep only the one the model was trained with")
        else:
            rope_theta = config.get("rope_theta")
            rope_scaling = _normalise_rope_scaling(config.get("rope_scaling"))
        if rope_theta is None:
            rope_theta = _HF_DEFAULTS["rope_theta"]

        def get(key):
            v = config.get(key)
            return _HF_DEFAULTS[key] if v is None else v

        def number(key, v):
            # bool is an int in Python: true / false are not numbers here.
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"config.json: {key}={v!r} must be a number")
            try:
                return float(v)
            except OverflowError:  # an int beyond float's range
                raise ConfigError(f"config.json: {key}={v!r} must be a number that float "
                                  f"holds") from None

        tie = get("tie_word_embeddings")
        if not isinstance(tie, bool):
            raise ConfigError(f"config.json: tie_word_embeddings={tie!r} must be true or false "
                              f"(a JSON boolean, not a string or number)")
        num_heads = config["num_attention_heads"]
        num_kv = config.get("num_key_value_heads")
        if num_kv is None:
            num_kv = num_heads  # HF LlamaConfig: no GQA
        elif isinstance(num_kv, bool) or not isinstance(num_kv, int) or num_kv <= 0:
            raise ConfigError(f"config.json: num_key_value_heads={num_kv!r} must be a positive "
                              f"integer (or absent: as many as num_attention_heads)")
        hidden = config["hidden_size"]
        head_dim = config.get("head_dim")
        for key, v in (("hidden_size", hidden), ("num_attention_heads", num_heads)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"config.json: {key}={v!r} must be a positive integer")
        if head_dim is None:
            if hidden % num_heads:
                raise ConfigError(f"config.json: hidden_size={hidden} is not divisible by "
                                  f"num_attention_heads={num_heads} and head_dim is absent; "
                                  f"add head_dim")
            head_dim = hidden // num_heads

        gen = generation_config or {}
        eos = _union(
            _as_id_tuple(gen.get("eos_token_id"), "eos_token_id", "generation_config.json"),
            _as_id_tuple(config.get("eos_token_id"), "eos_token_id", "config.json"))
        bos_ids = (_as_id_tuple(gen.get("bos_token_id"), "bos_token_id", "generation_config.json")
                   or _as_id_tuple(config.get("bos_token_id"), "bos_token_id", "config.json"))
        if len(bos_ids) > 1:
            raise ConfigError(f"bos_token_id={list(bos_ids)} must be a single id")

        return cls(
            hidden_size=hidden,
            intermediate_size=config["intermediate_size"],
            num_layers=config["num_hidden_layers"],
            num_heads=num_heads,
            num_kv_heads=num_kv,
            head_dim=head_dim,
            vocab_size=config["vocab_size"],
            rms_norm_eps=number("rms_norm_eps", get("rms_norm_eps")),
            rope_theta=number("rope_theta", rope_theta),
            rope_scaling=rope_scaling,
            tie_word_embeddings=tie,
            max_position_embeddings=get("max_position_embeddings"),
            bos_token_id=bos_ids[0] if bos_ids else None,
            eos_token_ids=eos,
        )

    def to_json(self) -> dict:
        """A JSON-serialisable dict of every field (TileInfer names, not HF names)."""
        d = dataclasses.asdict(self)
        d["eos_token_ids"] = list(self.eos_token_ids)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "LlamaConfig":
        """Inverse of `to_json`. Raises ConfigError on missing or unknown fields."""
        names = {f.name for f in dataclasses.fields(cls)}
        missing, unknown = names - set(d), set(d) - names
        if missing or unknown:
            raise ConfigError(f"LlamaConfig JSON: missing fields {sorted(missing)}, unknown fields "
                              f"{sorted(unknown)}; was it written by another TileInfer version?")
        kw = dict(d)
        kw["eos_token_ids"] = tuple(kw["eos_token_ids"])
        return cls(**kw)

    # --- derived quantities -------------------------------------------------------------

    @property
    def group_size(self) -> int:
        """Q heads per KV head (GQA group size)."""
        return self.num_heads // self.num_kv_heads

    def kv_head_for(self, q_head: int) -> int:
        """The KV head that Q head `q_head` attends with: q_head // (num_heads // num_kv_heads).

        Consecutive Q heads share a KV head (HF `repeat_kv` repeats each KV head
        group_size times in place), e.g. 9:3 heads -> q 0-2 use kv 0, q 3-5 kv 1, q 6-8 kv 2.
        """
        if not 0 <= q_head < self.num_heads:
            raise IndexError(f"q_head={q_head} outside [0, {self.num_heads})")
        return q_head // self.group_size

    def rope_inv_freq(self) -> np.ndarray:
        """RoPE inverse frequencies, float64, shape (head_dim // 2,), radians per position.

        Pair i rotates dims (i, i + head_dim/2) by angle pos * f[i] (HF rotate-half layout).
        Base: f_i = rope_theta ** (-2i / head_dim). With llama3 scaling (Meta `apply_scaling`,
        HF `_compute_llama3_parameters`): wavelen = 2*pi / f; wavelen < orig/high_freq_factor
        keeps f; wavelen > orig/low_freq_factor gives f / factor; in between
        smooth = (orig/wavelen - low) / (high - low) and f' = (1 - smooth) * f/factor + smooth * f.
        Computed in float64; HF computes in float32 (relative difference ~1e-7).
        """
        exponents = np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim
        base = self.rope_theta ** -exponents
        if self.rope_scaling is None:
            return base
        s = self.rope_scaling
        factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        orig = s["original_max_position_embeddings"]
        low_freq_wavelen = orig / low    # longer waves than this are fully interpolated
        high_freq_wavelen = orig / high  # shorter waves than this are kept as trained
        wavelen = 2 * math.pi / base
        smooth = (orig / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * base / factor + smooth * base
        return np.where(wavelen < high_freq_wavelen, base,
                        np.where(wavelen > low_freq_wavelen, base / factor, smoothed))
