// The package reader and the plan validator against the golden packages and hand-broken
// copies of them: every refusal must name the file, and the validator's the task and rule.
// The Python side has the same cases in py/planner/package_test.py and validate_test.py.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/package.h"
#include "host/validate.h"
#include "tests/golden/golden_path.h"

namespace tileinfer {
namespace {

using format::BufferRecord;
using format::FileHeader;
using format::Opcode;
using format::SectionEntry;
using format::TaskRecord;
using format::WaveRecord;

// --- files ------------------------------------------------------------------------------------

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return s.str();
}

// Writes `bytes` to a fresh file under $TEST_TMPDIR named after the running test.
std::string WriteTemp(const std::string& bytes) {
  static int counter = 0;
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  const std::string path = testing::TempDir() + name + "." + std::to_string(counter++) + ".tpkg";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) ADD_FAILURE() << "cannot write " << path;
  return path;
}

// --- refusals ---------------------------------------------------------------------------------

// The message of the tileinfer::Error `fn` throws; a failure (and "") when it throws nothing.
std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tileinfer::Error, nothing was thrown";
  return "";
}

void ExpectMentions(const std::string& msg, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
  }
}

std::string OpenError(const std::string& path) {
  return ErrorOf([&] { Package::Open(path); });
}

// --- editing package bytes --------------------------------------------------------------------

