// The persistent worker kernel's launch interface: a plain C++ header (no nvcc needed).
//
// One cooperative launch runs up to kMaxStepsPerLaunch consecutive token steps. Every block
// is one plan worker; it executes its own tasks wave by wave and meets the others at a grid
// barrier after each wave. Between steps every block picks the next token from the LM_HEAD
// candidate slots by the same rule (largest logit, lowest id among ties), so all blocks agree
// without any extra communication; block 0 records it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/plan_format.h"

namespace tileinfer {

inline constexpr int kWorkerThreads = 512;        // threads per worker block
inline constexpr int kMaxStepsPerLaunch = 64;     // token steps per cooperative launch
inline constexpr int kMaxStopIds = 16;
inline constexpr int kGpuMaxHeadDim = 128;        // head_dim the GPU path supports
inline constexpr int kGpuMaxGroup = 8;            // query heads per K/V head it supports
inline constexpr int kNarrowMaxHeadDim = 64;      // head_dim the narrow worker kernel runs (WorkerWide; a multiple of 8)
inline constexpr int kNarrowMaxGroup = 4;         // query heads per K/V head it runs
inline constexpr int kMaxPhases = 6;              // phase marks per task (WorkerParams::trace_phases)

// Status words the kernel leaves for the host (device memory, int32 each).
enum WorkerStatus : int32_t {
  kStatusRunning = 0,
  kStatusDone = 1,        // ran every step it was given
  kStatusStopToken = 2,   // generated a stop token (recorded as the last token)
  kStatusNonFinite = 3,   // a non-finite logit: the request stopped, no token recorded
  kStatusCancelled = 4,   // the host asked it to stop (its cancel word); ended after a step
};

// Slot n of the streamed tokens: (n + 1) << 32 | token n, so that a slot is either still
// zero or complete (one 8-byte store).
#ifdef __CUDACC__
__host__ __device__
#endif
inline constexpr uint64_t StreamSlot(int n, int32_t token) {
  return (static_cast<uint64_t>(n + 1) << 32) | static_cast<uint32_t>(token);
}

struct WorkerParams {
  // Plan (device copies of the package records).
  // Task list entry i is tasks[i]: the plan's records grouped by worker, in wave order
  // (copies, so that a worker reads its next task with one load, not an index first).
  const format::TaskRecord* tasks;
  const uint32_t* worker_task_begin;  // workers + 1 offsets into tasks
  int n_waves;
  int lm_head_wave;                   // skipped on steps whose logits nobody reads

  // Operands by id.
  const void* const* tensors;         // device pointer per tensor id
  void* const* buffers;               // device pointer per buffer id (ACTIVATION F32: float*, FIXED64: long long*)

  // Dynamic shared memory: a work area (work_bytes); then the operand tables (tables_bytes:
  // n_tensors tensor addresses, then n_buffers buffer addresses), copied once per launch so
  // that a task finds its operands' addresses on chip: the grid barrier's polls invalidate L1
  // (CCTL.IVALL in the SASS of grid.sync() as nvcc 13 builds it for sm_90), so reading
  // `tensors` or `buffers` after a barrier would be an L2 round trip ahead of each task's first
  // load of data; then the worker's own task records, copied once per launch so that each
  // task reads its record on chip (records_bytes 0: read from `tasks` in global memory, e.g.
  // when they do not fit).
  uint32_t work_bytes;
  uint32_t tables_bytes;
  uint32_t n_tensors, n_buffers;
  uint32_t records_bytes;

  // Model.
  int hidden, heads, kv_heads, head_dim;
  float rms_norm_eps;
  int max_context;
  int attention_min_chunk;            // plan.attention_min_chunk (== ATTENTION param2)
  int attention_tile_min;             // ATTENTION in tiles in steps whose chunks hold >= this (op_attention.cuh)
  uint32_t buf_cand;
  int n_cand;
  uint32_t buf_logits;
  int vocab;

  // Device word: how many fix() conversions of the residual (FIXED64, format_spec) saw a
  // value outside their range since the request's first step; nonzero makes every LM_HEAD
  // candidate kCandidateNonFinite. The host zeroes it before a launch that starts at
  // position 0.
  unsigned long long* residual_invalid;

  // Sampling (cuda/sample.h); temperature 0: greedy from the candidate slots.
  float temperature;
  int top_k;
  float top_p;
  unsigned long long seed;            // the draw of step s uses counter start_pos + s
  int32_t* sampled;                   // device word: block 0's sampled id

  // This launch: step s runs input token forced[s] when s < n_forced, else the token chosen
  // from the previous step's candidates. Positions are start_pos + s. Steps before
  // first_logits_step skip LM_HEAD and choose nothing (prompt positions).
  int start_pos;
  int n_steps;
  const int32_t* forced;
  int n_forced;
  int first_logits_step;
  int stop_ids[kMaxStopIds];
  int n_stop_ids;

  // Results: tokens chosen at steps >= first_logits_step, streamed to host-mapped slots
  // (StreamSlot; the host zeroes them before the launch); their count and the status word
  // (device memory) at the end.
  unsigned long long* out_slots;
  int32_t* out_count;
  int32_t* out_status;
  // Cancel: block 0 reads the host-mapped word at the start of each step and passes what it
  // read to every block through cancel_seen[step % 2] (device), read after a grid barrier,
  // so that all blocks stop after the same step.
  const volatile int32_t* cancel;
  int32_t* cancel_seen;

