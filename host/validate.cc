// Plan validation: shapes and bounds per task, then a symbolic run of one token over the
// barrier epochs that checks every hazard the grid barriers are meant to rule out.
#include "host/validate.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "host/error.h"

namespace tileinfer {
namespace {

using format::Opcode;
using format::TaskRecord;

// Elements of all ACTIVATION and CANDIDATES buffers together that the validator tracks. The
// largest Llama (405B: V = 128256, H = 16384) needs about 2^23; 2^26 is 512 MiB of tracking.
constexpr uint64_t kMaxTrackedElements = uint64_t{1} << 26;

std::string Describe(size_t index, const TaskRecord& t) {
  return "task " + std::to_string(index) + " (" + format::OpcodeName(t.opcode) + ", wave " +
         std::to_string(t.wave) + ", worker " + std::to_string(t.worker) + ", layer " +
         std::to_string(t.layer) + ")";
}

class Checker {
 public:
  Checker(const Package& pkg, size_t index)
      : pkg_(pkg), t_(pkg.tasks()[index]), what_(Describe(index, t_)) {}

  [[noreturn]] void Fail(const std::string& rule) const {
    throw Error(pkg_.path() + ": invalid plan: " + what_ + ": " + rule);
  }
  void Expect(bool ok, const std::string& rule) const {
    if (!ok) Fail(rule);
  }
  const format::TensorRecord& Tensor(uint32_t id, const char* field) const {
    Expect(id < pkg_.tensors().size, std::string(field) + " names tensor " + std::to_string(id) + ", which does not exist");
    return pkg_.tensors()[id];
  }
  // `fixed`: the operand is the residual stream, an ACTIVATION of dtype FIXED64.
  const format::BufferRecord& Buffer(uint32_t id, const char* field, format::BufferKind kind,
                                     bool fixed = false) const {
    Expect(id < pkg_.buffers().size, std::string(field) + " names buffer " + std::to_string(id) + ", which does not exist");
    const format::BufferRecord& b = pkg_.buffers()[id];
    Expect(b.kind == static_cast<uint32_t>(kind), std::string(field) + " names buffer '" +
           Package::Name(b.name, sizeof(b.name)) + "' of the wrong kind");
    // Executors size buffers by dtype and write each operand as its opcode defines it
    // (FP32 activations, the FIXED64 residual, BF16 K/V, 8-byte candidates): any other
    // dtype would make them read or write past the buffer.
    const format::DType want = fixed                                  ? format::DType::FIXED64
                               : kind == format::BufferKind::ACTIVATION ? format::DType::F32
                               : kind == format::BufferKind::KV_CACHE   ? format::DType::BF16
                                                                        : format::DType::CANDIDATE;
    Expect(b.dtype == static_cast<uint32_t>(want), std::string(field) + " names buffer '" +
           Package::Name(b.name, sizeof(b.name)) + "' of the wrong dtype (" + format::DTypeName(want) +
           " needed)");
    return b;
  }
  void Shape(const format::TensorRecord& w, uint64_t rows, uint64_t cols, const char* field) const {
    Expect(w.rows == rows && w.cols == cols,
           std::string(field) + " '" + Package::Name(w.name, sizeof(w.name)) + "' is " +
           std::to_string(w.rows) + "x" + std::to_string(w.cols) + ", the opcode needs " +
           std::to_string(rows) + "x" + std::to_string(cols));
  }
  void Bf16(const format::TensorRecord& w, const char* field) const {
    Expect(w.dtype == static_cast<uint32_t>(format::DType::BF16), std::string(field) + " must be BF16");
  }
  void Rows(uint64_t limit) const {
    Expect(t_.row_begin < t_.row_end && t_.row_end <= limit,
           "rows [" + std::to_string(t_.row_begin) + ", " + std::to_string(t_.row_end) +
           ") are empty or exceed " + std::to_string(limit));
  }
  void Elements(const format::BufferRecord& b, uint64_t n, const char* field) const {
    Expect(b.elements == n, std::string(field) + " '" + Package::Name(b.name, sizeof(b.name)) +
           "' has " + std::to_string(b.elements) + " elements, the opcode needs " + std::to_string(n));
  }

