// The GPU path: uploads a validated package once, then runs it with the persistent worker,
// one cooperative launch per up to 64 token steps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/worker.h"
#include "host/executor.h"
#include "host/generate.h"
#include "host/package.h"

namespace tileinfer {

struct GpuOptions {
  // Refuse packages made for another GPU, SM count or worker fingerprint (see CheckTarget).
  bool check_target = true;
  // Copy each worker's task records to its shared memory once per launch when they fit
  // (WorkerParams::records_bytes); false: every task reads its record from global memory.
  bool cache_records = true;
  // The worker's L1 / shared-memory split, percent of the maximum shared memory (0: most
  // L1; -1: the driver's choice). See SetWorkerCarveout (cuda/worker.h); 0..100.
  int carveout = -1;
  // ATTENTION: steps whose chunk length (positions a chunk, the same for all chunks of the
  // step) is at least this are attended in tiles of positions over lanes (cuda/op_attention.cuh),
  // other steps position by position; >= 1, or 0 (the default): AttentionTileMin's choice.
  int attention_tile_min = 0;
  // A launch still running after this many seconds is reported as an error (a hang, or a
  // GPU far slower than any this was measured on; under compute-sanitizer racecheck a tiny
  // model's 64-step launch takes ~20 s). The executor is unusable afterwards.
  double launch_timeout_s = 600;
};

// GpuOptions::attention_tile_min as the worker gets it (WorkerParams::attention_tile_min):
// `option` when it is not 0, else kDefaultAttentionTileMin, for every head_dim: each kernel's
// tiles read a chunk's K rows once (the narrow kernel runs head dims up to 64, the wide one
// holds every head dim up to 128 in one pass; cuda/worker.h WorkerWide). 65 is where
// AttendChunk would batch its positions (chunks over 4 x kWarps = 64); on the H200 the tiles
// beat the batches by 6% (1B at 96 positions, SmolLM2 at 70 and 93) and lose 1.4% to the
// unbatched loop (1B at 64; docs/PERFORMANCE.md, call S); one pass beat position by position
// by 0.6-1.3% a Llama-3.2-3B-shaped token at contexts 256-4096 (calls ON, V52, V52B). The
// narrow kernel's old tiles for head_dim 128 took two passes, each reading the chunk's K rows,
// and lost to position by position by 6.5-10.5% (call TM); since v53 no such model runs it.
inline constexpr int kDefaultAttentionTileMin = 65;
inline int AttentionTileMin(int option) { return option != 0 ? option : kDefaultAttentionTileMin; }

class GpuExecutor : public Executor {
 public:
  // Throws Error when there is no GPU, the package was made for another target, the grid
  // cannot be co-resident (more workers than blocks_per_sm x SMs), the model exceeds the
  // GPU path's limits, or device memory is short (with the bytes needed and free).
  GpuExecutor(const Package& pkg, const GpuOptions& options = {});
  ~GpuExecutor() override;

  std::string name() const override;
  void Step(int token, int pos, bool logits) override;
  // After a Step with logits: the token the worker chose (greedy, or sampled per
  // set_step_sampling), or kCandidateNonFinite.
  int32_t Select() override { return last_selected_; }
  // Sampling options of the worker for Step (default: greedy); Generate takes its own.
  void set_step_sampling(const SamplingOptions& options);
  std::vector<float> Logits() override;
  GenerateResult Generate(const std::vector<int>& prompt, const GenerateOptions& options) override;

  // Milliseconds of the last launch (CUDA events).
  float last_launch_ms() const { return last_launch_ms_; }

  // One launch of tokens.size() (1..kMaxStepsPerLaunch) forced steps at positions
  // start_pos.., logits at every step (the benchmark's steady state: each step's K/V row is
  // rewritten with the same token, so repeating a window changes nothing). Returns the
  // launch's milliseconds (CUDA events). Positions in order, as Step's (KvHistory).
  float RunForcedWindow(const std::vector<int>& tokens, int start_pos);

  // Trace the step at position `pos` of later launches (pos < 0: off). See
  // WorkerParams::trace for what is recorded.
  void set_trace(int pos);
  // The last trace: one event per task list entry (task index task_order()[i]), then one per
  // worker and wave (the grid barrier: arrival, exit). All zero when no traced step ran.
  std::vector<WorkerParams::TraceEvent> TraceEvents() const;
  // The last trace's phase marks (WorkerParams::trace_phases): kMaxPhases SM clocks per task
  // list entry, 0 = no mark. Empty unless this is a phase-trace build (bazel
  // --define=phase_trace=1) and set_trace was called.
  std::vector<unsigned long long> TracePhases() const;
  const std::vector<uint32_t>& task_order() const { return task_order_; }

 private:
  struct Launch {
    int start_pos, n_steps, first_logits_step, n_stop_ids;
    std::vector<int32_t> forced;
    SamplingOptions sampling;
  };
  // Runs one launch. Each token the worker chooses reaches `deliver` while the launch runs
  // (host-mapped slots, polled); when `deliver` returns false the worker is asked to stop
  // after its current step or the next (the cancel word crosses PCIe) and no further token
  // is delivered. Returns the status word and sets *recorded to the number of tokens the
  // worker chose.
  int32_t Run(const Launch& launch, const std::function<bool(int32_t)>& deliver, int* recorded);
  // Generate's launches from prompt position first_pos (0 <= first_pos < prompt.size(); the rows
  // before it are kept), for a request GenerateFromKeptRows has checked.
  GenerateResult GenerateFrom(const std::vector<int>& prompt, const GenerateOptions& options, int first_pos);
  void* Alloc(size_t bytes, const char* what);
  void* AllocMapped(size_t bytes, void** device_ptr);
  size_t TraceEventCount() const;  // one per task list entry, then one per worker and wave

  const Package& pkg_;
  std::string device_name_;
  size_t shared_bytes_ = 0;
  int lm_head_wave_ = -1;
  // Device memory, freed even when the constructor throws half-way (members are destroyed).
  struct DeviceMemory {
    std::vector<void*> blocks;
    std::vector<void*> host_blocks;  // pinned, mapped
    bool leave_to_driver = false;    // a launch never finished: freeing would wait for it
    ~DeviceMemory();
  };
  DeviceMemory memory_;
  WorkerParams params_{};
  volatile unsigned long long* slots_ = nullptr;  // host view of params_.out_slots
  volatile int32_t* cancel_ = nullptr;            // host view of params_.cancel
  SamplingOptions step_sampling_;
  std::vector<uint32_t> task_order_;  // task index of each task list entry (worker, then wave)
  WorkerParams::TraceEvent* trace_ = nullptr;  // device, allocated by the first set_trace
  unsigned long long* trace_phases_ = nullptr;  // device, likewise (phase-trace builds only)
  void* cuda_start_ = nullptr;  // cudaEvent_t
  void* cuda_stop_ = nullptr;
  KvHistory kv_;  // which positions the K/V cache holds: Run refuses a launch that skips one
  int32_t last_selected_ = -1;
  float last_launch_ms_ = 0;
  double launch_timeout_s_ = 600;
};

}  // namespace tileinfer
