// GPU executor: device memory, the plan's per-worker task lists, and the launch loop.
#include "host/gpu_executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "host/error.h"
#include "host/generate.h"
#include "host/validate.h"

namespace tileinfer {
namespace {

void Check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    throw Error(std::string(call) + " failed: " + cudaGetErrorString(err));
  }
}
#define CUDA_CHECK(call) Check((call), #call)

}  // namespace

GpuExecutor::DeviceMemory::~DeviceMemory() {
  if (leave_to_driver) return;  // the process is expected to end; the driver reclaims it
  for (void* ptr : blocks) cudaFree(ptr);
  for (void* ptr : host_blocks) cudaFreeHost(ptr);
}

void* GpuExecutor::AllocMapped(size_t bytes, void** device_ptr) {
  void* ptr = nullptr;
  CUDA_CHECK(cudaHostAlloc(&ptr, bytes, cudaHostAllocMapped));
  memory_.host_blocks.push_back(ptr);
  std::memset(ptr, 0, bytes);
  CUDA_CHECK(cudaHostGetDevicePointer(device_ptr, ptr, 0));
  return ptr;
}

void* GpuExecutor::Alloc(size_t bytes, const char* what) {
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, std::max<size_t>(bytes, 16));
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    throw Error(std::string("out of GPU memory allocating ") + what + ": " + std::to_string(bytes) +
                " bytes needed, " + std::to_string(free_bytes) + " of " + std::to_string(total) +
                " free: free the GPU, or re-plan with a smaller --max_context");
  }
  memory_.blocks.push_back(ptr);
  return ptr;
}

