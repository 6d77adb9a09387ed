"""Tests for planner.package: bit-exact round trip, every refusal, atomic writes."""

import hashlib
import logging
import os
import re
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from planner import format_spec as spec
from planner import known_configs
from planner import package
from planner import plan as plan_lib
from planner import target as target_lib
from planner import validate
from planner import weights as weights_lib
from planner.package import PackageError, read_package, write_package

BF16 = np.dtype(ml_dtypes.bfloat16)
TOKENIZER = {"kind": "byte_level_bpe", "vocab": ["a", "b"], "merges": [], "note": "héllo"}


def random_weights(config, seed=0):
    rng = np.random.default_rng(seed)
    return weights_lib.build_weights(
        config, lambda name, shape: rng.normal(0, 1, shape).astype(BF16))


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16 if a.dtype == BF16 else np.uint32)


@pytest.fixture(params=[True, False], ids=["tied", "untied"])
def model(request):
    config = known_configs.tiny(tied=request.param)
    target = target_lib.resolve_target("rtx3050")
    plan = plan_lib.make_plan(config, target, max_context=16, attention_min_chunk=4)
    return config, target, plan, random_weights(config)


def write(path, model, **kw):
    config, target, plan, weights = model
    return write_package(str(path), plan, weights, config, target, TOKENIZER, "test source",
                         created="2026-01-01T00:00:00+00:00", progress=False, **kw)


@pytest.fixture
def pkg(tmp_path):
    config = known_configs.tiny(tied=False)
    target = target_lib.resolve_target("rtx3050")
    plan = plan_lib.make_plan(config, target, max_context=16, attention_min_chunk=4)
    path = tmp_path / "m.tpkg"
    write(path, (config, target, plan, random_weights(config)))
    return path


def test_record_dtypes_match_the_struct_layout():
    for record in spec.RECORDS:
        dt = package.record_dtype(record)
        assert dt.itemsize == spec.record_bytes(record)
        assert list(dt.names) == spec.field_names(record)
    # One TaskRecord packed both ways gives the same bytes.
    values = list(range(1, len(spec.field_names("TaskRecord")) + 1))
    a = np.zeros(1, package.record_dtype("TaskRecord"))
    for f, v in zip(spec.field_names("TaskRecord"), values):
        a[f] = v
    assert a.tobytes() == struct.pack(spec.struct_format("TaskRecord"), *values)


def test_round_trip_is_bit_exact(tmp_path, model):
    config, target, plan, weights = model
    path = tmp_path / "m.tpkg"
    size = write(path, model)
    assert size == os.path.getsize(path)
    view = read_package(str(path))
    assert view.tensors == plan.tensors
    assert view.buffers == plan.buffers
    assert view.waves == plan.waves
    assert view.tasks == plan.tasks
    assert view.tokenizer == TOKENIZER
    assert view.meta["plan"] == plan.params
    assert view.meta["model"] == config.to_json()
    assert view.config == config
    assert view.target == target_lib.Target(**{**target.meta_json()})
    assert view.meta["stop_token_ids"] == [2]
    assert view.meta["planner"] == {"version": package.PLANNER_VERSION, "source": "test source",
                                    "created": "2026-01-01T00:00:00+00:00"}
    assert view.meta["summary"]["weight_bytes"] == plan.weights_bytes == view.weights_bytes
    validate.validate_plan(view)
    validate.validate_plan(view, target=target)

    def same(name, want):
        got = view.tensor(name)
        assert got.dtype == want.dtype and got.shape[0] == want.shape[0]
        assert np.array_equal(bits(got).reshape(-1), bits(want).reshape(-1)), name

    same("embed", weights.embed)
    for l, lw in enumerate(weights.layers):
        same(f"layers.{l}.wqkv", np.concatenate([lw.wq, lw.wk, lw.wv]))
        same(f"layers.{l}.w_down_t", lw.w_down.T)
        for f in ("attn_norm", "wo", "ffn_norm", "w_gate", "w_up"):
            same(f"layers.{l}.{f}", getattr(lw, f))
    same("final_norm", weights.final_norm)
    if not config.tie_word_embeddings:
        same("lm_head", weights.lm_head)
        assert view.tensor("lm_head").shape == (97, 72)
    rope = view.tensor("rope_inv_freq")
    assert rope.dtype == np.float32 and rope.shape == (4, 1)
    assert np.array_equal(rope[:, 0], config.rope_inv_freq().astype(np.float32))
    assert view.tensor(0).shape == (97, 72)
    # The file layout: aligned sections in SECTION_NAMES order, aligned tensors.
    offsets = [view.sections[n][0] for n in spec.SECTION_NAMES]
    assert offsets == sorted(offsets) and all(o % spec.SECTION_ALIGN == 0 for o in offsets)
    assert view.sections["weights"][0] + view.sections["weights"][1] == size


