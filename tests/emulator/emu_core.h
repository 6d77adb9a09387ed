// Emulator core, shared by rt_ao.cc, ffn/rt_ops.cc and direct/rt_da.cc (each includes it once, after
// "cuda/common.cuh"; runtime TU, not instrumented): one kThreads-thread block as ucontext fibers with a
// random schedule (__syncthreads, __syncwarp, __shfl_xor_sync, __shfl_sync), the -fsanitize=thread hooks of the
// instrumented op TU, and the checker: shared-memory race detection in 2-byte granules (ordered only by
// barriers, and within a warp by __syncwarp), the work-area bound, alignment, and global buffers in
// guard bands (the per-buffer rules are the runtime's). The including runtime defines:
//   std::string emu::Region(size_t byte_off)    name of a work-area byte (race reports, stats)
//   void emu::BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc)
//   void emu::RunOp(const format::TaskRecord& t, const StepContext& c)   (in the op TU)
// and main(): SetupWorkArea, MakeArena + g_bufs, g_tasks, SetTables, RunBlock, CheckGuard, PrintReports.
#include <ucontext.h>
#include <dlfcn.h>
#include <unistd.h>
#include <random>
#include <map>
#include <type_traits>
#include <string>
#include <vector>
#include <cstdio>
#include <cstdlib>
using namespace tileinfer;
using namespace tileinfer::device;
EmuTid emu::g_tid[kThreads];
int emu::g_cur = -1;
extern "C" char __start_emu_shared[], __stop_emu_shared[];
// block-shared scratch (BlockSum) in the static shared-memory section (cuda_fake_env.h's __shared__)
static float g_scratch[kWarps] __attribute__((section("emu_shared")));
namespace emu {
void RunOp(const format::TaskRecord& t, const StepContext& c);
struct Buf { const char* name; uintptr_t lo, hi; };
static std::string Region(size_t byte_off);
static void BufAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc);