template <typename T>
T Load(const std::string& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

template <typename T>
void Store(std::string& bytes, size_t offset, const T& v) {
  std::memcpy(&bytes[offset], &v, sizeof(T));
}

// Section name -> (index in the table, entry), from the package's own table.
std::map<std::string, std::pair<size_t, SectionEntry>> SectionTable(const std::string& bytes) {
  const auto h = Load<FileHeader>(bytes, 0);
  std::map<std::string, std::pair<size_t, SectionEntry>> table;
  for (size_t i = 0; i < h.section_count; ++i) {
    const auto e = Load<SectionEntry>(bytes, sizeof(FileHeader) + i * sizeof(SectionEntry));
    table[Package::Name(e.name, sizeof(e.name))] = {i, e};
  }
  return table;
}

// Re-signs the section table after an edit of it (or of the header's section count).
void ResignTable(std::string& bytes) {
  auto h = Load<FileHeader>(bytes, 0);
  const std::string sha =
      Sha256(bytes.data() + sizeof(FileHeader), uint64_t{h.section_count} * sizeof(SectionEntry));
  std::memcpy(h.table_sha256, sha.data(), 32);
  Store(bytes, 0, h);
}

// `bytes` with section `name` passed through `mutate` (same length) and its SHA-256 and the
// table's recomputed, so that a reader sees a well-formed file whose only fault is the edit.
std::string Rewrite(std::string bytes, const std::string& name,
                    const std::function<void(std::string&)>& mutate) {
  const auto table = SectionTable(bytes);
  const auto it = table.find(name);
  if (it == table.end()) {
    ADD_FAILURE() << "no section " << name;
    return bytes;
  }
  auto [index, entry] = it->second;
  std::string section = bytes.substr(entry.offset, entry.bytes);
  mutate(section);
  EXPECT_EQ(section.size(), entry.bytes) << "Rewrite keeps the section's length";
  section.resize(entry.bytes);
  bytes.replace(entry.offset, entry.bytes, section);
  const std::string sha = Sha256(section.data(), section.size());
  std::memcpy(entry.sha256, sha.data(), 32);
  Store(bytes, sizeof(FileHeader) + index * sizeof(SectionEntry), entry);
  ResignTable(bytes);
  return bytes;
}

// Rewrite for a section of fixed-size records, edited as a vector.
template <typename Record>
std::string RewriteRecords(const std::string& bytes, const std::string& name,
                           const std::function<void(std::vector<Record>&)>& edit) {
  return Rewrite(bytes, name, [&](std::string& section) {
    std::vector<Record> records(section.size() / sizeof(Record));
    std::memcpy(records.data(), section.data(), records.size() * sizeof(Record));
    edit(records);
    ASSERT_EQ(records.size() * sizeof(Record), section.size());
    std::memcpy(&section[0], records.data(), section.size());
  });
}

std::string RewriteTasks(const std::string& bytes,
                         const std::function<void(std::vector<TaskRecord>&)>& edit) {
  return RewriteRecords<TaskRecord>(bytes, "tasks", edit);
}

std::string RewriteWaves(const std::string& bytes,
                         const std::function<void(std::vector<WaveRecord>&)>& edit) {
  return RewriteRecords<WaveRecord>(bytes, "waves", edit);
}

// `bytes` with `record` appended to section `name`, in the alignment padding after it (which
// must have room), its checksum and the table's redone.
template <typename Record>
std::string AppendRecord(std::string bytes, const std::string& name, const Record& record) {
  const auto table = SectionTable(bytes);
  auto [index, entry] = table.at(name);
  uint64_t next = bytes.size();
  for (const auto& [other, at] : table) {
    if (at.second.offset > entry.offset) next = std::min<uint64_t>(next, at.second.offset);
  }
  EXPECT_LE(entry.offset + entry.bytes + sizeof(Record), next) << "no room after " << name;
  Store(bytes, entry.offset + entry.bytes, record);
  entry.bytes += sizeof(Record);
  const std::string sha = Sha256(bytes.data() + entry.offset, entry.bytes);
  std::memcpy(entry.sha256, sha.data(), 32);
  Store(bytes, sizeof(FileHeader) + index * sizeof(SectionEntry), entry);
  ResignTable(bytes);
  return bytes;
}

// `bytes` with the first `from` in the meta JSON replaced by `to` (same length).
std::string RewriteMeta(const std::string& bytes, const std::string& from, const std::string& to) {
  return Rewrite(bytes, "meta", [&](std::string& meta) {
    const size_t at = meta.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    ASSERT_EQ(from.size(), to.size());
    meta.replace(at, from.size(), to);
  });
}

// --- golden packages --------------------------------------------------------------------------

struct Golden {
  const char* file;
  int layers, hidden, ffn, heads, kv_heads, head_dim, vocab, max_context;
  bool tied;
};

const Golden kGoldens[] = {
    {"tiny_9x3.tpkg", 2, 72, 100, 9, 3, 8, 97, 64, true},
    {"tiny_untied.tpkg", 2, 64, 128, 4, 2, 16, 50, 32, false},
};

class GoldenTest : public testing::TestWithParam<Golden> {};

TEST_P(GoldenTest, OpensValidatesAndMetaMatches) {
  const Golden& g = GetParam();
  const auto pkg = Package::Open(GoldenPath(g.file));
  ValidatePlan(*pkg);
  const ModelConfig& m = pkg->model();
  EXPECT_EQ(m.layers, g.layers);
  EXPECT_EQ(m.hidden, g.hidden);
  EXPECT_EQ(m.ffn, g.ffn);
  EXPECT_EQ(m.heads, g.heads);
  EXPECT_EQ(m.kv_heads, g.kv_heads);
  EXPECT_EQ(m.head_dim, g.head_dim);
  EXPECT_EQ(m.vocab, g.vocab);
  EXPECT_EQ(m.tied, g.tied);
  const PlanParams& p = pkg->plan();
  EXPECT_EQ(p.workers, 20);  // rtx3050: 20 SMs x 1 worker
  EXPECT_EQ(p.waves, 10);    // EMBED, 4 per layer, LM_HEAD
  EXPECT_EQ(pkg->waves().size, 10u);
  EXPECT_EQ(p.max_context, g.max_context);
  EXPECT_EQ(static_cast<size_t>(p.tasks), pkg->tasks().size);
  EXPECT_FALSE(pkg->stop_token_ids().empty());
  EXPECT_EQ(pkg->target().sm_count, 20);
  // The package's own target passes the runtime's target check.
  CheckTarget(*pkg, pkg->target().name, pkg->target().cc_major, pkg->target().cc_minor,
              pkg->target().sm_count, pkg->target().worker_fingerprint);
}

TEST_P(GoldenTest, CpuExecutorGivesFiniteLogitsAndTheArgmax) {
  const Golden& g = GetParam();
  const auto pkg = Package::Open(GoldenPath(g.file));
  ValidatePlan(*pkg);
  CpuExecutor ex(*pkg, 2);
  int token = pkg->model().bos_token_id >= 0 ? pkg->model().bos_token_id : 0;
  for (int pos = 0; pos < 5; ++pos) {
    ex.Step(token, pos, /*logits=*/true);
    const std::vector<float> logits = ex.Logits();
    ASSERT_EQ(logits.size(), static_cast<size_t>(g.vocab));
    size_t argmax = 0, argmin = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      ASSERT_TRUE(std::isfinite(logits[i])) << "logit " << i << " at pos " << pos;
      if (logits[i] > logits[argmax]) argmax = i;
      if (logits[i] < logits[argmin]) argmin = i;
    }
    EXPECT_LT(logits[argmin], logits[argmax]) << "flat logits at pos " << pos;
    const int32_t id = ex.Select();
    ASSERT_GE(id, 0) << "pos " << pos;
    ASSERT_LT(id, g.vocab) << "pos " << pos;
    EXPECT_EQ(id, static_cast<int32_t>(argmax)) << "greedy id is the lowest argmax, pos " << pos;
    token = id;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, testing::ValuesIn(kGoldens),
                         [](const testing::TestParamInfo<Golden>& info) {
                           std::string name = info.param.file;
                           return name.substr(0, name.find('.'));
                         });

// --- package refusals -------------------------------------------------------------------------

class PackageRefusalTest : public testing::Test {
 protected:
  void SetUp() override { golden_ = ReadBytes(GoldenPath("tiny_9x3.tpkg")); }
  std::string golden_;
};

TEST_F(PackageRefusalTest, RewriteWithoutAnEditStillOpens) {
  // The helper itself: a re-signed copy is accepted, so each refusal below is its edit's.
  const std::string path = WriteTemp(Rewrite(golden_, "tasks", [](std::string&) {}));
  ValidatePlan(*Package::Open(path));
}

TEST_F(PackageRefusalTest, Truncated) {
  const auto table = SectionTable(golden_);
  const auto& weights = table.at("weights").second;
  const size_t mid_table = sizeof(FileHeader) + 3 * sizeof(SectionEntry) + 10;
  const size_t mid_weights = weights.offset + weights.bytes / 2;
  std::string path = WriteTemp(golden_.substr(0, 10));
  ExpectMentions(OpenError(path), {path, "truncated: 10 bytes, smaller than the 64-byte header"});
  for (size_t cut : {mid_table, mid_weights, golden_.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    path = WriteTemp(golden_.substr(0, cut));
    ExpectMentions(OpenError(path), {path, "truncated", "the header says " +
                                     std::to_string(golden_.size()) + " bytes, the file has " +
                                     std::to_string(cut)});
  }
  path = WriteTemp(golden_ + '\0');  // trailing bytes
  ExpectMentions(OpenError(path), {path, "extended", "the file has " +
                                   std::to_string(golden_.size() + 1)});
}

TEST_F(PackageRefusalTest, FlippedByteNamesTheSection) {
  for (const char* name : format::kSectionNames) {
    SCOPED_TRACE(name);
    const SectionEntry e = SectionTable(golden_).at(name).second;
    std::string bytes = golden_;
    bytes[e.offset + e.bytes / 2] ^= 0x01;
    const std::string path = WriteTemp(bytes);
    ExpectMentions(OpenError(path),
                   {path, "checksum mismatch in section '" + std::string(name) + "'"});
    if (std::string(name) == "weights") {
      Package::Open(path, /*verify_checksums=*/false);  // skips only the hashes
    }
  }
}

TEST_F(PackageRefusalTest, FlippedByteInTheSectionTable) {
  std::string bytes = golden_;
  bytes[sizeof(FileHeader) + 20] ^= 0x01;  // the first entry's offset field
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path), {path, "checksum mismatch in the section table"});
}