def test_writing_is_deterministic(tmp_path, model):
    write(tmp_path / "a.tpkg", model)
    write(tmp_path / "b.tpkg", model)
    assert (tmp_path / "a.tpkg").read_bytes() == (tmp_path / "b.tpkg").read_bytes()


def test_balance_and_view_helpers(pkg):
    view = read_package(str(pkg))
    rows = plan_lib.byte_balance(view)
    assert [r.opcode for r in rows] == ["RMSNORM_GEMV", "ATTN_OUT", "FFN"] * 2 + ["LM_HEAD"]
    assert view.meta["summary"]["balance"][0]["opcode"] == "RMSNORM_GEMV"
    with pytest.raises(KeyError):
        view.tensor("nope")


# --- refusals ------------------------------------------------------------------------------

def corrupt(path, offset, xor=0x01):
    data = bytearray(path.read_bytes())
    data[offset] ^= xor
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("section", ["weights", "tasks", "meta", "tensors"])
def test_flipped_byte_names_the_section(pkg, section):
    off, n, _ = read_package(str(pkg)).sections[section]
    at = off + n // 2
    if section == "meta":  # a number's second digit: the flipped JSON still parses (verify=False)
        data = pkg.read_bytes()
        while not (chr(data[at]).isdigit() and chr(data[at - 1]).isdigit()):
            at += 1
    corrupt(pkg, at)
    with pytest.raises(PackageError, match=f"checksum mismatch in section '{section}'"):
        read_package(str(pkg))
    read_package(str(pkg), verify=False)  # verify=False skips the section hashes


def test_flipped_byte_in_the_section_table(pkg):
    corrupt(pkg, 64 + 20)  # inside the first entry's offset field
    with pytest.raises(PackageError, match="checksum mismatch in the section table"):
        read_package(str(pkg))


def test_truncated(pkg):
    data = pkg.read_bytes()
    pkg.write_bytes(data[:-1])
    with pytest.raises(PackageError, match=r"\d+ bytes, the header says \d+: truncated"):
        read_package(str(pkg))
    pkg.write_bytes(data[:40])
    with pytest.raises(PackageError, match="shorter than the 64-byte header"):
        read_package(str(pkg))
    pkg.write_bytes(data + b"\0")
    with pytest.raises(PackageError, match="trailing bytes"):
        read_package(str(pkg))


def test_wrong_magic(pkg):
    corrupt(pkg, 0, 0x20)
    with pytest.raises(PackageError, match="not a TileInfer package"):
        read_package(str(pkg))


def test_newer_format_version(pkg):
    data = bytearray(pkg.read_bytes())
    struct.pack_into("<I", data, 8, spec.FORMAT_VERSION + 1)
    pkg.write_bytes(bytes(data))
    with pytest.raises(PackageError, match=re.escape(
            f"package format v{spec.FORMAT_VERSION + 1}, this planner reads "
            f"v{spec.FORMAT_VERSION}: re-run the planner (bazel run //py/planner -- ")):
        read_package(str(pkg))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_package(str(tmp_path / "absent.tpkg"))


def test_missing_section(pkg):
    # Rename the "waves" entry and re-sign the table: only the missing section is wrong.
    data = bytearray(pkg.read_bytes())
    k = spec.SECTION_NAMES.index("waves")
    struct.pack_into("16s", data, 64 + 64 * k, b"wavez")
    table = bytes(data[64:64 + 64 * len(spec.SECTION_NAMES)])
    data[32:64] = hashlib.sha256(table).digest()
    pkg.write_bytes(bytes(data))
    with pytest.raises(PackageError, match="missing section 'waves'"):
        read_package(str(pkg))


