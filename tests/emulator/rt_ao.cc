// ATTN_OUT runtime (not instrumented): the test driver and the global-buffer rules of OpAttnOut
// (merge of the chunk states + Wo GEMV) on top of emu_core.h (fibers, hooks, race/bounds/alignment checker).
#include "cuda/common.cuh"
#include "emu_core.h"
namespace emu {
static int g_HD, g_heads, g_C, g_first, g_Q;
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4, nc = g_C - g_first;
  if (f < (size_t)g_Q) return "attn";
  if (f < (size_t)g_Q + g_heads * nc) return "wgt";
  if (f < (size_t)g_Q + 2 * g_heads * nc) return "lc";
  return "unused";
}
// part (ATTENTION outputs, read only, chunks >= first only), Wo, resid (read only),
// out (lane-0 writes of the task's rows only)
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  if (n == "out") { RowOutAccess(b, t, a, size, write, pc); return; }
  if (write) { Report(std::string("write to read-only ") + n, pc); return; }
  if (n == "part") {
    const size_t e = (a - b.lo) / 4, chunk = e / ((size_t)g_heads * (g_HD + 2));
    if ((int)chunk < g_first) Report("part read of a skipped (empty) chunk", pc);
  }
}
}  // namespace emu
// usage: rt_ao HD heads n_chunks min_chunk pos seed poison H r0 r1 outfile [stats]
//   two ATTN_OUT tasks: rows [r0, rm) and [rm, r1) of Wo (H x Q), rm = (r0 + r1) / 2
int main(int argc, char** argv) {
  if (argc < 12) { fprintf(stderr, "usage\n"); return 2; }
  const int HD = atoi(argv[1]), NH = atoi(argv[2]), C = atoi(argv[3]), minc = atoi(argv[4]), pos = atoi(argv[5]);
  const unsigned seed = atoi(argv[6]); g_poison = atoi(argv[7]);
  const int H = atoi(argv[8]), r0 = atoi(argv[9]), r1 = atoi(argv[10]); const char* outfile = argv[11];
  g_want_stats = argc > 12;
  const int Q = NH * HD, stride = HD + 2, ctx = pos + 1;
  const int span = std::max((ctx + C - 1) / C, minc), first = std::max(0, C - (ctx + span - 1) / span);
  g_HD = HD; g_heads = NH; g_C = C; g_first = first; g_Q = Q; g_pos = pos;
  // the worker's ATTN_OUT work area (worker.cu WorkerSharedBytes: q_dim + 2 * heads * chunks)
  const size_t work_floats = (size_t)Q + 2 * (size_t)NH * C;
  SetupWorkArea(work_floats * 4, 8 + 8);  // and room for the operand tables (SetTables below)
  const size_t part_n = (size_t)C * NH * stride, wo_n = (size_t)H * Q;
  const size_t sz[4] = {part_n * 4, wo_n * 2, (size_t)H * 4, (size_t)H * 4}; size_t off[4];
  char* arena = MakeArena(sz, 4, off);
  const char* names[4] = {"part", "Wo", "resid", "out"};
  for (int i = 0; i < 4; ++i) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i], g_arena_lo + off[i] + sz[i]});
  float* part = (float*)(arena + off[0]); uint16_t* wo = (uint16_t*)(arena + off[1]);
  float* resid = (float*)(arena + off[2]); float* out = (float*)(arena + off[3]);
  std::mt19937 rng(seed * 7919u + 13); std::normal_distribution<float> nd; std::uniform_real_distribution<float> ud(0.f, 1.f);
  FillChunkStates(part, C, NH, HD, first, rng, nd, ud);
  for (size_t i = 0; i < wo_n; ++i) wo[i] = ToBf16(nd(rng) * 0.05f);
  for (int i = 0; i < H; ++i) { resid[i] = nd(rng); out[i] = NAN; }
  const void* tensors[8] = {}; void* buffers[8] = {};
  WorkerParams p{}; p.head_dim = HD; p.heads = NH; p.kv_heads = NH; p.max_context = ctx; p.attention_min_chunk = minc;
  tensors[4] = wo; buffers[1] = part; buffers[2] = resid; buffers[3] = out;
  SetTables(p, tensors, 8, buffers, 8); g_p = &p;
  const int rm = (r0 + r1) / 2;
  for (int k = 0; k < 2; ++k) {
    format::TaskRecord t{}; t.opcode = 4; t.param1 = C; t.in_buf = 1; t.aux_buf = 2; t.out_buf = 3; t.weight = 4;
    t.row_begin = k ? rm : r0; t.row_end = k ? r1 : rm;
    g_tasks.push_back(t);
  }
  bool ok = RunBlock(seed);
  CheckGuard();
  for (int i = 0; i < H; ++i) if (std::isnan(out[i]) != (i < r0 || i >= r1)) { g_err += "out row " + std::to_string(i) + (std::isnan(out[i]) ? " unwritten\n" : " written outside the rows\n"); break; }
  FILE* f = fopen(outfile, "wb");
  fwrite(g_work, 4, Q, f);  // attn: the work area's first Q floats after the last task
  fwrite(out, 4, H, f); fwrite(part, 4, part_n, f); fwrite(resid, 4, H, f); fwrite(wo, 2, wo_n, f); fclose(f);
  PrintReports(); PrintErrors(ok);
  printf("barriers %d syncwarps %d work_floats %zu first %d\n", g_epoch, SyncwarpCount(), work_floats, first);
  return ExitCode(ok);
}
