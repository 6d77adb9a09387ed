// The persistent worker: one cooperative launch executes up to kMaxStepsPerLaunch token
// steps of a validated plan. Block b is plan worker b; it runs its own tasks, wave by wave,
// and meets every other block at a grid barrier after each wave. It makes no scheduling
// decision: the plan fixed every task's worker and wave; only the token decides anything.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/op_attention.cuh"
#include "cuda/op_attn_out.cuh"
#include "cuda/op_embed.cuh"
#include "cuda/op_ffn.cuh"
#include "cuda/op_lm_head.cuh"
#include "cuda/op_rmsnorm_gemv.cuh"
#include "cuda/op_sample.cuh"
#include "cuda/select.h"
#include "cuda/worker.h"

namespace cg = cooperative_groups;

namespace tileinfer {
namespace device {

template <bool kWide>
__device__ __forceinline__ void RunTask(const format::TaskRecord& t, const StepContext& c) {
  switch (static_cast<format::Opcode>(t.opcode)) {
    case format::Opcode::EMBED: OpEmbed(t, c); break;
    case format::Opcode::RMSNORM_GEMV: OpRmsNormGemv<kWide>(t, c, c.p.hidden); break;
    case format::Opcode::ATTENTION: OpAttention<kWide>(t, c); break;
    case format::Opcode::ATTN_OUT: OpAttnOut<kWide>(t, c); break;
    case format::Opcode::FFN: OpFfn<kWide>(t, c); break;
    case format::Opcode::LM_HEAD: OpLmHead<kWide>(t, c); break;
    default: break;  // unreachable: the host validated every opcode
  }
}

__device__ __forceinline__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Trace records of the block's first thread (WorkerParams::trace).
__device__ __forceinline__ void TraceBegin(WorkerParams::TraceEvent* e) {
  e->begin_ns = GlobalTimer();
  e->begin_clk = clock64();
}
__device__ __forceinline__ void TraceEnd(WorkerParams::TraceEvent* e) {
  e->end_ns = GlobalTimer();
  e->end_clk = clock64();
}

// Ends the launch in every block (all reach it at the same step, so no barrier is left
// waiting); block 0's first thread records the count and the status.
__device__ __forceinline__ void Finish(const WorkerParams& p, bool recorder, int count, int32_t status) {
  if (recorder) {
    *p.out_count = count;
    *p.out_status = status;
  }
}

// kWide: the forms for hidden sizes above 2,048, head dims above 64 or not a multiple of 8 and groups
// above 4 and RMSNORM_GEMV's triples of rows compiled in, and the fallbacks inline (WorkerWide).
template <bool kWide>
__global__ void __launch_bounds__(kWorkerThreads, 1) WorkerKernel(WorkerParams p) {
  extern __shared__ float smem[];
  __shared__ float scratch[kWarps];
  __shared__ int s_next;
  cg::grid_group grid = cg::this_grid();
  const uint32_t worker = blockIdx.x;
  const uint32_t first = p.worker_task_begin[worker], last = p.worker_task_begin[worker + 1];
  const bool recorder = worker == 0 && threadIdx.x == 0;
  const void** tables = OperandTables(p, smem);  // StepContext reads them
  for (uint32_t k = threadIdx.x; k < p.n_tensors; k += kThreads) tables[k] = p.tensors[k];
  for (uint32_t k = threadIdx.x; k < p.n_buffers; k += kThreads) tables[p.n_tensors + k] = p.buffers[k];
  // The worker's records [first, last), copied to shared memory once (4-byte words).
  auto* records = reinterpret_cast<format::TaskRecord*>(reinterpret_cast<uint8_t*>(smem) + p.work_bytes + p.tables_bytes);
  const bool cached = p.records_bytes > 0;
  if (cached) {
    static_assert(sizeof(format::TaskRecord) % 4 == 0, "records are copied as 4-byte words");
    const uint32_t words = (last - first) * (sizeof(format::TaskRecord) / 4);
    const uint32_t* src = reinterpret_cast<const uint32_t*>(p.tasks + first);
    uint32_t* dst = reinterpret_cast<uint32_t*>(records);
    for (uint32_t k = threadIdx.x; k < words; k += kThreads) dst[k] = src[k];
  }
  __syncthreads();
  int token = p.forced[0];
  int count = 0;
  for (int s = 0; s < p.n_steps; ++s) {
    const int pos = p.start_pos + s;
    const bool logits = s >= p.first_logits_step;
    // The host's cancel word, read early (its latency hides behind wave 0), published before
    // the step's first barrier.
    const int32_t cancel_now = recorder ? *p.cancel : 0;
    bool cancel_published = false;
    const bool trace = p.trace != nullptr && pos == p.trace_pos && threadIdx.x == 0;
    const bool trace_block = p.trace != nullptr && pos == p.trace_pos;  // uniform over the block
    uint32_t i = first;
    for (int w = 0; w < p.n_waves; ++w) {
      const bool skip = w == p.lm_head_wave && !logits;  // uniform over the grid
      for (; i < last; ++i) {
        const format::TaskRecord t = cached ? records[i - first] : p.tasks[i];  // one copy into registers
        if (static_cast<int>(t.wave) != w) break;
        if (skip) continue;
        if (trace) TraceBegin(p.trace + i);
#ifdef TILEINFER_PHASE_TRACE
        unsigned long long* phases =
            trace && p.trace_phases != nullptr ? p.trace_phases + static_cast<size_t>(i) * kMaxPhases : nullptr;
        RunTask<kWide>(t, StepContext{p, token, pos, smem, scratch, phases});
#else
        RunTask<kWide>(t, StepContext{p, token, pos, smem, scratch});
#endif
        if (trace_block) {
          __syncthreads();
          if (trace) TraceEnd(p.trace + i);
        }
      }
      if (!skip) {
        if (recorder && !cancel_published) p.cancel_seen[s & 1] = cancel_now;
        cancel_published = true;
        if (trace) TraceBegin(p.trace + p.trace_entries + worker * p.n_waves + w);
        grid.sync();
        if (trace) TraceEnd(p.trace + p.trace_entries + worker * p.n_waves + w);
      }
    }
    // Every block read the same word: cancel_seen[s & 1] was written before this step's
    // first barrier and is rewritten only two steps later, after barriers all blocks pass.
    const bool cancelled = *static_cast<volatile int32_t*>(p.cancel_seen + (s & 1)) != 0;
    if (!logits) {
      if (cancelled) return Finish(p, recorder, count, kStatusCancelled);
      if (s + 1 < p.n_forced) token = p.forced[s + 1];
      continue;
    }
    const StepContext step{p, token, pos, smem, scratch};  // for Buffer(): the shared copies of the tables
    if (threadIdx.x == 0) s_next = SelectGreedy(static_cast<const Candidate*>(step.Buffer(p.buf_cand)), p.n_cand);
    __syncthreads();
    int next = s_next;
    __syncthreads();
    if (next == format::kCandidateNonFinite) return Finish(p, recorder, count, kStatusNonFinite);
    if (p.temperature > 0.0f) {  // block 0 samples; the others wait at one more barrier
      if (worker == 0) {
        const float* row = static_cast<const float*>(step.Buffer(p.buf_logits));
        const SampleInput in{row, p.vocab, row[next], p.temperature};
        const int sampled = SampleBlock(in, p.top_k, p.top_p, p.seed, static_cast<uint64_t>(pos),
                                        *reinterpret_cast<SampleShared*>(smem));
        if (threadIdx.x == 0) *p.sampled = sampled;
      }
      grid.sync();
      next = *static_cast<volatile int32_t*>(p.sampled);
    }
    if (recorder) *static_cast<volatile unsigned long long*>(p.out_slots + count) = StreamSlot(count, next);
    ++count;
    bool stop = false;
    for (int k = 0; k < p.n_stop_ids; ++k) stop |= next == p.stop_ids[k];
    if (stop) return Finish(p, recorder, count, kStatusStopToken);
    if (cancelled) return Finish(p, recorder, count, kStatusCancelled);
    token = s + 1 < p.n_forced ? p.forced[s + 1] : next;
  }
  Finish(p, recorder, count, kStatusDone);
}

// A test entry to the worker's sampler (op_sample.cuh) on one given row: one block, the
// largest logit (lowest id among ties) found serially, then SampleBlock as in the worker.
__global__ void __launch_bounds__(kWorkerThreads, 1) SampleRowKernel(const float* logits, int vocab, float temperature,
                                                                    int top_k, float top_p, unsigned long long seed,
                                                                    unsigned long long counter, int* out) {
  extern __shared__ float smem[];
  __shared__ int s_best;
  if (threadIdx.x == 0) {
    int best = 0;
    for (int i = 1; i < vocab; ++i) best = logits[i] > logits[best] ? i : best;
    s_best = best;
  }
  __syncthreads();
  const SampleInput in{logits, vocab, logits[s_best], temperature};
  const int token = SampleBlock(in, top_k, top_p, seed, counter, *reinterpret_cast<SampleShared*>(smem));
  if (threadIdx.x == 0) *out = token;
}

}  // namespace device

std::string SampleRowOnDevice(const std::vector<float>& logits, float temperature, int top_k, float top_p,
                              uint64_t seed, uint64_t counter, int* token) {
  float* d_logits = nullptr;
  int* d_out = nullptr;
  std::string err;
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess && err.empty()) err = std::string(what) + ": " + cudaGetErrorString(e);
    return err.empty();
  };
  if (check(cudaMalloc(&d_logits, logits.size() * sizeof(float)), "cudaMalloc") &&
      check(cudaMalloc(&d_out, sizeof(int)), "cudaMalloc") &&
      check(cudaMemcpy(d_logits, logits.data(), logits.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy")) {
    device::SampleRowKernel<<<1, kWorkerThreads, sizeof(device::SampleShared)>>>(
        d_logits, static_cast<int>(logits.size()), temperature, top_k, top_p, seed, counter, d_out);
    if (check(cudaGetLastError(), "SampleRowKernel launch") && check(cudaDeviceSynchronize(), "SampleRowKernel")) {
      check(cudaMemcpy(token, d_out, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
  }
  cudaFree(d_logits);
  cudaFree(d_out);
  return err;
}

size_t WorkerSharedBytes(int hidden, int q_dim, int head_dim, int group, int max_task_rows, int heads,
                         int chunks) {
  const size_t attention = static_cast<size_t>(group) * head_dim +
                           static_cast<size_t>(device::kWarps) * group * (head_dim + 2) +
                           (static_cast<size_t>(device::kWarps) + 1) * group;  // the merge's weights and maxima
  const size_t floats = std::max({static_cast<size_t>(hidden) + max_task_rows,
                                  static_cast<size_t>(q_dim) + 2 * static_cast<size_t>(heads) * chunks,  // ATTN_OUT
                                  attention,
                                  (sizeof(device::SampleShared) + sizeof(float) - 1) / sizeof(float)});
  return floats * sizeof(float);
}

bool WorkerWide(int hidden, int head_dim, int group) {
  return hidden > 4 * device::kNormVec * kWorkerThreads || head_dim > kNarrowMaxHeadDim || head_dim % 8 != 0 ||
         group > kNarrowMaxGroup;
}

namespace {
const void* WorkerKernelFor(bool wide) {
  return wide ? reinterpret_cast<const void*>(device::WorkerKernel<true>)
              : reinterpret_cast<const void*>(device::WorkerKernel<false>);
}
}  // namespace

std::string WorkerOccupancy(bool wide, size_t shared_bytes, int* blocks_per_sm, int* registers, int* local_bytes) {
  const void* kernel = WorkerKernelFor(wide);
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shared_bytes));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(err);
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, kernel, kWorkerThreads, shared_bytes);
  if (err != cudaSuccess) return std::string("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ") + cudaGetErrorString(err);
  cudaFuncAttributes attr;
  err = cudaFuncGetAttributes(&attr, kernel);
  if (err != cudaSuccess) return std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(err);
  *registers = attr.numRegs;
  *local_bytes = static_cast<int>(attr.localSizeBytes);
  return "";
}

std::string SetWorkerCarveout(bool wide, int percent) {
  if (percent < 0) return "";
  const cudaError_t err =
      cudaFuncSetAttribute(WorkerKernelFor(wide), cudaFuncAttributePreferredSharedMemoryCarveout, percent);
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute(carveout): ") + cudaGetErrorString(err);
  return "";
}

std::string WorkerStaticSharedBytes(bool wide, size_t* bytes) {
  cudaFuncAttributes attr;
  const cudaError_t err = cudaFuncGetAttributes(&attr, WorkerKernelFor(wide));
  if (err != cudaSuccess) return std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(err);
  *bytes = attr.sharedSizeBytes;
  return "";
}

std::string LaunchWorker(const WorkerParams& params, int workers, size_t shared_bytes) {
  const void* kernel = WorkerKernelFor(WorkerWide(params.hidden, params.head_dim, params.heads / params.kv_heads));
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shared_bytes));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(err);
  WorkerParams p = params;
  void* args[] = {&p};
  err = cudaLaunchCooperativeKernel(kernel, dim3(workers), dim3(kWorkerThreads), args, shared_bytes, nullptr);
  if (err != cudaSuccess) return std::string("cudaLaunchCooperativeKernel: ") + cudaGetErrorString(err);
  return "";
}

}  // namespace tileinfer
