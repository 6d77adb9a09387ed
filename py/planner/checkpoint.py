"""Loads an HF Llama checkpoint (local directory or pinned hub id) into BF16 ModelWeights.

Layout read: config.json, optional generation_config.json, and either model.safetensors or
the shards named by model.safetensors.index.json. Tensors are read with the `safetensors`
library (framework "np"); BF16 arrives as `ml_dtypes.bfloat16` (safetensors resolves the
numpy dtype by the name "bfloat16", which exists only once ml_dtypes is imported — hence
the import below), FP16/FP32 are rounded to BF16 to nearest even by ml_dtypes' astype.

Head variants: tied with no lm_head tensor (lm_head = embed); tied with a duplicate
lm_head tensor (embed is used; a differing duplicate is warned about); untied (the
checkpoint's own lm_head is used and must exist).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from typing import Any

from absl import logging
import ml_dtypes  # noqa: F401  registers the "bfloat16" dtype name safetensors needs
import numpy as np
import safetensors
import tqdm

from planner import json_files
from planner import weights as weights_lib
from planner.model_config import ConfigError, LlamaConfig
from planner.weights import BF16, CheckpointError, ModelWeights

__all__ = ["Checkpoint", "CheckpointError", "load_checkpoint"]

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
# safetensors dtype strings we convert; anything else (I8, U8, F8_*, F64...) is refused.
_CONVERTIBLE = {"BF16", "F16", "F32"}
# Buffers some old exports saved; they are recomputed from the config, never read.
_IGNORED_TENSOR = re.compile(r"model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclasses.dataclass
class Checkpoint:
    """A loaded checkpoint: validated config, BF16 weights, where its tokenizer files are."""
    config: LlamaConfig
    weights: ModelWeights
    tokenizer_dir: pathlib.Path
    source_description: str


def _read_json(path: pathlib.Path, required: bool) -> dict | None:
    return json_files.read_json_object(path, CheckpointError, required,
                                       "; an HF checkpoint directory needs it")


def _resolve_hub(repo_id: str, revision: str | None) -> pathlib.Path:
    """Downloads (or finds cached) the files we need of `repo_id` at a pinned commit."""
    if revision is None or not _COMMIT.match(revision):
        raise CheckpointError(
            f"{repo_id!r} is not a directory here, and as a hub id it needs a pinned revision: "
            f"check the path, or pass the full 40-hex commit sha (got revision={revision!r}); "
            f"branch and tag names can move under a plan")
    import huggingface_hub  # deferred: local directories must not need it
    from huggingface_hub import errors as hf_errors
    try:
        path = huggingface_hub.snapshot_download(
            repo_id, revision=revision,
            allow_patterns=["*.json", "*.safetensors", "tokenizer*", "*.jinja"])
    except (hf_errors.RepositoryNotFoundError, hf_errors.RevisionNotFoundError,
            hf_errors.GatedRepoError) as e:
        raise CheckpointError(f"hub {repo_id}@{revision}: {type(e).__name__}: {e}") from e
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled,
            hf_errors.HfHubHTTPError, OSError) as e:
        # Offline (HF_HUB_OFFLINE=1) and unreachable hub both land here.
        raise CheckpointError(
            f"hub {repo_id}@{revision} is not in the local HF cache and the hub cannot be reached "
            f"({type(e).__name__}). Download it on a machine with network access, e.g. "
            f"`huggingface-cli download {repo_id} --revision {revision} --local-dir DIR`, copy DIR "
            f"here and pass the local directory instead of the hub id.") from e
    return pathlib.Path(path)


def _tensor_locations(root: pathlib.Path) -> tuple[dict[str, pathlib.Path], int]:
    """Maps tensor name -> file holding it; checks every shard the index names exists.

    model.safetensors first, then the index, in transformers' order (modeling_utils'
    _get_resolved_checkpoint_files): a folder holding both loads the single file there too.
    """
    index_path = root / INDEX_FILE
    single = root / SINGLE_FILE
    if single.is_file() and index_path.is_file():
        logging.warning("%s holds both %s and %s: reading %s, as transformers does (the index and "
                        "its shards are left out)", root, SINGLE_FILE, INDEX_FILE, SINGLE_FILE)
    if index_path.is_file() and not single.is_file():
        index = _read_json(index_path, required=True)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CheckpointError(f"{index_path}: no 'weight_map' object")
        bad = next(((k, v) for k, v in weight_map.items() if not isinstance(v, str) or not v), None)
        if bad is not None:
            raise CheckpointError(f"{index_path}: weight_map gives {bad[0]!r} the shard {bad[1]!r}, "
                                  f"not a file name; re-download the checkpoint")
        shards = sorted(set(weight_map.values()))
        for shard in shards:
            if not (root / shard).is_file():
                holders = sorted(k for k, v in weight_map.items() if v == shard)
                raise CheckpointError(
                    f"{root / shard}: shard named in {INDEX_FILE} is missing (it holds "
                    f"{len(holders)} tensors, e.g. {holders[0]}); re-download the checkpoint")
        return {name: root / shard for name, shard in weight_map.items()}, len(shards)
    if single.is_file():
        try:
            with safetensors.safe_open(single, framework="np") as f:
                return {name: single for name in f.keys()}, 1
        except Exception as e:  # safetensors raises its own SafetensorError on bad headers
            raise CheckpointError(f"{single}: cannot open as safetensors: {e}") from e
    extra = ""
    if any(root.glob("*.bin")) or any(root.glob("*.pth")):
        extra = " (found PyTorch .bin/.pth files: convert them to safetensors first)"
    raise CheckpointError(f"{root}: neither {SINGLE_FILE} nor {INDEX_FILE} found{extra}")


class _ShardReader:
    """Keeps one safe_open handle per shard and converts tensors to BF16 on read."""

    def __init__(self, locations: dict[str, pathlib.Path]):
        self._locations = locations
        self._handles: dict[pathlib.Path, Any] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._locations

    def _handle(self, path: pathlib.Path):
        if path not in self._handles:
            try:
                self._handles[path] = safetensors.safe_open(path, framework="np")
            except Exception as e:  # safetensors raises its own SafetensorError on bad headers
                raise CheckpointError(f"{path}: cannot open as safetensors: {e}") from e
        return self._handles[path]

    def held(self) -> dict[str, pathlib.Path]:
        """Every tensor name the files hold -> its file: a shard may hold a tensor its index does
        not name, which the index alone would hide."""
        names: dict[str, pathlib.Path] = {}
        for path in sorted(set(self._locations.values())):
            for name in self._handle(path).keys():
                names.setdefault(name, path)
        return names

    def read(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        path = self._locations.get(name)
        if path is None:
            raise CheckpointError(f"tensor {name} (expected shape {shape}) is missing from the "
                                  f"checkpoint; it is not a complete Llama checkpoint")
        f = self._handle(path)
        if name not in f.keys():
            raise CheckpointError(f"{path}: tensor {name} is listed in {INDEX_FILE} but not in "
                                  f"the file")
        sl = f.get_slice(name)
        dtype, got_shape = sl.get_dtype(), tuple(sl.get_shape())
        if dtype not in _CONVERTIBLE:
            raise CheckpointError(f"{path}: tensor {name} has dtype {dtype}; only BF16, F16 and "
                                  f"F32 are supported (quantised checkpoints: dequantise to BF16 "
                                  f"first)")
        if got_shape != shape:
            raise CheckpointError(f"{path}: tensor {name} has shape {got_shape}, expected {shape} "
                                  f"from config.json")
        array = f.get_tensor(name)
        # F32 -> BF16 and F16 -> BF16 round to nearest even in ml_dtypes (F16 is exact in F32).
        return array if array.dtype == BF16 else array.astype(BF16)

    def close(self):
        self._handles.clear()


def _load_dir(root: pathlib.Path, description: str) -> Checkpoint:
    config_json = _read_json(root / "config.json", required=True)
    gen_json = _read_json(root / "generation_config.json", required=False)
    try:
        config = LlamaConfig.from_hf(config_json, gen_json)
    except ConfigError as e:
        # The path names the file: not "config.json: " twice.
        raise CheckpointError(f"{root / 'config.json'}: {str(e).removeprefix('config.json: ')}") from e

    locations, n_files = _tensor_locations(root)
    reader = _ShardReader(locations)
    expected = weights_lib.expected_tensors(config)
    wanted = {name for name, _ in expected} | {weights_lib.LM_HEAD_NAME}
    present = {**reader.held(), **locations}  # the index's names, and any a shard holds besides
    unexpected = sorted(n for n in present if n not in wanted and not _IGNORED_TENSOR.match(n))
    if unexpected:
        # Unknown tensors mean an architecture variant we would decode wrongly (biases, extra
        # norms); refuse rather than ignore.
        raise CheckpointError(f"{present[unexpected[0]]}: unexpected tensor(s) "
                              f"{', '.join(unexpected[:5])}{' ...' if len(unexpected) > 5 else ''} "
                              f"for a Llama checkpoint")

    total = len(expected)
    try:
        with tqdm.tqdm(total=total, desc="loading tensors", unit="tensor", disable=None) as bar:
            def fetch(name, shape):
                array = reader.read(name, shape)
                bar.update(1)
                return array
            weights = weights_lib.build_weights(config, fetch)

        if config.tie_word_embeddings and weights_lib.LM_HEAD_NAME in reader:
            # Some exports store the tied head twice. The config is authoritative: use embed.
            dup = reader.read(weights_lib.LM_HEAD_NAME, (config.vocab_size, config.hidden_size))
            if not np.array_equal(dup.view(np.uint16), weights.embed.view(np.uint16)):
                logging.warning("%s: config says tie_word_embeddings=true but lm_head.weight "
                                "differs from model.embed_tokens.weight; using embed_tokens as "
                                "the config says", locations[weights_lib.LM_HEAD_NAME])
            else:
                logging.info("lm_head.weight duplicates the tied embedding; using the embedding")
    finally:
        reader.close()
    weights_lib.check_shapes(weights, config)

    if not (root / "tokenizer.json").is_file():
        logging.warning("%s: no tokenizer.json; text in/out will not be available", root)
    logging.info("loaded %s: %d layers, hidden %d, %d tensors from %d file(s)", description,
                 config.num_layers, config.hidden_size, total, n_files)
    return Checkpoint(config=config, weights=weights, tokenizer_dir=root,
                      source_description=f"{description} ({n_files} safetensors file(s))")


def load_checkpoint(source: str, revision: str | None = None) -> Checkpoint:
    """Loads a Llama checkpoint as BF16 weights.

    Args:
      source: a local HF directory, or a hub id "org/name" (then `revision` must be a full
        40-hex commit sha; the files come through huggingface_hub's cache).
      revision: commit sha for hub ids; ignored (with a warning) for local directories.

    Returns:
      Checkpoint(config, weights (bf16, HF orientation), tokenizer_dir, source_description).

    Raises:
      CheckpointError naming the file or tensor: not a Llama config, missing shard, missing
      tensor, wrong shape, unsupported dtype, unpinned or unreachable hub id.
    """
    path = pathlib.Path(os.path.expanduser(source))
    if path.is_dir():
        if revision is not None:
            logging.warning("revision=%s ignored for local directory %s", revision, path)
        return _load_dir(path.resolve(), f"local directory {path.resolve()}")
    if path.exists():
        hint = " (a GGUF file: run py/tools/gguf_import.py first)" if path.suffix == ".gguf" else ""
        raise CheckpointError(f"{source}: is a file, expected an HF checkpoint directory{hint}")
    if _HUB_ID.match(source) and not source.startswith((".", "/", "~")):
        root = _resolve_hub(source, revision)
        return _load_dir(root, f"hub {source}@{revision}")
    raise CheckpointError(f"{source}: no such directory, and not a hub id of the form org/name")
