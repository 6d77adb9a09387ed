// The weight stream never depends on the token: every worker knows, from its own task list,
// which bytes it will read next. A worker keeps up to `budget` bytes of its upcoming
// weights in flight into L2 (prefetch.global.L2, sm_80+) and tops them up before every
// grid barrier, so that DRAM keeps streaming while workers wait or run latency-bound
// waves. Prefetching changes no value: results stay bit-identical.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

constexpr int kLine = 128;  // bytes per L2 prefetch

// The weight byte ranges a task streams (at most three), in the order it reads them.
struct WeightRanges {
  const uint8_t* ptr[3];
  uint64_t bytes[3];
  int n;
};

__device__ __forceinline__ WeightRanges RangesOf(const format::TaskRecord& t, const WorkerParams& p) {
  WeightRanges r;
  r.n = 0;
  auto add = [&](uint32_t tensor, uint64_t cols) {
    const uint64_t row_bytes = cols * 2;
    r.ptr[r.n] = static_cast<const uint8_t*>(p.tensors[tensor]) + t.row_begin * row_bytes;
    r.bytes[r.n] = (t.row_end - t.row_begin) * row_bytes;
    ++r.n;
  };
  switch (static_cast<format::Opcode>(t.opcode)) {
    case format::Opcode::RMSNORM_GEMV:
    case format::Opcode::LM_HEAD:
      add(t.weight, p.hidden);
      break;
    case format::Opcode::ATTN_OUT:
      add(t.weight, static_cast<uint64_t>(p.heads) * p.head_dim);
      break;
    case format::Opcode::FFN:
      add(t.weight, p.hidden);
      add(t.weight2, p.hidden);
      add(t.weight3, p.hidden);
      break;
    default:
      break;  // EMBED reads one token-dependent row; the rest read activations and the cache
  }
  return r;
}

__device__ __forceinline__ uint64_t TotalBytes(const WeightRanges& r) {
  uint64_t total = 0;
  for (int i = 0; i < r.n; ++i) total += r.bytes[i];
  return total;
}

// Every thread of a block holds an identical copy (the same loop over the same records), so
// no shared state is needed; the prefetches are spread over the threads.
class Prefetcher {
 public:
  __device__ Prefetcher(const WorkerParams& p, uint32_t first, uint32_t last)
      : p_(p), first_(first), last_(last), cur_(first) {
    uint64_t total = 0;
    for (uint32_t i = first; i < last; ++i) total += TotalBytes(RangesOf(p.tasks[p.worker_tasks[i]], p));
    // Never more than one step's own bytes ahead (the stream is cyclic over steps).
    budget_ = total > 0 ? min(static_cast<uint64_t>(p.prefetch_bytes), total - 1) : 0;
  }

  // Task list entry `i` has been run (or skipped): its bytes leave the window.
  __device__ void Consumed(uint32_t i) {
    if (budget_ == 0) return;
    if (i == cur_) {  // the cursor was inside this task: restart after it
      cur_ = Next(i);
      cur_off_ = 0;
      ahead_ = 0;
    } else {
      const uint64_t bytes = TotalBytes(RangesOf(p_.tasks[p_.worker_tasks[i]], p_));
      ahead_ = ahead_ > bytes ? ahead_ - bytes : 0;
    }
  }

  // Issues prefetches until `budget` bytes beyond the consumption point are requested.
  __device__ void TopUp() {
    while (ahead_ < budget_) {
      const WeightRanges r = RangesOf(p_.tasks[p_.worker_tasks[cur_]], p_);
      const uint64_t total = TotalBytes(r);
      if (cur_off_ >= total) {
        cur_ = Next(cur_);
        cur_off_ = 0;
        continue;
      }
      const uint64_t take = min(total - cur_off_, budget_ - ahead_);
      uint64_t off = cur_off_, base = 0;
      for (int k = 0; k < r.n; ++k) {  // the part [off, cur_off + take) of the ranges
        const uint64_t lo = max(off, base), hi = min(cur_off_ + take, base + r.bytes[k]);
        for (uint64_t b = lo + static_cast<uint64_t>(threadIdx.x) * kLine; b < hi; b += kThreads * kLine) {
          asm volatile("prefetch.global.L2 [%0];" ::"l"(r.ptr[k] + (b - base)));
        }
        base += r.bytes[k];
      }
      cur_off_ += take;
      ahead_ += take;
    }
  }

 private:
  __device__ uint32_t Next(uint32_t i) const { return i + 1 < last_ ? i + 1 : first_; }

  const WorkerParams& p_;
  uint32_t first_, last_;
  uint32_t cur_;           // task list entry the cursor is in
  uint64_t cur_off_ = 0;   // bytes of that task already requested
  uint64_t ahead_ = 0;     // bytes requested beyond the consumption point
  uint64_t budget_ = 0;
};

}  // namespace device
}  // namespace tileinfer