  const Package& pkg_;
  const TaskRecord& t_;
  std::string what_;
};

// Operand ids, dtypes, shapes and row ranges of one task against the model.
void CheckOperands(const Package& pkg, size_t index) {
  Checker c(pkg, index);
  const TaskRecord& t = c.t_;
  const ModelConfig& m = pkg.model();
  const PlanParams& p = pkg.plan();
  const uint64_t H = m.hidden, F = m.ffn, V = m.vocab, HD = m.head_dim;
  const uint64_t QKV = m.q_dim() + 2 * m.kv_dim();
  using K = format::BufferKind;
  c.Expect(t.worker < static_cast<uint32_t>(p.workers), "worker is outside the plan's " + std::to_string(p.workers) + " workers");
  c.Expect(t.layer < static_cast<uint32_t>(m.layers), "layer is outside the model's " + std::to_string(m.layers) + " layers");
  // The fields each opcode uses (py/planner/validate.py USES); the others are checked below.
  struct Uses {
    bool in, aux, out, weight, weight2, weight3, norm, slot, param0, param1, param2;
  };
  Uses u{};
  switch (static_cast<Opcode>(t.opcode)) {
    case Opcode::EMBED: {
      u = {false, false, true, true, false, false, false, false, false, false, false};
      const auto& w = c.Tensor(t.weight, "weight");
      c.Bf16(w, "weight");
      c.Shape(w, V, H, "weight");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION, /*fixed=*/true), H, "out_buf");
      c.Rows(H);
      break;
    }
    case Opcode::RMSNORM_GEMV: {
      u = {true, false, true, true, false, false, true, false, false, false, false};
      const auto& w = c.Tensor(t.weight, "weight");
      c.Bf16(w, "weight");
      c.Expect(w.cols == H, "weight must have the hidden size as columns");
      c.Shape(c.Tensor(t.norm, "norm"), H, 1, "norm");
      c.Elements(c.Buffer(t.in_buf, "in_buf", K::ACTIVATION, /*fixed=*/true), H, "in_buf");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION), w.rows, "out_buf");
      c.Rows(w.rows);
      break;
    }
    case Opcode::ATTENTION: {
      u = {true, true, true, false, true, false, false, true, true, true, true};
      c.Elements(c.Buffer(t.in_buf, "in_buf", K::ACTIVATION), QKV, "in_buf");
      c.Elements(c.Buffer(t.aux_buf, "aux_buf", K::KV_CACHE),
                 uint64_t(m.layers) * 2 * p.max_context * m.kv_dim(), "aux_buf");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION),
                 uint64_t(p.attention_chunks) * m.heads * (HD + 2), "out_buf");
      const auto& rope = c.Tensor(t.weight2, "weight2");
      c.Expect(rope.dtype == static_cast<uint32_t>(format::DType::F32), "weight2 (RoPE table) must be F32");
      c.Shape(rope, HD / 2, 1, "weight2");
      c.Expect(t.param0 < static_cast<uint32_t>(m.kv_heads), "param0 (kv_head) is outside the model's K/V heads");
      c.Expect(t.param1 == static_cast<uint32_t>(p.attention_chunks), "param1 (n_chunks) differs from plan.attention_chunks");
      c.Expect(t.slot < t.param1, "slot (chunk) is not below n_chunks");
      c.Expect(t.param2 == static_cast<uint32_t>(p.attention_min_chunk) && t.param2 > 0,
               "param2 (min_chunk) differs from plan.attention_min_chunk");
      break;
    }
    case Opcode::ATTN_OUT: {
      u = {true, true, true, true, false, false, false, false, false, true, false};
      const auto& w = c.Tensor(t.weight, "weight");
      c.Bf16(w, "weight");
      c.Shape(w, H, m.q_dim(), "weight");
      c.Expect(t.param1 == static_cast<uint32_t>(p.attention_chunks), "param1 (n_chunks) differs from plan.attention_chunks");
      c.Elements(c.Buffer(t.in_buf, "in_buf", K::ACTIVATION),
                 uint64_t(p.attention_chunks) * m.heads * (HD + 2), "in_buf");
      c.Elements(c.Buffer(t.aux_buf, "aux_buf", K::ACTIVATION, /*fixed=*/true), H, "aux_buf");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION), H, "out_buf");
      c.Rows(H);
      break;
    }
    case Opcode::FFN: {
      u = {true, false, true, true, true, true, true, true, false, false, false};
      for (auto [id, field] : {std::pair{t.weight, "weight"}, {t.weight2, "weight2"}, {t.weight3, "weight3"}}) {
        const auto& w = c.Tensor(id, field);
        c.Bf16(w, field);
        c.Shape(w, F, H, field);
      }
      c.Shape(c.Tensor(t.norm, "norm"), H, 1, "norm");
      c.Elements(c.Buffer(t.in_buf, "in_buf", K::ACTIVATION), H, "in_buf");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION, /*fixed=*/true), H, "out_buf");
      c.Expect(t.slot < static_cast<uint32_t>(p.ffn_parts), "slot is not below plan.ffn_parts");
      c.Rows(F);
      break;
    }
    case Opcode::LM_HEAD: {
      u = {true, true, true, true, false, false, true, true, false, false, false};
      const auto& w = c.Tensor(t.weight, "weight");
      c.Bf16(w, "weight");
      c.Shape(w, V, H, "weight");
      c.Shape(c.Tensor(t.norm, "norm"), H, 1, "norm");
      c.Elements(c.Buffer(t.in_buf, "in_buf", K::ACTIVATION, /*fixed=*/true), H, "in_buf");
      c.Elements(c.Buffer(t.out_buf, "out_buf", K::ACTIVATION), V, "out_buf");
      c.Elements(c.Buffer(t.aux_buf, "aux_buf", K::CANDIDATES), p.lm_head_slots, "aux_buf");
      c.Expect(t.slot < static_cast<uint32_t>(p.lm_head_slots), "slot is not below plan.lm_head_slots");
      c.Rows(V);
      break;
    }
    default:
      c.Fail("unknown opcode " + std::to_string(t.opcode) + ": the package needs a newer runtime, or re-run the planner");
  }
  if (t.norm != format::kNoneId) {
    c.Bf16(c.Tensor(t.norm, "norm"), "norm");
  }
  // Fields the opcode does not use hold NONE_ID (ids) or 0 (numbers), and the reserved
  // fields 0: a stray value is a damaged plan or one of another format (format 1's FFN tasks
  // named a residual and a part count).
  const std::string op = format::OpcodeName(t.opcode);
  for (auto [used, value, field] : {std::tuple{u.in, t.in_buf, "in_buf"}, {u.aux, t.aux_buf, "aux_buf"},
                                    {u.out, t.out_buf, "out_buf"}, {u.weight, t.weight, "weight"},
                                    {u.weight2, t.weight2, "weight2"}, {u.weight3, t.weight3, "weight3"},
                                    {u.norm, t.norm, "norm"}}) {
    c.Expect(used || value == format::kNoneId,
             std::string(field) + " is " + std::to_string(value) + "; " + op + " does not use it (NONE_ID)");
  }
  for (auto [used, value, field] : {std::tuple{u.slot, t.slot, "slot"}, {u.param0, t.param0, "param0"},
                                    {u.param1, t.param1, "param1"}, {u.param2, t.param2, "param2"}}) {
    c.Expect(used || value == 0, std::string(field) + " is " + std::to_string(value) + "; " + op + " does not use it (0)");
  }
  c.Expect(t.reserved0 == 0 && t.reserved1 == 0, "reserved fields must be 0");
}

