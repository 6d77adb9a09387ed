// CPU executor of a plan; opcode semantics are documented once, in py/planner/format_spec.py.
#include "host/cpu_executor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>

#include "host/bf16.h"
#include "host/error.h"
#include "host/fixed_point.h"
#include "host/generate.h"

namespace tileinfer {
namespace {

using format::Opcode;

// sum_k w[k] * x[k], w BF16, x and the sum FP32; 8 partial sums in a fixed order.
float DotBf16(const uint16_t* w, const float* x, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += Bf16ToF32(w[k + j]) * x[k + j];
  }
  float tail = 0;
  for (; k < n; ++k) tail += Bf16ToF32(w[k]) * x[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// y = x * g / sqrt(mean(x^2) + eps)   (RMSNorm, Zhang & Sennrich 2019; Llama's form)
void RmsNorm(const float* x, const uint16_t* g, int n, float eps, float* y) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += x[k + j] * x[k + j];
  }
  float tail = 0;
  for (; k < n; ++k) tail += x[k] * x[k];
  const float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv * Bf16ToF32(g[i]);
}

// Rotate-half RoPE (as Hugging Face Llama): pairs (i, i + hd/2), angle pos * inv_freq[i].
void Rope(float* v, const float* inv_freq, int hd, int pos) {
  const int half = hd / 2;
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
}

// FIXED64 (format_spec; host/fixed_point.h): kFixedPoison marks an element no task wrote.
constexpr int64_t kFixedPoison = std::numeric_limits<int64_t>::min();

}  // namespace

std::vector<float> CpuExecutor::RealVector(uint32_t buffer, int n) const {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = Real(fixed_[buffer][i]);
  return x;
}

CpuExecutor::CpuExecutor(const Package& pkg, int threads) : pkg_(pkg) {
  const auto buffers = pkg.buffers();
  f32_.resize(buffers.size);
  fixed_.resize(buffers.size);
  for (size_t b = 0; b < buffers.size; ++b) {
    if (buffers[b].kind != static_cast<uint32_t>(format::BufferKind::ACTIVATION)) continue;
    // Poison: a read of an element no task wrote shows up as NaN, never as a plausible 0.
    if (buffers[b].dtype == static_cast<uint32_t>(format::DType::FIXED64)) {
      fixed_[b].assign(buffers[b].elements, kFixedPoison);
    } else {
      f32_[b].assign(buffers[b].elements, std::numeric_limits<float>::quiet_NaN());
    }
  }
  kv_cache_.assign(buffers[pkg.plan().buf_kv_cache].elements, 0x7FC0);  // BF16 NaN
  cand_.assign(buffers[pkg.plan().buf_cand].elements, Candidate{0, format::kCandidateNonFinite});
  CheckThreads(threads);
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = threads;
  pool_->threads.reserve(threads - 1);
  try {
    for (int i = 1; i < threads; ++i) pool_->threads.emplace_back(&CpuExecutor::PoolLoop, this, i);
  } catch (const std::system_error& e) {  // e.g. a process or memory limit
    const size_t started = pool_->threads.size();
    StopPool();  // the started threads wait on start_cv: end them before it is destroyed
    throw Error("CPU executor: could only start " + std::to_string(started + 1) + " of " +
                std::to_string(threads) + " threads (" + e.what() + "): give fewer threads");
  } catch (...) {  // std::bad_alloc of a thread's state: the same cleanup
    StopPool();
    throw;
  }
}

void CpuExecutor::CheckThreads(int threads) {
  if (threads < 0 || threads > kMaxThreads) {
    throw Error("cpu_threads " + std::to_string(threads) + ": give 0 (one per hardware thread) or 1 to " +
                std::to_string(kMaxThreads));
  }
}

CpuExecutor::~CpuExecutor() {
  if (getpid() != creator_) {
    // A fork()ed child: the pool's threads are the parent's. Joining them, or destroying the
    // condition variables the parent's threads wait on, would hang (and a joinable
    // std::thread's destructor aborts), so the pool's state is left to the process's exit.
    (void)pool_.release();
    return;
  }
  StopPool();
}