TEST_F(PackageRefusalTest, WrongMagic) {
  std::string bytes = golden_;
  bytes[0] ^= 0x20;
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path), {path, "not a TileInfer package (bad magic"});
}

TEST_F(PackageRefusalTest, NewerFormatVersion) {
  std::string bytes = golden_;
  auto h = Load<FileHeader>(bytes, 0);
  h.format_version = format::kFormatVersion + 1;
  Store(bytes, 0, h);
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path),
                 {path, "package format v" + std::to_string(format::kFormatVersion + 1) +
                            " is newer than this runtime, which reads v" +
                            std::to_string(format::kFormatVersion),
                  "update TileInfer"});
}

TEST_F(PackageRefusalTest, UnknownFormatVersionZero) {
  std::string bytes = golden_;
  auto h = Load<FileHeader>(bytes, 0);
  h.format_version = 0;
  Store(bytes, 0, h);
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path), {path, "unknown package format v0", "re-run the planner"});
}

TEST_F(PackageRefusalTest, MissingFile) {
  const std::string path = testing::TempDir() + "absent.tpkg";
  ExpectMentions(OpenError(path), {path, "cannot open package", "No such file"});
}

TEST_F(PackageRefusalTest, DirectoryInsteadOfAFile) {
  const std::string path = testing::TempDir() + "a_directory.tpkg";
  ASSERT_TRUE(mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) << path;
  ExpectMentions(OpenError(path), {path, "not a regular file"});
}

TEST_F(PackageRefusalTest, EmptyFile) {
  const std::string path = WriteTemp("");
  ExpectMentions(OpenError(path), {path, "truncated: 0 bytes"});
}

TEST_F(PackageRefusalTest, MissingSection) {
  // Drop the last entry ("weights") from the table and re-sign it.
  std::string bytes = golden_;
  auto h = Load<FileHeader>(bytes, 0);
  ASSERT_EQ(SectionTable(bytes).at("weights").first, h.section_count - 1u);
  h.section_count -= 1;
  Store(bytes, 0, h);
  ResignTable(bytes);
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path), {path, "section 'weights' is missing"});
}

TEST_F(PackageRefusalTest, UnknownSection) {
  std::string bytes = golden_;
  const size_t index = SectionTable(bytes).at("waves").first;
  const size_t at = sizeof(FileHeader) + index * sizeof(SectionEntry);
  auto e = Load<SectionEntry>(bytes, at);
  std::memcpy(e.name, "wavez", 6);
  Store(bytes, at, e);
  ResignTable(bytes);
  const std::string path = WriteTemp(bytes);
  ExpectMentions(OpenError(path), {path, "unknown section 'wavez'"});
}

