// Package reader: every structural check happens here, before any executor sees the data.
#include "host/package.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "host/error.h"

namespace tileinfer {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "packages are little-endian");

constexpr const char* kPlannerCommand = "bazel run //py/planner -- --checkpoint=... --out=...";
const std::string kReplan = std::string("re-run the planner (") + kPlannerCommand + ")";

template <typename Record>
Span<Record> RecordsOf(const uint8_t* base, uint64_t bytes, const std::string& what,
                       const std::string& path) {
  if (bytes % sizeof(Record) != 0) {
    throw Error(path + ": section '" + what + "' is " + std::to_string(bytes) +
                " bytes, not a multiple of its record size " + std::to_string(sizeof(Record)) +
                ": the file is damaged; " + kReplan);
  }
  return Span<Record>{reinterpret_cast<const Record*>(base), bytes / sizeof(Record)};
}

// An integer of meta in the range of T. nlohmann's get<int>() static_casts a JSON float, which
// is undefined behaviour out of range (1e99; found fuzzing, tests/fuzz), and wraps a
// large integer: only a JSON integer that fits T is accepted.
template <typename T>
T IntegerOf(const nlohmann::json& v, const std::string& path, const std::string& what) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
        i <= static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return static_cast<T>(i);
    }
  }
  throw Error(path + ": meta." + what + " must be an integer in [" +
              std::to_string(std::numeric_limits<T>::min()) + ", " +
              std::to_string(std::numeric_limits<T>::max()) + "], not " +
              v.dump().substr(0, 40) + "; " + kReplan);
}

}  // namespace

std::string Sha256(const void* data, uint64_t bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, bytes, md, &len, EVP_sha256(), nullptr) != 1 || len != 32) {
    throw Error("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  return std::string(reinterpret_cast<char*>(md), 32);
}

std::string Package::Name(const char* field, size_t n) {
  size_t len = 0;
  while (len < n && field[len] != '\0') ++len;
  return std::string(field, len);
}

uint64_t Package::TensorBytes(uint32_t id) const {
  const format::TensorRecord& t = tensors_[id];
  return static_cast<uint64_t>(t.rows) * t.cols * format::DTypeBytes(t.dtype);
}

std::unique_ptr<Package> Package::Open(const std::string& path, bool verify_checksums) {
  if (path.find('\0') != std::string::npos) {  // open() would read only up to it: another file
    throw Error("package path contains a NUL byte: give the path without it");
  }
  // O_NONBLOCK: a FIFO at `path` would block open() until a writer came; the check below
  // refuses it at once (the flag does not change how a regular file is read or mapped).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw Error(path + ": cannot open package (" + std::strerror(errno) +
                "): check the path, or write one with the planner (" + kPlannerCommand + ")");
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file (a package is a .tpkg file the planner wrote)");
  }
  std::unique_ptr<Package> pkg(new Package());
  pkg->path_ = path;
  pkg->map_bytes_ = static_cast<uint64_t>(st.st_size);
  if (pkg->map_bytes_ < sizeof(format::FileHeader)) {
    ::close(fd);
    throw Error(path + ": truncated: " + std::to_string(pkg->map_bytes_) +
                " bytes, smaller than the 64-byte header; " + kReplan);
  }
  void* map = mmap(nullptr, pkg->map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    throw Error(path + ": mmap failed (" + std::strerror(errno) + ")");
  }
  pkg->map_ = static_cast<const uint8_t*>(map);
  pkg->Parse(verify_checksums);
  return pkg;
}

std::unique_ptr<Package> Package::FromBytes(const uint8_t* data, size_t bytes, std::string name,
                                            bool verify_checksums) {
  std::unique_ptr<Package> pkg(new Package());
  pkg->path_ = std::move(name);
  pkg->map_bytes_ = bytes;
  if (bytes < sizeof(format::FileHeader)) {
    throw Error(pkg->path_ + ": truncated: " + std::to_string(bytes) +
                " bytes, smaller than the 64-byte header; " + kReplan);
  }
  // operator new aligns to 16 bytes and sections start at multiples of 4096, so the record
  // views are as aligned as in a mapping.
  pkg->owned_.assign(data, data + bytes);
  pkg->map_ = pkg->owned_.data();
  pkg->Parse(verify_checksums);
  return pkg;
}

Package::~Package() {
  if (map_ != nullptr && owned_.empty()) munmap(const_cast<uint8_t*>(map_), map_bytes_);
}