# --- writing failures --------------------------------------------------------------------------

def test_failure_midway_removes_the_temp_file_and_keeps_the_old_package(tmp_path, model,
                                                                        monkeypatch):
    path = tmp_path / "m.tpkg"
    write(path, model)
    before = path.read_bytes()
    real = package.iter_tensor_data

    def failing(plan, weights, config):
        for n, item in enumerate(real(plan, weights, config)):
            if n == 5:
                raise RuntimeError("disk on fire")
            yield item

    monkeypatch.setattr(package, "iter_tensor_data", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write(path, model)
    assert sorted(os.listdir(tmp_path)) == ["m.tpkg"]
    assert path.read_bytes() == before
    with pytest.raises(RuntimeError):
        write(tmp_path / "new.tpkg", model)
    assert sorted(os.listdir(tmp_path)) == ["m.tpkg"]


def test_temporary_files_of_ended_planners_are_removed(tmp_path, model, caplog):
    """A planner killed by SIGKILL leaves <out>.tmp-<pid>: the next write to that path removes
    it once no process <pid> runs, and leaves one whose process runs."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    path = tmp_path / "m.tpkg"
    stale, running = tmp_path / f"m.tpkg.tmp-{ended.pid}", tmp_path / f"m.tpkg.tmp-{os.getppid()}"
    other = tmp_path / f"other.tpkg.tmp-{ended.pid}"  # another package's: not this write's business
    for f in (stale, running, other):
        f.write_bytes(b"half a package")
    with caplog.at_level(logging.WARNING):
        write(path, model)
    assert sorted(os.listdir(tmp_path)) == sorted(["m.tpkg", running.name, other.name])
    assert f"removed {stale}" in caplog.text
    assert f"{running}: a temporary package file of process {os.getppid()}, which still runs" in caplog.text


def test_out_paths_that_are_not_regular_files_are_refused(tmp_path, model):
    fifo, link, target_file = tmp_path / "fifo", tmp_path / "link.tpkg", tmp_path / "t.tpkg"
    os.mkfifo(fifo)
    target_file.write_bytes(b"keep")
    os.symlink(target_file, link)
    (tmp_path / "dir.tpkg").mkdir()
    for path, kind in ((fifo, "a FIFO"), (link, "a symbolic link"), (tmp_path / "dir.tpkg", "a directory")):
        with pytest.raises(PackageError, match=f"is {kind}: the planner writes a new file"):
            write(path, model)
    assert fifo.exists() and not fifo.is_file() and link.is_symlink() and target_file.read_bytes() == b"keep"
    with pytest.raises(PackageError, match="does not exist: create it first"):
        write(tmp_path / "nowhere" / "m.tpkg", model)
    with pytest.raises(PackageError, match="output path is empty"):
        package.check_out_path("")
    # A trailing separator, and a name whose temporary <name>.tmp-<pid> would not fit (both
    # failed only when the temporary file was opened, after the checkpoint had loaded).
    with pytest.raises(PackageError, match=r"x\.tpkg/ ends in '/', so it names a directory"):
        package.check_out_path(f"{tmp_path}/x.tpkg/")
    with pytest.raises(PackageError, match=r"its file name is 250 bytes; .* give a name of at most 240 bytes"):
        package.check_out_path(str(tmp_path / ("m" * 245 + ".tpkg")))
    package.check_out_path(str(tmp_path / ("m" * 235 + ".tpkg")))  # 240 bytes: room for the suffix
    assert sorted(os.listdir(tmp_path)) == ["dir.tpkg", "fifo", "link.tpkg", "t.tpkg"]


def test_an_existing_file_that_is_not_a_package_is_kept(tmp_path, model):
    notes, weights = tmp_path / "notes.txt", tmp_path / "model.safetensors"
    notes.write_bytes(b"keep")
    weights.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    for path in (notes, weights):
        before = path.read_bytes()
        with pytest.raises(PackageError, match="exists and is not a TileInfer package"):
            write(path, model)
        assert path.read_bytes() == before
    empty, pkg = tmp_path / "empty.tpkg", tmp_path / "m.tpkg"
    empty.write_bytes(b"")
    write(empty, model)  # an empty file (e.g. a placeholder) holds nothing to lose
    write(pkg, model)
    damaged = bytearray(pkg.read_bytes())
    damaged[-1] ^= 0xFF
    pkg.write_bytes(bytes(damaged))
    write(pkg, model)  # a package, even a damaged one, is what --out replaces
    assert read_package(str(pkg)) is not None
    assert sorted(os.listdir(tmp_path)) == ["empty.tpkg", "m.tpkg", "model.safetensors", "notes.txt"]


def test_a_write_error_names_the_package(tmp_path, model, monkeypatch):
    def full_disk(plan, weights, config):
        raise OSError(28, "No space left on device")
        yield

    monkeypatch.setattr(package, "iter_tensor_data", full_disk)
    with pytest.raises(OSError, match=r"cannot write .*m\.tpkg: No space left on device; nothing"):
        write(tmp_path / "m.tpkg", model)
    assert os.listdir(tmp_path) == []


def test_a_file_size_limit_mid_write_removes_the_temp_file(tmp_path, model):
    # A real write error (EFBIG here, ENOSPC on a full disk) also fails the close() that
    # flushes the buffer: the cleanup must still remove the temporary file.
    import resource
    import signal
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (5000, hard))
    try:
        with pytest.raises(OSError, match=r"cannot write .*m\.tpkg: File too large"):
            write(tmp_path / "m.tpkg", model)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert os.listdir(tmp_path) == []


def test_a_failing_check_leaves_the_old_package(tmp_path, model):
    path = tmp_path / "m.tpkg"
    write(path, model)
    before = path.read_bytes()
    seen = []

    def check(tmp):
        seen.append(read_package(tmp).meta["plan"]["max_context"])  # the finished file reads
        raise ValueError("refused by the check")

    with pytest.raises(ValueError, match="refused by the check"):
        write(path, model, check=check)
    assert seen and path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["m.tpkg"]


def test_non_finite_weights_are_written_with_a_warning(tmp_path, model, caplog):
    config, target, plan, weights = model
    weights.layers[0].w_gate[3, 5] = np.inf
    weights.layers[0].w_gate[4, 1] = np.nan
    write(tmp_path / "m.tpkg", model)
    warned = [r.getMessage() for r in caplog.records if "inf / NaN" in r.getMessage()]
    assert warned == ["tensor layers.0.w_gate holds 2 inf / NaN values of "
                      f"{weights.layers[0].w_gate.size}: every request that reads them will stop "
                      "with a non-finite error; is the checkpoint damaged?"], warned


def test_wrong_weights_are_refused(tmp_path, model):
    config, target, plan, weights = model
    weights.layers[1].w_up = weights.layers[1].w_up[:, :-1]
    with pytest.raises(weights_lib.CheckpointError, match="model.layers.1.mlp.up_proj"):
        write(tmp_path / "m.tpkg", model)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("created", ["not a time", "2026-01-01T00:00:00", "", "2026-13-01T00:00:00Z"])
def test_created_must_be_a_time_with_its_offset(tmp_path, model, created):
    config, target, plan, weights = model
    with pytest.raises(ValueError, match="is not an ISO 8601 time with a UTC offset, e.g. 2026-01-01T00:00:00Z"):
        write_package(str(tmp_path / "m.tpkg"), plan, weights, config, target, {}, "x", progress=False,
                      created=created)
    assert os.listdir(tmp_path) == []


def test_plan_for_another_model_is_refused(tmp_path, model):
    config, target, plan, weights = model
    other = known_configs.tiny(layers=3)
    with pytest.raises(ValueError, match="another config or target"):
        write_package(str(tmp_path / "m.tpkg"), plan, random_weights(other), other, target,
                      {}, "x", progress=False)


def test_invalid_plan_is_refused_unless_asked(tmp_path, model):
    config, target, plan, weights = model
    plan.tasks[3]["row_begin"] -= 1
    with pytest.raises(validate.PlanError, match="two writers"):
        write(tmp_path / "m.tpkg", model)
    write(tmp_path / "m.tpkg", model, validate=False)  # for negative tests of the C++ side
    with pytest.raises(validate.PlanError, match="two writers"):
        validate.validate_plan(read_package(str(tmp_path / "m.tpkg")))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