void CpuExecutor::StopPool() {
  Pool& p = *pool_;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.quit = true;
    ++p.generation;
  }
  p.start_cv.notify_all();
  for (std::thread& t : p.threads) t.join();
  p.threads.clear();
}

void CpuExecutor::PoolLoop(int index) {
  Pool& p = *pool_;
  uint64_t seen = 0;
  const int n = threads();
  for (;;) {
    size_t first, count;
    {
      std::unique_lock<std::mutex> lock(p.mu);
      p.start_cv.wait(lock, [&] { return p.generation != seen; });
      seen = p.generation;
      if (p.quit) return;
      first = p.job_first;
      count = p.job_count;
    }
    for (size_t i = index; i < count; i += n) RunTask(pkg_.tasks()[first + i]);
    {
      std::lock_guard<std::mutex> lock(p.mu);
      if (--p.pending == 0) p.done_cv.notify_one();
    }
  }
}

void CpuExecutor::RunParallel(size_t first, size_t count) {
  Pool& p = *pool_;
  if (p.threads.empty() || count == 1) {
    for (size_t i = 0; i < count; ++i) RunTask(pkg_.tasks()[first + i]);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.job_first = first;
    p.job_count = count;
    p.pending = static_cast<int>(p.threads.size());
    ++p.generation;
  }
  p.start_cv.notify_all();
  const int n = threads();
  for (size_t i = 0; i < count; i += n) RunTask(pkg_.tasks()[first + i]);
  std::unique_lock<std::mutex> lock(p.mu);
  p.done_cv.wait(lock, [&] { return p.pending == 0; });
}

int64_t CpuExecutor::Fix(float v) {
  if (!FixedHolds(v)) {  // NaN too
    residual_invalid_ = true;
    return 0;
  }
  return FixedFromFloat(v);
}

float CpuExecutor::Real(int64_t q) {
  if (q == kFixedPoison) return std::numeric_limits<float>::quiet_NaN();
  return FloatFromFixed(q);
}

void CpuExecutor::Step(int token, int pos, bool logits) {
  if (getpid() != creator_) {
    throw Error("this CPU executor was created in process " + std::to_string(creator_) +
                " and cannot run in another, such as a fork()ed child (its threads do not survive "
                "fork): create one in each process");
  }
  CheckStep(pkg_, token, pos);
  kv_.Begin(pos, &token, 1);
  token_ = token;
  pos_ = pos;
  if (pos == 0) residual_invalid_ = false;  // a new request
  const auto waves = pkg_.waves();
  for (size_t w = 0; w < waves.size; ++w) {
    const format::WaveRecord& wave = waves[w];
    if (!logits && wave.task_count > 0 &&
        pkg_.tasks()[wave.first_task].opcode == static_cast<uint16_t>(Opcode::LM_HEAD)) {
      continue;
    }
    RunParallel(wave.first_task, wave.task_count);  // returning is the barrier
  }
  kv_.Done(pos, &token, 1);
}

int32_t CpuExecutor::Select() {
  return SelectGreedy(cand_.data(), static_cast<int>(cand_.size()));
}

GenerateResult CpuExecutor::Generate(const std::vector<int>& prompt, const GenerateOptions& options) {
  return GenerateFromKeptRows(pkg_, kv_, prompt, options,
                              [&](int first_pos) { return GenerateBySteps(*this, pkg_, prompt, options, first_pos); });
}