GpuExecutor::GpuExecutor(const Package& pkg, const GpuOptions& options)
    : pkg_(pkg), launch_timeout_s_(options.launch_timeout_s) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw Error(std::string("no usable GPU (") + (err != cudaSuccess ? cudaGetErrorString(err) : "no device") +
                "): use --device=cpu");
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  device_name_ = prop.name;
  if (!prop.cooperativeLaunch) throw Error(device_name_ + " does not support cooperative launches");
  if (options.check_target) {
    CheckTarget(pkg, device_name_, prop.major, prop.minor, prop.multiProcessorCount, WorkerFingerprint());
  }
  const ModelConfig& m = pkg.model();
  const PlanParams& p = pkg.plan();
  if (pkg.stop_token_ids().size() > static_cast<size_t>(kMaxStopIds)) {
    throw Error("the package names " + std::to_string(pkg.stop_token_ids().size()) + " stop token ids; the GPU worker "
                "takes at most " + std::to_string(kMaxStopIds) + ": use --device=cpu");
  }
  const int group = m.heads / m.kv_heads;
  if (m.head_dim > kGpuMaxHeadDim || group > kGpuMaxGroup || m.head_dim % 2 != 0) {
    throw Error("the GPU path supports head_dim <= " + std::to_string(kGpuMaxHeadDim) + " and <= " +
                std::to_string(kGpuMaxGroup) + " query heads per K/V head; this model has " +
                std::to_string(m.head_dim) + " and " + std::to_string(group) + ": use --device=cpu");
  }
  // Per-worker task lists (tasks are sorted by wave, then worker).
  const auto tasks = pkg.tasks();
  std::vector<uint32_t> begin(p.workers + 1, 0), order;
  int max_ffn_rows = 0;
  for (const auto& t : tasks) {
    ++begin[t.worker + 1];
    if (t.opcode == static_cast<uint16_t>(format::Opcode::FFN)) {
      max_ffn_rows = std::max<int>(max_ffn_rows, t.row_end - t.row_begin);
    }
    if (t.opcode == static_cast<uint16_t>(format::Opcode::LM_HEAD)) lm_head_wave_ = static_cast<int>(t.wave);
  }
  for (int w = 0; w < p.workers; ++w) begin[w + 1] += begin[w];
  order.resize(tasks.size);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < tasks.size; ++i) order[fill[tasks[i].worker]++] = static_cast<uint32_t>(i);

  const bool wide = WorkerWide(m.hidden, m.head_dim, group);  // the worker kernel this model runs
  size_t static_bytes = 0;
  const std::string static_err = WorkerStaticSharedBytes(wide, &static_bytes);
  if (!static_err.empty()) throw Error(static_err);
  const size_t dynamic_limit = prop.sharedMemPerBlockOptin - std::min(static_bytes, prop.sharedMemPerBlockOptin);
  const size_t work_bytes = (WorkerSharedBytes(m.hidden, m.q_dim(), m.head_dim, group, max_ffn_rows, m.heads,
                                                   p.attention_chunks) + 15) & ~size_t{15};
  const size_t n_tensors = pkg.tensors().size, n_buffers = pkg.buffers().size;
  const size_t tables_bytes = WorkerTablesBytes(n_tensors, n_buffers);
  if (work_bytes + tables_bytes > dynamic_limit) {
    throw Error("the worker needs " + std::to_string(work_bytes + tables_bytes) + " bytes of dynamic shared memory (" +
                std::to_string(work_bytes) + " of work area, " + std::to_string(tables_bytes) + " of operand tables), " +
                device_name_ + " offers " + std::to_string(dynamic_limit) +
                ": re-plan with more workers or --ffn_parts (smaller FFN tasks) or fewer --attention_chunks (the tables grow with the "
                "package's tensors and buffers, " + std::to_string(n_tensors) + " and " + std::to_string(n_buffers) + ")");
  }
  uint32_t max_tasks = 0;
  for (int w = 0; w < p.workers; ++w) max_tasks = std::max(max_tasks, begin[w + 1] - begin[w]);
  const size_t records_bytes = (static_cast<size_t>(max_tasks) * sizeof(format::TaskRecord) + 15) & ~size_t{15};
  const bool cache_records = options.cache_records && work_bytes + tables_bytes + records_bytes <= dynamic_limit;
  shared_bytes_ = work_bytes + tables_bytes + (cache_records ? records_bytes : 0);
  if (options.carveout < -1 || options.carveout > 100) {
    throw Error("carveout " + std::to_string(options.carveout) + " is not a percentage: give 0..100, or -1 for the driver's choice");
  }
  if (options.attention_tile_min < 0) {
    throw Error("attention_tile_min " + std::to_string(options.attention_tile_min) +
                ": give the chunk length (positions, >= 1) from which ATTENTION works in tiles, or 0 for "
                "the default by head_dim");
  }
  const std::string carve = SetWorkerCarveout(wide, options.carveout);
  if (!carve.empty()) throw Error(carve);
  int blocks_per_sm = 0, regs = 0, local = 0;
  const std::string occ = WorkerOccupancy(wide, shared_bytes_, &blocks_per_sm, &regs, &local);
  if (!occ.empty()) throw Error(occ);
  if (p.workers > blocks_per_sm * prop.multiProcessorCount) {
    throw Error("the plan has " + std::to_string(p.workers) + " workers, but only " +
                std::to_string(blocks_per_sm) + " x " + std::to_string(prop.multiProcessorCount) +
                " blocks of the worker fit on " + device_name_ +
                " at once (a cooperative launch would fail or hang): re-plan for this GPU");
  }

  // Weights, once.
  uint8_t* weights = static_cast<uint8_t*>(Alloc(pkg.weights_bytes(), "the weights"));
  CUDA_CHECK(cudaMemcpy(weights, pkg.weights(), pkg.weights_bytes(), cudaMemcpyHostToDevice));
  std::vector<const void*> tensor_ptrs(pkg.tensors().size);
  for (size_t i = 0; i < tensor_ptrs.size(); ++i) tensor_ptrs[i] = weights + pkg.tensors()[i].offset;
  // Buffers, poisoned: NaN for FP32 and BF16, and 0x8080... for FIXED64 (about -2^31, no
  // plausible residual), so a read of something never written shows.
  const auto buffers = pkg.buffers();
  std::vector<void*> buffer_ptrs(buffers.size);
  for (size_t b = 0; b < buffers.size; ++b) {
    const size_t bytes = buffers[b].elements * format::DTypeBytes(buffers[b].dtype);
    buffer_ptrs[b] = Alloc(bytes, "a plan buffer");
    const bool fixed = buffers[b].dtype == static_cast<uint32_t>(format::DType::FIXED64);
    CUDA_CHECK(cudaMemset(buffer_ptrs[b], fixed ? 0x80 : 0xFF, bytes));
  }
  auto upload = [&](const void* data, size_t bytes, const char* what) {
    void* d = Alloc(bytes, what);
    CUDA_CHECK(cudaMemcpy(d, data, bytes, cudaMemcpyHostToDevice));
    return d;
  };
  std::vector<format::TaskRecord> listed(order.size());
  for (size_t i = 0; i < order.size(); ++i) listed[i] = tasks[order[i]];
  params_.tasks = static_cast<const format::TaskRecord*>(
      upload(listed.data(), listed.size() * sizeof(format::TaskRecord), "the task lists"));
  task_order_ = order;
  params_.trace_entries = static_cast<int>(order.size());
  params_.worker_task_begin = static_cast<const uint32_t*>(upload(begin.data(), begin.size() * 4, "the task lists"));
  params_.n_waves = p.waves;
  params_.work_bytes = static_cast<uint32_t>(work_bytes);
  params_.records_bytes = cache_records ? static_cast<uint32_t>(records_bytes) : 0;
  params_.tables_bytes = static_cast<uint32_t>(tables_bytes);
  params_.n_tensors = static_cast<uint32_t>(n_tensors);  // the tables' sizes as in tables_bytes
  params_.n_buffers = static_cast<uint32_t>(n_buffers);
  params_.lm_head_wave = lm_head_wave_;
  params_.tensors = static_cast<const void* const*>(upload(tensor_ptrs.data(), tensor_ptrs.size() * sizeof(void*), "the tensor table"));
  params_.buffers = static_cast<void* const*>(upload(buffer_ptrs.data(), buffer_ptrs.size() * sizeof(void*), "the buffer table"));
  params_.hidden = m.hidden;
  params_.heads = m.heads;
  params_.kv_heads = m.kv_heads;
  params_.head_dim = m.head_dim;
  params_.rms_norm_eps = m.rms_norm_eps;
  params_.max_context = p.max_context;
  params_.attention_min_chunk = p.attention_min_chunk;
  params_.attention_tile_min = AttentionTileMin(options.attention_tile_min);
  params_.buf_cand = p.buf_cand;
  params_.n_cand = p.lm_head_slots;
  params_.buf_logits = p.buf_logits;
  params_.vocab = m.vocab;
  params_.sampled = static_cast<int32_t*>(Alloc(sizeof(int32_t), "the sampled token"));
  params_.residual_invalid = static_cast<unsigned long long*>(Alloc(sizeof(unsigned long long), "the residual's status"));
  CUDA_CHECK(cudaMemset(params_.residual_invalid, 0, sizeof(unsigned long long)));
  params_.cancel_seen = static_cast<int32_t*>(Alloc(2 * sizeof(int32_t), "the cancel words"));
  params_.forced = static_cast<const int32_t*>(Alloc(kMaxStepsPerLaunch * sizeof(int32_t), "the launch inputs"));
  void* device_ptr = nullptr;
  slots_ = static_cast<unsigned long long*>(AllocMapped(kMaxStepsPerLaunch * sizeof(unsigned long long), &device_ptr));
  params_.out_slots = static_cast<unsigned long long*>(device_ptr);
  cancel_ = static_cast<int32_t*>(AllocMapped(sizeof(int32_t), &device_ptr));
  params_.cancel = static_cast<const volatile int32_t*>(device_ptr);
  params_.out_count = static_cast<int32_t*>(Alloc(sizeof(int32_t), "the launch outputs"));
  params_.out_status = static_cast<int32_t*>(Alloc(sizeof(int32_t), "the launch outputs"));
  const auto& stops = pkg.stop_token_ids();
  params_.n_stop_ids = static_cast<int>(stops.size());
  std::copy(stops.begin(), stops.end(), params_.stop_ids);
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  cuda_start_ = start;
  cuda_stop_ = stop;
}

