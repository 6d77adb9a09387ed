"""Writes and reads TileInfer packages (.tpkg): the byte layout of format_spec, nothing else.

Writing streams the weights tensor by tensor (a 1B model is 2.5 GB; it is never held as one
bytes object), hashing each section as it goes, into `<out>.tmp-<pid>`; the header and the
section table (which hold the hashes) are written last at offset 0, then the file is fsynced
and renamed over `out`, so a reader never sees half a package. Any failure removes the temp.

Reading checks, in order: size >= header, magic, format version, header/entry sizes, file
size == header's file_bytes (truncation), section table checksum, every known section present
once, aligned and inside the file, then (verify=True) each section's SHA-256. Record sections
become lists of dicts (names as str) and numpy structured arrays whose dtypes are derived from
format_spec.RECORDS; weights are a read-only memmap.
"""

import datetime
import hashlib
import json
import os
import stat
import struct
import sys
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

from absl import logging
import ml_dtypes
import numpy as np
import tqdm

from planner import format_spec as spec
from planner import paths
from planner import plan as plan_lib
from planner import weights as weights_lib
from planner.model_config import LlamaConfig
from planner.target import Target, target_from_json

PLANNER_VERSION = "0.1.0"
_CHUNK = 16 << 20  # bytes per write/hash call: large enough to stream at disk speed

_NP_CODES = {"I": "<u4", "i": "<i4", "H": "<u2", "Q": "<u8", "f": "<f4"}
_RECORD_OF_SECTION = {"tensors": "TensorRecord", "buffers": "BufferRecord",
                      "waves": "WaveRecord", "tasks": "TaskRecord"}
_NAME_FIELDS = {"TensorRecord": "name", "BufferRecord": "name"}
_DTYPE_NAMES = {v: k for k, v in spec.DTYPES.items()}
_NP_TENSOR_DTYPES = {"BF16": np.dtype(ml_dtypes.bfloat16), "F32": np.dtype("<f4")}


class PackageError(ValueError):
    """A package file that cannot be used: damaged, truncated, or of another format."""


def record_dtype(record: str) -> np.dtype:
    """numpy structured dtype of a format_spec record (packed, little-endian)."""
    fields = []
    for name, code, _ in spec.RECORDS[record]:
        fields.append((name, f"S{int(code[:-1])}" if code.endswith("s") else _NP_CODES[code]))
    dt = np.dtype(fields)
    assert dt.itemsize == spec.record_bytes(record), record
    return dt


def _records_to_array(record: str, rows: List[dict]) -> np.ndarray:
    dt = record_dtype(record)
    name_field = _NAME_FIELDS.get(record)
    out = np.zeros(len(rows), dtype=dt)
    for f in dt.names:
        vals = [r[f] for r in rows]
        if f == name_field:
            limit = dt[f].itemsize
            vals = [v.encode("utf-8") for v in vals]
            for v in vals:
                if len(v) >= limit:  # keep a NUL so C++ can read it as a C string
                    raise ValueError(f"{record} name {v!r} must be < {limit} bytes")
        out[f] = vals
    return out


def _array_to_records(arr: np.ndarray, record: str) -> List[dict]:
    names = arr.dtype.names
    name_field = _NAME_FIELDS.get(record)
    out = []
    for row in arr.tolist():
        d = dict(zip(names, row))
        if name_field:
            d[name_field] = d[name_field].rstrip(b"\0").decode("utf-8", "replace")
        out.append(d)
    return out