void CpuExecutor::RunTask(const format::TaskRecord& t) {
  const ModelConfig& m = pkg_.model();
  const PlanParams& p = pkg_.plan();
  const int H = m.hidden, HD = m.head_dim, Q = m.q_dim(), KV = m.kv_dim();
  auto bf16 = [&](uint32_t id) { return static_cast<const uint16_t*>(pkg_.TensorData(id)); };
  switch (static_cast<Opcode>(t.opcode)) {
    case Opcode::EMBED: {
      const uint16_t* row = bf16(t.weight) + static_cast<size_t>(token_) * H;
      int64_t* out = fixed_[t.out_buf].data();
      for (uint32_t r = t.row_begin; r < t.row_end; ++r) out[r] = Fix(Bf16ToF32(row[r]));
      break;
    }
    case Opcode::RMSNORM_GEMV: {
      const int K = static_cast<int>(pkg_.tensors()[t.weight].cols);
      std::vector<float> x = RealVector(t.in_buf, K), xn(K);
      RmsNorm(x.data(), bf16(t.norm), K, m.rms_norm_eps, xn.data());
      const uint16_t* w = bf16(t.weight);
      float* out = f32_[t.out_buf].data();
      for (uint32_t r = t.row_begin; r < t.row_end; ++r) out[r] = DotBf16(w + size_t(r) * K, xn.data(), K);
      break;
    }
    case Opcode::ATTENTION: {
      const int kv = static_cast<int>(t.param0), chunk = static_cast<int>(t.slot);
      const int n_chunks = static_cast<int>(t.param1), min_chunk = static_cast<int>(t.param2);
      const int group = m.heads / m.kv_heads;
      const int ctx = pos_ + 1;
      const int span = std::max((ctx + n_chunks - 1) / n_chunks, min_chunk);
      const int begin = std::max(0, ctx - (n_chunks - chunk) * span);
      const int end = std::max(0, ctx - (n_chunks - 1 - chunk) * span);
      const float* qkv = f32_[t.in_buf].data();
      const float* inv_freq = static_cast<const float*>(pkg_.TensorData(t.weight2));
      const size_t layer_base = size_t(t.layer) * 2 * p.max_context * KV;
      uint16_t* kcache = kv_cache_.data() + layer_base;
      uint16_t* vcache = kcache + size_t(p.max_context) * KV;
      if (chunk == n_chunks - 1) {  // owner of position pos: append its K (roped) and V
        std::vector<float> k(qkv + Q + kv * HD, qkv + Q + (kv + 1) * HD);
        Rope(k.data(), inv_freq, HD, pos_);
        for (int d = 0; d < HD; ++d) {
          kcache[size_t(pos_) * KV + kv * HD + d] = F32ToBf16(k[d]);
          vcache[size_t(pos_) * KV + kv * HD + d] = F32ToBf16(qkv[Q + KV + kv * HD + d]);
        }
      }
      const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
      std::vector<float> q(HD), scores(std::max(0, end - begin)), o(HD);
      for (int h = kv * group; h < (kv + 1) * group; ++h) {
        std::copy(qkv + h * HD, qkv + (h + 1) * HD, q.begin());
        Rope(q.data(), inv_freq, HD, pos_);
        float mx = -std::numeric_limits<float>::infinity();
        for (int j = begin; j < end; ++j) {
          float s = 0;
          const uint16_t* krow = kcache + size_t(j) * KV + kv * HD;
          for (int d = 0; d < HD; ++d) s += q[d] * Bf16ToF32(krow[d]);
          scores[j - begin] = s * scale;
          mx = std::max(mx, s * scale);
        }
        float l = 0;
        std::fill(o.begin(), o.end(), 0.0f);
        for (int j = begin; j < end; ++j) {
          const float e = std::exp(scores[j - begin] - mx);
          l += e;
          const uint16_t* vrow = vcache + size_t(j) * KV + kv * HD;
          for (int d = 0; d < HD; ++d) o[d] += e * Bf16ToF32(vrow[d]);
        }
        float* out = f32_[t.out_buf].data() + (size_t(chunk) * m.heads + h) * (HD + 2);
        std::copy(o.begin(), o.end(), out);
        out[HD] = mx;
        out[HD + 1] = l;
      }
      break;
    }
    case Opcode::ATTN_OUT: {
      const int n_chunks = static_cast<int>(t.param1);
      const float* part = f32_[t.in_buf].data();
      std::vector<float> attn(Q, 0.0f);
      for (int h = 0; h < m.heads; ++h) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < n_chunks; ++c) mx = std::max(mx, part[(size_t(c) * m.heads + h) * (HD + 2) + HD]);
        float l = 0;
        float* o = attn.data() + h * HD;
        for (int c = 0; c < n_chunks; ++c) {
          const float* pc = part + (size_t(c) * m.heads + h) * (HD + 2);
          if (pc[HD + 1] == 0.0f) continue;  // an empty chunk (m = -inf, l = 0)
          const float wgt = std::exp(pc[HD] - mx);
          l += pc[HD + 1] * wgt;
          for (int d = 0; d < HD; ++d) o[d] += pc[d] * wgt;
        }
        for (int d = 0; d < HD; ++d) o[d] /= l;
      }
      const uint16_t* w = bf16(t.weight);
      int64_t* resid = fixed_[t.aux_buf].data();
      float* out = f32_[t.out_buf].data();
      for (uint32_t r = t.row_begin; r < t.row_end; ++r) {
        out[r] = Real(resid[r]) + DotBf16(w + size_t(r) * Q, attn.data(), Q);
        resid[r] = Fix(out[r]);  // the FFN tasks add to it next
      }
      break;
    }
    case Opcode::FFN: {
      std::vector<float> xn(H), acc(H, 0.0f);
      RmsNorm(f32_[t.in_buf].data(), bf16(t.norm), H, m.rms_norm_eps, xn.data());
      const uint16_t *wg = bf16(t.weight), *wu = bf16(t.weight2), *wd = bf16(t.weight3);
      for (uint32_t j = t.row_begin; j < t.row_end; ++j) {
        const float g = DotBf16(wg + size_t(j) * H, xn.data(), H);
        const float u = DotBf16(wu + size_t(j) * H, xn.data(), H);
        const float hj = g / (1.0f + std::exp(-g)) * u;  // SiLU(g) * u
        const uint16_t* drow = wd + size_t(j) * H;
        for (int i = 0; i < H; ++i) acc[i] += hj * Bf16ToF32(drow[i]);
      }
      std::vector<int64_t> part(H);
      for (int i = 0; i < H; ++i) part[i] = Fix(acc[i]);
      std::lock_guard<std::mutex> lock(accumulate_mu_);  // integer adds: any order, same sum
      int64_t* out = fixed_[t.out_buf].data();
      for (int i = 0; i < H; ++i) out[i] += part[i];
      break;
    }
    case Opcode::LM_HEAD: {
      std::vector<float> x = RealVector(t.in_buf, H), xn(H);
      RmsNorm(x.data(), bf16(t.norm), H, m.rms_norm_eps, xn.data());
      const uint16_t* w = bf16(t.weight);
      float* logits = f32_[t.out_buf].data();
      Candidate best{-std::numeric_limits<float>::infinity(), -1};
      bool finite = true;
      // An out-of-range residual this request (residual_invalid_): NaN logits, so that every
      // reader stops, the host's sampler (host/generate.cc) as the candidates' selection.
      const bool invalid = residual_invalid_;
      for (uint32_t r = t.row_begin; r < t.row_end; ++r) {
        const float v = invalid ? std::numeric_limits<float>::quiet_NaN() : DotBf16(w + size_t(r) * H, xn.data(), H);
        logits[r] = v;
        if (!std::isfinite(v)) finite = false;
        if (best.id < 0 || v > best.value) best = Candidate{v, static_cast<int32_t>(r)};
      }
      if (!finite) best = Candidate{std::numeric_limits<float>::quiet_NaN(), format::kCandidateNonFinite};
      cand_[t.slot] = best;
      break;
    }
    default:
      throw Error("unknown opcode " + std::to_string(t.opcode) + " (the plan was not validated)");
  }
}

}  // namespace tileinfer