TEST_F(PackageRefusalTest, FromBytesChecksLikeOpen) {
  const auto* data = reinterpret_cast<const uint8_t*>(golden_.data());
  ValidatePlan(*Package::FromBytes(data, golden_.size(), "in-memory.tpkg"));
  ExpectMentions(ErrorOf([&] { Package::FromBytes(data, 40, "in-memory.tpkg"); }),
                 {"in-memory.tpkg: truncated: 40 bytes"});
  ExpectMentions(ErrorOf([&] { Package::FromBytes(data, golden_.size() - 1, "in-memory.tpkg"); }),
                 {"in-memory.tpkg: truncated or extended"});
}

TEST_F(PackageRefusalTest, MetaFloatWhereAnIntegerBelongs) {
  // Found fuzzing (tests/fuzz): nlohmann's get<int>() of 9e9 is an out-of-range float cast (UB).
  const std::string path =
      WriteTemp(RewriteMeta(golden_, "\"intermediate_size\":100", "\"intermediate_size\":9e9"));
  ExpectMentions(OpenError(path), {path, "meta.model.intermediate_size must be an integer"});
}

TEST_F(PackageRefusalTest, RmsNormEpsOutOfRange) {
  // The planner refuses such a config; a hand-made file must not run into NaN or garbage.
  // As long as 1e-05 (RewriteMeta keeps sizes); 1e-50 would narrow to a float 0.
  const std::pair<const char*, const char*> cases[] = {
      {"-1e00", "-1"}, {"0e+00", "0"}, {"1e+99", "1e+99"}, {"1e+39", "1e+39"}, {"1e-50", "1e-50"}};
  for (const auto& [eps, shown] : cases) {
    const std::string path =
        WriteTemp(RewriteMeta(golden_, "\"rms_norm_eps\":1e-05", std::string("\"rms_norm_eps\":") + eps));
    ExpectMentions(OpenError(path), {path, std::string("model.rms_norm_eps = ") + shown + " is not a positive "
                                     "number that float32 holds"});
  }
}

TEST_F(PackageRefusalTest, MaxContextOfOne) {
  // The planner refuses max_context=1 (no room for a new token); a package written before
  // that rule is refused on opening, with what to do.
  const std::string path = WriteTemp(RewriteMeta(golden_, "\"max_context\":64", "\"max_context\": 1"));
  ExpectMentions(OpenError(path), {path, "plan.max_context = 1 leaves no position for a new token",
                                   "--max_context=2 or more"});
}

TEST_F(PackageRefusalTest, PathWithANulByte) {
  // Without the check, open() would take the golden package named before the NUL.
  const std::string path = GoldenPath("tiny_9x3.tpkg") + std::string("\0junk", 5);
  ExpectMentions(OpenError(path), {"package path contains a NUL byte"});
}

TEST_F(PackageRefusalTest, FifoInsteadOfAFileIsRefusedAtOnce) {
  // open() of a FIFO blocks until a writer comes: the reader must not wait for one.
  const std::string path = testing::TempDir() + "a_fifo.tpkg";
  ASSERT_TRUE(mkfifo(path.c_str(), 0644) == 0 || errno == EEXIST) << path;
  ExpectMentions(OpenError(path), {path, "not a regular file"});
}

// --- validator refusals -----------------------------------------------------------------------

// Hand-broken copies of tiny_9x3 (20 workers, 2 layers, 6 attention chunks): each opens
// (the checksums are redone) and must fail ValidatePlan naming the task and the rule.
class PlanRefusalTest : public testing::Test {
 protected:
  void SetUp() override {
    golden_ = ReadBytes(GoldenPath("tiny_9x3.tpkg"));
    pkg_ = Package::Open(GoldenPath("tiny_9x3.tpkg"));
  }

  // Index of the nth task of `op` in `layer` of the golden plan.
  size_t Find(Opcode op, uint32_t layer, size_t nth = 0) const {
    for (size_t i = 0; i < pkg_->tasks().size; ++i) {
      const TaskRecord& t = pkg_->tasks()[i];
      if (t.opcode == static_cast<uint16_t>(op) && t.layer == layer && nth-- == 0) return i;
    }
    ADD_FAILURE() << "no such task";
    return 0;
  }
  // The prefix by which ValidatePlan names task `index` of a package holding `tasks`.
  static std::string Names(size_t index, const TaskRecord& t) {
    return "task " + std::to_string(index) + " (" + format::OpcodeName(t.opcode) + ", wave " +
           std::to_string(t.wave) + ", worker " + std::to_string(t.worker);
  }
  std::string Names(size_t index) const { return Names(index, pkg_->tasks()[index]); }

