"""Property test of read_package on damaged copies of the golden packages (issue 8).

Whatever the bytes, read_package must return a view or raise PackageError: never another
exception. Four kinds of damage: raw edits of the file (truncation, byte flips and sets, most
stopped by a checksum); header fields set to edge values; section-table entries edited and
the table re-signed; and one section replaced by edited bytes (any length, JSON text edits
included) in a re-laid-out, re-signed file, so that the damage reaches the JSON and record
parsing behind the checksums. The C++ reader's fuzzer is tests/fuzz (libFuzzer).

Deterministic (derandomize) and bounded to about 20 s; no example database is written.
"""

import hashlib
import os
import pathlib
import struct
import sys
import tempfile

import pytest

# Hypothesis caches under ./.hypothesis even with no example database: keep that out of the
# source tree when run by hand.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()),
                                   "hypothesis"))
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from planner import format_spec as spec  # noqa: E402
from planner.package import PackageError, read_package  # noqa: E402

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden"
GOLDENS = {p.name: p.read_bytes() for p in sorted(GOLDEN_DIR.glob("*.tpkg"))}

HDR = struct.Struct(spec.struct_format("FileHeader"))
ENT = struct.Struct(spec.struct_format("SectionEntry"))
HEADER_FIELDS = ("magic", "format_version", "header_bytes", "section_count",
                 "section_entry_bytes", "file_bytes")
EDGE_INTS = [0, 1, 2, 7, 8, 63, 64, 65, 1023, 1024, 1025, 4095, 4096, 4097, 2**31 - 1, 2**31,
             2**32 - 1, 2**63, 2**64 - 1]
# JSON text that has broken parsers: huge numbers, deep nesting, lone surrogates, bad UTF-8.
JSON_SNIPPETS = [b"1" * 5000, b"[" * 100000, b"{\"a\":" * 50000, b"1e999", b"-1e999", b"NaN",
                 b"Infinity", b"\"\\ud800\"", b"\xff\xfe", b"\xc3", b"null", b"[]", b"\"\"",
                 b"{}", b"0", b"-1", b"1.5", b"18446744073709551616", b"\x00"]

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def sections_of(data: bytes) -> list:
    """[(raw name, bytes)] of a well-formed package, in file order."""
    count = HDR.unpack_from(data, 0)[3]
    entries = sorted((off, name, data[off:off + n]) for name, off, n, _ in
                     (ENT.unpack_from(data, HDR.size + i * ENT.size) for i in range(count)))
    return [(name, blob) for _, name, blob in entries]


def _pad(n: int) -> int:
    return -(-n // spec.SECTION_ALIGN) * spec.SECTION_ALIGN


def build(sections: list) -> bytes:
    """A package of `sections` [(raw name, bytes)], laid out and signed as the writer does."""
    out = bytearray(_pad(HDR.size + len(sections) * ENT.size))
    table = bytearray()
    for name, blob in sections:
        out += bytes(_pad(len(out)) - len(out))
        table += ENT.pack(name, len(out), len(blob), hashlib.sha256(blob).digest())
        out += blob
    out[:HDR.size] = HDR.pack(spec.MAGIC, spec.FORMAT_VERSION, HDR.size, len(sections),
                              ENT.size, len(out), hashlib.sha256(bytes(table)).digest())
    out[HDR.size:HDR.size + len(table)] = table
    return bytes(out)


def resign_table(data: bytearray) -> None:
    if len(data) < HDR.size:
        return
    count = HDR.unpack_from(data, 0)[3]
    if HDR.size + count * ENT.size <= len(data):
        sha = hashlib.sha256(bytes(data[HDR.size:HDR.size + count * ENT.size])).digest()
        data[HDR.size - 32:HDR.size] = sha


def check_reads(data: bytes) -> None:
    """read_package on `data`, with and without section checksums: a view or PackageError."""
    fd, path = tempfile.mkstemp(suffix=".tpkg", dir=os.environ.get("TEST_TMPDIR"))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        for verify in (True, False):
            try:
                read_package(path, verify=verify)
            except PackageError:
                pass
    finally:
        os.unlink(path)


golden_names = st.sampled_from(sorted(GOLDENS))


def test_the_goldens_read():
    assert GOLDENS, f"no golden packages under {GOLDEN_DIR}"
    for name, data in GOLDENS.items():
        fd, path = tempfile.mkstemp(suffix=".tpkg", dir=os.environ.get("TEST_TMPDIR"))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        assert read_package(path).meta["format_version"] == spec.FORMAT_VERSION, name
        # The re-layout helper makes a file the reader accepts, so its damage is what counts.
        f2 = path + ".rebuilt"
        with open(f2, "wb") as f:
            f.write(build(sections_of(data)))
        assert read_package(f2).meta == read_package(path).meta
        os.unlink(path)
        os.unlink(f2)


@pytest.mark.parametrize("meta", [b"[" * 100000, b"1" * 5000], ids=["deep", "long_int"])
def test_meta_that_breaks_json_loads_is_a_package_error(meta, tmp_path):
    # json.loads raises RecursionError and ValueError (not JSONDecodeError) for these.
    sections = [(name, meta if name.rstrip(b"\0") == b"meta" else blob)
                for name, blob in sections_of(GOLDENS["tiny_9x3.tpkg"])]
    path = tmp_path / "m.tpkg"
    path.write_bytes(build(sections))
    with pytest.raises(PackageError, match="section 'meta' is not UTF-8 JSON"):
        read_package(str(path))


# Edits: ("truncate", n) | ("flip", position, bit) | ("set", position, byte).
def edits(size: int):
    position = st.one_of(st.integers(0, min(size, 8192) - 1), st.integers(0, size - 1))
    return st.lists(st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, size)),
        st.tuples(st.just("flip"), position, st.integers(0, 7)),
        st.tuples(st.just("set"), position, st.integers(0, 255))), min_size=1, max_size=8)


