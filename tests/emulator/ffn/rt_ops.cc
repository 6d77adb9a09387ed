// FFN / RMSNORM_GEMV / LM_HEAD runtime (not instrumented): the test driver and the global-buffer rules of
// OpFfn, OpRmsNormGemv and OpLmHead on top of ../emu_core.h (fibers, hooks, race/bounds/alignment checker;
// here every misaligned 2/4/8/16-byte shared or global access is reported, and the static shared memory
// of BlockSum's scratch and LM_HEAD's s_value/s_id/s_finite is race-checked too).
#include "cuda/common.cuh"
#include "emu_core.h"
namespace emu {
static int g_op, g_K;
static std::vector<int> g_out_writes;  // per out float
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4;
  if (g_op != 5) return "xn";
  return f < (size_t)g_K ? "xn" : "hbuf";
}
// x, g (norm), weights (read only; weight rows of the running task only), out (FFN: the task's slot,
// H floats; GEMV/LM_HEAD: the task's rows, lane 0), cand (thread 0, the slot)
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  if (n == "out") {
    const size_t e = (a - b.lo) / 4;
    if (!write) { Report("out read", pc); return; }
    if (size != 4 || (a & 3)) { Report("out write not one float", pc); return; }
    if (g_op == 5) {
      if (e < (size_t)t.slot * g_K || e >= (size_t)(t.slot + 1) * g_K) Report("out write outside the task's slot", pc);
    } else {
      if (e < t.row_begin || e >= t.row_end) Report("out write outside the task's rows", pc);
      else if ((threadIdx.x & 31) != 0) Report("out write by a lane other than 0", pc);
    }
    g_out_writes[e]++;
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
//   [r0 + i*nrows, r0 + (i+1)*nrows), slot i. xmis (bits): 1 x 4 bytes off 16-byte alignment (scalar
//   norm), 2 Wg / W 8 bytes off, 4 Wu 8 bytes off (EMU512).
//   special (op 2/7): 1 tied maxima (copies of one large row), 2 a row with +inf, 3 a row with NaN
int main(int argc, char** argv) {
  if (argc < 11) { fprintf(stderr, "usage\n"); return 2; }
  const int op = atoi(argv[1]), K = atoi(argv[2]), r0 = atoi(argv[3]), nrows = atoi(argv[4]), ntasks = atoi(argv[5]);
  const unsigned seed = atoi(argv[6]); g_poison = atoi(argv[7]); const int xmis = atoi(argv[8]), special = atoi(argv[9]);
  const char* outfile = argv[10]; g_want_stats = argc > 11;
  g_op = op; g_K = K; g_align_all = true;
  const int R = r0 + ntasks * nrows + 3;  // weight rows (3 past the last task: never read)
  const size_t work_floats = op == 5 ? (size_t)K + nrows : (size_t)K;  // WorkerSharedBytes: hidden + max FFN rows
  SetupWorkArea(work_floats * 4, 8 + 8);  // and room for the operand tables (SetTables below)
  // arena: [guard][x][guard][g][guard][W1][guard][W2][guard][W3][guard][out][guard][cand][guard]
  const size_t out_n = op == 5 ? (size_t)ntasks * K : (size_t)R;
  const size_t wn = (size_t)R * K;
  const size_t sz[7] = {(size_t)K * 4 + 16, (size_t)K * 2, wn * 2, op == 5 ? wn * 2 : 0, op == 5 ? wn * 2 : 0, out_n * 4, (size_t)ntasks * 8};
  const char* names[7] = {"x", "g", op == 5 ? "Wg" : "W", "Wu", "Wd", "out", "cand"};
  size_t off[7]; char* arena = MakeArena(sz, 7, off);
  // EMU512: xmis bits: 1 x 4 bytes off 16-byte alignment (scalar norm); 2 the first weight (Wg / W)
  // 8 bytes off; 4 Wu 8 bytes off (FFN): rows not 16-byte aligned -> WarpDotBf16's scalar fallback
  const size_t xoff = (xmis & 1) ? 4 : 0, woff[3] = {(xmis & 2) ? 8u : 0u, (op == 5 && (xmis & 4)) ? 8u : 0u, 0};
  g_bufs.push_back(Buf{"x", g_arena_lo + off[0] + xoff, g_arena_lo + off[0] + xoff + (size_t)K * 4});
  for (int i = 1; i < 7; ++i) {
    const size_t sh = i >= 2 && i <= 4 ? woff[i - 2] : 0;
    if (sz[i]) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i] + sh, g_arena_lo + off[i] + sh + sz[i]});
  }
  float* x = (float*)(arena + off[0] + xoff); uint16_t* g = (uint16_t*)(arena + off[1]);
  uint16_t* W[3] = {(uint16_t*)(arena + off[2] + woff[0]), (uint16_t*)(arena + off[3] + woff[1]), (uint16_t*)(arena + off[4] + woff[2])};
  float* out = (float*)(arena + off[5]); Candidate* cand = (Candidate*)(arena + off[6]);
  std::mt19937 rng(seed * 7919u + 13); std::normal_distribution<float> nd; std::uniform_int_distribution<int> ui(0, 1 << 30);
  for (int i = 0; i < K; ++i) { x[i] = nd(rng) * 2.f + 0.3f; uint16_t b; do b = ToBf16(1.f + nd(rng) * 0.2f); while (!(b & 0x7fff)); g[i] = b; }
  for (int m = 0; m < (op == 5 ? 3 : 1); ++m)
    for (size_t i = 0; i < wn; ++i) { uint16_t b; do b = ToBf16(nd(rng) * 0.05f); while (!(b & 0x7fff)); W[m][i] = b; }  // nonzero
  for (size_t i = 0; i < out_n; ++i) out[i] = NAN;
  for (int i = 0; i < ntasks; ++i) cand[i] = Candidate{12345.f, -7};
  std::vector<int> special_rows;
  if (special && op != 5) {
    const int lo = r0, n = ntasks * nrows;
    if (special == 1) {  // tied maxima: rows = sign(x g) * 0.5 (logit ~ 0.5 sum |xn|), the same row several times
      std::vector<uint16_t> big(K); for (int i = 0; i < K; ++i) big[i] = ToBf16(((x[i] > 0) == !(g[i] & 0x8000)) ? 0.5f : -0.5f);
      std::vector<int> cand_rows = {lo + ui(rng) % n, lo + ui(rng) % n, lo + ui(rng) % n};
      cand_rows.push_back(cand_rows[0] + 8); cand_rows.push_back(cand_rows[0] + 16); cand_rows.push_back(cand_rows[1] + 1);
      cand_rows.push_back(lo + n - 1);
      for (int r : cand_rows) if (r < lo + n) { special_rows.push_back(r); memcpy(W[0] + (size_t)r * K, big.data(), K * 2); }
    } else {
      const int r = lo + ui(rng) % n; special_rows.push_back(r);
      W[0][(size_t)r * K + ui(rng) % K] = special == 2 ? 0x7F80 : 0x7FC0;
    }
  }
  const void* tensors[8] = {}; void* buffers[8] = {};
  WorkerParams p{}; p.hidden = K; p.rms_norm_eps = 1e-5f;
  tensors[1] = g; tensors[2] = W[0]; tensors[3] = W[1]; tensors[4] = W[2];
  buffers[1] = x; buffers[2] = out; buffers[3] = cand;
  SetTables(p, tensors, 8, buffers, 8); g_p = &p;
  g_out_writes.assign(out_n, 0);
  for (int k = 0; k < ntasks; ++k) {
    format::TaskRecord t{}; t.opcode = op; t.in_buf = 1; t.out_buf = 2; t.aux_buf = 3; t.norm = 1; t.weight = 2; t.weight2 = 3; t.weight3 = 4;
    t.row_begin = r0 + k * nrows; t.row_end = r0 + (k + 1) * nrows; t.slot = k;
    g_tasks.push_back(t);
  }
  bool ok = RunBlock(seed);
  CheckGuard();
  for (size_t i = 0; i < out_n; ++i) {
    const bool want = op == 5 || ((int)i >= r0 && (int)i < r0 + ntasks * nrows);
    if (g_out_writes[i] != (want ? 1 : 0)) { g_err += "out element " + std::to_string(i) + " written " + std::to_string(g_out_writes[i]) + " times\n"; break; }
  }
  FILE* f = fopen(outfile, "wb");
  fwrite(g_work, 4, work_floats, f);  // the work area after the last task (xn, hbuf)
  fwrite(out, 4, out_n, f); fwrite(cand, 8, ntasks, f);
  fwrite(x, 4, K, f); fwrite(g, 2, K, f);
  for (int m = 0; m < (op == 5 ? 3 : 1); ++m) fwrite(W[m], 2, wn, f);
  fclose(f);
  PrintReports(); PrintErrors(ok);
  printf("barriers %d syncwarps %d work_floats %zu threads %d special_rows", g_epoch, SyncwarpCount(), work_floats, kThreads);
  for (int r : special_rows) printf(" %d", r);
  printf("\n");
  return ExitCode(ok);
}