// The row-split waves (EMBED, RMSNORM_GEMV, ATTN_OUT, FFN) cover their row space exactly
// once, and an FFN wave's slots are 0..ffn_parts-1, each once (py/planner/validate.py
// _check_operands). A row left out keeps a stale value (x0's rows would keep adding up across
// layers); rows twice are two writers for the hazard check below, except in an FFN wave,
// whose tasks add their parts into x0: a part added twice, checked here.
void CheckSplitWaves(const Package& pkg) {
  const auto tasks = pkg.tasks();
  const auto waves = pkg.waves();
  const ModelConfig& m = pkg.model();
  const uint64_t qkv = m.q_dim() + 2 * m.kv_dim();
  for (size_t w = 0; w < waves.size; ++w) {
    const uint64_t first = waves[w].first_task, n = waves[w].task_count;
    const Opcode op = static_cast<Opcode>(tasks[first].opcode);
    const uint64_t space = op == Opcode::EMBED || op == Opcode::ATTN_OUT ? uint64_t(m.hidden)
                           : op == Opcode::RMSNORM_GEMV                  ? qkv
                           : op == Opcode::FFN                           ? uint64_t(m.ffn)
                                                                         : 0;
    bool one_opcode = true;  // else the wave order check below names the stray task
    for (uint64_t i = first; i < first + n; ++i) one_opcode &= tasks[i].opcode == tasks[first].opcode;
    if (space == 0 || !one_opcode) continue;
    std::vector<size_t> order(n);
    for (size_t k = 0; k < n; ++k) order[k] = first + k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::make_pair(tasks[a].row_begin, tasks[a].row_end) < std::make_pair(tasks[b].row_begin, tasks[b].row_end);
    });
    const std::string where = pkg.path() + ": invalid plan: ";
    const std::string rule = ": the tasks of a " + std::string(format::OpcodeName(static_cast<uint32_t>(op))) +
                             " wave cover its " + std::to_string(space) + " rows exactly once";
    uint64_t end = 0;
    for (size_t i : order) {
      const uint64_t a = tasks[i].row_begin, b = tasks[i].row_end;
      if (a > end || (a < end && op == Opcode::FFN)) {
        throw Error(where + Describe(i, tasks[i]) + ": rows [" + std::to_string(std::min(a, end)) + ", " +
                    std::to_string(std::max(a, end)) + (a > end ? ") are in no task" : ") are in two tasks") +
                    " of wave " + std::to_string(w) + rule);
      }
      end = std::max(end, b);
    }
    if (end != space) {
      throw Error(where + "wave " + std::to_string(w) + ": rows [" + std::to_string(end) + ", " +
                  std::to_string(space) + ") are in no task" + rule);
    }
    if (op != Opcode::FFN) continue;
    std::vector<bool> seen(pkg.plan().ffn_parts, false);  // slot < ffn_parts: CheckOperands
    for (uint64_t i = first; i < first + n; ++i) {
      if (seen[tasks[i].slot]) {
        throw Error(where + Describe(i, tasks[i]) + ": FFN slot " + std::to_string(tasks[i].slot) +
                    " is used twice in wave " + std::to_string(w) + ": the slots must be each of 0.." +
                    std::to_string(pkg.plan().ffn_parts - 1) + " once");
      }
      seen[tasks[i].slot] = true;
    }
    if (n != static_cast<uint64_t>(pkg.plan().ffn_parts)) {
      throw Error(where + "wave " + std::to_string(w) + " holds " + std::to_string(n) +
                  " FFN tasks, plan.ffn_parts says " + std::to_string(pkg.plan().ffn_parts));
    }
  }
}

}  // namespace