void Package::Parse(bool verify_checksums) {
  format::FileHeader h;
  std::memcpy(&h, map_, sizeof(h));
  if (std::memcmp(h.magic, format::kMagic, 8) != 0) {
    throw Error(path_ + ": not a TileInfer package (bad magic; expected \"TILEPKG\")");
  }
  if (h.format_version > format::kFormatVersion) {
    throw Error(path_ + ": package format v" + std::to_string(h.format_version) +
                " is newer than this runtime, which reads v" +
                std::to_string(format::kFormatVersion) +
                ": update TileInfer, or " + kReplan + " of this version (if no newer TileInfer wrote it, "
                "its header is damaged)");
  }
  if (h.format_version != format::kFormatVersion) {
    throw Error(path_ + ": unknown package format v" + std::to_string(h.format_version) +
                " (this runtime reads v" + std::to_string(format::kFormatVersion) + "): " +
                kReplan);
  }
  if (h.header_bytes != sizeof(format::FileHeader) ||
      h.section_entry_bytes != sizeof(format::SectionEntry)) {
    throw Error(path_ + ": header or section-entry size does not match format v" +
                std::to_string(format::kFormatVersion) + ": the file is damaged; " + kReplan);
  }
  if (h.file_bytes != map_bytes_) {
    throw Error(path_ + ": truncated or extended: the header says " +
                std::to_string(h.file_bytes) + " bytes, the file has " +
                std::to_string(map_bytes_) + "; " + kReplan);
  }
  if (h.section_count == 0 || h.section_count > 64) {
    throw Error(path_ + ": implausible section count " + std::to_string(h.section_count) +
                ": the file is damaged; " + kReplan);
  }
  const uint64_t table_bytes = static_cast<uint64_t>(h.section_count) * sizeof(format::SectionEntry);
  if (sizeof(h) + table_bytes > map_bytes_) {
    throw Error(path_ + ": truncated section table; " + kReplan);
  }
  const uint8_t* table = map_ + sizeof(h);
  if (verify_checksums && Sha256(table, table_bytes) != std::string(reinterpret_cast<const char*>(h.table_sha256), 32)) {
    throw Error(path_ + ": checksum mismatch in the section table: the file is damaged; " + kReplan);
  }
  std::map<std::string, std::pair<const uint8_t*, uint64_t>> sections;
  for (uint32_t i = 0; i < h.section_count; ++i) {
    format::SectionEntry e;
    std::memcpy(&e, table + i * sizeof(e), sizeof(e));
    const std::string name = Name(e.name, sizeof(e.name));
    bool known = false;
    for (const char* n : format::kSectionNames) known |= (name == n);
    if (!known) {
      throw Error(path_ + ": unknown section '" + name + "' in a format v" +
                  std::to_string(format::kFormatVersion) + " file; " + kReplan);
    }
    if (sections.count(name)) throw Error(path_ + ": section '" + name + "' appears twice");
    if (e.offset % format::kSectionAlign != 0 || e.offset > map_bytes_ ||
        e.bytes > map_bytes_ - e.offset) {
      throw Error(path_ + ": section '" + name + "' lies outside the file or is misaligned "
                  "(offset " + std::to_string(e.offset) + ", " + std::to_string(e.bytes) +
                  " bytes); " + kReplan);
    }
    if (verify_checksums &&
        Sha256(map_ + e.offset, e.bytes) != std::string(reinterpret_cast<const char*>(e.sha256), 32)) {
      throw Error(path_ + ": checksum mismatch in section '" + name +
                  "': the file is damaged; " + kReplan);
    }
    sections[name] = {map_ + e.offset, e.bytes};
  }
  for (const char* n : format::kSectionNames) {
    if (!sections.count(n)) throw Error(path_ + ": section '" + std::string(n) + "' is missing; " + kReplan);
  }
  auto text = [&](const char* n) {
    return std::string(reinterpret_cast<const char*>(sections[n].first), sections[n].second);
  };
  meta_text_ = text("meta");
  tokenizer_text_ = text("tokenizer");
  tensors_ = RecordsOf<format::TensorRecord>(sections["tensors"].first, sections["tensors"].second, "tensors", path_);
  buffers_ = RecordsOf<format::BufferRecord>(sections["buffers"].first, sections["buffers"].second, "buffers", path_);
  waves_ = RecordsOf<format::WaveRecord>(sections["waves"].first, sections["waves"].second, "waves", path_);
  tasks_ = RecordsOf<format::TaskRecord>(sections["tasks"].first, sections["tasks"].second, "tasks", path_);
  weights_ = sections["weights"].first;
  weights_bytes_ = sections["weights"].second;

  for (size_t i = 0; i < tensors_.size; ++i) {
    const format::TensorRecord& t = tensors_[i];
    const std::string name = Name(t.name, sizeof(t.name));
    const uint32_t esize = format::DTypeBytes(t.dtype);
    if (esize == 0 || t.dtype == static_cast<uint32_t>(format::DType::CANDIDATE)) {
      throw Error(path_ + ": tensor " + std::to_string(i) + " '" + name + "' has unknown dtype " +
                  std::to_string(t.dtype));
    }
    const uint64_t bytes = static_cast<uint64_t>(t.rows) * t.cols * esize;
    if (t.rows == 0 || t.cols == 0 || t.offset % format::kTensorAlign != 0 ||
        t.offset > weights_bytes_ || bytes > weights_bytes_ - t.offset) {
      throw Error(path_ + ": tensor " + std::to_string(i) + " '" + name + "' (" +
                  std::to_string(t.rows) + "x" + std::to_string(t.cols) + " at offset " +
                  std::to_string(t.offset) + ") lies outside the weights section of " +
                  std::to_string(weights_bytes_) + " bytes or is misaligned; " + kReplan);
    }
    if (t.reserved != 0) {
      throw Error(path_ + ": tensor " + std::to_string(i) + " '" + name + "' has reserved=" +
                  std::to_string(t.reserved) + " (must be 0); " + kReplan);
    }
  }
  for (size_t i = 0; i < buffers_.size; ++i) {
    const format::BufferRecord& b = buffers_[i];
    if (b.kind < 1 || b.kind > 3 || format::DTypeBytes(b.dtype) == 0 || b.elements == 0 ||
        b.elements > (uint64_t{1} << 40)) {
      throw Error(path_ + ": buffer " + std::to_string(i) + " '" + Name(b.name, sizeof(b.name)) +
                  "' has a bad kind, dtype or size");
    }
  }
  ParseMeta();
}