GpuExecutor::~GpuExecutor() {

  if (cuda_start_) cudaEventDestroy(static_cast<cudaEvent_t>(cuda_start_));
  if (cuda_stop_) cudaEventDestroy(static_cast<cudaEvent_t>(cuda_stop_));
}

std::string GpuExecutor::name() const {
  return "GPU " + device_name_ + " (" + std::to_string(pkg_.plan().workers) + " workers x " +
         std::to_string(kWorkerThreads) + " threads, " + std::to_string(shared_bytes_) + " B shared)";
}

void GpuExecutor::set_step_sampling(const SamplingOptions& options) {
  CheckSamplingOptions(options);
  step_sampling_ = options;
}

size_t GpuExecutor::TraceEventCount() const {
  return task_order_.size() + static_cast<size_t>(pkg_.plan().workers) * pkg_.plan().waves;
}

void GpuExecutor::set_trace(int pos) {
  if (pos < 0) {
    params_.trace = nullptr;
#ifdef TILEINFER_PHASE_TRACE
    params_.trace_phases = nullptr;
#endif
    return;
  }
  const size_t events = TraceEventCount();
  if (trace_ == nullptr) {
    trace_ = static_cast<WorkerParams::TraceEvent*>(Alloc(events * sizeof(WorkerParams::TraceEvent), "the trace"));
  }
  CUDA_CHECK(cudaMemset(trace_, 0, events * sizeof(WorkerParams::TraceEvent)));
  params_.trace = trace_;
  params_.trace_pos = pos;
#ifdef TILEINFER_PHASE_TRACE
  const size_t marks = task_order_.size() * kMaxPhases;
  if (trace_phases_ == nullptr) {
    trace_phases_ = static_cast<unsigned long long*>(Alloc(marks * sizeof(unsigned long long), "the phase trace"));
  }
  CUDA_CHECK(cudaMemset(trace_phases_, 0, marks * sizeof(unsigned long long)));  // 0: no mark
  params_.trace_phases = trace_phases_;
#endif
}