  // Trace (nullptr: off). For the step at position trace_pos, block b's first thread records
  // TraceEvent pairs: for task list entry i, trace[i] = (start, end); for wave w, at
  // trace[n_entries + b * n_waves + w] = (arrival at the grid barrier, exit from it).
  // Task ends are taken after a block-wide __syncthreads (so tracing perturbs a little).
  struct TraceEvent {
    unsigned long long begin_ns, end_ns;    // %globaltimer
    unsigned long long begin_clk, end_clk;  // clock64 of the SM
  };
  TraceEvent* trace;
  int trace_pos;
  int trace_entries;                  // task list entries (the barriers' records follow)
#ifdef TILEINFER_PHASE_TRACE
  // Phase trace, a measurement build only (bazel --define=phase_trace=1; without it the
  // field does not exist and the kernel's parameters are as before). In the traced step,
  // the first thread of the block running task list entry i stores clock64() at the task's
  // phase boundary k (PhaseMark, cuda/common.cuh) in trace_phases[i * kMaxPhases + k];
  // 0 = no mark. nullptr: off.
  unsigned long long* trace_phases;
#endif
};

// The work area (bytes of dynamic shared memory) the ops need for this model and plan;
// `max_task_rows` is the most FFN rows of one task, `chunks` the plan's attention chunks per
// K/V head (ATTN_OUT keeps two floats per head and chunk beside its Q merged values). The
// launch rounds it up to 16 bytes (WorkerParams::work_bytes) and adds the operand tables
// (WorkerTablesBytes) and, when they fit, the records.
size_t WorkerSharedBytes(int hidden, int q_dim, int head_dim, int group, int max_task_rows, int heads,
                         int chunks);

// Bytes of the operand tables' copies in shared memory (WorkerParams::tables_bytes): one
// device address per tensor and per buffer, rounded up to 16 bytes so that the records after
// them stay 16-byte aligned.
inline size_t WorkerTablesBytes(size_t n_tensors, size_t n_buffers) {
  return ((n_tensors + n_buffers) * sizeof(void*) + 15) & ~size_t{15};
}

// The worker is compiled twice (cuda/worker.cu WorkerKernel<kWide>): the wide kernel adds
// RmsNormToShared's form for hidden sizes above 2,048 (cuda/common.cuh) and ATTENTION for head
// dims above 64 or not a multiple of 8 and groups above 4 query heads a K/V head
// (cuda/op_attention.cuh: the tiles in one pass, AttendChunkTiles<true>, the positions one by
// one, the batches of positions) and RMSNORM_GEMV's triples of rows; the other is the same code
// without them, and with the fallbacks for rows and sizes that no measured model has out of line
// (cuda/common.cuh, WarpDotBf16Scalar), so that models with hidden sizes of 2,048 or less, head
// dims of 64 or less that are multiples of 8 (kNarrowMaxHeadDim) and groups of 4 or less
// (kNarrowMaxGroup), as Llama 3.2 1B and SmolLM2, run code the wide forms do not move
// (docs/PERFORMANCE.md, v51t, v52, v53, v53b, v54n). True when a model of this hidden size,
// head_dim and group (heads / kv_heads) runs the wide kernel; every function below takes that
// choice, LaunchWorker from params.hidden, head_dim, heads, kv_heads.
bool WorkerWide(int hidden, int head_dim, int group);

// Occupancy of the compiled kernel: blocks per SM for `shared_bytes`, registers per thread,
// local (spill) bytes per thread. Returns a CUDA error string, empty on success.
std::string WorkerOccupancy(bool wide, size_t shared_bytes, int* blocks_per_sm, int* registers, int* local_bytes);

// The worker's preferred split of each SM's unified L1 / shared memory
// (cudaFuncAttributePreferredSharedMemoryCarveout): percent of the maximum shared memory,
// 0 = as much L1 as the launch's shared memory allows, -1 = the driver's choice (nothing
// set). Global loads in flight occupy L1 lines, so the carveout bounds the bytes a worker
// can have in flight. Returns a CUDA error string, empty on success.
std::string SetWorkerCarveout(bool wide, int percent);

// Static shared memory (bytes) the compiled kernel uses beside the dynamic part.
std::string WorkerStaticSharedBytes(bool wide, size_t* bytes);

// Cooperative launch of `workers` blocks of the kernel for params' shape (WorkerWide).
// Returns a CUDA error string, empty on success.
std::string LaunchWorker(const WorkerParams& params, int workers, size_t shared_bytes);

// The worker's in-kernel sampler (cuda/op_sample.cuh) run alone on one finite row of logits,
// for tests against the CPU sampler. Returns a CUDA error string, empty on success.
std::string SampleRowOnDevice(const std::vector<float>& logits, float temperature, int top_k, float top_p,
                              uint64_t seed, uint64_t counter, int* token);

// SHA-256 (hex) of the worker's device code as built (the fatbinary).
const char* WorkerFingerprint();

}  // namespace tileinfer