void Package::ParseMeta() {
  using nlohmann::json;
  json meta;
  try {
    meta = json::parse(meta_text_);
  } catch (const json::exception& e) {
    throw Error(path_ + ": section 'meta' is not valid JSON (" + e.what() + "); " + kReplan);
  }
  std::string where;
  double rms_norm_eps = 0;  // meta.model.rms_norm_eps, checked before it becomes model_'s float
  auto num = [&](const json& obj, const char* key) {
    return IntegerOf<int>(obj.at(key), path_, where + "." + key);
  };
  auto id = [&](const json& obj, const char* key) {
    return IntegerOf<uint32_t>(obj.at(key), path_, where + "." + key);
  };
  try {
    where = "format_version";
    if (IntegerOf<int>(meta.at("format_version"), path_, where) !=
        static_cast<int>(format::kFormatVersion)) {
      throw Error(path_ + ": meta.format_version disagrees with the header; " + kReplan);
    }
    where = "model";
    const json& m = meta.at("model");
    model_.hidden = num(m, "hidden_size");
    model_.ffn = num(m, "intermediate_size");
    model_.layers = num(m, "num_layers");
    model_.heads = num(m, "num_heads");
    model_.kv_heads = num(m, "num_kv_heads");
    model_.head_dim = num(m, "head_dim");
    model_.vocab = num(m, "vocab_size");
    rms_norm_eps = m.at("rms_norm_eps").get<double>();  // checked below, then narrowed
    model_.tied = m.at("tie_word_embeddings").get<bool>();
    model_.bos_token_id = m.at("bos_token_id").is_null() ? -1 : num(m, "bos_token_id");
    where = "target";
    const json& t = meta.at("target");
    target_.name = t.at("name").get<std::string>();
    const json& cc = t.at("compute_capability");
    target_.cc_major = IntegerOf<int>(cc.at(0), path_, "target.compute_capability[0]");
    target_.cc_minor = IntegerOf<int>(cc.at(1), path_, "target.compute_capability[1]");
    target_.sm_count = num(t, "sm_count");
    target_.workers_per_sm = num(t, "workers_per_sm");
    target_.threads_per_worker = num(t, "threads_per_worker");
    target_.registers_per_thread = num(t, "registers_per_thread");
    target_.shared_memory_per_worker = num(t, "shared_memory_per_worker");
    target_.worker_fingerprint = t.at("worker_fingerprint").get<std::string>();
    where = "plan";
    const json& p = meta.at("plan");
    plan_.workers = num(p, "workers");
    plan_.waves = num(p, "waves");
    plan_.tasks = num(p, "tasks");
    plan_.max_context = num(p, "max_context");
    plan_.attention_chunks = num(p, "attention_chunks");
    plan_.attention_min_chunk = num(p, "attention_min_chunk");
    plan_.ffn_parts = num(p, "ffn_parts");
    plan_.lm_head_slots = num(p, "lm_head_slots");
    where = "plan.buffers";
    const json& b = p.at("buffers");
    plan_.buf_x0 = id(b, "x0");
    plan_.buf_x1 = id(b, "x1");
    plan_.buf_qkv = id(b, "qkv");
    plan_.buf_attn = id(b, "attn");
    plan_.buf_logits = id(b, "logits");
    plan_.buf_cand = id(b, "cand");
    plan_.buf_kv_cache = id(b, "kv_cache");
    where = "plan.tensors";
    const json& tn = p.at("tensors");
    plan_.tensor_embed = id(tn, "embed");
    plan_.tensor_rope = id(tn, "rope_inv_freq");
    where = "stop_token_ids";
    for (const json& s : meta.at("stop_token_ids").get_ref<const json::array_t&>()) {
      stop_ids_.push_back(IntegerOf<int>(s, path_, where));
    }
  } catch (const json::exception& e) {
    throw Error(path_ + ": meta." + where + " is missing or malformed (" + e.what() + "); " + kReplan);
  }
  auto positive = [&](int v, const char* what, int limit) {
    if (v <= 0 || v > limit) {
      throw Error(path_ + ": meta value " + std::string(what) + " = " + std::to_string(v) +
                  " is out of range (1.." + std::to_string(limit) + ")");
    }
  };
  positive(model_.hidden, "model.hidden_size", format::kMaxModelHiddenSize);
  positive(model_.ffn, "model.intermediate_size", format::kMaxModelIntermediateSize);
  positive(model_.layers, "model.num_layers", format::kMaxModelNumLayers);
  positive(model_.heads, "model.num_heads", format::kMaxModelNumHeads);
  positive(model_.kv_heads, "model.num_kv_heads", format::kMaxModelNumKvHeads);
  positive(model_.head_dim, "model.head_dim", format::kMaxModelHeadDim);
  positive(model_.vocab, "model.vocab_size", format::kMaxModelVocabSize);
  positive(plan_.workers, "plan.workers", format::kMaxPlanWorkers);
  positive(plan_.max_context, "plan.max_context", format::kMaxPlanMaxContext);
  // The planner's rule (py/planner/plan.py make_plan): a request's prompt and new tokens share
  // max_context positions, so a package needs room for one of each.
  if (plan_.max_context < 2) {
    throw Error(path_ + ": meta value plan.max_context = " + std::to_string(plan_.max_context) +
                " leaves no position for a new token after the prompt's first; " + kReplan +
                " with --max_context=2 or more");
  }
  positive(plan_.attention_chunks, "plan.attention_chunks", format::kMaxPlanAttentionChunks);
  positive(plan_.attention_min_chunk, "plan.attention_min_chunk", format::kMaxPlanAttentionMinChunk);
  positive(plan_.ffn_parts, "plan.ffn_parts", static_cast<int>(format::kFfnMaxParts));  // the fixed-point headroom
  positive(plan_.lm_head_slots, "plan.lm_head_slots", format::kMaxPlanLmHeadSlots);
  // The planner's rule: a positive float32 (normal) number, so that narrowing it is defined
  // and keeps it positive.
  if (!(rms_norm_eps >= std::numeric_limits<float>::min() && rms_norm_eps <= std::numeric_limits<float>::max())) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", rms_norm_eps);
    throw Error(path_ + ": meta value model.rms_norm_eps = " + value +
                " is not a positive number that float32 holds; " + kReplan);
  }
  model_.rms_norm_eps = static_cast<float>(rms_norm_eps);
  if (model_.heads % model_.kv_heads != 0 || model_.head_dim % 2 != 0) {
    throw Error(path_ + ": model heads (" + std::to_string(model_.heads) + ") must be a multiple of "
                "K/V heads (" + std::to_string(model_.kv_heads) + ") and head_dim even");
  }
  if (plan_.waves != static_cast<int>(waves_.size) || plan_.tasks != static_cast<int>(tasks_.size)) {
    throw Error(path_ + ": meta.plan counts (" + std::to_string(plan_.waves) + " waves, " +
                std::to_string(plan_.tasks) + " tasks) disagree with the sections (" +
                std::to_string(waves_.size) + ", " + std::to_string(tasks_.size) + ")");
  }
  for (uint32_t id : {plan_.buf_x0, plan_.buf_x1, plan_.buf_qkv, plan_.buf_attn, plan_.buf_logits,
                      plan_.buf_cand, plan_.buf_kv_cache}) {
    if (id >= buffers_.size) throw Error(path_ + ": meta.plan.buffers names buffer id " + std::to_string(id) + ", which does not exist");
  }
  for (uint32_t id : {plan_.tensor_embed, plan_.tensor_rope}) {
    if (id >= tensors_.size) throw Error(path_ + ": meta.plan.tensors names tensor id " + std::to_string(id) + ", which does not exist");
  }
  for (int id : stop_ids_) {
    if (id < 0 || id >= model_.vocab) throw Error(path_ + ": stop token id " + std::to_string(id) + " is outside the vocabulary");
  }
}

}  // namespace tileinfer
