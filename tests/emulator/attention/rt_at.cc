// ATTENTION runtime (not instrumented): the test driver and the global-buffer rules of OpAttention
// (RoPE, the K/V append, one chunk's partial softmax state per query head of a K/V head) on top of
// ../emu_core.h (fibers, hooks, race / bounds / alignment checker).
#include <cstdlib>

#include "cuda/common.cuh"
#include "emu_core.h"

// WorkerParams::attention_tile_min where the version has it (v28): $AT_TILE_MIN, default 2^30
// (every chunk position by position, as before v28).
template <typename P>
auto SetTileMin(P& p) -> decltype(p.attention_tile_min = 0, void()) {
  const char* v = std::getenv("AT_TILE_MIN");
  p.attention_tile_min = v != nullptr ? std::atoi(v) : (1 << 30);
}
inline void SetTileMin(...) {}
// WorkerParams::merge_counters where the version has it (v30, AT_MERGE_ONCE from setup.sh): with
// $AT_MERGE=1 the counters, so that the last chunk's task merges its K/V head's chunks
// (MergeOnce); start_pos = pos (step 0).
template <typename P>
auto SetMerge(P& p, uint32_t* counters, int pos) -> decltype(p.merge_counters = counters, true) {
  p.merge_counters = counters;
  p.start_pos = pos;
  return true;
}
inline bool SetMerge(...) { return false; }
namespace emu {
static int g_HD, g_NH, g_NKV, g_group, g_C, g_minc, g_maxctx;
#ifndef AT_MERGE_ONCE
#define AT_MERGE_ONCE 0
#endif
static bool g_merge = false;  // $AT_MERGE=1: the last chunk's task reads the head's records and counter
static std::string Region(size_t byte_off) {
  const size_t f = byte_off / 4;
  return f < (size_t)g_group * g_HD ? "q" : f < (size_t)g_group * g_HD + (size_t)kWarps * g_group * (g_HD + 2) ? "state" : "merge";
}
// The chunk [begin, end) of task t (op_attention.cuh's formula).
static void Chunk(const format::TaskRecord& t, int* begin, int* end) {
  const int ctx = g_pos + 1, C = (int)t.param1, ch = (int)t.slot;
  const int span = std::max((ctx + C - 1) / C, (int)t.param2);
  *begin = std::max(0, ctx - (C - ch) * span);
  *end = std::max(0, ctx - (C - 1 - ch) * span);
}
// qkv and inv_freq: read only (qkv: only this K/V head's query heads, its K and V). cache (2 layers x
// (K, V) x max_context rows of KV BF16; the tasks are layer 1's, so a wrong layer offset reads or
// writes layer 0): reads only of layer 1, this head's slice, rows [begin, end); writes only of row
// pos of that slice, by the last chunk's task. out: written only in this task's
// (chunk, query heads) records, each float once in the run (each chunk has one task).
static std::vector<int> g_out_writes;
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const std::string n = b.name;
  const int HD = g_HD, KV = g_NKV * HD, Q = g_NH * HD, kv = (int)t.param0, stride = HD + 2;
  if (n == "qkv" || n == "inv_freq") {
    if (write) { Report("write to read-only " + n, pc); return; }
    if (n == "qkv") {
      const size_t e = (a - b.lo) / 4;
      const bool q = e < (size_t)Q && (int)(e / HD) / g_group == kv;
      const bool k = e >= (size_t)Q && e < (size_t)(Q + KV) && (int)((e - Q) / HD) == kv;
      const bool v = e >= (size_t)(Q + KV) && (int)((e - Q - KV) / HD) == kv;
      if (!q && !k && !v) Report("qkv read outside this K/V head's q, k, v", pc);
      if ((k || v) && (int)t.slot != (int)t.param1 - 1) Report("k/v read by a task other than the last chunk's", pc);
    }
    return;
  }
  if (n == "cache") {
    const size_t e = (a - b.lo) / 2, plane = e / ((size_t)g_maxctx * KV), row = e / KV % g_maxctx, col = e % KV;
    if ((int)(col / HD) != kv) { Report("cache access outside this K/V head's slice", pc); return; }
    if (plane / 2 != t.layer) { Report("cache access outside the task's layer", pc); return; }
    int begin, end; Chunk(t, &begin, &end);
    if (write) {
      if ((int)row != g_pos) Report("cache write to a row other than pos", pc);
      else if ((int)t.slot != (int)t.param1 - 1) Report("cache write by a task other than the last chunk's", pc);
    } else if ((int)row < begin || (int)row >= end) {
      Report("cache read outside the chunk's positions", pc);
    }
    return;
  }
  const bool last = (int)t.slot == (int)t.param1 - 1;
  if (n == "counters") {  // MergeOnce: element layer x kv_heads + kv only; added to by the other chunks' tasks
    if ((a - b.lo) / 4 != (size_t)t.layer * g_NKV + kv) Report("counter access outside this (layer, K/V head)", pc);
    else if (write && last) Report("counter written by the last chunk's task", pc);
    return;
  }
  if (n == "out") {
    const size_t e = (a - b.lo) / 4, rec = e / stride, chunk = rec / g_NH, h = rec % g_NH;
    if (!write) {  // MergeOnce: the last chunk's task reads its K/V head's records of the non-empty chunks
      int begin, end; format::TaskRecord c = t; c.slot = (uint32_t)chunk; Chunk(c, &begin, &end);
      if (!g_merge || !last || (int)h / g_group != kv || begin == end) Report("out read", pc);
      return;
    }
    if ((int)chunk != (int)t.slot || (int)h / g_group != kv) { Report("out write outside this task's records", pc); return; }
    if (size != 4) { Report("out write not one float", pc); return; }
    if (++g_out_writes[e] > (g_merge && last ? 2 : 1)) Report("out element written twice", pc);  // MergeOnce: state, merged
  }
}
}  // namespace emu
// usage: rt_at HD heads kv_heads pos C min_chunk kv seed poison merge_floats outfile [stats]
//   merge_floats 1: the version's work area has the merge's (kWarps + 1) x group floats (setup.sh
//   reads it from the version's worker.cu);
//   the C ATTENTION tasks of K/V head kv at position pos (last chunk first, as any order is allowed:
//   only the last chunk's task touches row pos). Writes: out (C x heads x (HD + 2) floats, NaN where
//   no task wrote), the cache's rows 0..pos of K and V (BF16, row pos as the last chunk wrote it),
//   qkv (Q + 2 KV floats), inv_freq (HD / 2 floats). The cache rows are layer 1's (see BufAccess).
int main(int argc, char** argv) {
  if (argc < 12) { fprintf(stderr, "usage: rt_at HD heads kv_heads pos C min_chunk kv seed poison merge_floats outfile [stats]\n"); return 2; }
  const int HD = atoi(argv[1]), NH = atoi(argv[2]), NKV = atoi(argv[3]), pos = atoi(argv[4]);
  const int C = atoi(argv[5]), minc = atoi(argv[6]), kv = atoi(argv[7]);
  const unsigned seed = atoi(argv[8]); g_poison = atoi(argv[9]);
  const bool merge_floats = atoi(argv[10]) != 0; const char* outfile = argv[11];
  g_want_stats = argc > 12;
  const int group = NH / NKV, Q = NH * HD, KV = NKV * HD, stride = HD + 2, half = HD / 2;
  const int max_ctx = pos + 1 + 3;  // rows past pos stay 0xFF bytes (NaN): never read
  g_HD = HD; g_NH = NH; g_NKV = NKV; g_group = group; g_C = C; g_minc = minc; g_maxctx = max_ctx; g_pos = pos;
  // the worker's ATTENTION work area (worker.cu WorkerSharedBytes: group * HD + kWarps * group * (HD + 2)
  // [+ (kWarps + 1) * group])
  size_t work_floats = (size_t)group * HD + (size_t)kWarps * group * stride + (merge_floats ? (size_t)(kWarps + 1) * group : 0);
  const char* merge_env = std::getenv("AT_MERGE");
  g_merge = merge_env != nullptr && std::atoi(merge_env) == 1 && AT_MERGE_ONCE;
#if AT_MERGE_ONCE
  // MergeOnce's work area, which the host guarantees (gpu_executor.cc) when it exceeds ATTENTION's own
  if (g_merge) work_floats = std::max(work_floats, MergeWorkFloats(group, HD, C));
#endif
  SetupWorkArea(work_floats * 4, 8 + 8);  // and room for the operand tables (SetTables below)
  const size_t qkv_n = (size_t)Q + 2 * KV, cache_n = 2 * 2 * (size_t)max_ctx * KV, out_n = (size_t)C * NH * stride;
  const size_t sz[5] = {qkv_n * 4, (size_t)half * 4, cache_n * 2, out_n * 4, 2 * (size_t)NKV * 4}; size_t off[5];
  char* arena = MakeArena(sz, 5, off);
  const char* names[5] = {"qkv", "inv_freq", "cache", "out", "counters"};
  for (int i = 0; i < 5; ++i) g_bufs.push_back(Buf{names[i], g_arena_lo + off[i], g_arena_lo + off[i] + sz[i]});
  uint32_t* counters = (uint32_t*)(arena + off[4]);
  for (int i = 0; i < 2 * NKV; ++i) counters[i] = 0;
  float* qkv = (float*)(arena + off[0]); float* inv_freq = (float*)(arena + off[1]);
  uint16_t* cache_all = (uint16_t*)(arena + off[2]); float* out = (float*)(arena + off[3]);
  uint16_t* cache = cache_all + 2 * (size_t)max_ctx * KV;  // layer 1 (layer 0 stays 0xFF bytes: NaN)
  std::mt19937 rng(seed * 7919u + 17); std::normal_distribution<float> nd;
  for (size_t i = 0; i < qkv_n; ++i) qkv[i] = nd(rng) * (i < (size_t)Q ? 1.5f : 1.0f);
  for (int d = 0; d < half; ++d) inv_freq[d] = std::pow(10000.f, -2.f * d / HD);
  for (int p = 0; p < pos; ++p) for (int i = 0; i < KV; ++i) {  // earlier positions' K and V
    cache[(size_t)p * KV + i] = ToBf16(nd(rng));
    cache[(size_t)max_ctx * KV + (size_t)p * KV + i] = ToBf16(nd(rng));
  }
  for (size_t i = 0; i < out_n; ++i) out[i] = NAN;
  emu::g_out_writes.assign(out_n, 0);
  const void* tensors[8] = {}; void* buffers[8] = {};
  WorkerParams p{}; p.head_dim = HD; p.heads = NH; p.kv_heads = NKV; p.max_context = max_ctx; p.attention_min_chunk = minc;
  SetTileMin(p);
  if (g_merge) SetMerge(p, counters, pos);
  tensors[5] = inv_freq; buffers[1] = qkv; buffers[2] = cache_all; buffers[3] = out;
  SetTables(p, tensors, 8, buffers, 8); g_p = &p;
  for (int k = 0; k < C; ++k) {
    format::TaskRecord t{}; t.opcode = 3; t.layer = 1; t.in_buf = 1; t.aux_buf = 2; t.out_buf = 3; t.weight2 = 5;
    t.param0 = kv; t.slot = g_merge ? k : C - 1 - k; t.param1 = C; t.param2 = minc;  // MergeOnce: the last chunk last
    g_tasks.push_back(t);
  }
  bool ok = RunBlock(seed);
  CheckGuard();
  if (g_merge && counters[NKV + kv] != (uint32_t)(C - 1)) {
    fprintf(stderr, "merge counter %u, expected %d (one add per chunk but the last)\n", counters[NKV + kv], C - 1);
    ok = false;
  }
  FILE* f = fopen(outfile, "wb");
  fwrite(out, 4, out_n, f);
  for (int plane = 0; plane < 2; ++plane) fwrite(cache + (size_t)plane * max_ctx * KV, 2, (size_t)(pos + 1) * KV, f);
  fwrite(qkv, 4, qkv_n, f); fwrite(inv_freq, 4, half, f); fclose(f);
  PrintReports(); PrintErrors(ok);
  printf("barriers %d syncwarps %d work_floats %zu\n", g_epoch, SyncwarpCount(), work_floats);
  return ExitCode(ok);
}
