// FFN / RMSNORM_GEMV / LM_HEAD runtime (not instrumented): the test driver and the global-buffer rules of
// OpFfn, OpRmsNormGemv and OpLmHead on top of ../emu_core.h (fibers, hooks, race/bounds/alignment checker;
// here every misaligned 2/4/8/16-byte shared or global access is reported, and the static shared memory
// of BlockSum's scratch and LM_HEAD's s_value/s_id/s_finite is race-checked too).
// Package format 2 (v48): RMSNORM_GEMV and LM_HEAD read x as the FIXED64 residual (long long,
// real(q) = q * 2^-32); the FFN reads x1 as F32 and adds its part into the FIXED64 residual x0 (H long
// longs, RedAddU64: a plain 8-byte read and write here); Fix() counts out-of-range values in
// *WorkerParams::residual_invalid ("invalid", its own buffer), which LM_HEAD reads.
#include "cuda/common.cuh"
#include "emu_core.h"
namespace emu {
static int g_op, g_K, g_ntasks;
static std::vector<int> g_out_writes, g_out_reads;  // per out element (FFN: long long; else float)
static long g_invalid_reads = 0, g_invalid_writes = 0;
static std::vector<int> g_invalid_task_reads;  // LM_HEAD: per task (slot)
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4;
  if (g_op != 5) return "xn";
  return f < (size_t)g_K ? "xn/part" : "hbuf";
}
// x (read only: F32 for the FFN, FIXED64 for GEMV/LM_HEAD), g (norm), weights (read only; weight rows of
// the running task only), out (FFN: the FIXED64 residual, 8-byte reads and writes by any thread, one
// read-modify-write an element a task; GEMV/LM_HEAD: the task's rows, one float by lane 0), cand
// (thread 0, the slot), invalid (FFN: Fix's 8-byte atomicAdd; LM_HEAD: one 8-byte read by thread 0;
// RMSNORM_GEMV: none)
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  if (n == "out") {
    if (g_op == 5) {
      const size_t e = (a - b.lo) / 8;
      if (size != 8 || (a & 7)) { Report(std::string("FIXED64 out ") + (write ? "write" : "read") + " not one 8-byte element", pc); return; }
      (write ? g_out_writes : g_out_reads)[e]++;
      return;
    }
    RowOutAccess(b, t, a, size, write, pc, g_out_writes);
    return;
  }
  if (n == "invalid") {
    if (size != 8) { Report("residual_invalid access not 8 bytes", pc); return; }
    if (g_op == 5) { (write ? g_invalid_writes : g_invalid_reads)++; return; }
    if (g_op == 7 && !write) {
      if (threadIdx.x != 0) Report("residual_invalid read by a thread other than 0", pc);
      g_invalid_reads++; g_invalid_task_reads[t.slot]++;
      return;
    }
    Report(std::string("residual_invalid ") + (write ? "written" : "read") + " by opcode " + std::to_string(g_op), pc);
    return;
  }
  if (n == "cand") {
    if (!write) { Report("cand read", pc); return; }
    if (threadIdx.x != 0) Report("cand write by a thread other than 0", pc);
    if (a < b.lo + 8 * t.slot || a + size > b.lo + 8 * (t.slot + 1)) Report("cand write outside the task's slot", pc);
    return;
  }
  if (write) { Report(std::string("write to read-only ") + n, pc); return; }
  if (n[0] == 'W') {
    const size_t rb = (size_t)g_K * 2, row = (a - b.lo) / rb;
    if (row < t.row_begin || row >= t.row_end) Report(std::string(n) + " read of a row outside the task's rows", pc);
    else if ((a - b.lo + size - 1) / rb != row) Report(std::string(n) + " read straddles two rows", pc);
  }
}
}  // namespace emu
// usage: rt_ops op K r0 nrows ntasks seed poison xmis special outfile [stats]
//   op 5 FFN (H = K), 2 RMSNORM_GEMV (k = K = hidden), 7 LM_HEAD (H = K); task i: rows
//   [r0 + i*nrows, r0 + (i+1)*nrows), slot i. xmis (bits): 1 x off 16-byte alignment (scalar norm:
//   F32 x 4 bytes off, FIXED64 x 8 bytes off), 2 Wg / W 8 bytes off, 4 Wu 8 bytes off (EMU512).
//   special (op 2/7): 1 tied maxima (copies of one large row), 2 a row with +inf, 3 a row with NaN,
//   4 (op 7) residual_invalid starts at 1 (every candidate must be kCandidateNonFinite);
//   (op 5): 2 one Wd element +inf (Fix counts the task's out-of-range part in residual_invalid)
// Output file: work area (f32), out (op 5: H int64; else R f32), cand (ntasks x 8 bytes), x (op 5: K
// f32; else K int64), g (K u16), W (1 or 3 x R*K u16), baseline (op 5: the H int64 of out before the
// run; else none), residual_invalid (1 u64, after the run).
int main(int argc, char** argv) {
  if (argc < 11) { fprintf(stderr, "usage\n"); return 2; }
  const int op = atoi(argv[1]), K = atoi(argv[2]), r0 = atoi(argv[3]), nrows = atoi(argv[4]), ntasks = atoi(argv[5]);
  const unsigned seed = atoi(argv[6]); g_poison = atoi(argv[7]); const int xmis = atoi(argv[8]), special = atoi(argv[9]);
  const char* outfile = argv[10]; g_want_stats = argc > 11;
  g_op = op; g_K = K; g_ntasks = ntasks; g_align_all = true;
  const bool fixed_x = op != 5;  // format 2: GEMV / LM_HEAD read the FIXED64 residual
  const size_t xes = fixed_x ? 8 : 4;  // bytes of an x element
  const int R = r0 + ntasks * nrows + 3;  // weight rows (3 past the last task: never read)
  const size_t work_floats = op == 5 ? (size_t)K + nrows : (size_t)K;  // WorkerSharedBytes: hidden + max FFN rows
  SetupWorkArea(work_floats * 4, 8 + 8);  // and room for the operand tables (SetTables below)
  // arena: [guard][x][guard][g][guard][W1][guard][W2][guard][W3][guard][out][guard][cand][guard][invalid][guard]
  const size_t out_n = op == 5 ? (size_t)K : (size_t)R, oes = op == 5 ? 8 : 4;
  const size_t wn = (size_t)R * K;
  const size_t sz[8] = {(size_t)K * xes + 16, (size_t)K * 2, wn * 2, op == 5 ? wn * 2 : 0, op == 5 ? wn * 2 : 0, out_n * oes, (size_t)ntasks * 8, 8};
  const char* names[8] = {"x", "g", op == 5 ? "Wg" : "W", "Wu", "Wd", "out", "cand", "invalid"};
  size_t off[8]; char* arena = MakeArena(sz, 8, off);
  // EMU512: xmis bits: 1 x off 16-byte alignment (scalar norm; F32 4 bytes, FIXED64 8 bytes); 2 the first
  // weight (Wg / W) 8 bytes off; 4 Wu 8 bytes off (FFN): rows not 16-byte aligned -> the scalar fallback
  const size_t xoff = (xmis & 1) ? xes : 0, woff[3] = {(xmis & 2) ? 8u : 0u, (op == 5 && (xmis & 4)) ? 8u : 0u, 0};
  g_bufs.push_back(Buf{"x", g_arena_lo + off[0] + xoff, g_arena_lo + off[0] + xoff + (size_t)K * xes});
  for (int i = 1; i < 8; ++i) {
    const size_t sh = i >= 2 && i <= 4 ? woff[i - 2] : 0;
    if (sz[i]) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i] + sh, g_arena_lo + off[i] + sh + sz[i]});
  }
  float* xf = (float*)(arena + off[0] + xoff); long long* xq = (long long*)(arena + off[0] + xoff);
  uint16_t* g = (uint16_t*)(arena + off[1]);
  uint16_t* W[3] = {(uint16_t*)(arena + off[2] + woff[0]), (uint16_t*)(arena + off[3] + woff[1]), (uint16_t*)(arena + off[4] + woff[2])};
  float* outf = (float*)(arena + off[5]); long long* outq = (long long*)(arena + off[5]);
  Candidate* cand = (Candidate*)(arena + off[6]);
  unsigned long long* invalid = (unsigned long long*)(arena + off[7]);
  std::mt19937 rng(seed * 7919u + 13); std::normal_distribution<float> nd; std::uniform_int_distribution<int> ui(0, 1 << 30);
  std::vector<float> xv(K);  // the random values; FIXED64 x = llrint(value * 2^32)
  for (int i = 0; i < K; ++i) { xv[i] = nd(rng) * 2.f + 0.3f; uint16_t b; do b = ToBf16(1.f + nd(rng) * 0.2f); while (!(b & 0x7fff)); g[i] = b; }
  for (int i = 0; i < K; ++i) { if (fixed_x) xq[i] = llrint((double)xv[i] * 4294967296.0); else xf[i] = xv[i]; }
  for (int m = 0; m < (op == 5 ? 3 : 1); ++m)
    for (size_t i = 0; i < wn; ++i) { uint16_t b; do b = ToBf16(nd(rng) * 0.05f); while (!(b & 0x7fff)); W[m][i] = b; }  // nonzero
  std::vector<long long> baseline;  // FFN: x0 before the run, a nonzero random FIXED64 residual
  if (op == 5) {
    for (int i = 0; i < K; ++i) { long long q; do q = llrint((double)(nd(rng) * 2.f + 0.3f) * 4294967296.0); while (q == 0); baseline.push_back(q); outq[i] = q; }
  } else {
    for (size_t i = 0; i < out_n; ++i) outf[i] = NAN;
  }
  for (int i = 0; i < ntasks; ++i) cand[i] = Candidate{12345.f, -7};
  *invalid = op == 7 && special == 4 ? 1 : 0;
  const unsigned long long invalid0 = *invalid;
  std::vector<int> special_rows;
  if (special && op != 5 && special != 4) {
    const int lo = r0, n = ntasks * nrows;
    if (special == 1) {  // tied maxima: rows = sign(x g) * 0.5 (logit ~ 0.5 sum |xn|), the same row several times
      std::vector<uint16_t> big(K); for (int i = 0; i < K; ++i) big[i] = ToBf16(((xv[i] > 0) == !(g[i] & 0x8000)) ? 0.5f : -0.5f);
      std::vector<int> cand_rows = {lo + ui(rng) % n, lo + ui(rng) % n, lo + ui(rng) % n};
      cand_rows.push_back(cand_rows[0] + 8); cand_rows.push_back(cand_rows[0] + 16); cand_rows.push_back(cand_rows[1] + 1);
      cand_rows.push_back(lo + n - 1);
      for (int r : cand_rows) if (r < lo + n) { special_rows.push_back(r); memcpy(W[0] + (size_t)r * K, big.data(), K * 2); }
    } else {
      const int r = lo + ui(rng) % n; special_rows.push_back(r);
      W[0][(size_t)r * K + ui(rng) % K] = special == 2 ? 0x7F80 : 0x7FC0;
    }
  }
  if (special == 2 && op == 5) {  // one Wd element +inf: that column's part of the row's task is out of fix()'s range
    const int r = r0 + ui(rng) % (ntasks * nrows); special_rows.push_back(r);
    W[2][(size_t)r * K + ui(rng) % K] = 0x7F80;
  }
  const void* tensors[8] = {}; void* buffers[8] = {};
  WorkerParams p{}; p.hidden = K; p.rms_norm_eps = 1e-5f; p.residual_invalid = invalid;
  tensors[1] = g; tensors[2] = W[0]; tensors[3] = W[1]; tensors[4] = W[2];
  buffers[1] = fixed_x ? (void*)xq : (void*)xf; buffers[2] = op == 5 ? (void*)outq : (void*)outf; buffers[3] = cand;
  SetTables(p, tensors, 8, buffers, 8); g_p = &p;
  g_out_writes.assign(out_n, 0); g_out_reads.assign(out_n, 0); g_invalid_task_reads.assign(ntasks, 0);
  for (int k = 0; k < ntasks; ++k) {
    format::TaskRecord t{}; t.opcode = op; t.in_buf = 1; t.out_buf = 2; t.aux_buf = 3; t.norm = 1; t.weight = 2; t.weight2 = 3; t.weight3 = 4;
    t.row_begin = r0 + k * nrows; t.row_end = r0 + (k + 1) * nrows; t.slot = k;
    g_tasks.push_back(t);
  }
  bool ok = RunBlock(seed);
  CheckGuard();
  for (size_t i = 0; i < out_n; ++i) {
    if (op == 5) {  // every task adds to every element once: ntasks read-modify-writes
      if (g_out_writes[i] != ntasks || g_out_reads[i] != ntasks) { g_err += "out element " + std::to_string(i) + " read " + std::to_string(g_out_reads[i]) + " / written " + std::to_string(g_out_writes[i]) + " times, want " + std::to_string(ntasks) + "\n"; break; }
      continue;
    }
    const bool want = (int)i >= r0 && (int)i < r0 + ntasks * nrows;
    if (g_out_writes[i] != (want ? 1 : 0)) { g_err += "out element " + std::to_string(i) + " written " + std::to_string(g_out_writes[i]) + " times\n"; break; }
  }
  // residual_invalid: unchanged by GEMV / LM_HEAD; by the FFN, counted up only where its data holds an
  // out-of-range value (special 2): on normal data it stays 0. FFN: one read and write per count.
  if (op != 5 && *invalid != invalid0) g_err += "residual_invalid changed by opcode " + std::to_string(op) + "\n";
  if (op == 5 && special != 2 && *invalid != 0) g_err += "residual_invalid = " + std::to_string(*invalid) + " on normal data\n";
  if (op == 5 && (g_invalid_writes != (long)*invalid || g_invalid_reads != (long)*invalid)) g_err += "residual_invalid: " + std::to_string(g_invalid_reads) + " reads, " + std::to_string(g_invalid_writes) + " writes for a count of " + std::to_string(*invalid) + "\n";
  // LM_HEAD: thread 0 reads it once a task, after its logits; not at all where a logit was not finite
  // (the test short-circuits), which only special 2 / 3 give
  for (int k = 0; op == 7 && k < ntasks; ++k) {
    const int want = special == 2 || special == 3 ? -1 : 1, got = g_invalid_task_reads[k];
    if (got > 1 || (want == 1 && got != 1)) { g_err += "residual_invalid read " + std::to_string(got) + " times by LM_HEAD task " + std::to_string(k) + "\n"; break; }
  }
  FILE* f = fopen(outfile, "wb");
  fwrite(g_work, 4, work_floats, f);  // the work area after the last task (FFN: the last task's part, hbuf; else xn)
  fwrite(arena + off[5], oes, out_n, f); fwrite(cand, 8, ntasks, f);
  fwrite(arena + off[0] + xoff, xes, K, f); fwrite(g, 2, K, f);
  for (int m = 0; m < (op == 5 ? 3 : 1); ++m) fwrite(W[m], 2, wn, f);
  if (op == 5) fwrite(baseline.data(), 8, K, f);
  fwrite(invalid, 8, 1, f);
  fclose(f);
  PrintReports(); PrintErrors(ok);
  printf("barriers %d syncwarps %d work_floats %zu threads %d special_rows", g_epoch, SyncwarpCount(), work_floats, kThreads);
  for (int r : special_rows) printf(" %d", r);
  printf("\n");
  return ExitCode(ok);
}