TaskAccess AccessOf(const TaskRecord& t, const ModelConfig& m) {
  TaskAccess a;
  const uint64_t H = m.hidden, HD = m.head_dim, Q = m.q_dim(), KV = m.kv_dim();
  const uint64_t group = m.heads / m.kv_heads;
  switch (static_cast<Opcode>(t.opcode)) {
    case Opcode::EMBED:
      a.writes.push_back({t.out_buf, t.row_begin, t.row_end});
      break;
    case Opcode::RMSNORM_GEMV:
      a.reads.push_back({t.in_buf, 0, H});
      a.writes.push_back({t.out_buf, t.row_begin, t.row_end});
      break;
    case Opcode::ATTENTION: {
      const uint64_t kv = t.param0, chunk = t.slot, n_chunks = t.param1;
      a.reads.push_back({t.in_buf, kv * group * HD, (kv + 1) * group * HD});
      if (chunk + 1 == n_chunks) {  // the last chunk owns position pos: it reads k and v
        a.reads.push_back({t.in_buf, Q + kv * HD, Q + (kv + 1) * HD});
        a.reads.push_back({t.in_buf, Q + KV + kv * HD, Q + KV + (kv + 1) * HD});
      }
      const uint64_t row = chunk * m.heads + kv * group;
      a.writes.push_back({t.out_buf, row * (HD + 2), (row + group) * (HD + 2)});
      break;
    }
    case Opcode::ATTN_OUT:  // x1 rows, and the residual's rows rewritten as fix(x1)
      a.reads.push_back({t.in_buf, 0, uint64_t(t.param1) * m.heads * (HD + 2)});
      a.reads.push_back({t.aux_buf, t.row_begin, t.row_end});
      a.writes.push_back({t.out_buf, t.row_begin, t.row_end});
      a.writes.push_back({t.aux_buf, t.row_begin, t.row_end});
      break;
    case Opcode::FFN:  // its part added to every element of the residual
      a.reads.push_back({t.in_buf, 0, H});
      a.accumulates.push_back({t.out_buf, 0, H});
      break;
    case Opcode::LM_HEAD:
      a.reads.push_back({t.in_buf, 0, H});
      a.writes.push_back({t.out_buf, t.row_begin, t.row_end});
      a.writes.push_back({t.aux_buf, t.slot, uint64_t(t.slot) + 1});
      break;
  }
  return a;
}

