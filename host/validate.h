// The runtime's own check of a plan before anything runs (mirrors py/planner/validate.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/package.h"

namespace tileinfer {

// A half-open element range [begin, end) of one buffer.
struct Range {
  uint32_t buffer;
  uint64_t begin, end;
};

// What one task reads and writes, in elements of ACTIVATION and CANDIDATES buffers, as the
// opcode's semantics in format_spec.py define it. K/V cache accesses are not listed: the
// cache is persistent and checked for size instead.
// `accumulates`: elements the task adds to with integer adds (FFN into the FIXED64
// residual), the one access several tasks of a barrier epoch may share, provided none of
// them reads or writes those elements in it (py/planner/validate.py task_accumulates).
struct TaskAccess {
  std::vector<Range> reads, writes, accumulates;
};
TaskAccess AccessOf(const format::TaskRecord& t, const ModelConfig& m);

// Throws Error naming the task (index, opcode, wave, worker) and the broken rule:
// ids and operand shapes, ranges in bounds, waves and task order, one writer per element
// per barrier epoch, no read of an element another task of the same epoch writes, no read
// or write of an element a task of the same epoch accumulates into, and every ACTIVATION
// read (and accumulation) preceded by a write in an earlier epoch of the token; the plan's
// workers within the target's; the row-split waves (EMBED, RMSNORM_GEMV, ATTN_OUT, FFN)
// covering their rows exactly once, an FFN wave's slots 0..ffn_parts-1 each once.
void ValidatePlan(const Package& pkg);

// Throws Error (saying to re-plan) when the package was made for another GPU or worker.
void CheckTarget(const Package& pkg, const std::string& gpu_name, int cc_major, int cc_minor,
                 int sm_count, const std::string& worker_fingerprint);

}  // namespace tileinfer