  // Writes `bytes`, checks that it opens, and returns ValidatePlan's refusal.
  std::string Refusal(const std::string& bytes) {
    path_ = WriteTemp(bytes);
    std::unique_ptr<Package> pkg;
    try {
      pkg = Package::Open(path_);
    } catch (const Error& e) {
      ADD_FAILURE() << "the edited package should open: " << e.what();
      return "";
    }
    const std::string msg = ErrorOf([&] { ValidatePlan(*pkg); });
    EXPECT_EQ(msg.rfind(path_ + ": invalid plan: ", 0), 0u) << msg;
    return msg;
  }

  // Moves task `from` to the end of the earlier wave `to`, as that wave's last worker (so
  // the tasks stay sorted); returns the edited bytes and sets `*index` to its new index.
  std::string MoveTask(size_t from, uint32_t to, size_t* index) const {
    const uint32_t from_wave = pkg_->tasks()[from].wave;
    const WaveRecord& target = pkg_->waves()[to];
    const size_t at = target.first_task + target.task_count;
    *index = at;
    std::string bytes = RewriteWaves(golden_, [&](std::vector<WaveRecord>& waves) {
      waves[to].task_count += 1;
      for (uint32_t w = to + 1; w <= from_wave; ++w) waves[w].first_task += 1;
      waves[from_wave].task_count -= 1;
    });
    return RewriteTasks(bytes, [&](std::vector<TaskRecord>& tasks) {
      TaskRecord moved = tasks[from];
      moved.wave = to;
      moved.worker = tasks[at - 1].worker;
      tasks.erase(tasks.begin() + from);
      tasks.insert(tasks.begin() + at, moved);
    });
  }

  std::string golden_, path_;
  std::unique_ptr<Package> pkg_;
};

TEST_F(PlanRefusalTest, RowsPastTheOutputBuffer) {
  const size_t ti = Find(Opcode::EMBED, 0, 19);  // the last: rows [68, 72)
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].row_end = 73;  // H = 72
  }));
  ExpectMentions(msg, {Names(ti), "rows [68, 73) are empty or exceed 72"});
}

TEST_F(PlanRefusalTest, RowsPastTheFfnWidth) {
  const size_t ti = Find(Opcode::FFN, 0, 19);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].row_end = 101;  // F = 100
  }));
  ExpectMentions(msg, {Names(ti), ", 101) are empty or exceed 100"});
}

TEST_F(PlanRefusalTest, OutputBufferOneElementShort) {
  // qkv one element short: the QKV tasks' output no longer matches the weight's rows.
  const std::string bytes = RewriteRecords<BufferRecord>(
      golden_, "buffers", [&](std::vector<BufferRecord>& b) { b[pkg_->plan().buf_qkv].elements -= 1; });
  const std::string msg = Refusal(bytes);
  ExpectMentions(msg, {Names(Find(Opcode::RMSNORM_GEMV, 0)),
                       "out_buf 'qkv' has 119 elements, the opcode needs 120"});
}

TEST_F(PlanRefusalTest, TwoWritersOfOneRowInAWave) {
  const size_t ti = Find(Opcode::EMBED, 0, 2);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].row_begin -= 1;  // now also writes the previous task's last row
  }));
  ExpectMentions(msg, {Names(ti), "writes element", "which " + Names(ti - 1),
                       "also writes in the same barrier epoch"});
}

TEST_F(PlanRefusalTest, TwoWritersOfOneCandidateSlot) {
  const size_t ti = Find(Opcode::LM_HEAD, 0, 3);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].slot = 2;
  }));
  ExpectMentions(msg, {Names(ti), "of buffer " + std::to_string(pkg_->plan().buf_cand),
                       "which " + Names(Find(Opcode::LM_HEAD, 0, 2)), "also writes"});
}

TEST_F(PlanRefusalTest, AttentionChunkPlannedTwice) {
  const size_t ti = Find(Opcode::ATTENTION, 1, 1);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].slot = 0;  // kv head 0, chunk 0 again
  }));
  ExpectMentions(msg, {Names(ti), "which " + Names(Find(Opcode::ATTENTION, 1, 0)),
                       "also writes in the same barrier epoch"});
}

TEST_F(PlanRefusalTest, ReaderMovedToAnEarlierWaveThanItsProducer) {
  // The first ATTN_OUT task of layer 0 moved into the QKV wave: it rewrites residual rows
  // (fix(x1)) that the QKV tasks of that wave read.
  size_t ti = 0;
  const std::string bytes = MoveTask(Find(Opcode::ATTN_OUT, 0), 1, &ti);
  const std::string msg = Refusal(bytes);
  const auto moved = Package::Open(path_);
  EXPECT_EQ(moved->tasks()[ti].opcode, static_cast<uint16_t>(Opcode::ATTN_OUT));
  ExpectMentions(msg, {"(RMSNORM_GEMV, wave 1", "reads element 0 of buffer " + std::to_string(pkg_->plan().buf_x0),
                       Names(ti, moved->tasks()[ti]), "wave 1, worker 19", "writes with no barrier between them"});
}

