// ATTN_OUT runtime (not instrumented): the test driver and the global-buffer rules of OpAttnOut
// (merge of the chunk states + Wo GEMV + the residual) on top of emu_core.h (fibers, hooks,
// race/bounds/alignment checker; here every misaligned 2/4/8/16-byte shared or global access is reported).
// Package format 2 (v48): lane 0 of a row's warp does x1 = Real(resid[r]) + y; out[r] = x1 (F32);
// resid[r] = Fix(x1, residual_invalid), resid = the FIXED64 residual (aux_buf: long long,
// real(q) = q * 2^-32); Fix counts out-of-range values in *WorkerParams::residual_invalid
// ("invalid", its own arena buffer, 0 before the run).
#include "cuda/common.cuh"
#include "emu_core.h"
namespace emu {
static int g_HD, g_heads, g_C, g_first, g_Q;
static std::vector<int> g_out_writes, g_resid_reads, g_resid_writes;  // per row
static long g_invalid_reads = 0, g_invalid_writes = 0;
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4, nc = g_C - g_first;
  if (f < (size_t)g_Q) return "attn";
  if (f < (size_t)g_Q + g_heads * nc) return "wgt";
  if (f < (size_t)g_Q + 2 * g_heads * nc) return "lc";
  return "unused";
}
// part (ATTENTION outputs, read only, chunks >= first only), Wo (read only, rows of the running task
// only), resid (FIXED64: one 8-byte read, then one 8-byte write, of each of the task's rows, by lane 0),
// out (F32: one write of each of the task's rows, by lane 0; never read), invalid (Fix's 8-byte
// atomicAdd, lane 0; read and written once per count)
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  if (n == "out") { RowOutAccess(b, t, a, size, write, pc, g_out_writes); return; }
  if (n == "resid") {
    const size_t e = (a - b.lo) / 8;
    if (size != 8 || (a & 7)) { Report(std::string("FIXED64 resid ") + (write ? "write" : "read") + " not one 8-byte element", pc); return; }
    if (e < t.row_begin || e >= t.row_end) Report(std::string("resid ") + (write ? "write" : "read") + " outside the task's rows", pc);
    else if ((threadIdx.x & 31) != 0) Report(std::string("resid ") + (write ? "write" : "read") + " by a lane other than 0", pc);
    if (write && g_resid_reads[e] == 0) Report("resid written before it was read", pc);
    (write ? g_resid_writes : g_resid_reads)[e]++;
    return;
  }
  if (n == "invalid") {
    if (size != 8) { Report("residual_invalid access not 8 bytes", pc); return; }
    if ((threadIdx.x & 31) != 0) Report("residual_invalid accessed by a lane other than 0", pc);
    (write ? g_invalid_writes : g_invalid_reads)++;
    return;
  }
  if (write) { Report(std::string("write to read-only ") + n, pc); return; }
  if (n == "part") {
    const size_t e = (a - b.lo) / 4, chunk = e / ((size_t)g_heads * (g_HD + 2));
    if ((int)chunk < g_first) Report("part read of a skipped (empty) chunk", pc);
  }
  if (n == "Wo") {
    const size_t rb = (size_t)g_Q * 2, row = (a - b.lo) / rb;
    if (row < t.row_begin || row >= t.row_end) Report("Wo read of a row outside the task's rows", pc);
    else if ((a - b.lo + size - 1) / rb != row) Report("Wo read straddles two rows", pc);
  }
}
}  // namespace emu
// usage: rt_ao HD heads n_chunks min_chunk pos seed poison H r0 r1 special outfile [stats]
//   two ATTN_OUT tasks: rows [r0, rm) and [rm, r1) of Wo (H x Q), rm = (r0 + r1) / 2
//   special: 0 normal data (residual_invalid must stay 0); 1 one element of one Wo row in [r0, r1) is
//   +inf (y = +-inf: Fix counts it, resid 0, out +-inf); 2 rows r0 and r1 - 1 of Wo are +-1e30
//   (y huge but finite, |x1| > 2^21: Fix counts each)
// Output file: attn (the work area's first Q floats after the last task, f32), out (H f32), part
// (f32), resid after the run (H int64), resid before the run (H int64), Wo (H*Q u16),
// residual_invalid (1 u64, after the run).
int main(int argc, char** argv) {
  if (argc < 13) { fprintf(stderr, "usage\n"); return 2; }
  const int HD = atoi(argv[1]), NH = atoi(argv[2]), C = atoi(argv[3]), minc = atoi(argv[4]), pos = atoi(argv[5]);
  const unsigned seed = atoi(argv[6]); g_poison = atoi(argv[7]);
  const int H = atoi(argv[8]), r0 = atoi(argv[9]), r1 = atoi(argv[10]), special = atoi(argv[11]); const char* outfile = argv[12];
  g_want_stats = argc > 13; g_align_all = true;
  const int Q = NH * HD, stride = HD + 2, ctx = pos + 1;
  const int span = std::max((ctx + C - 1) / C, minc), first = std::max(0, C - (ctx + span - 1) / span);
  g_HD = HD; g_heads = NH; g_C = C; g_first = first; g_Q = Q; g_pos = pos;
  // the worker's ATTN_OUT work area (worker.cu WorkerSharedBytes: q_dim + 2 * heads * chunks)
  const size_t work_floats = (size_t)Q + 2 * (size_t)NH * C;
  SetupWorkArea(work_floats * 4, 8 + 8);  // and room for the operand tables (SetTables below)
  const size_t part_n = (size_t)C * NH * stride, wo_n = (size_t)H * Q;
  const size_t sz[5] = {part_n * 4, wo_n * 2, (size_t)H * 8, (size_t)H * 4, 8}; size_t off[5];
  char* arena = MakeArena(sz, 5, off);
  const char* names[5] = {"part", "Wo", "resid", "out", "invalid"};
  for (int i = 0; i < 5; ++i) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i], g_arena_lo + off[i] + sz[i]});
  float* part = (float*)(arena + off[0]); uint16_t* wo = (uint16_t*)(arena + off[1]);
  long long* resid = (long long*)(arena + off[2]); float* out = (float*)(arena + off[3]);
  unsigned long long* invalid = (unsigned long long*)(arena + off[4]);
  std::mt19937 rng(seed * 7919u + 13); std::normal_distribution<float> nd; std::uniform_real_distribution<float> ud(0.f, 1.f);
  FillChunkStates(part, C, NH, HD, first, rng, nd, ud);
  for (size_t i = 0; i < wo_n; ++i) wo[i] = ToBf16(nd(rng) * 0.05f);
  // a nonzero random FIXED64 baseline: q = llrint(v * 2^32)
  std::vector<long long> baseline(H);
  for (int i = 0; i < H; ++i) {
    long long q; do q = llrint((double)nd(rng) * 4294967296.0); while (q == 0);
    baseline[i] = resid[i] = q; out[i] = NAN;
  }
  *invalid = 0;
  std::vector<int> special_rows;
  if (special == 1 && r1 > r0) {
    const int r = r0 + (int)(rng() % (unsigned)(r1 - r0)); special_rows.push_back(r);
    wo[(size_t)r * Q + rng() % (unsigned)Q] = 0x7F80;  // +inf
  } else if (special == 2 && r1 > r0) {
    for (int r : {r0, r1 - 1}) {
      if (!special_rows.empty() && special_rows.back() == r) continue;
      special_rows.push_back(r);
      for (int k = 0; k < Q; ++k) wo[(size_t)r * Q + k] = ToBf16(rng() & 1 ? 1e30f : -1e30f);
    }
  }
  const void* tensors[8] = {}; void* buffers[8] = {};
  WorkerParams p{}; p.head_dim = HD; p.heads = NH; p.kv_heads = NH; p.max_context = ctx; p.attention_min_chunk = minc;
  p.residual_invalid = invalid;
  tensors[4] = wo; buffers[1] = part; buffers[2] = resid; buffers[3] = out;
  SetTables(p, tensors, 8, buffers, 8); g_p = &p;
  g_out_writes.assign(H, 0); g_resid_reads.assign(H, 0); g_resid_writes.assign(H, 0);
  const int rm = (r0 + r1) / 2;
  for (int k = 0; k < 2; ++k) {
    format::TaskRecord t{}; t.opcode = 4; t.param1 = C; t.in_buf = 1; t.aux_buf = 2; t.out_buf = 3; t.weight = 4;
    t.row_begin = k ? rm : r0; t.row_end = k ? r1 : rm;
    g_tasks.push_back(t);
  }
  bool ok = RunBlock(seed);
  CheckGuard();
  // every row of [r0, r1): out written once, resid read once and written once; no other row touched
  for (int i = 0; i < H; ++i) {
    const int want = i >= r0 && i < r1 ? 1 : 0;
    if (g_out_writes[i] != want || g_resid_reads[i] != want || g_resid_writes[i] != want) {
      g_err += "row " + std::to_string(i) + ": out written " + std::to_string(g_out_writes[i]) + ", resid read " +
               std::to_string(g_resid_reads[i]) + " / written " + std::to_string(g_resid_writes[i]) + " times, want " + std::to_string(want) + "\n";
      break;
    }
    if (!want && !std::isnan(out[i])) { g_err += "out row " + std::to_string(i) + " changed outside the rows\n"; break; }
    if (!want && resid[i] != baseline[i]) { g_err += "resid row " + std::to_string(i) + " changed outside the rows\n"; break; }
  }
  // residual_invalid: 0 on normal data; Fix reads and writes it once per count
  if (special == 0 && *invalid != 0) g_err += "residual_invalid = " + std::to_string(*invalid) + " on normal data\n";
  if (special != 0 && *invalid != special_rows.size()) g_err += "residual_invalid = " + std::to_string(*invalid) + ", want " + std::to_string(special_rows.size()) + " (special rows)\n";
  if (g_invalid_writes != (long)*invalid || g_invalid_reads != (long)*invalid) g_err += "residual_invalid: " + std::to_string(g_invalid_reads) + " reads, " + std::to_string(g_invalid_writes) + " writes for a count of " + std::to_string(*invalid) + "\n";
  FILE* f = fopen(outfile, "wb");
  fwrite(g_work, 4, Q, f);  // attn: the work area's first Q floats after the last task
  fwrite(out, 4, H, f); fwrite(part, 4, part_n, f); fwrite(resid, 8, H, f); fwrite(baseline.data(), 8, H, f);
  fwrite(wo, 2, wo_n, f); fwrite(invalid, 8, 1, f); fclose(f);
  PrintReports(); PrintErrors(ok);
  printf("barriers %d syncwarps %d work_floats %zu first %d special_rows", g_epoch, SyncwarpCount(), work_floats, first);
  for (int r : special_rows) printf(" %d", r);
  printf("\n");
  return ExitCode(ok);
}