enum St { READY, AT_SYNC, AT_SHFL, AT_WSYNC, DONE };
struct Fiber { ucontext_t ctx; St st; int line; float v; int off; bool idx; unsigned mask; float res; std::vector<char> stack; };
static Fiber F[kThreads];
static ucontext_t sched_ctx;
static int g_epoch = 0;
static int g_wepoch[kWarps];
static std::map<std::string, long> g_races;
static std::map<std::string, std::pair<uintptr_t, uintptr_t>> g_race_pc;
static std::map<std::string, long> g_stats;
static std::string g_err;
static bool g_want_stats = false;
static bool g_align_all = false;  // false: only 16-byte accesses (anywhere); true: every 2/4/8/16-byte shared/global access
static void Report(const std::string& s, uintptr_t pc_now = 0, uintptr_t pc_prev = 0) {
  if (g_races[s]++ == 0) { g_race_pc[s] = {pc_now, pc_prev}; fprintf(stderr, "first report: %s\n", s.c_str()); }
}
// The rule of a GEMV's F32 output (RMSNORM_GEMV, LM_HEAD, ATTN_OUT): rows [row_begin, row_end) of the
// running task, one float each, written by lane 0 of its warp and never read; writes[row] counts them.
static void RowOutAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc,
                         std::vector<int>& writes) {
  const size_t e = (a - b.lo) / 4;
  if (!write) { Report("out read", pc); return; }
  if (size != 4 || (a & 3)) { Report("out write not one float", pc); return; }
  if (e < t.row_begin || e >= t.row_end) Report("out write outside the task's rows", pc);
  else if ((threadIdx.x & 31) != 0) Report("out write by a lane other than 0", pc);
  writes[e]++;
}
void SyncImpl(int line) { F[g_cur].st = AT_SYNC; F[g_cur].line = line; swapcontext(&F[g_cur].ctx, &sched_ctx); }
void SyncWarpImpl(int line, unsigned mask) {
  if (mask != 0xffffffffu) g_err += "__syncwarp with a partial mask\n";
  F[g_cur].st = AT_WSYNC; F[g_cur].line = line; swapcontext(&F[g_cur].ctx, &sched_ctx);
}
// off: the xor offset (__shfl_xor_sync) or, with idx, the source lane (__shfl_sync)
float ShflImpl(unsigned mask, float v, int off, int line, bool idx) {
  Fiber& f = F[g_cur]; f.st = AT_SHFL; f.line = line; f.v = v; f.off = off; f.idx = idx; f.mask = mask;
  swapcontext(&f.ctx, &sched_ctx);
  return f.res;
}
// ---- shared memory: the work area [g_base, g_base + limit) inside NaN guard bands, and the
// static shared memory (section emu_shared: g_scratch, the ops' __shared__ variables); where the
// version's WorkerParams has the operand tables (v36u: tables_bytes, n_tensors, n_buffers; StepContext
// reads them at smem + work_bytes), also the tables [g_tab, g_tab + g_tab_bytes) at the work area's
// end rounded up to 16 bytes (the host's work_bytes), before the upper guard band: read only, in
// whole 8-byte entries (SetTables fills them; CheckGuard finds them unchanged)
template <typename P, typename = void> struct HasTables : std::false_type {};
template <typename P>
struct HasTables<P, std::void_t<decltype(&P::tables_bytes), decltype(&P::n_tensors), decltype(&P::n_buffers)>> : std::true_type {};
static constexpr bool kTablesInSmem = HasTables<WorkerParams>::value;
static char* g_alloc = nullptr; static uintptr_t g_lo = 0, g_hi = 0, g_base = 0; static size_t g_limit_bytes = 0;
static uintptr_t g_tab = 0; static size_t g_tab_bytes = 0, g_tab_entries = 0;
static std::vector<const void*> g_tab_want;  // what SetTables wrote there; the global tables' copy (p.tensors / p.buffers)
static uintptr_t g_gtab_lo = 0, g_gtab_hi = 0;
static const size_t kGuard = 1 << 16;
static float* g_work;
static long g_max_off = -1;  // highest work-area byte touched by an op
struct Sh { int epoch = -1; int writer = -1; int wwe = 0; uintptr_t wpc = 0, rpc = 0; uint32_t any[kWarps]; uint32_t cur[kWarps]; int cst[kWarps]; };
static std::vector<Sh> g_sh, g_sh_static;  // per 2 bytes
static std::string StaticRegion(uintptr_t a) {
  const uintptr_t s = reinterpret_cast<uintptr_t>(g_scratch);
  return a >= s && a < s + sizeof g_scratch ? "scratch" : "static(s_value/s_id/s_finite)";
}
template <typename RegionFn>
static void Shadow(Sh& s, bool write, uintptr_t pc, RegionFn region) {
  const int t = g_cur, w = t >> 5; const uint32_t bit = 1u << (t & 31);
  if (s.epoch != g_epoch) { s.epoch = g_epoch; s.writer = -1; for (int i = 0; i < kWarps; ++i) { s.any[i] = 0; s.cur[i] = 0; s.cst[i] = -1; } }
  if (s.writer >= 0 && s.writer != t) {
    if ((s.writer >> 5) != w) Report(std::string("INTER-WARP ") + (write ? "WAW" : "RAW") + " on " + region(), pc, s.wpc);
    else if (s.wwe == g_wepoch[w]) Report(std::string("intra-warp ") + (write ? "WAW" : "RAW") + " on " + region(), pc, s.wpc);
  }
  if (write) {
    for (int i = 0; i < kWarps; ++i) if (i != w && s.any[i]) { Report("INTER-WARP WAR on " + region(), pc, s.rpc); break; }
    if (s.cst[w] == g_wepoch[w] && (s.cur[w] & ~bit)) Report("intra-warp WAR on " + region(), pc, s.rpc);
    s.writer = t; s.wwe = g_wepoch[w]; s.wpc = pc;
  } else {
    s.any[w] |= bit;
    if (s.cst[w] != g_wepoch[w]) { s.cst[w] = g_wepoch[w]; s.cur[w] = 0; }
    s.cur[w] |= bit; s.rpc = pc;
  }
}
// the work area: limit_bytes inside NaN guard bands of kGuard bytes (16 bytes past a 256-byte boundary);
// table_entries: room for that many table entries after it (n_tensors + n_buffers of SetTables), where
// the version has the tables
static void SetupWorkArea(size_t limit_bytes, size_t table_entries = 0) {
  g_limit_bytes = limit_bytes;
  g_tab_bytes = kTablesInSmem ? (table_entries * sizeof(void*) + 15) & ~size_t{15} : 0;  // the host's tables_bytes
  const size_t work_bytes = (g_limit_bytes + 15) & ~size_t{15};
  const size_t total = kGuard + work_bytes + g_tab_bytes + kGuard + 512;
  g_alloc = static_cast<char*>(aligned_alloc(256, (total + 255) / 256 * 256));
  g_base = reinterpret_cast<uintptr_t>(g_alloc) + kGuard + 16; g_lo = g_base - kGuard;
  g_tab = g_base + work_bytes; g_hi = g_tab + g_tab_bytes + kGuard;
  g_work = reinterpret_cast<float*>(g_base);
  for (float* f = reinterpret_cast<float*>(g_lo); f < reinterpret_cast<float*>(g_hi); ++f) *f = NAN;
  g_sh.assign(g_limit_bytes / 2 + 8, Sh());
  g_sh_static.assign((__stop_emu_shared - __start_emu_shared) / 2 + 8, Sh());
}
// The harness's operand tables (nt tensor and nb buffer addresses): p.tensors / p.buffers, and where
// the version has them (kTablesInSmem) the copies the worker's prologue makes after the work area, with
// work_bytes, tables_bytes, n_tensors, n_buffers as the host sets them. There p.tensors / p.buffers
// point at copies the ops must not read (only worker.cu does): Access reports an op's read of them.
template <typename P>
static void SetTables(P& p, const void* const* tensors, size_t nt, void* const* buffers, size_t nb) {
  p.tensors = tensors; p.buffers = buffers;
  if constexpr (HasTables<P>::value) {
    if ((nt + nb) * sizeof(void*) > g_tab_bytes) { fprintf(stderr, "SetTables: %zu entries, room for %zu\n", nt + nb, g_tab_bytes / sizeof(void*)); exit(2); }
    g_tab_entries = nt + nb;
    g_tab_want.assign(tensors, tensors + nt); g_tab_want.insert(g_tab_want.end(), buffers, buffers + nb);
    memcpy(reinterpret_cast<void*>(g_tab), g_tab_want.data(), g_tab_entries * sizeof(void*));
    static std::vector<const void*> global;  // p.tensors / p.buffers
    global = g_tab_want;
    g_gtab_lo = reinterpret_cast<uintptr_t>(global.data()); g_gtab_hi = g_gtab_lo + global.size() * sizeof(void*);
    p.tensors = global.data(); p.buffers = const_cast<void* const*>(global.data() + nt);
    p.work_bytes = static_cast<uint32_t>(g_tab - g_base); p.tables_bytes = static_cast<uint32_t>(g_tab_bytes);
    p.n_tensors = static_cast<uint32_t>(nt); p.n_buffers = static_cast<uint32_t>(nb);
  }
}
static void CheckGuard() {
  for (uintptr_t a = g_lo; a < g_hi; a += 4) if ((a < g_base || a >= g_base + g_limit_bytes) && (a < g_tab || a >= g_tab + g_tab_bytes) && !std::isnan(*reinterpret_cast<float*>(a))) { g_err += "guard area overwritten\n"; break; }
  if (g_tab_entries && memcmp(reinterpret_cast<void*>(g_tab), g_tab_want.data(), g_tab_entries * sizeof(void*))) g_err += "operand tables overwritten\n";
  for (uintptr_t a = g_tab + g_tab_entries * sizeof(void*); a < g_tab + g_tab_bytes; a += 4) if (!std::isnan(*reinterpret_cast<float*>(a))) { g_err += "operand tables' padding overwritten\n"; break; }
}
// ---- global memory: buffers (g_bufs) in an arena of 0xFF bytes; the runtime's BufAccess checks each access
static std::vector<Buf> g_bufs; static uintptr_t g_arena_lo = 0, g_arena_hi = 0;
static std::vector<format::TaskRecord> g_tasks;
static int g_task_of[kThreads];
// [guard][buffer 0][guard][buffer 1]...[guard], each buffer 256-byte aligned; off[i]: buffer i's offset
static char* MakeArena(const size_t* sz, int n, size_t* off) {
  const size_t G = 4096; size_t o = G;
  for (int i = 0; i < n; ++i) { off[i] = o; o += (sz[i] + 255) / 256 * 256 + G; }
  char* arena = static_cast<char*>(aligned_alloc(256, o)); memset(arena, 0xFF, o);
  g_arena_lo = (uintptr_t)arena; g_arena_hi = g_arena_lo + o;
  return arena;
}
// a row-owned output (ATTN_OUT's out): only written, one float per row, by lane 0, in the task's rows
// Random attention chunk states as ATTENTION writes them (rt_ao.cc, direct/rt_da.cc):
// chunks below `first` are empty (m = -inf, l = 0, o = 0); the others m = the max score,
// l in [1, positions], |o| <= l max|V|. Draws from the caller's generators, in order.
template <typename Rng, typename Normal, typename Uniform>
static void FillChunkStates(float* part, int C, int NH, int HD, int first, Rng& rng, Normal& nd, Uniform& ud) {
  const int stride = HD + 2;
  for (int ch = 0; ch < C; ++ch) for (int h = 0; h < NH; ++h) {
    float* s = part + ((size_t)ch * NH + h) * stride;
    if (ch < first) { for (int d = 0; d < HD; ++d) s[d] = 0; s[HD] = -INFINITY; s[HD + 1] = 0; continue; }
    s[HD] = (ud(rng) - 0.3f) * 20.f; s[HD + 1] = 1.f + ud(rng) * 60.f;
    for (int d = 0; d < HD; ++d) s[d] = nd(rng) * s[HD + 1] * 0.3f;
  }
}
static void RowOutAccess(const Buf& b, const format::TaskRecord& t, uintptr_t a, int size, bool write, uintptr_t pc) {
  const size_t e = (a - b.lo) / 4;
  if (!write) Report("out read", pc);
  else if (e < t.row_begin || e >= t.row_end || size != 4) Report("out write outside the task's rows", pc);
  else if ((threadIdx.x & 31) != 0) Report("out write by a lane other than 0", pc);
}
static void GlobalAccess(uintptr_t a, int size, bool write, uintptr_t pc) {
  const int ti = g_task_of[g_cur];
  if (ti < 0) { Report("global access outside the op", pc); return; }
  for (auto& b : g_bufs) {
    if (a < b.lo || a >= b.hi) continue;
    if (a + size > b.hi) { Report(std::string("access straddles the end of ") + b.name, pc); return; }
    BufAccess(b, g_tasks[ti], a, size, write, pc);
    return;
  }
  Report(std::string("OUT OF BOUNDS global ") + (write ? "write" : "read") + " (guard band)", pc);
}
void Access(void* p, int size, bool write, uintptr_t pc) {
  if (g_cur < 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const bool in_smem = a >= g_lo && a < g_hi, in_arena = a >= g_arena_lo && a < g_arena_hi;
  const bool in_static = a >= (uintptr_t)__start_emu_shared && a < (uintptr_t)__stop_emu_shared;
  if (size > 1 && (a & (size - 1)) && (g_align_all ? in_smem || in_arena || in_static : size == 16))
    Report(std::string("MISALIGNED ") + std::to_string(size) + "-byte " + (in_smem || in_static ? "shared" : in_arena ? "global" : "other") + " access", pc);
  if (in_arena) { GlobalAccess(a, size, write, pc); return; }
  if (in_static) {
    const size_t off = a - (uintptr_t)__start_emu_shared;
    if (g_want_stats) g_stats[StaticRegion(a) + (write ? " W" : " R") + std::to_string(size)]++;
    for (size_t h = off / 2; h < (off + size + 1) / 2; ++h) Shadow(g_sh_static[h], write, pc, [&] { return StaticRegion(a); });
    return;
  }
  if (a >= g_gtab_lo && a < g_gtab_hi) { Report("op read p.tensors / p.buffers (global tables; the version has the shared copies)", pc); return; }
  if (!in_smem) return;
  if (a >= g_tab && a < g_tab + g_tab_bytes) {  // the operand tables (kTablesInSmem)
    if (g_task_of[g_cur] < 0) Report("operand table access outside the op", pc);
    else if (write) Report("write to the operand tables", pc);
    else if (size != (int)sizeof(void*) || (a - g_tab) % sizeof(void*)) Report("operand table read not one whole entry", pc);
    else if ((a - g_tab) / sizeof(void*) >= g_tab_entries) Report("operand table read past n_tensors + n_buffers", pc);
    if (g_want_stats) g_stats[std::string("tables") + (write ? " W" : " R") + std::to_string(size)]++;
    return;
  }
  const long off = (long)(a - g_base);
  if (off < 0 || off + size > (long)g_limit_bytes) {
    Report(std::string("OUT OF WORK AREA ") + (write ? "write" : "read") + " byte off=" + std::to_string(off) + " limit=" + std::to_string(g_limit_bytes), pc);
    return;
  }
  if (g_task_of[g_cur] >= 0) g_max_off = std::max(g_max_off, off + size - 1);
  if (g_want_stats) g_stats[Region(off) + (write ? " W" : " R") + std::to_string(size)]++;
  for (long h = off / 2; h < (off + size + 1) / 2; ++h) Shadow(g_sh[h], write, pc, [&] { return Region(off); });
}
}  // namespace emu
#define EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))
extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
#define HOOKS(n) \
  void __tsan_read##n(void* a) { emu::Access(a, n, false, EMU_PC); } \
  void __tsan_write##n(void* a) { emu::Access(a, n, true, EMU_PC); } \
  void __tsan_unaligned_read##n(void* a) { emu::Access(a, n, false, EMU_PC); } \
  void __tsan_unaligned_write##n(void* a) { emu::Access(a, n, true, EMU_PC); }