TEST_F(PlanRefusalTest, ReaderMovedIntoTheWaveOfItsProducer) {
  // The first ATTN_OUT task of layer 0 moved into the ATTENTION wave that writes attn.
  size_t ti = 0;
  const std::string bytes = MoveTask(Find(Opcode::ATTN_OUT, 0), 2, &ti);
  const std::string msg = Refusal(bytes);
  const auto moved = Package::Open(path_);
  ExpectMentions(msg, {Names(ti, moved->tasks()[ti]), "(ATTN_OUT, wave 2",
                       "reads element 0 of buffer " + std::to_string(pkg_->plan().buf_attn),
                       "that " + Names(Find(Opcode::ATTENTION, 0)),
                       "writes with no barrier between them"});
}

TEST_F(PlanRefusalTest, ReadOfABufferNothingWroteYet) {
  // Layer 0's ATTN_OUT merges a buffer of attn's shape that no task writes.
  const format::BufferRecord& attn = pkg_->buffers()[pkg_->plan().buf_attn];
  BufferRecord ghost = attn;
  std::memset(ghost.name, 0, sizeof(ghost.name));
  std::memcpy(ghost.name, "ghost", 6);
  const uint32_t id = static_cast<uint32_t>(pkg_->buffers().size);
  const std::string msg = Refusal(RewriteTasks(AppendRecord(golden_, "buffers", ghost), [&](std::vector<TaskRecord>& tasks) {
    for (TaskRecord& t : tasks) {
      if (t.opcode == static_cast<uint16_t>(Opcode::ATTN_OUT) && t.layer == 0) t.in_buf = id;
    }
  }));
  ExpectMentions(msg, {Names(Find(Opcode::ATTN_OUT, 0)),
                       "reads element 0 of buffer " + std::to_string(id) + " before any earlier wave writes it"});
}

TEST_F(PlanRefusalTest, NoBarrierAfterTheQkvWave) {
  // SYNC_NONE on layer 0's QKV wave: attention would read qkv while it is being written.
  const uint32_t qkv_wave = pkg_->tasks()[Find(Opcode::RMSNORM_GEMV, 0)].wave;
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[qkv_wave].sync = static_cast<uint32_t>(format::Sync::SYNC_NONE);
  }));
  ExpectMentions(msg, {Names(Find(Opcode::ATTENTION, 0)),
                       "buffer " + std::to_string(pkg_->plan().buf_qkv),
                       "that " + Names(Find(Opcode::RMSNORM_GEMV, 0)),
                       "writes with no barrier between them"});
}

TEST_F(PlanRefusalTest, NoBarrierAfterTheEmbedWave) {
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[0].sync = static_cast<uint32_t>(format::Sync::SYNC_NONE);
  }));
  ExpectMentions(msg, {Names(Find(Opcode::RMSNORM_GEMV, 0)), "that " + Names(0),
                       "writes with no barrier between them"});
}

TEST_F(PlanRefusalTest, LastWaveMustEndAtABarrier) {
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w.back().sync = static_cast<uint32_t>(format::Sync::SYNC_NONE);
  }));
  ExpectMentions(msg, {"the last wave must end at a grid barrier"});
}

TEST_F(PlanRefusalTest, UnknownSync) {
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[3].sync = 7;
  }));
  ExpectMentions(msg, {"wave 3 has unknown sync 7"});
}

TEST_F(PlanRefusalTest, BadOpcode) {
  const size_t ti = Find(Opcode::FFN, 0, 1);
  for (uint16_t opcode : {uint16_t{99}, uint16_t{0}}) {
    SCOPED_TRACE(opcode);
    const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
      t[ti].opcode = opcode;
    }));
    const TaskRecord& t = pkg_->tasks()[ti];
    ExpectMentions(msg, {"task " + std::to_string(ti) + " (",
                         "wave " + std::to_string(t.wave) + ", worker " + std::to_string(t.worker),
                         "unknown opcode " + std::to_string(opcode)});
  }
}

TEST_F(PlanRefusalTest, WorkerOutOfRange) {
  const size_t ti = Find(Opcode::LM_HEAD, 0, 19);  // the wave's last, so still sorted
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].worker = 20;
  }));
  ExpectMentions(msg, {"task " + std::to_string(ti) + " (LM_HEAD, wave 9, worker 20",
                       "worker is outside the plan's 20 workers"});
}

TEST_F(PlanRefusalTest, TasksSortedByWorker) {
  const size_t a = pkg_->waves()[1].first_task;
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    std::swap(t[a], t[a + 1]);
  }));
  ExpectMentions(msg, {"task " + std::to_string(a + 1) + " (RMSNORM_GEMV, wave 1, worker 0",
                       "tasks of a wave must be sorted by worker"});
}