std::vector<WorkerParams::TraceEvent> GpuExecutor::TraceEvents() const {
  if (trace_ == nullptr) return {};
  std::vector<WorkerParams::TraceEvent> events(TraceEventCount());
  CUDA_CHECK(cudaMemcpy(events.data(), trace_, events.size() * sizeof(events[0]), cudaMemcpyDeviceToHost));
  return events;
}

std::vector<unsigned long long> GpuExecutor::TracePhases() const {
  if (trace_phases_ == nullptr) return {};
  std::vector<unsigned long long> marks(task_order_.size() * kMaxPhases);
  CUDA_CHECK(cudaMemcpy(marks.data(), trace_phases_, marks.size() * sizeof(marks[0]), cudaMemcpyDeviceToHost));
  return marks;
}

int32_t GpuExecutor::Run(const Launch& launch, const std::function<bool(int32_t)>& deliver, int* recorded) {
  // The positions-in-order rule (KvHistory), before anything reaches the GPU: the forced steps'
  // tokens are known now; a step past them feeds a token the launch chooses, so the rows from
  // there on are dropped. Every launch forces its first step's token.
  if (launch.forced.empty()) throw Error("GpuExecutor::Run: a launch without a forced first token");
  const int n_forced = static_cast<int>(launch.forced.size());
  kv_.Begin(launch.start_pos, launch.forced.data(), n_forced);
  if (launch.n_steps > n_forced) kv_.DropFrom(launch.start_pos + n_forced);
  WorkerParams p = params_;
  p.start_pos = launch.start_pos;
  p.n_steps = launch.n_steps;
  p.n_forced = static_cast<int>(launch.forced.size());
  p.first_logits_step = launch.first_logits_step;
  p.n_stop_ids = launch.n_stop_ids;
  p.temperature = launch.sampling.temperature;
  p.top_k = launch.sampling.top_k;
  p.top_p = launch.sampling.top_p;
  p.seed = launch.sampling.seed;
  CUDA_CHECK(cudaMemcpy(const_cast<int32_t*>(p.forced), launch.forced.data(), launch.forced.size() * 4,
                        cudaMemcpyHostToDevice));
  const int32_t running = kStatusRunning, zero = 0;
  CUDA_CHECK(cudaMemcpy(p.out_status, &running, 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(p.out_count, &zero, 4, cudaMemcpyHostToDevice));
  if (launch.start_pos == 0) {  // a new request: no out-of-range residual yet (WorkerParams)
    CUDA_CHECK(cudaMemset(p.residual_invalid, 0, sizeof(unsigned long long)));
  }
  for (int n = 0; n < kMaxStepsPerLaunch; ++n) slots_[n] = 0;
  *cancel_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto start = static_cast<cudaEvent_t>(cuda_start_), stop = static_cast<cudaEvent_t>(cuda_stop_);
  CUDA_CHECK(cudaEventRecord(start));
  const std::string err = LaunchWorker(p, pkg_.plan().workers, shared_bytes_);
  if (!err.empty()) throw Error(err);
  CUDA_CHECK(cudaEventRecord(stop));
  // Stream: deliver each slot as soon as it is complete (StreamSlot), until the launch ends.
  std::vector<int32_t> chosen;  // the tokens the worker chose, in its order (FedTokens reads them too)
  chosen.reserve(launch.n_steps);
  bool wanted = true;
  auto poll = [&] {
    while (static_cast<int>(chosen.size()) < launch.n_steps) {
      const unsigned long long slot = slots_[chosen.size()];
      if ((slot >> 32) != static_cast<unsigned long long>(chosen.size()) + 1) break;
      chosen.push_back(static_cast<int32_t>(slot & 0xFFFFFFFFu));
      if (wanted && !deliver(chosen.back())) {
        wanted = false;
        *cancel_ = 1;  // the worker ends after the step it is in
      }
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(launch_timeout_s_);
  for (;;) {
    const cudaError_t q = cudaEventQuery(stop);
    if (q != cudaSuccess && q != cudaErrorNotReady) Check(q, "cudaEventQuery (the worker launch)");
    poll();
    if (q == cudaSuccess) break;
    if (std::chrono::steady_clock::now() > deadline) {
      memory_.leave_to_driver = true;
      throw Error("the worker launch has not finished after " + std::to_string(launch_timeout_s_) +
                  " s (a hang, or a far slower GPU than expected): the GPU state is unknown; end this "
                  "process and report the package and command");
    }
    std::this_thread::yield();
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventElapsedTime(&last_launch_ms_, start, stop));
  int32_t count = 0, status = 0;
  CUDA_CHECK(cudaMemcpy(&count, p.out_count, 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&status, p.out_status, 4, cudaMemcpyDeviceToHost));
  if (status == kStatusRunning || count < 0 || count > launch.n_steps || count != static_cast<int>(chosen.size())) {
    throw Error("the worker ended without a valid status (status " + std::to_string(status) + ", count " +
                std::to_string(count) + ", streamed " + std::to_string(chosen.size()) + ")");
  }
  if ((status == kStatusStopToken || status == kStatusCancelled) && count == 0) {
    throw Error("the worker ended with status " + std::to_string(status) + " before recording a token");
  }
  *recorded = count;
  // The steps that ran whole (cuda/worker.cu): all of them; or up to the one that chose the
  // last recorded token (a stop token, a cancel); or the one after it, whose logits were not
  // finite (every wave ran, its K/V rows written, as the CPU executor's Step records them).
  const int ran = status == kStatusDone        ? launch.n_steps
                  : status == kStatusNonFinite ? std::min(launch.n_steps, launch.first_logits_step + count + 1)
                                               : std::min(launch.n_steps, launch.first_logits_step + count);
  const std::vector<int> fed = FedTokens(launch.forced, launch.first_logits_step, chosen, ran);
  kv_.Done(launch.start_pos, fed.data(), ran);
  return status;
}

void GpuExecutor::Step(int token, int pos, bool logits) {
  CheckStep(pkg_, token, pos);
  Launch launch{pos, 1, logits ? 0 : 1, 0, {token}, step_sampling_};
  int32_t chosen = -1;
  int recorded = 0;
  const int32_t status = Run(launch, [&](int32_t t) { chosen = t; return true; }, &recorded);
  last_selected_ = status == kStatusNonFinite ? format::kCandidateNonFinite : chosen;
}

float GpuExecutor::RunForcedWindow(const std::vector<int>& tokens, int start_pos) {
  const int n = static_cast<int>(tokens.size());
  if (n < 1 || n > kMaxStepsPerLaunch) {
    throw Error("a forced window needs 1.." + std::to_string(kMaxStepsPerLaunch) + " steps, not " + std::to_string(n));
  }
  for (int i = 0; i < n; ++i) CheckStep(pkg_, tokens[i], start_pos + i);
  Launch launch{start_pos, n, 0, 0, std::vector<int32_t>(tokens.begin(), tokens.end()), SamplingOptions{}};
  int recorded = 0;
  const int32_t status = Run(launch, [](int32_t) { return true; }, &recorded);
  if (status != kStatusDone) throw Error("the forced window ended with status " + std::to_string(status));
  return last_launch_ms_;
}

std::vector<float> GpuExecutor::Logits() {
  std::vector<float> logits(pkg_.model().vocab);
  void* ptr = nullptr;
  CUDA_CHECK(cudaMemcpy(&ptr, params_.buffers + pkg_.plan().buf_logits, sizeof(void*), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(logits.data(), ptr, logits.size() * 4, cudaMemcpyDeviceToHost));
  return logits;
}

GenerateResult GpuExecutor::Generate(const std::vector<int>& prompt, const GenerateOptions& options) {
  return GenerateFromKeptRows(pkg_, kv_, prompt, options,
                              [&](int first_pos) { return GenerateFrom(prompt, options, first_pos); });
}

GenerateResult GpuExecutor::GenerateFrom(const std::vector<int>& prompt, const GenerateOptions& options,
                                         int first_pos) {
  GenerateResult result;
  result.prompt_reused = first_pos;
  const int n_stop = options.stop_at_eos ? static_cast<int>(pkg_.stop_token_ids().size()) : 0;
  size_t next_prompt = first_pos;
  int pos = first_pos;
  bool first_token_pending = true;
  bool go_on = true;
  // Tokens reach the caller as the worker records them, not when its launch ends.
  auto deliver = [&](int32_t t) {
    result.tokens.push_back(t);
    if (options.on_token && !options.on_token(t)) go_on = false;  // later tokens are dropped
    return go_on;
  };
  while (go_on && static_cast<int>(result.tokens.size()) < options.max_new_tokens) {
    Launch launch{pos, 0, 0, n_stop, {}, options.sampling};
    const int remaining = options.max_new_tokens - static_cast<int>(result.tokens.size());
    if (next_prompt < prompt.size()) {
      const size_t n = std::min<size_t>(kMaxStepsPerLaunch, prompt.size() - next_prompt);
      launch.forced.assign(prompt.begin() + next_prompt, prompt.begin() + next_prompt + n);
      next_prompt += n;
      const bool prompt_ends = next_prompt == prompt.size();
      // The prompt's last launch ends with the first new token; generation launches follow.
      launch.n_steps = static_cast<int>(n);
      launch.first_logits_step = prompt_ends ? launch.n_steps - 1 : launch.n_steps;
    } else {
      launch.forced = {result.tokens.back()};
      launch.n_steps = std::min(kMaxStepsPerLaunch, remaining);
      launch.first_logits_step = 0;
    }
    int recorded = 0;
    const int32_t status = Run(launch, deliver, &recorded);
    (first_token_pending ? result.prompt_ms : result.decode_ms) += last_launch_ms_;
    if (recorded > 0) first_token_pending = false;
    if (status == kStatusNonFinite) {
      // The failing step is the one after the last recorded token: first_logits_step + count.
      // When the caller stopped at that token, the worker still ran the step it fed (it reads
      // the cancel word only as a step begins): the request stands, but the out-of-range
      // mark stays set until position 0 runs, so the next request must start there.
      if (!go_on) {
        kv_.DropFrom(0);
        break;
      }
      throw NonFiniteLogitError(pos + launch.first_logits_step + recorded, result.tokens.size());
    }
    if (!go_on) break;
    if (status == kStatusStopToken) {
      result.stopped_at_eos = true;
      break;
    }
    if (status != kStatusDone) throw Error("the worker stopped with status " + std::to_string(status));
    pos += launch.n_steps;
  }
  return result;
}

}  // namespace tileinfer