HOOKS(1) HOOKS(2) HOOKS(4) HOOKS(8) HOOKS(16)
void __tsan_read_range(void* a, unsigned long n) { for (unsigned long i = 0; i < n; i += 2) emu::Access((char*)a + i, 2, false, EMU_PC); }
void __tsan_write_range(void* a, unsigned long n) { for (unsigned long i = 0; i < n; i += 2) emu::Access((char*)a + i, 2, true, EMU_PC); }
}
namespace emu {
static WorkerParams* g_p;
static bool g_poison = true;
static int g_pos = 0;                               // StepContext's pos
static void (*g_after_task)(size_t task) = nullptr;  // runs in every fiber after each task

// StepContext of either version: with v4's staging fields (stage, staged; main before 2026-11-30)
// or without them.
template <typename C>
static auto MakeContext(int) -> decltype(C{*g_p, 0, g_pos, g_work, g_scratch, nullptr, 0}) {
  return C{*g_p, 0, g_pos, g_work, g_scratch, nullptr, 0};  // staging off
}
template <typename C>
static C MakeContext(long) { return C{*g_p, 0, g_pos, g_work, g_scratch}; }

static void FiberMain() {
  for (size_t i = 0; i < g_tasks.size(); ++i) {
    if (g_poison) {  // another op that fills the work area (logged), then syncs as every op ends
      for (size_t k = threadIdx.x; k < g_limit_bytes / 4; k += kThreads) { Access(g_work + k, 4, true, 0); g_work[k] = NAN; }
      __syncthreads();
    }
    g_task_of[threadIdx.x] = (int)i;
    StepContext c = MakeContext<StepContext>(0);
    RunOp(g_tasks[i], c);
    g_task_of[threadIdx.x] = -1;
    if (g_after_task) g_after_task(i);
  }
  F[g_cur].st = DONE;
  swapcontext(&F[g_cur].ctx, &sched_ctx);
}
static bool RunBlock(unsigned seed) {
  std::mt19937 rng(seed);
  for (int t = 0; t < kThreads; ++t) {
    g_tid[t] = EmuTid{(unsigned)t, 0, 0};
    F[t].stack.assign(1 << 16, 0);
    getcontext(&F[t].ctx);
    F[t].ctx.uc_stack.ss_sp = F[t].stack.data(); F[t].ctx.uc_stack.ss_size = F[t].stack.size(); F[t].ctx.uc_link = &sched_ctx;
    makecontext(&F[t].ctx, FiberMain, 0);
    F[t].st = READY;
  }
  std::vector<int> order(kThreads); for (int i = 0; i < kThreads; ++i) order[i] = i;
  while (true) {
    bool progress = false;
    std::shuffle(order.begin(), order.end(), rng);
    for (int t : order) if (F[t].st == READY) { g_cur = t; swapcontext(&sched_ctx, &F[t].ctx); g_cur = -1; progress = true; }
    for (int w = 0; w < kWarps; ++w) {
      int at = 0, ws = 0, ready = 0;
      for (int l = 0; l < 32; ++l) { at += F[w*32+l].st == AT_SHFL; ws += F[w*32+l].st == AT_WSYNC; ready += F[w*32+l].st == READY; }
      if (at == 32) {
        for (int l = 0; l < 32; ++l) {
          Fiber& f = F[w*32+l];
          if (f.line != F[w*32].line || f.off != F[w*32].off || f.idx != F[w*32].idx || f.mask != 0xffffffffu) g_err += "shuffle lanes disagree (divergent shuffle) warp " + std::to_string(w) + "\n";
          if (f.idx && (f.off < 0 || f.off > 31)) g_err += "__shfl_sync source lane out of range, warp " + std::to_string(w) + "\n";
          f.res = F[w*32 + (f.idx ? (f.off & 31) : (l ^ f.off))].v; f.st = READY;
        }
        progress = true;
      } else if (ws == 32) {
        for (int l = 0; l < 32; ++l) {
          if (F[w*32+l].line != F[w*32].line) g_err += "__syncwarp lanes at different lines, warp " + std::to_string(w) + "\n";
          F[w*32+l].st = READY;
        }
        ++g_wepoch[w]; progress = true;
      } else if ((at > 0 || ws > 0) && ready == 0) {
        g_err += "warp " + std::to_string(w) + ": " + std::to_string(at) + " lanes at a shuffle, " + std::to_string(ws) + " at __syncwarp, the rest elsewhere (line " + std::to_string(F[w*32].line) + ")\n";
        return false;
      }
    }
    int sync = 0, done = 0;
    for (int t = 0; t < kThreads; ++t) { sync += F[t].st == AT_SYNC; done += F[t].st == DONE; }
    if (sync == kThreads) {
      for (int t = 0; t < kThreads; ++t) if (F[t].line != F[0].line) { g_err += "__syncthreads at different lines " + std::to_string(F[t].line) + " vs " + std::to_string(F[0].line) + "\n"; break; }
      for (int t = 0; t < kThreads; ++t) F[t].st = READY;
      ++g_epoch; progress = true;
    }
    if (done == kThreads) return true;
    if (!progress) { g_err += "DEADLOCK: " + std::to_string(sync) + " at __syncthreads, " + std::to_string(done) + " done\n"; return false; }
  }
}
static std::string Where(uintptr_t pc) {
  if (!pc) return "harness";
  Dl_info info; if (!dladdr(reinterpret_cast<void*>(pc), &info)) return "?";
  char cmd[512]; snprintf(cmd, sizeof cmd, "addr2line -e /proc/%d/exe 0x%lx", getpid(), (unsigned long)(pc - 1 - (uintptr_t)info.dli_fbase));
  FILE* f = popen(cmd, "r"); char buf[512] = {0}; if (f) { if (!fgets(buf, sizeof buf, f)) buf[0] = 0; pclose(f); }
  std::string s(buf); while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t sl = s.rfind('/'); return sl == std::string::npos ? s : s.substr(sl + 1);
}
static int SyncwarpCount() { int s = 0; for (int w = 0; w < kWarps; ++w) s += g_wepoch[w]; return s; }
// RACE lines (every distinct report, with the source lines of this and the earlier access), STAT lines
// (with [stats]), then "FAILED RUN" and the harness errors; the runtime prints its "barriers ..." line after
static void PrintReports() {
  for (auto& r : g_races) printf("RACE %s x%ld  [%s <- %s]\n", r.first.c_str(), r.second, Where(g_race_pc[r.first].first).c_str(), Where(g_race_pc[r.first].second).c_str());
  if (g_want_stats) for (auto& s : g_stats) printf("STAT %s %ld\n", s.first.c_str(), s.second);
}
static void PrintErrors(bool ok) { printf("%s%s", ok ? "" : "FAILED RUN\n", g_err.c_str()); }
static int ExitCode(bool ok) { return ok && g_err.empty() && g_races.empty() ? 0 : 1; }
}  // namespace emu
using namespace emu;