def apply(data: bytes, ops) -> bytearray:
    out = bytearray(data)
    for op in ops:
        if op[0] == "truncate":
            del out[op[1]:]
        elif op[1] < len(out):
            out[op[1]] = out[op[1]] ^ (1 << op[2]) if op[0] == "flip" else op[2]
    return out


@settings(max_examples=400, **SETTINGS)
@given(st.data())
def test_raw_edits(data):
    golden = GOLDENS[data.draw(golden_names)]
    out = apply(golden, data.draw(edits(len(golden))))
    if data.draw(st.booleans()):
        resign_table(out)
    check_reads(bytes(out))


@settings(max_examples=300, **SETTINGS)
@given(st.data())
def test_header_fields(data):
    out = bytearray(GOLDENS[data.draw(golden_names)])
    fields = list(HDR.unpack_from(out, 0))
    for _ in range(data.draw(st.integers(1, 3))):
        k = data.draw(st.integers(0, len(HEADER_FIELDS) - 1))
        limit = 2**64 - 1 if HEADER_FIELDS[k] == "file_bytes" else 2**32 - 1
        if k == 0:
            fields[0] = data.draw(st.one_of(st.binary(min_size=8, max_size=8),
                                            st.just(b"TILEPKG\x01")))
        else:
            fields[k] = data.draw(st.one_of(
                st.sampled_from([v for v in EDGE_INTS + [len(out), len(out) - 1, len(out) + 1]
                                 if v <= limit]),
                st.integers(0, limit)))
    HDR.pack_into(out, 0, *fields)
    if data.draw(st.booleans()):
        resign_table(out)
    check_reads(bytes(out))


@settings(max_examples=400, **SETTINGS)
@given(st.data())
def test_section_table_entries(data):
    out = bytearray(GOLDENS[data.draw(golden_names)])
    count = HDR.unpack_from(out, 0)[3]
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, count - 1))
        at = HDR.size + i * ENT.size
        entry = list(ENT.unpack_from(out, at))
        k = data.draw(st.integers(0, 2))
        if k == 0:
            entry[0] = data.draw(st.one_of(
                st.sampled_from([n.encode() for n in spec.SECTION_NAMES] + [b"", b"x" * 16]),
                st.binary(max_size=16)))
        else:
            entry[k] = data.draw(st.one_of(
                st.sampled_from(EDGE_INTS + [len(out), len(out) - 4096, entry[k] + 4096]),
                st.integers(0, len(out) + 8192), st.integers(0, 2**64 - 1)))
        ENT.pack_into(out, at, *entry)
    resign_table(out)
    check_reads(bytes(out))


@settings(max_examples=500, **SETTINGS)
@given(st.data())
def test_resigned_section_contents(data):
    sections = sections_of(GOLDENS[data.draw(golden_names)])
    i = data.draw(st.integers(0, len(sections) - 2))  # not the weights: nothing parses them
    name, blob = sections[i]
    blob = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "snippet", "record"]))
        at = data.draw(st.integers(0, len(blob)))
        if kind == "flip" and blob:
            blob[min(at, len(blob) - 1)] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "truncate":
            del blob[at:]
        elif kind == "insert":
            blob[at:at] = data.draw(st.binary(min_size=1, max_size=72))
        elif kind == "snippet":
            blob[at:at + data.draw(st.integers(0, 8))] = data.draw(st.sampled_from(JSON_SNIPPETS))
        else:  # a 4- or 8-byte little-endian field set to an edge value
            width = data.draw(st.sampled_from([4, 8]))
            value = data.draw(st.sampled_from([v for v in EDGE_INTS if v < 2**(8 * width)]))
            blob[at:at + width] = value.to_bytes(width, "little")
    sections[i] = (name, bytes(blob))
    check_reads(build(sections))


