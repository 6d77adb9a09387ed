"""The GPU a plan is made for: worker count and the compiled worker's resource budget.

A target comes from the probe of a real GPU or from a JSON file (targets/*.json), so a plan
for another GPU can be made on a machine without one. The planner only needs the worker
count; the rest is recorded in the package so the runtime can refuse a plan made for another
GPU or another build of the worker (see validate.check_target).

File format (all keys required except bandwidth_gbps; unknown keys are refused so that a
typo cannot silently fall back to a default):

    {"name": "NVIDIA H200", "compute_capability": [9, 0], "sm_count": 132,
     "workers_per_sm": 1, "threads_per_worker": 512, "registers_per_thread": 64,
     "shared_memory_per_worker": 0, "worker_fingerprint": "unprobed",
     "bandwidth_gbps": 4268}

worker_fingerprint "unprobed" means nobody has probed the compiled worker on that GPU yet:
the CPU executor ignores the fingerprint, the GPU runtime refuses such a package.
"""

import dataclasses
import json
import os
from typing import Optional, Tuple

UNPROBED = "unprobed"

# Target files shipped with the planner, by short name (--target=h200).
TARGETS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets")


class TargetError(ValueError):
    """A target description that is missing a key or holds an invalid value."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One GPU as the planner sees it.

    Attributes:
      name: the GPU name as the CUDA driver reports it, e.g. "NVIDIA H200".
      compute_capability: (major, minor), e.g. (9, 0).
      sm_count: streaming multiprocessors.
      workers_per_sm: resident worker blocks per SM (the persistent grid is sm_count * this).
      threads_per_worker: threads per worker block.
      registers_per_thread: the compiled worker's register budget.
      shared_memory_per_worker: bytes of shared memory per worker block.
      worker_fingerprint: hex digest of the compiled worker binary, or "unprobed".
      bandwidth_gbps: measured streaming read bandwidth in GB/s (1e9 bytes/s), for the
        predicted floor only; None when unknown.
    """
    name: str
    compute_capability: Tuple[int, int]
    sm_count: int
    workers_per_sm: int
    threads_per_worker: int
    registers_per_thread: int
    shared_memory_per_worker: int
    worker_fingerprint: str
    bandwidth_gbps: Optional[float] = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TargetError(f"target name={self.name!r} must be a non-empty string")
        cc = self.compute_capability
        if (not isinstance(cc, (tuple, list)) or len(cc) != 2
                or not all(_is_int(v) and v >= 0 for v in cc)):
            raise TargetError(f"compute_capability={cc!r} must be [major, minor] (ints)")
        object.__setattr__(self, "compute_capability", (int(cc[0]), int(cc[1])))
        if cc[0] > _INT32_MAX or cc[1] > _INT32_MAX:  # the runtime reads them as 32-bit ints
            raise TargetError(f"compute_capability={cc!r} is beyond a 32-bit int")
        for key in ("sm_count", "workers_per_sm", "threads_per_worker",
                    "registers_per_thread"):
            v = getattr(self, key)
            if not _is_int(v) or not 0 < v <= _INT32_MAX:
                raise TargetError(f"{key}={v!r} must be a positive int (32-bit)")
        if not _is_int(self.shared_memory_per_worker) or not 0 <= self.shared_memory_per_worker <= _INT32_MAX:
            raise TargetError(f"shared_memory_per_worker={self.shared_memory_per_worker!r} "
                              f"must be an int >= 0 (bytes, 32-bit)")
        if not isinstance(self.worker_fingerprint, str) or not self.worker_fingerprint:
            raise TargetError(f"worker_fingerprint={self.worker_fingerprint!r} must be a "
                              f"non-empty string (hex digest or {UNPROBED!r})")
        bw = self.bandwidth_gbps
        if bw is not None and (isinstance(bw, bool) or not isinstance(bw, (int, float))
                               or not 0 < bw < float("inf")):
            raise TargetError(f"bandwidth_gbps={bw!r} must be a positive finite number or absent")

    @property
    def workers(self) -> int:
        """Worker blocks of the persistent grid: sm_count * workers_per_sm."""
        return self.sm_count * self.workers_per_sm

    @property
    def probed(self) -> bool:
        return self.worker_fingerprint != UNPROBED

    def to_json(self) -> dict:
        """The target-file form (includes bandwidth_gbps when known)."""
        d = self.meta_json()
        if self.bandwidth_gbps is not None:
            d["bandwidth_gbps"] = self.bandwidth_gbps
        return d

    def meta_json(self) -> dict:
        """The package's meta["target"] object: exactly the keys format_spec documents."""
        return {
            "name": self.name,
            "compute_capability": list(self.compute_capability),
            "sm_count": self.sm_count,
            "workers_per_sm": self.workers_per_sm,
            "threads_per_worker": self.threads_per_worker,
            "registers_per_thread": self.registers_per_thread,
            "shared_memory_per_worker": self.shared_memory_per_worker,
            "worker_fingerprint": self.worker_fingerprint,
        }


_REQUIRED = tuple(f.name for f in dataclasses.fields(Target) if f.name != "bandwidth_gbps")
# local_bytes_per_thread: the probe's report of the worker's spills and stack (information
# for people; plans do not depend on it).
_OPTIONAL = ("bandwidth_gbps", "local_bytes_per_thread")


_INT32_MAX = 2**31 - 1


def _is_int(v) -> bool:
    # bool is an int subclass; `true` as an SM count is a broken file, not 1.
    return isinstance(v, int) and not isinstance(v, bool)


def target_from_json(d: dict, source: str = "target JSON") -> Target:
    """A Target from its JSON object (file form or meta["target"] form).

    Raises:
      TargetError naming `source` and the missing, unknown or invalid keys.
    """
    if not isinstance(d, dict):
        raise TargetError(f"{source}: expected a JSON object, got {type(d).__name__}")
    missing = [k for k in _REQUIRED if k not in d]
    unknown = sorted(set(d) - set(_REQUIRED) - set(_OPTIONAL))
    if missing or unknown:
        raise TargetError(
            f"{source}: missing key(s) {missing}, unknown key(s) {unknown}; a target file "
            f"needs exactly {list(_REQUIRED)} (+ optional {list(_OPTIONAL)})")
    try:
        return Target(**{k: v for k, v in d.items() if k != "local_bytes_per_thread"})
    except TargetError as e:
        raise TargetError(f"{source}: {e}") from None


def load_target(path: str) -> Target:
    """Reads a target file.

    Raises:
      TargetError: unreadable file, bad JSON, missing/unknown/invalid keys.
    """
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        raise TargetError(f"cannot read target file {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TargetError(f"target file {path} is not valid JSON (UTF-8): {e}") from None
    return target_from_json(d, source=path)


def shipped_targets() -> list:
    """Short names of the target files shipped in targets/ (e.g. ['h200', 'rtx3050'])."""
    return sorted(n[:-5] for n in os.listdir(TARGETS_DIR) if n.endswith(".json"))


def resolve_target(name_or_path: str) -> Target:
    """A shipped target by short name ("h200") or a target file by path.

    Raises:
      TargetError: neither a shipped name nor a readable target file.
    """
    if os.sep not in name_or_path and not name_or_path.endswith(".json"):
        path = os.path.join(TARGETS_DIR, name_or_path + ".json")
        if not os.path.exists(path):
            raise TargetError(f"unknown target {name_or_path!r}: shipped targets are "
                              f"{shipped_targets()}, or pass a path to a .json target file")
        return load_target(path)
    return load_target(name_or_path)