TEST_F(PlanRefusalTest, TaskInTheWrongWaveField) {
  const size_t ti = Find(Opcode::FFN, 0);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].wave += 1;
  }));
  ExpectMentions(msg, {"task " + std::to_string(ti) + " (FFN, wave 5",
                       "lies in wave 4's task range"});
}

TEST_F(PlanRefusalTest, WaveRecordsMustTileTheTasks) {
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[3].task_count -= 1;
  }));
  ExpectMentions(msg, {"wave 4 does not start where the previous wave ended"});
}

TEST_F(PlanRefusalTest, LogitsRowsNotCovered) {
  const size_t ti = Find(Opcode::LM_HEAD, 0);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].row_end -= 1;
  }));
  ExpectMentions(msg, {"logits row", "never written", "cover the vocabulary"});
}

TEST_F(PlanRefusalTest, EmptyWave) {
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[1].task_count = 0;
    w[2].first_task = w[1].first_task;
    w[2].task_count += pkg_->waves()[1].task_count;
  }));
  ExpectMentions(msg, {"wave 1 has no task"});
}

TEST_F(PlanRefusalTest, ActivationBufferOfTheWrongDtype) {
  // A BF16 activation buffer would be half the size the executors write into.
  const std::string msg = Refusal(RewriteRecords<format::BufferRecord>(
      golden_, "buffers", [&](std::vector<format::BufferRecord>& b) {
        b[pkg_->plan().buf_x0].dtype = static_cast<uint32_t>(format::DType::BF16);
      }));
  ExpectMentions(msg, {"'x0' of the wrong dtype (FIXED64 needed)"});
}

TEST_F(PlanRefusalTest, AttentionWaveOfAnotherLayer) {
  // Layer 1's attention relabelled as layer 0's: layer 1's K/V cache row would never be written.
  const size_t first = Find(Opcode::ATTENTION, 1);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    for (size_t i = first; i < t.size() && t[i].opcode == static_cast<uint16_t>(Opcode::ATTENTION); ++i) {
      t[i].layer = 0;
    }
  }));
  ExpectMentions(msg, {"must hold ATTENTION tasks of layer 1"});
}

TEST_F(PlanRefusalTest, TensorIdOutOfRange) {
  const size_t ti = Find(Opcode::ATTN_OUT, 1);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].weight = static_cast<uint32_t>(pkg_->tensors().size);
  }));
  ExpectMentions(msg, {Names(ti), "weight names tensor " +
                                      std::to_string(pkg_->tensors().size) +
                                      ", which does not exist"});
}

TEST_F(PlanRefusalTest, WrongBufferKind) {
  const size_t ti = Find(Opcode::ATTENTION, 0);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) {
    t[ti].aux_buf = pkg_->plan().buf_x1;
  }));
  ExpectMentions(msg, {Names(ti), "aux_buf names buffer 'x1' of the wrong kind"});
}

TEST_F(PlanRefusalTest, ResidualReadWhileTheFfnAddsToIt) {
  // No barrier after layer 0's FFN wave (wave 4): layer 1's QKV would read the residual
  // while the FFN tasks still add their parts to it.
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[4].sync = static_cast<uint32_t>(format::Sync::SYNC_NONE);
  }));
  ExpectMentions(msg, {"(RMSNORM_GEMV, wave 5", "reads element 0 of buffer 0", "(FFN, wave 4",
                       "accumulates into with no barrier between them"});
}

TEST_F(PlanRefusalTest, UnusedFieldsOfAnotherFormat) {
  // Format 1's FFN tasks named the residual (aux_buf) and FFN_REDUCE a part count (param0):
  // unused fields must be NONE_ID and 0, as the Python validator demands.
  const size_t ti = Find(Opcode::FFN, 1);
  ExpectMentions(Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) { t[ti].aux_buf = pkg_->plan().buf_x0; })),
                 {Names(ti), "aux_buf is " + std::to_string(pkg_->plan().buf_x0) + "; FFN does not use it (NONE_ID)"});
  ExpectMentions(Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) { t[ti].param0 = 6; })),
                 {Names(ti), "param0 is 6; FFN does not use it (0)"});
  ExpectMentions(Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) { t[ti].reserved1 = 1; })),
                 {Names(ti), "reserved fields must be 0"});
}

TEST_F(PlanRefusalTest, FfnSlotTwiceInAWave) {
  // Two FFN tasks of one wave with one slot (found in review: format 1's write conflict on
  // the parts buffer caught it, the FIXED64 residual's adds do not).
  const size_t a = Find(Opcode::FFN, 0, 2), b = Find(Opcode::FFN, 0, 3);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) { t[b].slot = t[a].slot; }));
  ExpectMentions(msg, {"FFN slot " + std::to_string(pkg_->tasks()[a].slot) + " is used twice in wave 4"});
}

