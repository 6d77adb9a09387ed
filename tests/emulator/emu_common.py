# Python helpers shared by the emulator's compare_*.py and mutate*.py (this folder; ffn/ and direct/
# add it to sys.path).
import os, re, subprocess, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "py"))
from planner import format_spec

# Package format 2's FIXED64 residual (format_spec): real(q) = q / TWO32; fix() only for |v| <= FIXED_MAX.
TWO32 = 2.0 ** format_spec.FIXED_FRACTION_BITS
FIXED_MAX = format_spec.FIXED_MAX_MAGNITUDE

def fix64(v):
    """format_spec fix() of the values v (taken as float64: a float32 v times 2^32 is exact, as in the
    kernel), rounded half to even -> (int64 values, the mask of values in range; 0 where out of it)."""
    v = np.asarray(v, dtype=np.float64)
    ok = np.isfinite(v) & (np.abs(v) <= FIXED_MAX)
    return np.where(ok, np.rint(np.where(ok, v, 0) * TWO32), 0).astype(np.int64), ok

def bf16_to_f64(u):
    """uint16 BF16 bits -> float64 values."""
    return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)

def bits_equal(a, b):
    """bitwise (uint32 views: -0.0 != +0.0, NaN payloads count)."""
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))

def run_bin(exe, args, fn):
    """run an emulator binary with args and output file fn; returns (CompletedProcess, reader or None
    when it wrote no file, e.g. a crash). The file is deleted after reading."""
    r = subprocess.run([exe, *map(str, args), fn], capture_output=True, text=True)
    if not os.path.exists(fn): return r, None
    raw = open(fn, "rb").read(); os.unlink(fn)
    return r, Reader(raw)

class Reader:
    """sequential reader of a binary's output file: take(n, dtype) -> the next n values."""
    def __init__(self, raw): self.raw, self.o = raw, 0
    def take(self, n, dt):
        sz = n*np.dtype(dt).itemsize; a = np.frombuffer(self.raw[self.o:self.o+sz], dt); self.o += sz; return a

def reports(r):
    """the checker's and harness's report lines of a run (everything but the final 'barriers ...' line)."""
    return [x for x in (r.stdout + r.stderr).strip().splitlines() if not x.startswith("barriers")]

def syncthreads_mutants(lines):
    """(line number, lines with that line's __syncthreads() deleted) for each line that has one."""
    for i, line in enumerate(lines):
        if re.search(r"__syncthreads\(\)", line):
            v = list(lines); v[i] = re.sub(r"__syncthreads\(\)", "/*DELETED*/(void)0", line)
            yield i + 1, v

# BF16 rounding and RoPE for the float64 references (direct/compare_da.py, attention/compare_at.py).
def bf16_round(x):
    """float64 -> nearest BF16 value (ties to even), exactly (no double rounding), as float64."""
    x = np.asarray(x, np.float64); out = np.zeros_like(x)
    nz = x != 0
    e = np.floor(np.log2(np.abs(x[nz])))
    ulp = np.exp2(e - 7)
    out[nz] = np.round(x[nz] / ulp) * ulp   # np.round: half to even
    return out
def f_to_bits(x):  # exact bf16 values (float64) -> uint16 bits
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
def ulp_dist(a, b):  # bf16 bits, same-sign ordering (values here are finite)
    def key(u):
        u = u.astype(np.int64); return np.where(u & 0x8000, -(u & 0x7FFF), u)
    return np.abs(key(a) - key(b))
def rope(x, ang):
    half = x.shape[-1] // 2; a, b = x[..., :half], x[..., half:]
    c, s = np.cos(ang), np.sin(ang)
    return np.concatenate([a*c - b*s, b*c + a*s], -1)
