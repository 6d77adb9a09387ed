// Direct-attention ATTN_OUT runtime (exp/direct-attention; not instrumented): the test driver and the
// global-buffer rules of OpAttnOut's DirectAttention and merge paths (K/V cache rows, layers, writer) on
// top of ../emu_core.h (fibers, hooks, race/bounds/alignment checker).
#include "cuda/common.cuh"
#include "emu_core.h"
#include <set>
#include <algorithm>
namespace emu {
static int g_HD, g_heads, g_C, g_first, g_Q, g_KV, g_dmc; static bool g_direct;
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4;
  if (f < (size_t)g_Q) return "attn";
  if (g_direct) {
    size_t o = g_Q;
    if (f < (o += g_Q)) return "q";
    if (f < (o += g_KV)) return "kcur";
    if (f < (o += g_KV)) return "vcur";
    if (f < (o += (size_t)g_heads * g_dmc)) return "sc";
    if (f < (o += g_heads)) return "den";
    return "unused";
  }
  const size_t nc = g_C - g_first;
  if (f < (size_t)g_Q + g_heads * nc) return "wgt";
  if (f < (size_t)g_Q + 2 * g_heads * nc) return "lc";
  return "unused";
}
// every buffer inside a guard band of 0xFF bytes.
//   part (merge path only; read-only, chunks >= first), qkv and rope (direct path only, read-only),
//   cache (direct path only: reads of layer t.layer rows < pos; writes of row pos by the task
//   with row_begin == 0 only), Wo and resid (read-only), out (lane-0 writes of the task's rows).
static int g_max_ctx;
static std::vector<unsigned char> g_cache_writes;  // per cache element: stores seen
static std::set<long> g_rows_read[2];               // cache rows read (K, V)
static std::map<std::string, long> g_gstats;
static void CacheAccess(const Buf& b, uintptr_t a, int size, bool write, uintptr_t pc, const format::TaskRecord& t) {
  if (!g_direct) { Report(std::string("cache ") + (write ? "write" : "read") + " in the merge path", pc); return; }
  const size_t per_layer = (size_t)2 * g_max_ctx * g_KV;
  for (uintptr_t x : size > 2 ? std::vector<uintptr_t>{a, a + size - 2} : std::vector<uintptr_t>{a}) {  // first and last element
    const size_t e = (x - b.lo) / 2, layer = e / per_layer, rem = e % per_layer;
    const int kvside = (int)(rem / ((size_t)g_max_ctx * g_KV));
    const long row = (long)((rem % ((size_t)g_max_ctx * g_KV)) / g_KV);
    if ((int)layer != (int)t.layer) { Report(std::string("cache ") + (write ? "write" : "read") + " of another layer", pc); return; }
    if (write) {
      if (row != g_pos) { Report("cache write of a row other than pos", pc); return; }
      if (t.row_begin != 0) { Report("cache write by a task with row_begin != 0", pc); return; }
      if (size != 2 || (x - b.lo) % 2) { Report("cache write of unexpected size " + std::to_string(size), pc); return; }
      if (g_cache_writes[e]++ > 0) Report("cache element written twice", pc);
    } else {
      if (row >= g_pos) { Report("cache read of row >= pos (row " + std::to_string(row) + ", pos " + std::to_string(g_pos) + ")", pc); return; }
      g_rows_read[kvside].insert(row);
    }
  }
  if ((a - b.lo) % 2) Report("cache access not on an element boundary", pc);
  g_gstats[std::string("cache ") + (write ? "W" : "R") + std::to_string(size)]++;
}
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  if (n == "cache") { CacheAccess(b, a, size, write, pc, t); return; }
  if (n == "out") { RowOutAccess(b, t, a, size, write, pc); return; }
  if (write) { Report(std::string("write to read-only ") + n, pc); return; }
  if (n == "part") {
    if (g_direct) Report("part read in the direct path", pc);
    const size_t e = (a - b.lo) / 4, chunk = e / ((size_t)g_heads * (g_HD + 2));
    if ((int)chunk < g_first) Report("part read of a skipped (empty) chunk", pc);
  }
  if ((n == "qkv" || n == "rope") && !g_direct) Report(n + " read in the merge path", pc);
  g_gstats[n + " R" + std::to_string(size)]++;
}
static std::vector<std::vector<float>> g_attn_task;  // attn (first Q floats of the work area) after each task
// each thread copies the attn floats it would poison next (same index mapping): no harness race
static void SaveAttn(size_t i) { for (int k = threadIdx.x; k < g_Q; k += kThreads) g_attn_task[i][k] = g_work[k]; }
}  // namespace emu
// usage: rt_da HD NH NKV pos dmc max_ctx layers layer H rm order seed poison qscale C minc outfile [stats]
//   two ATTN_OUT tasks in one block: W = rows [0, rm) of Wo (H x Q) (row_begin 0: the cache
//   writer), R = rows [rm, H) (a reader); order 0 runs W first, 1 runs R first.
//   pos + 1 <= dmc: direct path (DirectAttention); else the merge of C chunks (min_chunk minc).
int main(int argc, char** argv) {
  if (argc < 18) { fprintf(stderr, "usage\n"); return 2; }
  int a = 1;
  const int HD = atoi(argv[a++]), NH = atoi(argv[a++]), NKV = atoi(argv[a++]), pos = atoi(argv[a++]);
  const int dmc = atoi(argv[a++]), max_ctx = atoi(argv[a++]), layers = atoi(argv[a++]), layer = atoi(argv[a++]);
  const int H = atoi(argv[a++]), rm = atoi(argv[a++]), order = atoi(argv[a++]);
  const unsigned seed = atoi(argv[a++]); g_poison = atoi(argv[a++]); const float qscale = atof(argv[a++]);
  const int C = atoi(argv[a++]), minc = atoi(argv[a++]); const char* outfile = argv[a++];
  g_want_stats = argc > a;
  const int Q = NH * HD, KV = NKV * HD, stride = HD + 2, ctx = pos + 1, group = NH / NKV;
  const int span = std::max((ctx + C - 1) / C, minc), first = std::max(0, C - (ctx + span - 1) / span);
  g_HD = HD; g_heads = NH; g_C = C; g_first = first; g_Q = Q; g_KV = KV; g_pos = pos;
  g_dmc = dmc; g_direct = ctx <= dmc; g_max_ctx = max_ctx; g_after_task = SaveAttn;
  if (pos >= max_ctx || layer >= layers || NH % NKV || HD % 2) { fprintf(stderr, "bad args\n"); return 2; }
  // work area: cuda/worker.cu WorkerSharedBytes terms; the checker's limit is the term of the
  // path taken (direct: 2 q_dim + 2 kv_dim + heads (direct_max_ctx + 1); merge: q_dim + 2 heads chunks)
  const size_t direct_floats = dmc > 0 ? 2 * (size_t)Q + 2 * (size_t)(Q / group) + (size_t)NH * (dmc + 1) : 0;
  const size_t merge_floats = (size_t)Q + 2 * (size_t)NH * C;
  const size_t attention_floats = (size_t)group * HD + (size_t)kWarps * group * (HD + 2);
  const size_t wsb_floats = std::max({(size_t)H + 64, merge_floats, attention_floats, direct_floats, (size_t)kThreads});  // hidden = H, max_task_rows 64; SampleShared omitted
  const size_t work_floats = g_direct ? direct_floats : merge_floats;
  SetupWorkArea(work_floats * 4, 16 + 16);  // and room for the operand tables (SetTables below)
  // global arena: [guard][part][guard][Wo][guard][resid][guard][out][guard][qkv][guard][rope][guard][cache][guard]
  const size_t part_n = (size_t)C * NH * stride, wo_n = (size_t)H * Q, qkv_n = (size_t)Q + 2 * KV, rope_n = HD / 2;
  const size_t cache_n = (size_t)layers * 2 * max_ctx * KV, layer_n = (size_t)2 * max_ctx * KV;
  const size_t sz[7] = {part_n * 4, wo_n * 2, (size_t)H * 4, (size_t)H * 4, qkv_n * 4, rope_n * 4, cache_n * 2};
  size_t off[7]; char* arena = MakeArena(sz, 7, off);
  const char* names[7] = {"part", "Wo", "resid", "out", "qkv", "rope", "cache"};
  for (int i = 0; i < 7; ++i) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i], g_arena_lo + off[i] + sz[i]});
  float* part = (float*)(arena + off[0]); uint16_t* wo = (uint16_t*)(arena + off[1]);
  float* resid = (float*)(arena + off[2]); float* out = (float*)(arena + off[3]);
  float* qkv = (float*)(arena + off[4]); float* rope = (float*)(arena + off[5]); uint16_t* cache = (uint16_t*)(arena + off[6]);
  std::mt19937 rng(seed * 7919u + 13); std::normal_distribution<float> nd; std::uniform_real_distribution<float> ud(0.f, 1.f);
  FillChunkStates(part, C, NH, HD, first, rng, nd, ud);
  for (size_t i = 0; i < qkv_n; ++i) qkv[i] = nd(rng) * (i < (size_t)Q ? qscale : 1.0f);
  for (int d = 0; d < HD / 2; ++d) rope[d] = (float)std::pow(10000.0, -2.0 * d / HD);
  for (size_t i = 0; i < cache_n; ++i) { uint16_t v; do v = ToBf16(nd(rng)); while ((v & 0x7FFF) == 0); cache[i] = v; }
  uint16_t* lc = cache + (size_t)layer * layer_n;
  for (int kv = 0; kv < 2; ++kv) for (int i = 0; i < KV; ++i) lc[(size_t)kv * max_ctx * KV + (size_t)pos * KV + i] = 0x7FC1;  // row pos: "unwritten" NaN
  std::vector<uint16_t> cache_before(cache, cache + cache_n);
  g_cache_writes.assign(cache_n, 0);
  for (size_t i = 0; i < wo_n; ++i) wo[i] = ToBf16(nd(rng) / std::sqrt((float)Q));
  for (int i = 0; i < H; ++i) { resid[i] = nd(rng) * 0.1f; out[i] = NAN; }
  const void* tensors[16] = {}; void* buffers[16] = {};
  WorkerParams p{}; p.head_dim = HD; p.heads = NH; p.kv_heads = NKV; p.max_context = max_ctx; p.attention_min_chunk = minc;
  p.direct_max_ctx = dmc; p.direct_qkv_buf = 5; p.direct_cache_buf = 6; p.direct_rope_tensor = 7; p.hidden = H;
  tensors[4] = wo; tensors[7] = rope; buffers[1] = part; buffers[2] = resid; buffers[3] = out; buffers[5] = qkv; buffers[6] = cache;
  SetTables(p, tensors, 16, buffers, 16); g_p = &p;
  for (int k = 0; k < 2; ++k) {
    const bool w = (k == 0) != (order == 1);
    format::TaskRecord t{}; t.opcode = 4; t.layer = layer; t.param1 = C; t.in_buf = 1; t.aux_buf = 2; t.out_buf = 3; t.weight = 4;
    t.row_begin = w ? 0 : rm; t.row_end = w ? rm : H;
    g_tasks.push_back(t);
  }
  g_attn_task.assign(2, std::vector<float>(Q, NAN));
  bool ok = RunBlock(seed);
  CheckGuard();
  for (int i = 0; i < H; ++i) if (std::isnan(out[i])) { g_err += "out row " + std::to_string(i) + " unwritten\n"; break; }
  for (size_t i = 0; i < cache_n; ++i) {
    const size_t l = i / layer_n, r = (i % ((size_t)max_ctx * KV)) / KV;
    if (cache[i] != cache_before[i] && !(g_direct && (int)l == layer && (int)r == pos)) { g_err += "cache changed outside row pos of the layer\n"; break; }
  }
  if (g_direct) {
    size_t nw = 0; for (unsigned char c : g_cache_writes) nw += c;
    if (nw != 2 * (size_t)KV) g_err += "cache elements written: " + std::to_string(nw) + ", expected " + std::to_string(2 * KV) + "\n";
    for (int s = 0; s < 2; ++s) if ((int)g_rows_read[s].size() != pos) g_err += std::string(s ? "V" : "K") + " rows read " + std::to_string(g_rows_read[s].size()) + ", expected " + std::to_string(pos) + "\n";
  }
  FILE* f = fopen(outfile, "wb");
  const int hdr[14] = {HD, NH, NKV, pos, dmc, max_ctx, layers, layer, H, rm, C, first, (int)g_direct, order};
  fwrite(hdr, 4, 14, f);
  // attn of the writer task, then of the reader task
  for (int w = 1; w >= 0; --w) for (int k = 0; k < 2; ++k) if ((g_tasks[k].row_begin == 0) == (w == 1)) fwrite(g_attn_task[k].data(), 4, Q, f);
  fwrite(out, 4, H, f); fwrite(qkv, 4, qkv_n, f); fwrite(rope, 4, rope_n, f); fwrite(wo, 2, wo_n, f); fwrite(resid, 4, H, f);
  fwrite(cache_before.data() + (size_t)layer * layer_n, 2, layer_n, f); fwrite(lc, 2, layer_n, f); fwrite(part, 4, part_n, f);
  fclose(f);
  PrintReports(); if (g_want_stats) for (auto& s : g_gstats) printf("GSTAT %s %ld\n", s.first.c_str(), s.second);
  PrintErrors(ok);
  printf("barriers %d syncwarps %d direct %d smem_used_bytes %ld limit_bytes %zu wsb_bytes %zu first %d rowsK %zu rowsV %zu\n", g_epoch,
         SyncwarpCount(), (int)g_direct, g_max_off + 1, g_limit_bytes,
         wsb_floats * 4, first, g_rows_read[0].size(), g_rows_read[1].size());
  return ExitCode(ok);
}