void ValidatePlan(const Package& pkg) {
  const auto tasks = pkg.tasks();
  const auto waves = pkg.waves();
  const ModelConfig& m = pkg.model();
  const std::string where = pkg.path() + ": invalid plan: ";
  // Waves: contiguous, in order, each with a known sync; tasks sorted by (wave, worker).
  uint64_t next = 0;
  for (size_t w = 0; w < waves.size; ++w) {
    const auto& wr = waves[w];
    if (wr.first_task != next || wr.task_count > tasks.size - next) {
      throw Error(where + "wave " + std::to_string(w) + " does not start where the previous wave "
                  "ended, or runs past the tasks");
    }
    if (wr.sync != static_cast<uint32_t>(format::Sync::SYNC_GRID_BARRIER) &&
        wr.sync != static_cast<uint32_t>(format::Sync::SYNC_NONE)) {
      throw Error(where + "wave " + std::to_string(w) + " has unknown sync " + std::to_string(wr.sync));
    }
    if (wr.task_count == 0) throw Error(where + "wave " + std::to_string(w) + " has no task");
    for (uint64_t i = wr.first_task; i < wr.first_task + wr.task_count; ++i) {
      if (tasks[i].wave != w) {
        throw Error(where + Describe(i, tasks[i]) + ": lies in wave " + std::to_string(w) + "'s task range");
      }
      if (i > wr.first_task && tasks[i].worker < tasks[i - 1].worker) {
        throw Error(where + Describe(i, tasks[i]) + ": tasks of a wave must be sorted by worker");
      }
    }
    next += wr.task_count;
  }
  if (next != tasks.size) throw Error(where + "tasks after the last wave");
  if (waves.size == 0 || waves[waves.size - 1].sync != static_cast<uint32_t>(format::Sync::SYNC_GRID_BARRIER)) {
    throw Error(where + "the last wave must end at a grid barrier");
  }
  const TargetInfo& target = pkg.target();
  if (static_cast<int64_t>(pkg.plan().workers) > static_cast<int64_t>(target.sm_count) * target.workers_per_sm) {
    throw Error(where + "plan workers=" + std::to_string(pkg.plan().workers) + " but the target has " +
                std::to_string(target.sm_count) + " SMs x " + std::to_string(target.workers_per_sm) +
                " workers/SM: a plan uses 1 to " + std::to_string(int64_t{target.sm_count} * target.workers_per_sm) +
                " workers");
  }
  for (size_t i = 0; i < tasks.size; ++i) CheckOperands(pkg, i);
  // Every ACTIVATION/CANDIDATES buffer must be an operand of some task: its size is then
  // bounded by the model's shape (CheckOperands), so tracking it below cannot explode.
  const auto buffers = pkg.buffers();
  std::vector<bool> used(buffers.size, false);
  for (const auto& t : tasks) {
    for (uint32_t id : {t.in_buf, t.aux_buf, t.out_buf}) {
      if (id < buffers.size) used[id] = true;
    }
  }
  for (size_t b = 0; b < buffers.size; ++b) {
    if (!used[b]) {
      throw Error(where + "buffer " + std::to_string(b) + " '" + Package::Name(buffers[b].name, sizeof(buffers[b].name)) +
                  "' is not an operand of any task");
    }
  }

  // A buffer named only by a field its opcode ignores escapes CheckOperands' size check:
  // bound the tracking below (8 bytes per element) so that a damaged size is an error, not
  // a terabyte allocation (found fuzzing, tests/fuzz).
  uint64_t tracked = 0;  // each buffer holds <= 2^40 elements (Package): the sum cannot wrap
  for (size_t b = 0; b < buffers.size; ++b) {
    if (buffers[b].kind == static_cast<uint32_t>(format::BufferKind::KV_CACHE)) continue;
    tracked += buffers[b].elements;
    if (tracked > kMaxTrackedElements) {
      throw Error(where + "the ACTIVATION and CANDIDATES buffers up to " + std::to_string(b) +
                  " '" + Package::Name(buffers[b].name, sizeof(buffers[b].name)) + "' hold " +
                  std::to_string(tracked) + " elements, more than the " +
                  std::to_string(kMaxTrackedElements) +
                  " any supported model needs: the file is damaged; re-run the planner");
    }
  }

  // Symbolic token: per element of every ACTIVATION/CANDIDATES buffer, the epoch that last
  // wrote it (-1: not yet this token) and, within the current epoch, the writing task and a
  // task that adds to it (accumulates).
  std::vector<std::vector<int32_t>> written(buffers.size), writer(buffers.size), adder(buffers.size);
  for (size_t b = 0; b < buffers.size; ++b) {
    if (buffers[b].kind != static_cast<uint32_t>(format::BufferKind::KV_CACHE)) {
      written[b].assign(buffers[b].elements, -1);
      writer[b].assign(buffers[b].elements, -1);
      adder[b].assign(buffers[b].elements, -1);
    }
  }
  auto check_range = [&](size_t i, const Range& r, const char* what) {
    if (r.buffer >= buffers.size || written[r.buffer].empty() || r.begin > r.end ||
        r.end > buffers[r.buffer].elements) {
      throw Error(where + Describe(i, tasks[i]) + ": " + what + " range [" + std::to_string(r.begin) +
                  ", " + std::to_string(r.end) + ") of buffer " + std::to_string(r.buffer) +
                  " is out of bounds");
    }
  };
  int epoch = 0;
  size_t w = 0;
  while (w < waves.size) {
    size_t last = w;  // waves w..last form one epoch: SYNC_NONE waves join the next
    while (waves[last].sync == static_cast<uint32_t>(format::Sync::SYNC_NONE)) ++last;
    const size_t first_task = waves[w].first_task;
    const size_t end_task = waves[last].first_task + waves[last].task_count;
    std::vector<TaskAccess> access;
    for (size_t i = first_task; i < end_task; ++i) {
      access.push_back(AccessOf(tasks[i], m));
      for (const Range& r : access.back().writes) {
        check_range(i, r, "write");
        for (uint64_t e = r.begin; e < r.end; ++e) {
          int32_t& who = writer[r.buffer][e];
          if (who >= 0 && who != static_cast<int32_t>(i)) {
            throw Error(where + Describe(i, tasks[i]) + ": writes element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + ", which " +
                        Describe(who, tasks[who]) + " also writes in the same barrier epoch");
          }
          who = static_cast<int32_t>(i);
        }
      }
    }
    // Accumulations: the adds' order is free, so their sum is only final at the barrier; the
    // starting value is an earlier epoch's write.
    for (size_t i = first_task; i < end_task; ++i) {
      for (const Range& r : access[i - first_task].accumulates) {
        check_range(i, r, "accumulate");
        for (uint64_t e = r.begin; e < r.end; ++e) {
          const int32_t who = writer[r.buffer][e];
          if (who >= 0) {
            throw Error(where + Describe(i, tasks[i]) + ": accumulates into element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + ", which " + Describe(who, tasks[who]) +
                        " writes in the same barrier epoch");
          }
          if (written[r.buffer][e] < 0 &&
              buffers[r.buffer].kind == static_cast<uint32_t>(format::BufferKind::ACTIVATION)) {
            throw Error(where + Describe(i, tasks[i]) + ": accumulates into element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + " before any earlier wave writes it");
          }
          adder[r.buffer][e] = static_cast<int32_t>(i);
        }
      }
    }
    for (size_t i = first_task; i < end_task; ++i) {
      for (const Range& r : access[i - first_task].reads) {
        check_range(i, r, "read");
        for (uint64_t e = r.begin; e < r.end; ++e) {
          if (const int32_t adds = adder[r.buffer][e]; adds >= 0) {
            throw Error(where + Describe(i, tasks[i]) + ": reads element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + " that " + Describe(adds, tasks[adds]) +
                        " accumulates into with no barrier between them");
          }
          const int32_t who = writer[r.buffer][e];
          if (who >= 0 && who != static_cast<int32_t>(i)) {
            throw Error(where + Describe(i, tasks[i]) + ": reads element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + " that " +
                        Describe(who, tasks[who]) + " writes with no barrier between them");
          }
          if (who < 0 && written[r.buffer][e] < 0 &&
              buffers[r.buffer].kind == static_cast<uint32_t>(format::BufferKind::ACTIVATION)) {
            throw Error(where + Describe(i, tasks[i]) + ": reads element " + std::to_string(e) +
                        " of buffer " + std::to_string(r.buffer) + " before any earlier wave writes it");
          }
        }
      }
    }
    for (size_t i = first_task; i < end_task; ++i) {
      for (const Range& r : access[i - first_task].writes) {
        for (uint64_t e = r.begin; e < r.end; ++e) {
          written[r.buffer][e] = epoch;
          writer[r.buffer][e] = -1;
        }
      }
      for (const Range& r : access[i - first_task].accumulates) {
        for (uint64_t e = r.begin; e < r.end; ++e) adder[r.buffer][e] = -1;
      }
    }
    ++epoch;
    w = last + 1;
  }
  CheckSplitWaves(pkg);  // after the hazards too: a task moved out of its wave leaves a gap
  // The wave order of format_spec.py (checked after the hazards, which name the more specific
  // fault; executors skip and time whole waves by opcode): EMBED, then per layer l RMSNORM_GEMV, ATTENTION,
  // ATTN_OUT, FFN (every task of the wave in layer l), then LM_HEAD. It makes every layer's
  // K/V cache row written exactly once a token, by its one ATTENTION wave.
  {
    using O = Opcode;
    constexpr size_t kPerLayer = 4;
    const O per_layer[kPerLayer] = {O::RMSNORM_GEMV, O::ATTENTION, O::ATTN_OUT, O::FFN};
    const size_t expected = kPerLayer * static_cast<size_t>(m.layers) + 2;
    if (waves.size != expected) {
      throw Error(where + std::to_string(waves.size) + " waves; a " + std::to_string(m.layers) +
                  "-layer plan has " + std::to_string(expected) + " (format_spec.py's wave order)");
    }
    for (size_t w = 0; w < waves.size; ++w) {
      const bool last = w + 1 == waves.size;
      const O want = w == 0 ? O::EMBED : last ? O::LM_HEAD : per_layer[(w - 1) % kPerLayer];
      const uint32_t layer = (w == 0 || last) ? 0 : static_cast<uint32_t>((w - 1) / kPerLayer);
      const uint32_t wave_layer = (w == 0 || last) ? format::kNoneId : layer;  // EMBED, LM_HEAD: no layer
      if (waves[w].layer != wave_layer) {
        throw Error(where + "wave " + std::to_string(w) + " has layer " + std::to_string(waves[w].layer) +
                    "; its place makes it " +
                    (wave_layer == format::kNoneId ? std::string("NONE_ID") : "layer " + std::to_string(layer)));
      }
      for (uint64_t i = waves[w].first_task; i < waves[w].first_task + waves[w].task_count; ++i) {
        if (tasks[i].opcode != static_cast<uint16_t>(want) || tasks[i].layer != layer) {
          throw Error(where + Describe(i, tasks[i]) + ": wave " + std::to_string(w) + " must hold " +
                      format::OpcodeName(static_cast<uint32_t>(want)) + " tasks of layer " + std::to_string(layer));
        }
      }
    }
  }
  // The buffers meta names are used by the executors directly (logits read back, candidates
  // and K/V cache sized from them): each must be of the kind and size its opcode needs.
  // Without this a meta id naming the K/V cache crashed the loops below (found fuzzing).
  const PlanParams& p = pkg.plan();
  auto named = [&](uint32_t id, const char* key, format::BufferKind kind, const char* kind_name,
                   uint64_t elements) {
    const format::BufferRecord& b = buffers[id];  // id < buffers.size: checked by Package
    if (b.kind != static_cast<uint32_t>(kind) || b.elements != elements) {
      throw Error(where + "meta.plan.buffers." + key + " names buffer " + std::to_string(id) +
                  " '" + Package::Name(b.name, sizeof(b.name)) + "' (kind " +
                  std::to_string(b.kind) + ", " + std::to_string(b.elements) +
                  " elements); it must be of kind " + kind_name + " with " +
                  std::to_string(elements) + " elements");
    }
  };
  using K = format::BufferKind;
  named(p.buf_logits, "logits", K::ACTIVATION, "ACTIVATION", m.vocab);
  named(p.buf_cand, "cand", K::CANDIDATES, "CANDIDATES", p.lm_head_slots);
  named(p.buf_kv_cache, "kv_cache", K::KV_CACHE, "KV_CACHE",
        uint64_t(m.layers) * 2 * p.max_context * m.kv_dim());
  const uint32_t logits = pkg.plan().buf_logits;
  for (uint64_t r = 0; r < buffers[logits].elements; ++r) {
    if (written[logits][r] < 0) {
      throw Error(where + "logits row " + std::to_string(r) + " is never written: the LM_HEAD tasks must cover the vocabulary");
    }
  }
  const uint32_t cand = pkg.plan().buf_cand;
  for (uint64_t s = 0; s < buffers[cand].elements; ++s) {
    if (written[cand][s] < 0) {
      throw Error(where + "candidate slot " + std::to_string(s) + " is never written by an LM_HEAD task");
    }
  }
}

void CheckTarget(const Package& pkg, const std::string& gpu_name, int cc_major, int cc_minor,
                 int sm_count, const std::string& worker_fingerprint) {
  const TargetInfo& t = pkg.target();
  auto refuse = [&](const std::string& what) {
    throw Error(pkg.path() + ": made for " + what + ": re-plan for this GPU and worker build (run "
                "`probe > target.json` here, then `bazel run //py/planner -- --target=target.json ...`)");
  };
  if (t.name != gpu_name) refuse("GPU '" + t.name + "', this is '" + gpu_name + "'");
  if (t.cc_major != cc_major || t.cc_minor != cc_minor) {
    refuse("compute capability " + std::to_string(t.cc_major) + "." + std::to_string(t.cc_minor));
  }
  if (t.sm_count != sm_count) refuse(std::to_string(t.sm_count) + " SMs, this GPU has " + std::to_string(sm_count));
  if (t.worker_fingerprint != worker_fingerprint) {
    refuse("worker fingerprint " + t.worker_fingerprint + ", this binary's worker is " + worker_fingerprint);
  }
}

}  // namespace tileinfer