TEST_F(PlanRefusalTest, AttnOutRowLeftOut) {
  // A residual row that layer 1's ATTN_OUT never rewrites would keep adding up across layers.
  const size_t ti = Find(Opcode::ATTN_OUT, 1, 19);
  const std::string msg = Refusal(RewriteTasks(golden_, [&](std::vector<TaskRecord>& t) { t[ti].row_end -= 1; }));
  ExpectMentions(msg, {"wave 7: rows [71, 72) are in no task", "ATTN_OUT wave cover its 72 rows exactly once"});
}

TEST_F(PlanRefusalTest, ResidualSeedAndAddsInOneEpoch) {
  // No barrier after layer 1's ATTN_OUT (wave 7): its fix(x1) writes would meet the FFN's adds.
  const std::string msg = Refusal(RewriteWaves(golden_, [&](std::vector<WaveRecord>& w) {
    w[7].sync = static_cast<uint32_t>(format::Sync::SYNC_NONE);
  }));
  ExpectMentions(msg, {"(FFN, wave 8", "accumulates into element", "(ATTN_OUT, wave 7",
                       "writes in the same barrier epoch"});
}

TEST_F(PlanRefusalTest, MetaLogitsOrCandidatesNameTheKvCache) {
  // Found fuzzing (tests/fuzz): the final coverage loops indexed the K/V cache's (empty) tracking.
  ExpectMentions(Refusal(RewriteMeta(golden_, "\"logits\":4", "\"logits\":6")),
                 {"meta.plan.buffers.logits names buffer 6 'kv_cache'",
                  "must be of kind ACTIVATION with 97 elements"});
  ExpectMentions(Refusal(RewriteMeta(golden_, "\"cand\":5", "\"cand\":6")),
                 {"meta.plan.buffers.cand names buffer 6 'kv_cache'",
                  "must be of kind CANDIDATES with 20 elements"});
}

TEST_F(PlanRefusalTest, HugeBufferNamedOnlyByAnIgnoredField) {
  // Found fuzzing (tests/fuzz): EMBED ignores in_buf, so this buffer's size escaped the operand
  // checks and the validator tried to track 2^40 elements (std::bad_alloc). Unused fields must
  // now be NONE_ID, which names the fault first; the tracking bound stays as a second guard.
  BufferRecord huge{};
  std::memcpy(huge.name, "huge", 5);
  huge.kind = static_cast<uint32_t>(format::BufferKind::ACTIVATION);
  huge.dtype = static_cast<uint32_t>(format::DType::F32);
  huge.elements = uint64_t{1} << 40;
  const uint32_t id = static_cast<uint32_t>(pkg_->buffers().size);
  const size_t ti = Find(Opcode::EMBED, 0);
  const std::string msg = Refusal(RewriteTasks(
      AppendRecord(golden_, "buffers", huge), [&](std::vector<TaskRecord>& t) { t[ti].in_buf = id; }));
  ExpectMentions(msg, {Names(ti), "in_buf is " + std::to_string(id) + "; EMBED does not use it (NONE_ID)"});
}

// --- target check -----------------------------------------------------------------------------

TEST(CheckTargetTest, RefusesAnotherGpuOrWorkerBuild) {
  const auto pkg = Package::Open(GoldenPath("tiny_9x3.tpkg"));
  const TargetInfo& t = pkg->target();
  ASSERT_EQ(t.name, "NVIDIA GeForce RTX 3050");
  CheckTarget(*pkg, t.name, t.cc_major, t.cc_minor, t.sm_count, t.worker_fingerprint);
  const std::string path = pkg->path();
  ExpectMentions(ErrorOf([&] {
                   CheckTarget(*pkg, "NVIDIA H200", t.cc_major, t.cc_minor, t.sm_count,
                               t.worker_fingerprint);
                 }),
                 {path, "made for GPU 'NVIDIA GeForce RTX 3050', this is 'NVIDIA H200'", "re-plan"});
  ExpectMentions(ErrorOf([&] {
                   CheckTarget(*pkg, t.name, 9, 0, t.sm_count, t.worker_fingerprint);
                 }),
                 {path, "made for compute capability 8.6", "re-plan"});
  ExpectMentions(ErrorOf([&] {
                   CheckTarget(*pkg, t.name, t.cc_major, t.cc_minor, 132, t.worker_fingerprint);
                 }),
                 {path, "made for 20 SMs, this GPU has 132", "re-plan"});
  ExpectMentions(ErrorOf([&] {
                   CheckTarget(*pkg, t.name, t.cc_major, t.cc_minor, t.sm_count, "0123abcd");
                 }),
                 {path, "worker fingerprint unprobed, this binary's worker is 0123abcd", "re-plan"});
}

}  // namespace
}  // namespace tileinfer