# --- refusals the property above cannot see (it accepts a view or a PackageError alike) ---

def read_bytes(data: bytes):
    """read_package on `data` written to a temporary file (removed after)."""
    fd, path = tempfile.mkstemp(suffix=".tpkg", dir=os.environ.get("TEST_TMPDIR"))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return read_package(path)
    finally:
        os.unlink(path)


def golden_sections():
    return sections_of(GOLDENS[sorted(GOLDENS)[0]])


def test_a_section_twice_is_refused():
    sections = golden_sections()
    meta = next(s for s in sections if s[0].rstrip(b"\0") == b"meta")
    with pytest.raises(PackageError, match=r"section 'meta' appears twice"):
        read_bytes(build(sections + [meta]))


def test_overlapping_sections_are_refused():
    out = bytearray(build(golden_sections()))
    count = HDR.unpack_from(out, 0)[3]
    entries = [list(ENT.unpack_from(out, HDR.size + i * ENT.size)) for i in range(count)]
    entries.sort(key=lambda e: e[1])
    first, second = entries[0], entries[1]  # the file's first two sections
    first[2] = second[1] - first[1] + spec.SECTION_ALIGN  # the first now runs into the second
    for i in range(count):
        at = HDR.size + i * ENT.size
        name = ENT.unpack_from(out, at)[0]
        ENT.pack_into(out, at, *next(e for e in entries if e[0] == name))
    resign_table(out)
    with pytest.raises(PackageError, match=r"sections .* overlap: damaged"):
        read_bytes(bytes(out))


@pytest.mark.parametrize("field, value, message", [
    ("header_bytes", HDR.size + 8, r"header says header_bytes=\d+, section_entry_bytes=\d+"),
    ("section_entry_bytes", ENT.size - 8, r"header says header_bytes=\d+, section_entry_bytes=\d+"),
])
def test_header_sizes_are_checked(field, value, message):
    out = bytearray(build(golden_sections()))
    fields = list(HDR.unpack_from(out, 0))
    fields[HEADER_FIELDS.index(field)] = value
    HDR.pack_into(out, 0, *fields)
    with pytest.raises(PackageError, match=message):
        read_bytes(bytes(out))


def test_a_section_table_that_does_not_fit_is_refused():
    out = bytearray(build(golden_sections()))
    fields = list(HDR.unpack_from(out, 0))
    fields[HEADER_FIELDS.index("section_count")] = 1025
    HDR.pack_into(out, 0, *fields)
    with pytest.raises(PackageError, match=r"section table of 1025 entries does not fit"):
        read_bytes(bytes(out))


@pytest.mark.parametrize("edit", ["misaligned", "past the end"])
def test_a_section_outside_the_file_or_misaligned_is_refused(edit):
    out = bytearray(build(golden_sections()))
    name, off, n, sha = ENT.unpack_from(out, HDR.size)
    if edit == "misaligned":
        off += 8
    else:
        n = len(out) - off + 1
    ENT.pack_into(out, HDR.size, name, off, n, sha)
    resign_table(out)
    with pytest.raises(PackageError, match=r"section '\w+' at \[\d+, \d+\) is misaligned or "
                                           r"outside the file"):
        read_bytes(bytes(out))


def test_meta_format_version_must_match_the_header():
    import json
    sections = golden_sections()
    i = next(k for k, s in enumerate(sections) if s[0].rstrip(b"\0") == b"meta")
    meta = json.loads(sections[i][1])
    meta["format_version"] = spec.FORMAT_VERSION + 1
    sections[i] = (sections[i][0], json.dumps(meta).encode())
    with pytest.raises(PackageError, match=r"meta format_version=\d+ disagrees with the header"):
        read_bytes(build(sections))


@pytest.mark.parametrize("name", ["meta", "tokenizer"])
def test_a_json_section_must_hold_an_object(name):
    sections = golden_sections()
    i = next(k for k, s in enumerate(sections) if s[0].rstrip(b"\0") == name.encode())
    sections[i] = (sections[i][0], b"[1, 2]")
    with pytest.raises(PackageError, match=rf"section '{name}' must hold a JSON object"):
        read_bytes(build(sections))


def test_a_record_section_of_a_partial_record_is_refused():
    sections = golden_sections()
    i = next(k for k, s in enumerate(sections) if s[0].rstrip(b"\0") == b"tasks")
    sections[i] = (sections[i][0], sections[i][1] + b"\0")
    with pytest.raises(PackageError, match=r"section 'tasks' holds \d+ bytes, not a multiple"):
        read_bytes(build(sections))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
