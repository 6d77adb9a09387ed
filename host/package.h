// Reading a TileInfer package (.tpkg): mmap, structural checks, SHA-256 of every section,
// and the typed views the validator and the executors use. Layout: py/planner/format_spec.py.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/plan_format.h"

namespace tileinfer {

// The decoder's shape, from meta["model"] (a Llama-family config).
struct ModelConfig {
  int hidden = 0;          // H
  int ffn = 0;             // F
  int layers = 0;
  int heads = 0;           // NH
  int kv_heads = 0;        // NKV (NH % NKV == 0)
  int head_dim = 0;        // HD
  int vocab = 0;           // V
  float rms_norm_eps = 0;
  bool tied = true;
  int bos_token_id = -1;
  int q_dim() const { return heads * head_dim; }
  int kv_dim() const { return kv_heads * head_dim; }
};

// The GPU the plan was made for, from meta["target"].
struct TargetInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0, workers_per_sm = 0, threads_per_worker = 0;
  int registers_per_thread = 0, shared_memory_per_worker = 0;
  std::string worker_fingerprint;
};

// Plan parameters and the ids of the named buffers and tensors, from meta["plan"].
struct PlanParams {
  int workers = 0, waves = 0, tasks = 0, max_context = 0;
  int attention_chunks = 0, attention_min_chunk = 0, ffn_parts = 0, lm_head_slots = 0;
  uint32_t buf_x0 = 0, buf_x1 = 0, buf_qkv = 0, buf_attn = 0, buf_logits = 0, buf_cand = 0,
           buf_kv_cache = 0;
  uint32_t tensor_embed = 0, tensor_rope = 0;
};

template <typename T>
struct Span {
  const T* data = nullptr;
  size_t size = 0;
  const T& operator[](size_t i) const { return data[i]; }
  const T* begin() const { return data; }
  const T* end() const { return data + size; }
};

class Package {
 public:
  // Maps and checks `path`. Throws Error naming the file and the failed check (bad magic,
  // newer format, truncation, checksum, section layout, meta keys). `verify_checksums`
  // false skips only the SHA-256 pass (for fuzzing speed); every structural check stays.
  static std::unique_ptr<Package> Open(const std::string& path, bool verify_checksums = true);
  // The same checks on a package held in memory (a copy of `bytes` is kept); `name` stands
  // for the path in error messages. For the fuzzer (host/package_fuzzer.cc) and for callers
  // that already hold the bytes.
  static std::unique_ptr<Package> FromBytes(const uint8_t* data, size_t bytes, std::string name,
                                            bool verify_checksums = true);
  ~Package();
  Package(const Package&) = delete;
  Package& operator=(const Package&) = delete;

  const std::string& path() const { return path_; }
  const ModelConfig& model() const { return model_; }
  const TargetInfo& target() const { return target_; }
  const PlanParams& plan() const { return plan_; }
  const std::vector<int>& stop_token_ids() const { return stop_ids_; }
  const std::string& meta_json() const { return meta_text_; }
  const std::string& tokenizer_json() const { return tokenizer_text_; }

  Span<format::TensorRecord> tensors() const { return tensors_; }
  Span<format::BufferRecord> buffers() const { return buffers_; }
  Span<format::WaveRecord> waves() const { return waves_; }
  Span<format::TaskRecord> tasks() const { return tasks_; }
  const uint8_t* weights() const { return weights_; }
  uint64_t weights_bytes() const { return weights_bytes_; }

  // The tensor's data inside the weights section (bounds were checked at Open).
  const void* TensorData(uint32_t id) const { return weights_ + tensors_[id].offset; }
  uint64_t TensorBytes(uint32_t id) const;
  static std::string Name(const char* field, size_t n);  // NUL-padded field -> string

 private:
  Package() = default;
  void Parse(bool verify_checksums);
  void ParseMeta();

  std::string path_;
  const uint8_t* map_ = nullptr;  // mmap'd by Open, or owned_.data() for FromBytes
  uint64_t map_bytes_ = 0;
  std::vector<uint8_t> owned_;
  std::string meta_text_, tokenizer_text_;
  ModelConfig model_;
  TargetInfo target_;
  PlanParams plan_;
  std::vector<int> stop_ids_;
  Span<format::TensorRecord> tensors_;
  Span<format::BufferRecord> buffers_;
  Span<format::WaveRecord> waves_;
  Span<format::TaskRecord> tasks_;
  const uint8_t* weights_ = nullptr;
  uint64_t weights_bytes_ = 0;
};

// SHA-256 of `bytes` at `data` (OpenSSL), 32 bytes.
std::string Sha256(const void* data, uint64_t bytes);

}  // namespace tileinfer
