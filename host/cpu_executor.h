// The CPU executor: runs a package's plan task by task, wave by wave, with the same
// semantics as the CUDA worker (format_spec.py): FP32 activations and accumulation, BF16
// weights and K/V cache, fixed-order reductions, greedy selection over candidate slots.
// Machines without a GPU decode with it; tests use it as the reference for the GPU path.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>  // getpid, pid_t

#include "cuda/select.h"
#include "host/executor.h"
#include "host/generate.h"
#include "host/package.h"

namespace tileinfer {

class CpuExecutor : public Executor {
 public:
  // `threads`: 0 for one per hardware thread, else 1..kMaxThreads (Error otherwise: a
  // negative count, or one so large that starting its threads would exhaust the machine).
  // The package must outlive the executor and must have passed ValidatePlan.
  static constexpr int kMaxThreads = 1024;
  CpuExecutor(const Package& pkg, int threads = 0);
  // The constructor's check of `threads` alone (Error outside 0..kMaxThreads), for callers
  // that take a thread count before they know whether a CPU executor will run.
  static void CheckThreads(int threads);
  ~CpuExecutor();

  // Runs every wave for input `token` at position `pos` (0 <= pos < max_context), appending
  // its K/V rows to the cache. With `logits` false the LM_HEAD wave is skipped (prompt
  // positions whose prediction nobody reads). Positions come in order from 0, which starts a
  // new request (KvHistory): attention at `pos` reads the rows of every earlier position, so a
  // `pos` that skips a position throws Error; an earlier one goes back (another token there
  // rewrites the cache from there, the same token keeps the rows after it).
  void Step(int token, int pos, bool logits) override;

  // After a Step with logits: the greedy token, or kCandidateNonFinite.
  int32_t Select() override;
  std::vector<float> Logits() override { return f32_[pkg_.plan().buf_logits]; }
  GenerateResult Generate(const std::vector<int>& prompt, const GenerateOptions& options) override;
  std::string name() const override {
    return "CPU executor (" + std::to_string(threads()) + (threads() == 1 ? " thread)" : " threads)");
  }
  int threads() const { return n_threads_; }

 private:
  void RunTask(const format::TaskRecord& t);
  void RunParallel(size_t first, size_t count);
  void PoolLoop(int index);
  // Ends and joins the pool's threads (quit, then a new generation): the destructor's and a
  // failed constructor's cleanup.
  void StopPool();

  // format_spec's fix() and real() of the FIXED64 residual; Fix marks the request invalid
  // (residual_invalid_) for a value outside its range.
  int64_t Fix(float v);
  static float Real(int64_t q);
  std::vector<float> RealVector(uint32_t buffer, int n) const;  // real() of a FIXED64 buffer's first n

  const Package& pkg_;
  std::vector<std::vector<float>> f32_;     // ACTIVATION F32 buffers, by id
  std::vector<std::vector<int64_t>> fixed_;  // ACTIVATION FIXED64 buffers (the residual), by id
  std::mutex accumulate_mu_;                // the FFN tasks' adds into a FIXED64 buffer
  // A fix() saw an out-of-range value since the request's first step (pos 0): LM_HEAD then
  // writes NaN logits, so every candidate is kCandidateNonFinite (format_spec) and the
  // host's sampler stops too.
  std::atomic<bool> residual_invalid_{false};
  std::vector<uint16_t> kv_cache_;          // (layers, 2, max_context, KV) BF16
  std::vector<Candidate> cand_;
  int token_ = 0, pos_ = 0;
  KvHistory kv_;  // which positions the K/V cache holds: Step refuses one that skips a position

  // A small fork-join pool: task i of a wave goes to thread i % threads. Its state lives on the
  // heap so that an executor destroyed in a fork()ed child, where the threads do not exist and
  // the condition variables may still count the parent's waiters (destroying them there hangs),
  // can leave it untouched (~CpuExecutor).
  struct Pool {
    std::vector<std::thread> threads;
    std::mutex mu;
    std::condition_variable start_cv, done_cv;
    uint64_t generation = 0;
    int pending = 0;
    bool quit = false;
    size_t job_first = 0, job_count = 0;
  };
  int n_threads_ = 1;  // fixed before any pool thread starts
  std::unique_ptr<Pool> pool_ = std::make_unique<Pool>();
  // The process that created the executor: Step refuses to run in another (a fork()ed child
  // would wait for pool threads that do not exist there).
  const pid_t creator_ = getpid();
};

}  // namespace tileinfer
