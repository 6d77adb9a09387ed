"""ncu_regions on a hand-made SASS listing and ncu CSV whose sums are known."""
import pytest

from tools import ncu_regions

SASS = """\t.text.other
//--------------------- .text._ZN9tileinfer6device15SampleRowKernelEPKfififyyPi --------------------------
        /*0000*/                   MOV R1, c[0x0][0x28] ;
//--------------------- .text._ZN9tileinfer6device12WorkerKernelENS_12WorkerParamsE --------------------------
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "/x/cuda/op_ffn.cuh", line 25
        /*0010*/                   S2R R0, SR_TID.X ;
\t//## File "/x/cuda/common.cuh", line 150 inlined at "/x/cuda/op_ffn.cuh", line 37
        /*0020*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
\t//## File "/x/cuda/op_ffn.cuh", line 54
        /*0030*/                   LDG.E.128.CONSTANT R8, desc[UR4][R6.64] ;
\t//## File "/x/cuda/sm_30_intrinsics.hpp", line 10
        /*0040*/                   SHFL.BFLY PT, R3, R2, 0x1, 0x1f ;
\t//## File "/x/cuda/op_attention.cuh", line 100
        /*0050*/                   FFMA R1, R2, R3, R1 ;
//--------------------- .nv.info --------------------------
        /*0000*/                   NOP ;
"""

HEADER = ['"Address"', '"Source"', '"Warp Stall Sampling (All Samples)"', '"Instructions Executed"',
          '"stall_long_sb"', '"stall_no_inst"', '"stall_barrier"', '"stall_membar"']


def csv_text(rows):
    lines = ['"Kernel Name","tileinfer::device::WorkerKernel(tileinfer::WorkerParams)",', ",".join(HEADER)]
    for r in rows:
        lines.append(",".join('"%s"' % v for v in r))
    return "\n".join(lines) + "\n"


# Address (absolute; the first is the kernel's start), source, samples, executed, long_sb, no_inst,
# barrier, membar.
ROWS = [
    ("0x7f0000", "LDC R1, c[0x0][0x28]", 10, 100, 0, 10, 0, 0),
    ("0x7f0010", "S2R R0, SR_TID.X", 0, 0, 0, 0, 0, 0),
    ("0x7f0020", "LDG.E.128.CONSTANT R4, desc[UR4][R2.64]", 100, 50, 80, 5, 0, 15),
    ("0x7f0030", "LDG.E.128.CONSTANT R8, desc[UR4][R6.64]", 60, 30, 30, 0, 30, 0),
    ("0x7f0040", "SHFL.BFLY PT, R3, R2, 0x1, 0x1f", 40, 30, 0, 0, 40, 0),
    ("0x7f0050", "FFMA R1, R2, R3, R1", 20, 1000, "1,000", 0, 0, 0),
]


def test_regions_by_op_file_and_ffn_phase():
    owner, opcode = ncu_regions.sass_regions(SASS)
    assert owner == {0: "worker", 0x10: "ffn norm", 0x20: "ffn gate/up", 0x30: "ffn down", 0x40: "ffn down",
                     0x50: "attention"}
    assert opcode[0x20] == "LDG.E.128.CONSTANT"
    assert 0x60 not in owner  # the section after the kernel is not read


def test_sums_per_region():
    owner, opcode = ncu_regions.sass_regions(SASS)
    regions, differ, n = ncu_regions.summarize(owner, opcode, csv_text(ROWS))
    assert (differ, n) == (0, 6)
    down = regions["ffn down"]
    assert down[ncu_regions.TOTAL] == 100  # 60 + 40: the helper line after op_ffn.cuh's counts with it
    assert down["stall_barrier"] == 70
    assert down["exec KB"] == pytest.approx(32 / 1024)
    assert regions["ffn gate/up"]["stall_other"] == 15  # membar is not a shown column
    assert regions["ffn norm"]["exec KB"] == 0  # never executed
    assert regions["attention"]["stall_long_sb"] == 1000  # "1,000" as ncu writes thousands


def test_opcodes_that_differ_are_counted():
    owner, opcode = ncu_regions.sass_regions(SASS)
    rows = list(ROWS)
    rows[5] = ("0x7f0050", "FMUL R1, R2, R3", 20, 1000, 0, 0, 0, 0)
    _, differ, _ = ncu_regions.summarize(owner, opcode, csv_text(rows))
    assert differ == 1


def test_table_orders_by_first_build_and_shows_percentages():
    owner, opcode = ncu_regions.sass_regions(SASS)
    a = ncu_regions.summarize(owner, opcode, csv_text(ROWS))
    rows = list(ROWS)
    rows[2] = ("0x7f0020", "LDG.E.128.CONSTANT R4, desc[UR4][R2.64]", 200, 50, 100, 100, 0, 0)
    b = ncu_regions.summarize(owner, opcode, csv_text(rows))
    lines = ncu_regions.table([("A",) + a, ("B",) + b])
    assert lines[0].startswith("A: 6 instructions, 0 opcodes differ") and "230 samples" in lines[0]
    body = [l.split() for l in lines[3:]]
    assert body[0][:3] == ["ffn", "gate/up", "A"] and body[1][:3] == ["ffn", "gate/up", "B"]
    gate_b = next(r for r in body if r[:3] == ["ffn", "gate/up", "B"])
    # B's gate/up: 200 of 330 samples; no_inst 100 of 200.
    assert float(gate_b[5]) == pytest.approx(100 * 200 / 330, abs=0.05)
    assert float(gate_b[8]) == pytest.approx(50.0)


def test_two_kernel_builds_pick_the_kernel_asked_for():
    # WorkerKernel<false> under its template name reads as the old one; <true> only when asked.
    narrow = SASS.replace("WorkerKernelENS_12WorkerParamsE", "WorkerKernelILb0EEEvNS_12WorkerParamsE")
    assert ncu_regions.sass_regions(narrow) == ncu_regions.sass_regions(SASS)
    with pytest.raises(ValueError, match="WorkerKernelILb1E"):
        ncu_regions.sass_regions(narrow, wide=True)
    wide = SASS.replace("WorkerKernelENS_12WorkerParamsE", "WorkerKernelILb1EEEvNS_12WorkerParamsE")
    assert ncu_regions.sass_regions(wide, wide=True) == ncu_regions.sass_regions(SASS)
    with pytest.raises(ValueError, match="WorkerKernelILb0E"):
        ncu_regions.sass_regions(wide)


def test_bad_inputs_say_what_to_give():
    with pytest.raises(ValueError, match="WorkerKernel"):
        ncu_regions.sass_regions("//--- .text.other\n /*0000*/ NOP ;\n")
    owner, opcode = ncu_regions.sass_regions(SASS)
    with pytest.raises(ValueError, match="--page source"):
        ncu_regions.summarize(owner, opcode, '"a","b"\n"1","2"\n')
    with pytest.raises(ValueError, match="empty"):
        ncu_regions.summarize(owner, opcode, csv_text([]))
    with pytest.raises(ValueError, match="NAME=SASS:CSV"):
        ncu_regions.parse_build_arg("A=only.sass")
    assert ncu_regions.parse_build_arg("A=x.sass.xz:y.csv.xz") == ("A", "x.sass.xz", "y.csv.xz")