def _pad(n: int, align: int) -> int:
    return -(-n // align) * align


# --- tensor data ----------------------------------------------------------------------------

def iter_tensor_data(plan: plan_lib.Plan, weights: weights_lib.ModelWeights,
                     config: LlamaConfig) -> Iterator[Tuple[int, np.ndarray]]:
    """(tensor id, array) for every tensor of the plan, in table order, as packed.

    wqkv = [wq; wk; wv] (rows stacked); w_down_t = w_down.T (F, H); norms (H, 1);
    rope_inv_freq = config.rope_inv_freq() rounded to float32, (head_dim/2, 1).
    """
    for tid, t in enumerate(plan.tensors):
        name = t["name"]
        if name.startswith("layers."):
            _, l, field = name.split(".", 2)
            lw = weights.layers[int(l)]
            if field == "wqkv":
                arr = np.concatenate([lw.wq, lw.wk, lw.wv], axis=0)
            elif field == "w_down_t":
                arr = np.ascontiguousarray(lw.w_down.T)
            else:
                arr = getattr(lw, field)
        elif name == "rope_inv_freq":
            arr = np.asarray(config.rope_inv_freq(), dtype=np.float32)
        else:  # embed, final_norm, lm_head
            arr = getattr(weights, name)
        yield tid, arr


def _tensor_bytes_view(arr: np.ndarray, t: dict) -> memoryview:
    """The array's bytes as packed for record `t`, after checking shape and dtype."""
    want = _NP_TENSOR_DTYPES[_DTYPE_NAMES[t["dtype"]]]
    shape = (t["rows"], t["cols"])
    if arr.dtype != want or arr.size != t["rows"] * t["cols"] or (
            arr.shape != shape and arr.shape != (t["rows"],)):
        raise ValueError(f"tensor {t['name']}: got shape {arr.shape} {arr.dtype}, the plan "
                         f"packs {shape} {want}")
    arr = np.ascontiguousarray(arr)
    return memoryview(arr.reshape(-1).view(np.uint8))


# --- writing --------------------------------------------------------------------------------

class _HashingWriter:
    """File writer that hashes what it writes into the current section's SHA-256."""

    def __init__(self, f):
        self.f = f
        self.h = None

    def pad_to(self, offset: int) -> None:
        n = offset - self.f.tell()
        assert n >= 0
        self.write(b"\0" * n)

    def write(self, data) -> None:
        self.f.write(data)
        if self.h is not None:
            self.h.update(data)


def make_meta(plan: plan_lib.Plan, config: LlamaConfig, target: Target, source: str,
              stop_token_ids: Optional[List[int]] = None, created: Optional[str] = None
              ) -> dict:
    """The meta JSON object (format_spec docstring lists the keys)."""
    balance = plan_lib.byte_balance(plan)
    groups: Dict[tuple, dict] = {}
    for r in balance:
        key = (r.opcode, r.min_bytes, r.max_bytes)
        g = groups.setdefault(key, dict(opcode=r.opcode, waves=0, min_bytes=r.min_bytes,
                                        max_bytes=r.max_bytes, mean_bytes=r.mean_bytes,
                                        spread=round(r.spread, 6)))
        g["waves"] += 1
    wave_bytes = [0] * len(plan.waves)
    for t in plan.tasks:
        wave_bytes[t["wave"]] += plan_lib.task_weight_bytes(t, plan.tensors)
    summary = dict(
        weight_bytes=plan.weights_bytes,
        streamed_bytes_per_token=plan_lib.streamed_bytes_per_token(plan),
        kv_bytes_per_position=plan_lib.kv_bytes_per_position(config),
        wave_weight_bytes=wave_bytes,
        balance=list(groups.values()),
    )
    if target.bandwidth_gbps:
        summary["floor_ms_per_token"] = dict(
            bandwidth_gbps=target.bandwidth_gbps,
            ctx_1=round(plan_lib.floor_ms_per_token(plan, target.bandwidth_gbps, 1), 6),
            ctx_max=round(plan_lib.floor_ms_per_token(plan, target.bandwidth_gbps,
                                                      plan.max_context), 6))
    if created is None:
        created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    else:
        try:  # an ISO 8601 time with its offset, e.g. 2026-01-01T00:00:00Z or ...+00:00
            offset = datetime.datetime.fromisoformat(created).utcoffset()
        except (TypeError, ValueError):
            offset = None
        if offset is None:
            raise ValueError(f"created={created!r} is not an ISO 8601 time with a UTC offset, "
                             f"e.g. 2026-01-01T00:00:00Z")
    stops = list(config.eos_token_ids)
    for i in stop_token_ids or []:
        if i not in stops:
            stops.append(int(i))
    return {
        "format_version": spec.FORMAT_VERSION,
        "model": config.to_json(),
        "target": target.meta_json(),
        "plan": plan.params,
        "stop_token_ids": stops,
        "planner": {"version": PLANNER_VERSION, "source": source, "created": created},
        "summary": summary,
    }


def _json_bytes(obj) -> bytes:
    # allow_nan=False: C++ JSON parsers reject NaN/Infinity; better to fail here.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# write_package's temporary file beside the package: <path> + _TMP_SUFFIX + <pid>.
_TMP_SUFFIX = ".tmp-"
_PID_DIGITS_MAX = 10  # a pid_t (32-bit) in decimal


def remove_stale_temporaries(path: str) -> None:
    """Removes the `<path>.tmp-<pid>` files (write_package's temporary file) whose process no
    longer runs: a planner killed by a signal it cannot catch (SIGKILL, the OOM killer) leaves
    one behind, as large as the package. Logs each removal, and each such file whose process
    still runs (another planner writing the same path, or a reused pid), which stays.
    A file that cannot be removed is logged, not raised: writing the package does not need it.
    """
    directory, base = os.path.split(os.path.abspath(path))
    paths.remove_dead_temporaries(directory, base + _TMP_SUFFIX, directories=False, what="a temporary package file",
                                  output=path)


def check_out_path(path: str) -> None:
    """Refuses an output path the planner must not write: empty, in a directory that does
    not exist, naming something other than a regular file (a directory, a device, a FIFO, a
    socket or a symbolic link, which the atomic rename would replace by a file), or an
    existing file that is neither empty nor a package (it starts with format_spec.MAGIC):
    the rename would replace it, e.g. the checkpoint's own model.safetensors or a file of
    notes. Only the magic is read: a damaged package may be replaced.

    Raises:
      PackageError saying what the path is and what to give instead.
    """
    if not path:
        raise PackageError("the output path is empty: give the .tpkg file to write (--out)")
    if path.endswith(os.sep):
        raise PackageError(f"{path} ends in {os.sep!r}, so it names a directory: give the .tpkg file "
                           f"to write (--out)")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise PackageError(f"{path}: its directory {parent} does not exist: create it first, "
                           f"or give another --out")
    # write_package writes <name>.tmp-<pid> beside it first: that name must fit the file system.
    name_max = os.pathconf(parent, "PC_NAME_MAX")
    name_bytes = len(os.fsencode(os.path.basename(path)))
    room = name_max - len(_TMP_SUFFIX) - _PID_DIGITS_MAX
    if name_bytes > room:
        raise PackageError(f"{path}: its file name is {name_bytes} bytes; the planner first writes "
                           f"<name>{_TMP_SUFFIX}<pid> beside it, which the file system's {name_max}-byte "
                           f"names cannot hold: give a name of at most {room} bytes")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        try:
            with open(path, "rb") as f:
                head = f.read(len(spec.MAGIC))
        except OSError as e:
            raise PackageError(f"{path} exists and cannot be read ({e.strerror}), so the planner "
                               f"cannot tell whether it is a package it may replace: give a new "
                               f"path") from e
        if head and head != spec.MAGIC:
            raise PackageError(f"{path} exists and is not a TileInfer package (it does not start "
                               f"with {spec.MAGIC!r}): the planner replaces only an earlier "
                               f"package; give a new path, or remove that file first")
        return
    kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
            "a symbolic link" if stat.S_ISLNK(st.st_mode) else
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
    hint = (" (give the file it points to, or a new path)" if stat.S_ISLNK(st.st_mode)
            else "; give a new path or an existing package file")
    raise PackageError(f"{path} is {kind}: the planner writes a new file and renames it over "
                       f"--out, which would replace it{hint}")


def _nonfinite_count(arr: np.ndarray) -> int:
    """How many elements of a BF16 or F32 array are inf or NaN."""
    return int(arr.size - np.count_nonzero(np.isfinite(arr.astype(np.float32, copy=False))))


def write_package(path: str, plan: plan_lib.Plan, weights: weights_lib.ModelWeights,
                  config: LlamaConfig, target: Target, tokenizer_json: dict, source: str, *,
                  stop_token_ids: Optional[List[int]] = None, created: Optional[str] = None,
                  validate: bool = True, progress: Optional[bool] = None,
                  check: Optional[Callable[[str], None]] = None) -> int:
    """Writes a package atomically.

    Args:
      path: the .tpkg to create or replace.
      plan: from make_plan(config, target, ...).
      weights: bf16 arrays of `config` (checked with weights.check_shapes).
      config, target: those the plan was made from (checked).
      tokenizer_json: the "tokenizer" section (TokenizerSpec.to_json()).
      source: where the checkpoint came from (meta planner.source).
      stop_token_ids: extra stop ids beyond config.eos_token_ids.
      created: meta planner.created; default now (UTC, ISO 8601). Fixed for golden files;
        ValueError unless an ISO 8601 time with its UTC offset (2026-01-01T00:00:00Z).
      validate: run validate.validate_plan first (off only to write deliberately bad plans).
      progress: tqdm bar over the weights; None = only on a terminal.
      check: called with the finished temporary file's path before it is renamed to `path`
        (e.g. read it back and validate it); what it raises leaves `path` as it was.

    Returns:
      The file size in bytes.
    Raises:
      ValueError (or PlanError): plan, config, target or weights disagree.
      PackageError: `path` cannot be a package file (check_out_path).
      OSError: the file cannot be written. The temp file is removed on any failure, and an
        earlier file at `path` is left as it was.

    Weights with inf or NaN values are written (tests use them) with a warning per tensor:
    every request that reads them stops with a non-finite error.
    """
    if sys.byteorder != "little":
        raise RuntimeError("packages are little-endian; writing on a big-endian host is "
                           "not supported")
    if plan.config != config or plan.target != target:
        raise ValueError("write_package: plan was made for another config or target")
    weights_lib.check_shapes(weights, config)
    if validate:
        from planner import validate as validate_lib  # validate imports nothing of ours
        validate_lib.validate_plan(plan)
    meta = make_meta(plan, config, target, source, stop_token_ids, created)
    blobs = {
        "meta": _json_bytes(meta),
        "tokenizer": _json_bytes(tokenizer_json),
        "tensors": _records_to_array("TensorRecord", plan.tensors).tobytes(),
        "buffers": _records_to_array("BufferRecord", plan.buffers).tobytes(),
        "waves": _records_to_array("WaveRecord", plan.waves).tobytes(),
        "tasks": _records_to_array("TaskRecord", plan.tasks).tobytes(),
    }
    n = len(spec.SECTION_NAMES)
    table_end = spec.record_bytes("FileHeader") + n * spec.record_bytes("SectionEntry")

    path = os.fspath(path)
    check_out_path(path)
    remove_stale_temporaries(path)
    tmp = f"{path}{_TMP_SUFFIX}{os.getpid()}"
    try:
        f = open(tmp, "wb")
    except OSError as e:
        raise OSError(e.errno, f"cannot write {path} (its temporary file {tmp}): "
                               f"{e.strerror}") from e
    try:
        w = _HashingWriter(f)
        w.pad_to(table_end)  # header and table are written last, when the hashes are known
        entries = []
        for name in spec.SECTION_NAMES:
            w.pad_to(_pad(f.tell(), spec.SECTION_ALIGN))
            start = f.tell()
            w.h = hashlib.sha256()
            if name == "weights":
                _write_weights(w, plan, weights, config, progress)
            else:
                w.write(blobs[name])
            entries.append((name, start, f.tell() - start, w.h.digest()))
            w.h = None
        file_bytes = f.tell()
        table = b"".join(
            struct.pack(spec.struct_format("SectionEntry"), name.encode(), off, size, sha)
            for name, off, size, sha in entries)
        header = struct.pack(spec.struct_format("FileHeader"), spec.MAGIC,
                             spec.FORMAT_VERSION, spec.record_bytes("FileHeader"), n,
                             spec.record_bytes("SectionEntry"), file_bytes,
                             hashlib.sha256(table).digest())
        f.seek(0)
        f.write(header + table)
        f.flush()
        os.fsync(f.fileno())
        f.close()
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            f.close()  # flushes what is buffered: fails again after a write error
        except OSError:
            pass
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename is None:  # e.g. a full disk: say which file
            raise OSError(e.errno, f"cannot write {path}: {e.strerror}; nothing was written "
                                   f"there") from e
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return file_bytes


def _write_weights(w: _HashingWriter, plan, weights, config, progress) -> None:
    start = w.f.tell()
    with tqdm.tqdm(total=plan.weights_bytes, unit="B", unit_scale=True, desc="weights",
                   disable=(not progress) if progress is not None else None) as bar:
        expected = 0
        for tid, arr in iter_tensor_data(plan, weights, config):
            if tid != expected:
                raise ValueError(f"tensor data out of order: got id {tid}, expected {expected}")
            expected += 1
            t = plan.tensors[tid]
            bad = _nonfinite_count(arr)
            if bad:
                logging.warning("tensor %s holds %d inf / NaN values of %d: every request that "
                                "reads them will stop with a non-finite error; is the checkpoint "
                                "damaged?", t["name"], bad, arr.size)
            w.pad_to(start + t["offset"])
            data = _tensor_bytes_view(arr, t)
            for i in range(0, len(data), _CHUNK):
                w.write(data[i:i + _CHUNK])
                bar.update(min(_CHUNK, len(data) - i))
        if expected != len(plan.tensors):
            raise ValueError(f"tensor data for {expected} of {len(plan.tensors)} tensors")
    assert w.f.tell() - start == plan.weights_bytes


def _fsync_dir(d: str) -> None:
    """Makes the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- reading --------------------------------------------------------------------------------

class PackageView:
    """A package read back.

    Attributes:
      path: the file.
      meta, tokenizer: the JSON sections as dicts.
      tensors, buffers, waves, tasks: records as lists of dicts (names as str), the same form
        as Plan's, so validate_plan and byte_balance accept a view.
      arrays: {"tensors"|"buffers"|"waves"|"tasks": numpy structured array}.
      weights: read-only uint8 memmap of the weights section; weights_bytes its length.
      sections: {name: (offset, bytes, sha256 bytes)}.
    """

    def __init__(self, path, meta, tokenizer, arrays, weights, sections):
        self.path = path
        self.meta = meta
        self.tokenizer = tokenizer
        self.arrays = arrays
        self.tensors = _array_to_records(arrays["tensors"], "TensorRecord")
        self.buffers = _array_to_records(arrays["buffers"], "BufferRecord")
        self.waves = _array_to_records(arrays["waves"], "WaveRecord")
        self.tasks = _array_to_records(arrays["tasks"], "TaskRecord")
        self.weights = weights
        self.weights_bytes = len(weights)
        self.sections = sections
        self._ids = {t["name"]: i for i, t in enumerate(self.tensors)}

    @property
    def params(self) -> dict:
        """meta["plan"]."""
        return self.meta["plan"]

    @property
    def config(self) -> LlamaConfig:
        return LlamaConfig.from_json(self.meta["model"])

    @property
    def target(self) -> Target:
        return target_from_json(self.meta["target"], source=f"{self.path}: meta['target']")

    def tensor(self, name_or_id: Union[str, int]) -> np.ndarray:
        """A read-only view of one tensor, shape (rows, cols) (vectors are (n, 1)), dtype
        ml_dtypes.bfloat16 or float32.

        Raises:
          KeyError: no such tensor. PackageError: its bytes lie outside the weights section.
        """
        tid = self._ids[name_or_id] if isinstance(name_or_id, str) else int(name_or_id)
        if not 0 <= tid < len(self.tensors):
            raise KeyError(f"tensor id {tid} not in [0, {len(self.tensors)})")
        t = self.tensors[tid]
        dt = _NP_TENSOR_DTYPES.get(_DTYPE_NAMES.get(t["dtype"]))
        if dt is None:
            raise PackageError(f"{self.path}: tensor {t['name']} has dtype {t['dtype']}")
        n = t["rows"] * t["cols"] * dt.itemsize
        if t["offset"] + n > self.weights_bytes:
            raise PackageError(f"{self.path}: tensor {t['name']} bytes [{t['offset']}, "
                               f"{t['offset'] + n}) run past the weights section")
        return self.weights[t["offset"]:t["offset"] + n].view(dt).reshape(t["rows"], t["cols"])


def read_package(path: str, verify: bool = True) -> PackageView:
    """Opens a package.

    Args:
      path: the .tpkg file.
      verify: check every section's SHA-256 (reads the whole file once).
    Raises:
      PackageError: not a package, another format version, truncated, damaged (checksum
        mismatch naming the section), a missing section, bad JSON.
      OSError: the file cannot be opened.
    """
    path = os.fspath(path)
    hdr_fmt, ent_fmt = spec.struct_format("FileHeader"), spec.struct_format("SectionEntry")
    hdr_n, ent_n = struct.calcsize(hdr_fmt), struct.calcsize(ent_fmt)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(hdr_n)
        if len(head) < hdr_n:
            raise PackageError(f"{path}: {size} bytes, shorter than the {hdr_n}-byte header: "
                               f"truncated or not a TileInfer package")
        magic, version, header_bytes, count, entry_bytes, file_bytes, table_sha = \
            struct.unpack(hdr_fmt, head)
        if magic != spec.MAGIC:
            raise PackageError(f"{path}: not a TileInfer package (magic {magic!r}, expected "
                               f"{spec.MAGIC!r})")
        if version != spec.FORMAT_VERSION:
            raise PackageError(
                f"{path}: package format v{version}, this planner reads "
                f"v{spec.FORMAT_VERSION}: re-run the planner (bazel run //py/planner -- "
                f"--checkpoint=... --target=... --out={os.path.basename(path)})")
        if header_bytes != hdr_n or entry_bytes != ent_n:
            raise PackageError(f"{path}: header says header_bytes={header_bytes}, "
                               f"section_entry_bytes={entry_bytes}; v{version} has "
                               f"{hdr_n} and {ent_n}: damaged")
        if size != file_bytes:
            what = "truncated" if size < file_bytes else "has trailing bytes"
            raise PackageError(f"{path}: {size} bytes, the header says {file_bytes}: {what}")
        if hdr_n + count * ent_n > size or count > 1024:
            raise PackageError(f"{path}: section table of {count} entries does not fit")
        table = f.read(count * ent_n)
        if hashlib.sha256(table).digest() != table_sha:
            raise PackageError(f"{path}: checksum mismatch in the section table: damaged")
        sections = {}
        for k in range(count):
            name, off, n, sha = struct.unpack_from(ent_fmt, table, k * ent_n)
            name = name.rstrip(b"\0").decode("ascii", "replace")
            if name in sections:
                raise PackageError(f"{path}: section {name!r} appears twice")
            if off % spec.SECTION_ALIGN or off + n > size or off < hdr_n + count * ent_n:
                raise PackageError(f"{path}: section {name!r} at [{off}, {off + n}) is "
                                   f"misaligned or outside the file")
            sections[name] = (off, n, sha)
        spans = sorted((off, off + n, name) for name, (off, n, _) in sections.items())
        for (_, e0, n0), (a1, _, n1) in zip(spans, spans[1:]):
            if a1 < e0:
                raise PackageError(f"{path}: sections {n0!r} and {n1!r} overlap: damaged")
        # Unknown sections are ignored: a v1 reader needs only the v1 ones.
        for name in spec.SECTION_NAMES:
            if name not in sections:
                raise PackageError(f"{path}: missing section {name!r}")

    mm = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
    if verify:
        for name in spec.SECTION_NAMES:
            off, n, sha = sections[name]
            h = hashlib.sha256()
            for i in range(off, off + n, _CHUNK):
                h.update(memoryview(mm[i:min(i + _CHUNK, off + n)]))
            if h.digest() != sha:
                raise PackageError(f"{path}: checksum mismatch in section {name!r}: the file "
                                   f"is damaged; re-copy or re-plan it")

    def blob(name) -> bytes:
        off, n, _ = sections[name]
        return mm[off:off + n].tobytes()

    js = {}
    for name in ("meta", "tokenizer"):
        try:
            js[name] = json.loads(blob(name).decode("utf-8"))
        # ValueError covers bad UTF-8, bad JSON and an integer of over 4300 digits (Python's
        # int limit); RecursionError deep nesting. Both found by package_fuzz_test.py.
        except (ValueError, RecursionError) as e:
            raise PackageError(f"{path}: section {name!r} is not UTF-8 JSON: {e}") from None
        if not isinstance(js[name], dict):
            raise PackageError(f"{path}: section {name!r} must hold a JSON object")
    meta_version = js["meta"].get("format_version")
    if meta_version != spec.FORMAT_VERSION:
        raise PackageError(f"{path}: meta format_version={meta_version!r} disagrees with the "
                           f"header's v{spec.FORMAT_VERSION}: damaged")
    arrays = {}
    for name, record in _RECORD_OF_SECTION.items():
        data = blob(name)
        rb = spec.record_bytes(record)
        if len(data) % rb:
            raise PackageError(f"{path}: section {name!r} holds {len(data)} bytes, not a "
                               f"multiple of the {rb}-byte {record}")
        arrays[name] = np.frombuffer(data, dtype=record_dtype(record))
    off, n, _ = sections["weights"]
    return PackageView(path, js["meta"], js["tokenizer"], arrays, mm[off:off + n], sections)
