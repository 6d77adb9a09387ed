// `floor`: achieved read bandwidth on this GPU for a buffer the size of a model, best over
// launch shapes, and against the number of active SMs (one block per SM). Prints JSON.
//
//   floor [--bytes=2471628800] [--reps=20]
//         [--mode=plain|bulk_ring|gemv|barrier|pipeline|loaded_barrier|reduce|idle_copy|cluster]
//
// The floor per token of a model is then (weight bytes + K/V bytes at the context) / best.
// --mode=bulk_ring (sm_90) instead measures the read through shared memory by bulk copies
// (cuda/stream_read.h StreamReadBulk) at one block per SM, for rings of several chunk sizes
// and depths, on all SMs and on one, beside the plain read at the worker's 1 x 512 shape:
// whether a copy ring can carry the worker's weight stream at the floor's rate.
// --mode=gemv measures the read done as the worker's GEMV loop does it (StreamGemv: BF16
// rows of 2,048 against x in shared memory, one warp per row, 1, 2 or 4 rows' loads in
// flight per warp) for launch shapes around the worker's 1 x 512, beside the plain read.
// --mode=barrier measures one grid barrier at the worker's shape (one block of 512 threads
// per SM, cooperative launch): cooperative_groups' grid.sync() against a counter barrier
// with release / acquire atomics, polled by acquire loads or by relaxed loads and one fence,
// and against two barriers on a flag word per block and one that wakes each block on a line
// of its own, some with a sleep between polls (cuda/stream_read.h GridBarrier);
// microseconds per barrier
// from launches of N and 2N barriers, (t(2N) - t(N)) / N, medians of --reps; and how many
// reads after a barrier missed a write made before it (must be 0).
// --mode=pipeline models the worker's 1B layer (cuda/stream_read.h PipelineStream): per block
// 96 / 64 / 768 KB of weights in the QKV / ATTN_OUT / FFN waves (the 1B's 95 / 63 / 763 KB
// per worker, rounded up to 32 KB; --pipeline_layers, --pipeline_wave_bytes and
// --pipeline_chunk model another shape), spins for the dependent phases (--pipeline_*_ns), five
// counter barriers per layer; the computing warps loading the weights themselves against a
// loader warp streaming them through a shared-memory ring ahead of them. Microseconds per
// layer (medians of --reps launches of --pipeline_tokens tokens), beside the plain read of the
// same bytes: whether a decoupled weight stream hides the chain that the weights do not need.
// The ring is filled by one bulk copy a chunk ("ring") or by the loader warp's cp.async
// 16-byte copies ("ring_cp_async", PipelineShape::loader_cp_async); later runs vary the
// ring's protocol (copies in flight capped, one waiter a chunk, a sleeping loader) and the
// loads mode's phases (chains of L2 round trips, a paced L2 prefetch during them). Each run
// also prints where block 0's time went (PipelineWaits). --pipeline_runs picks runs by number.
// --mode=loaded_barrier measures a grid barrier and one L2 round trip while every SM streams
// (cuda/stream_read.h LoadedBarrier): idle, plain loads with 8-64 KB in flight per SM, and a
// bulk-copy ring with 16-192 KB in flight; medians over --reps launches of each launch's
// median and 90th percentile, and the stream's GB/s: whether the barrier's round trips queue
// behind the bytes in flight, which would cost every prefetch the time it saves.
// --mode=reduce measures, at the worker's shape and for the 1B's and SmolLM2's hidden sizes,
// what summing one FFN part a block costs (cuda/stream_read.h ReduceRounds): the parts
// stored and reduced by a second wave in FFN_REDUCE's fixed order, behind a second grid
// barrier (package format 1's worker), against each part added to a 64-bit fixed-point
// accumulator by integer atomics (red.add.u64) before one barrier (format 2's, the worker
// now); and each beside the bare barrier and the stores with one barrier; with all blocks at
// once and with their starts spread over 2 us (the FFN tasks' ends in the worker's trace
// spread over ~1.9 us). --reduce_adders repeats the atomics with only that many blocks
// adding (plans with fewer FFN parts than workers). Microseconds per round from launches of
// N and 2N rounds, medians of --reps; the atomics' sums are checked against the exact sums
// (mismatches must be 0).
// --mode=idle_copy models the 1B's short-context ATTENTION wave and the FFN wave after it
// (cuda/stream_read.h IdleCopyRounds; 128 blocks of 512 threads where the GPU has them): 8
// blocks run a chain of dependent L2 round trips while the other blocks either wait at the
// grid barrier (as the worker's empty ATTENTION tasks do) or copy the first --idle_copy_kb of
// their FFN bytes into shared memory; then every block reads its 768 KB, the staged part from
// shared memory (and, in a second run of each size, the 8 read that much less: a plan that
// gives them less FFN work). Microseconds per round from launches of N and 2N rounds
// (--idle_copy_rounds), (t(2N) - t(N)) / N, and the chain's median, medians of --reps:
// whether HBM time that is idle in the worker's attention wave can be filled without
// lengthening the chain as much.
// --mode=cluster (sm_90) measures thread-block clusters as the synchronisation of a group of
// SMs (cuda/stream_read.h ClusterRounds; docs/PERFORMANCE.md v59): for each cluster size of
// --cluster_sizes, how many clusters can be resident (cudaOccupancyMaxActiveClusters) and
// whether a cooperative launch takes a cluster dimension; then, on as many whole clusters as
// fit on the SMs (one block of 544 threads per SM), microseconds per round of the cluster's
// hardware barrier, an mbarrier handoff over distributed shared memory, a handoff by remote
// asynchronous stores (st.async), the same group synchronised through an L2 counter, the
// counter grid barrier, a grid barrier made of cluster rounds and one counter over the
// clusters, a dependent load from another block's shared memory and one from L2; each idle
// and (but the hardware barrier) while warps 0-15 of every block stream 32 KB in flight a
// SM; and, with every thread, the hardware barrier (release and relaxed arrivals), the counter
// grid barrier (whole, and split: arrival before the loads, wait after) and __syncthreads with
// each thread's loads in flight across them (34 KB a SM a round). Rounds (--cluster_rounds) by difference of launches of N and 2N, medians of --reps;
// reads that missed a write made before the round (must be 0); the stream's GB/s.
// --mode=handoff measures how an activation vector gets from one wave's tasks to the next's
// (cuda/stream_read.h HandoffRounds; docs/PERFORMANCE.md v60): the worker's grid.sync()
// between the writes and the reads, against words that carry the round as a tag in the same
// 8-byte store and no barrier (stale words reloaded one by one, or a thread's together), and
// grid.sync() alone; at the 1B's and SmolLM2's shapes (the
// residual that every block reads; QKV's outputs that each K/V head's group reads),
// microseconds a round by difference of launches of N and 2N rounds (--handoff_rounds),
// medians of --reps, and reads that missed the round's value (must be 0).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "cuda/stream_read.h"

DEFINE_uint64(bytes, 2471628800ull, "Buffer size (default: Llama-3.2-1B's BF16 weights).");
DEFINE_int32(reps, 20, "Timed repetitions per configuration (median reported).");
DEFINE_string(mode, "plain", "plain: the floor (plain loads, launch shapes, active SMs); bulk_ring: bulk-copy "
              "rings; gemv: the worker's GEMV loop; barrier: grid-barrier latency; pipeline: a decoupled weight "
              "stream against the worker's layer; loaded_barrier: a grid barrier while the SMs stream; "
              "reduce: summing the FFN's parts, a second wave against integer atomics; idle_copy: the idle "
              "workers of the attention wave staging FFN bytes; cluster: thread-block clusters as a group's "
              "synchronisation (sm_90); handoff: an activation vector from one wave to the next, by grid "
              "barrier or by tagged words.");
DEFINE_int32(pipeline_tokens, 4, "--mode=pipeline: tokens (--pipeline_layers each) per launch.");
DEFINE_int32(pipeline_layers, 16, "--mode=pipeline: layers a token (default the 1B's; SmolLM2-135M: 30).");
DEFINE_string(pipeline_wave_bytes, "98304,65536,786432", "--mode=pipeline: the weight bytes each block streams in a "
              "layer's QKV, ATTN_OUT and FFN waves (default the 1B's on 128 workers; SmolLM2-135M's, rounded to "
              "4 KB: 8192,4096,40960).");
DEFINE_int32(pipeline_chunk, 0, "--mode=pipeline: if above 0, every run's chunk in bytes (each run keeps its stages), "
             "for waves that a run's own chunk (up to 32 KB) does not divide; 0: each run's own.");
DEFINE_int32(pipeline_norm_ns, 1000, "--mode=pipeline: spin before each weight wave (the norm or merge), ns.");
DEFINE_int32(pipeline_attention_ns, 5000, "--mode=pipeline: the ATTENTION wave's spin, ns.");
DEFINE_int32(pipeline_reduce_ns, 1600, "--mode=pipeline: the FFN_REDUCE wave's spin, ns.");
DEFINE_string(pipeline_runs, "", "--mode=pipeline: the runs to do, by number (1-based, comma-separated; empty: all), "
              "e.g. to run a few under compute-sanitizer.");
DEFINE_string(reduce_adders, "", "--mode=reduce: the fixed-point kind again with only this many blocks adding, "
              "comma-separated (e.g. 128,96,64: plans with fewer FFN parts than workers); every block first.");
DEFINE_int32(loaded_barriers, 2000, "--mode=loaded_barrier: barriers per launch (the first tenth not counted).");
DEFINE_string(idle_copy_kb, "0,32,64,128,192", "--mode=idle_copy: KB each non-owner block stages in phase A, "
              "comma-separated (multiples of 1/64: 16-byte copies).");
DEFINE_string(cluster_sizes, "1,2,4,8,16", "--mode=cluster: the cluster sizes to measure, comma-separated (1..16; "
              "above 8 the non-portable size).");
DEFINE_int32(cluster_rounds, 4000, "--mode=cluster: N, rounds of the shorter of each pair of launches (N and 2N; "
             "a few for compute-sanitizer).");
DEFINE_int32(handoff_rounds, 2000, "--mode=handoff: N, rounds of the shorter of each pair of launches (N and 2N; "
             "a few for compute-sanitizer).");
DEFINE_int32(idle_copy_chain, 16, "--mode=idle_copy: dependent L2 round trips in the owners' phase A.");
DEFINE_int32(idle_copy_rounds, 100, "--mode=idle_copy: N, rounds of the shorter of each pair of launches (N and 2N; "
             "a few for compute-sanitizer).");

namespace {

float Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median of `field` over `rows` (one row per timed run).
template <typename Row>
float MedianOf(const std::vector<Row>& rows, float Row::*field) {
  std::vector<float> v;
  for (const Row& row : rows) v.push_back(row.*field);
  return Median(v);
}

// False after printing the error when --`name`=`value` is below `min`.
bool AtLeast(const char* name, int value, int min) {
  if (value < min) std::fprintf(stderr, "error: --%s=%d: give at least %d\n", name, value, min);
  return value >= min;
}

bool Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(err));
  return err == cudaSuccess;
}

// Calls run(&ms) (a CUDA error string, empty on success) --reps + 2 times and leaves the last
// --reps times in *ms_of (ms; the first two runs warm up). False after printing run's error.
template <typename Run>
bool TimedReps(Run&& run, std::vector<float>* ms_of) {
  ms_of->clear();
  for (int r = 0; r < FLAGS_reps + 2; ++r) {
    float ms = 0;
    const std::string err = run(&ms);
    if (!err.empty()) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      return false;
    }
    if (r >= 2) ms_of->push_back(ms);
  }
  return true;
}

// Microseconds a round, by difference: run(n, &ms) (a CUDA error string, empty on success)
// times one launch of n rounds; each rep launches `rounds` and 2 x `rounds` rounds, --reps + 2
// reps, and the last --reps give (ms(2 x rounds) - ms(rounds)) / rounds in *us (the launch's
// fixed cost cancels; the first two reps warm up). After each kept rep, kept() (reads what
// run's last launch, the longer one, left). False after printing run's error.
template <typename Run, typename Kept>
bool RoundUs(int rounds, Run&& run, Kept&& kept, std::vector<float>* us) {
  us->clear();
  for (int r = 0; r < FLAGS_reps + 2; ++r) {
    float ms[2] = {0, 0};
    for (int twice = 0; twice < 2; ++twice) {
      const std::string err = run(rounds * (1 + twice), &ms[twice]);
      if (!err.empty()) {
        std::fprintf(stderr, "error: %s\n", err.c_str());
        return false;
      }
    }
    if (r < 2) continue;
    us->push_back((ms[1] - ms[0]) * 1e3f / rounds);
    kept();
  }
  return true;
}
template <typename Run>
bool RoundUs(int rounds, Run&& run, std::vector<float>* us) {
  return RoundUs(rounds, run, [] {}, us);
}

// --mode=barrier (see the top of this file). Returns the exit status.
int BarrierMode(const cudaDeviceProp& prop) {
  constexpr int kThreads = 512, kIterations = 10000;
  const int blocks = prop.multiProcessorCount;
  uint32_t* scratch = nullptr;
  const size_t scratch_words = tileinfer::kBarrierScratchFixed + tileinfer::kBarrierScratchPerBlock * static_cast<size_t>(blocks);
  if (!Check(cudaMalloc(&scratch, scratch_words * sizeof(uint32_t)), "cudaMalloc (scratch)")) {
    return 1;
  }
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"blocks\": %d, \"threads\": %d, \"reps\": %d,\n"
              "  \"barriers\": [\n", prop.name, prop.multiProcessorCount, blocks, kThreads, FLAGS_reps);
  const struct { tileinfer::BarrierKind kind; uint32_t sleep_ns; const char* name; } kinds[] = {
      {tileinfer::kGridSync, 0, "cooperative_groups grid.sync"},
      {tileinfer::kCounterBarrier, 0, "counter, release add, acquire polls"},
      {tileinfer::kCounterBarrier, 64, "counter, release add, acquire polls"},
      {tileinfer::kCounterBarrier, 256, "counter, release add, acquire polls"},
      {tileinfer::kCounterRelaxedPoll, 0, "counter, release add, relaxed polls + fence.acq_rel"},
      {tileinfer::kFlagBarrier, 0, "flag a block, release store, a thread's acquire polls of each flag"},
      {tileinfer::kFlagBarrier, 256, "flag a block, release store, a thread's acquire polls of each flag"},
      {tileinfer::kFlagGather, 0, "flag a block gathered by block 0, one go word polled by the others"},
      {tileinfer::kCounterWake, 0, "counter, acq_rel add read back, the last wakes each block's own line"},
      {tileinfer::kCounterWake, 64, "counter, acq_rel add read back, the last wakes each block's own line"},
      {tileinfer::kCounterWake, 256, "counter, acq_rel add read back, the last wakes each block's own line"}};
  int status = 0;
  for (const auto& k : kinds) {
    std::vector<float> us;
    uint64_t missed = 0;
    const bool ok = RoundUs(kIterations, [&](int n, float* ms) {
      uint32_t mismatches = 0;
      const std::string err = tileinfer::GridBarrier(blocks, kThreads, k.kind, n, k.sleep_ns, scratch, ms, &mismatches);
      missed += mismatches;
      return err;
    }, &us);
    if (!ok) return 1;
    if (missed != 0) status = 1;
    std::printf("%s    {\"kind\": \"%s\", \"poll_sleep_ns\": %u, \"us_per_barrier\": %.3f, \"missed_writes\": %llu}",
                &k == kinds ? "" : ",\n", k.name, k.sleep_ns, Median(us), static_cast<unsigned long long>(missed));
  }
  std::printf("\n  ]\n}\n");
  cudaFree(scratch);
  if (status != 0) std::fprintf(stderr, "error: a barrier let a read miss a write made before it\n");
  return status;
}

// --mode=pipeline's runs, numbered from 1 in this order (--pipeline_runs).
// The ninth run takes the ring's chunks without reading them: the decoupled stream alone,
// apart from the consumers' shared-memory reads (a ring no faster than loads with work but
// faster without it is bound by those reads, not by the stream). Spins are one warp's
// (PipelineShape::all_warps_spin) and the loader fences no copy, except in runs 10 and 11,
// each the third run with one of those restored as the model first had it: all 16
// warps spinning (do their loops starve the loader?), a proxy fence before every copy
// (does it hold each copy until the one before it has landed?); on the H200 neither
// changed the third run's time (docs/PERFORMANCE.md). The loads runs check the spins'
// length: with spins minus without should stay ~9.6 us a layer. Runs 12-17 repeat ring
// shapes with the cp.async loader, runs 18-54 the thirteenth session's variants and runs 55-73
// the thirty-eighth's (each listed with its question); compare a late run's sm_mhz with the
// early ones'.
struct PipelineRun {
  bool ring;
  uint32_t chunk;
  int stages;
  bool spins;
  bool work;
  bool all_warps_spin;
  bool fence_each_copy;
  bool cp_async;  // the loader's 32 lanes copy 16 bytes each (PipelineShape::loader_cp_async)
  int max_in_flight;  // PipelineShape::max_in_flight (0: no cap)
  bool one_waiter;    // PipelineShape::one_waiter
  uint32_t loader_sleep_ns;  // PipelineShape::loader_sleep_ns
  bool chain_phases;         // PipelineShape::chain_phases (loads mode)
  uint32_t l2_prefetch_interval_ns;  // PipelineShape::l2_prefetch_interval_ns (loads mode)
  bool x_in_registers;               // PipelineShape::x_in_registers (ring)
  bool warp_chunks;                  // PipelineShape::warp_chunks (ring)
  bool warp_pipeline;                // PipelineShape::warp_pipeline (ring; stages are a warp's)
  bool warp_rings;                   // PipelineShape::warp_rings (ring; stages are a warp's)
};
constexpr PipelineRun kPipelineRuns[] = {{false, 16384, 0, true, true},        {false, 16384, 0, false, true},
            {true, 16384, 12, true, true},        {true, 16384, 12, false, true},
            {true, 16384, 6, true, true},         {true, 32768, 6, true, true},
            {true, 8192, 16, true, true},         {true, 32768, 3, true, true},
            {true, 16384, 12, true, false},       {true, 16384, 12, true, true, true, false},
            {true, 16384, 12, true, true, false, true},
            // The same ring filled by cp.async (eleventh session): depth should now matter.
            {true, 16384, 12, true, true, false, false, true}, {true, 16384, 12, false, true, false, false, true},
            {true, 16384, 6, true, true, false, false, true},  {true, 8192, 16, true, true, false, false, true},
            {true, 32768, 6, true, true, false, false, true},  {true, 16384, 12, true, false, false, false, true},
            // The bulk ring with at most 1-4 copies outstanding (thirteenth session): deep
            // enough to run ahead, shallow in flight so that the barriers' round trips do not
            // queue behind the ring (--mode=loaded_barrier).
            {true, 16384, 12, true, true, false, false, false, 1}, {true, 16384, 12, true, true, false, false, false, 2},
            {true, 16384, 12, true, true, false, false, false, 3}, {true, 16384, 12, true, true, false, false, false, 4},
            {true, 16384, 12, false, true, false, false, false, 2}, {true, 32768, 6, true, true, false, false, false, 1},
            {true, 8192, 16, true, true, false, false, false, 4},  {true, 16384, 12, true, false, false, false, false, 2},
            // One waiter a chunk instead of 16 (call Z3 found the loader waiting for free stages
            // 24.6 us a layer: the consumers, not the stream, were the slow side).
            {true, 16384, 12, true, true, false, false, false, 0, true},
            {true, 16384, 12, false, true, false, false, false, 0, true},
            {true, 16384, 12, true, false, false, false, false, 0, true},
            {true, 32768, 6, true, true, false, false, false, 0, true},
            {true, 8192, 16, true, true, false, false, false, 0, true},
            {true, 16384, 12, true, true, false, false, false, 2, true},
            // The loader sleeping between its tries for a free stage (call Z4: with one waiter
            // the unread chunks still cost ~0.35 us each; is the loader's hot polling of the
            // empty mbarrier what delays the consumers' arrivals on it?).
            {true, 16384, 12, true, true, false, false, false, 0, false, 100},
            {true, 16384, 12, true, true, false, false, false, 0, false, 500},
            {true, 16384, 12, false, true, false, false, false, 0, false, 100},
            {true, 16384, 12, true, false, false, false, false, 0, false, 100},
            // The loads mode with phases that are chains of L2 round trips, alone and with a
            // paced L2 prefetch of the next bytes during every phase: 16 KB every 1,000 /
            // 500 / 250 ns (a SM: ~16 / 33 / 66 GB/s asked); does the prefetch shorten the
            // waves more than its queue lengthens the chains (--mode=loaded_barrier)?
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, true, 0},
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, true, 1000},
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, true, 500},
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, true, 250},
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, false, 500},
            // The ring's consumers with x in registers (one shared-memory word per weight word):
            // consumers well above the stream's rate, so what is left is the ring's depth
            // against the stretches without consumption.
            {true, 16384, 12, true, true, false, false, false, 0, false, 0, false, 0, true},
            {true, 16384, 12, false, true, false, false, false, 0, false, 0, false, 0, true},
            {true, 32768, 6, true, true, false, false, false, 0, false, 0, false, 0, true},
            {true, 16384, 12, true, true, false, false, false, 2, false, 0, false, 0, true},
            // A chunk a warp (call Z11: the consumers were issue-bound on per-chunk bookkeeping).
            // 16 stages: one a warp (PipelineShape::warp_chunks); run 7 is the split reference.
            {true, 8192, 16, true, true, false, false, false, 0, false, 0, false, 0, false, true},
            {true, 8192, 16, false, true, false, false, false, 0, false, 0, false, 0, false, true},
            {true, 8192, 16, true, false, false, false, false, 0, false, 0, false, 0, false, true},
            {true, 8192, 16, true, true, false, false, false, 2, false, 0, false, 0, false, true},
            {true, 8192, 16, true, true, false, false, false, 4, false, 0, false, 0, false, true},
            // A producer per warp: each warp's own cp.async pipeline (stages are per warp;
            // 16 x stages x chunk of shared memory).
            {true, 4096, 3, true, true, false, false, false, 0, false, 0, false, 0, false, false, true},
            {true, 4096, 3, false, true, false, false, false, 0, false, 0, false, 0, false, false, true},
            {true, 4096, 3, true, false, false, false, false, 0, false, 0, false, 0, false, false, true},
            {true, 2048, 6, true, true, false, false, false, 0, false, 0, false, 0, false, false, true},
            {true, 4096, 2, true, true, false, false, false, 0, false, 0, false, 0, false, false, true},
            // A loader warp feeding a ring a warp (thirty-eighth session): runs ahead through the
            // barriers and phases as far as 16 x stages x chunk allows, no warp behind another's
            // stage. Runs 55-59 spins (with, without, caps of 8 and 4 chunks, 2 KB x 6), runs 60-62
            // the phases as chains of L2 round trips (no cap, cap 8; run 63 the loads reference);
            // the loader's lanes copy with cp.async (16 bytes a lane, the warp a chunk at a time).
            {true, 4096, 3, true, true, false, false, true, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, false, true, false, false, true, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, true, 8, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, true, 4, false, 0, false, 0, false, false, false, true},
            {true, 2048, 6, true, true, false, false, true, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, true, 0, false, 0, true, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, true, 8, false, 0, true, 0, false, false, false, true},
            {true, 2048, 6, true, true, false, false, true, 8, false, 0, true, 0, false, false, false, true},
            {false, 16384, 0, true, true, false, false, false, 0, false, 0, true, 0},
            // The same rings, each fed by its own loader lane's bulk copies (calls WR: the
            // cp.async loader above cost ~0.35 us a chunk): 4 KB x 3 with and without spins,
            // with chains, 2 KB x 6, 4 KB x 2.
            {true, 4096, 3, true, true, false, false, false, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, false, true, false, false, false, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, false, 0, false, 0, true, 0, false, false, false, true},
            {true, 2048, 6, true, true, false, false, false, 0, false, 0, false, 0, false, false, false, true},
            {true, 4096, 2, true, true, false, false, false, 0, false, 0, false, 0, false, false, false, true},
            // Bulk rings with a cap on chunks in flight (call WR2: uncapped, 192 KB a SM in
            // flight, the barriers waited for it and the spins cost their whole length): cap 8
            // (32 KB) with spins, cap 4, cap 8 without spins, cap 8 with chains, 2 KB x 6 cap 16.
            {true, 4096, 3, true, true, false, false, false, 8, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, false, 4, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, false, true, false, false, false, 8, false, 0, false, 0, false, false, false, true},
            {true, 4096, 3, true, true, false, false, false, 8, false, 0, true, 0, false, false, false, true},
            {true, 2048, 6, true, true, false, false, false, 16, false, 0, false, 0, false, false, false, true}};
constexpr int kPipelineRunCount = static_cast<int>(sizeof(kPipelineRuns) / sizeof(kPipelineRuns[0]));

// The comma-separated integers of flag --`name` (`list`; empty: none), each in lo..hi, into
// *out; false after printing which item is not `what`.
bool IntList(const char* name, const std::string& list, int lo, int hi, const char* what, std::vector<int>* out) {
  out->clear();
  for (size_t at = 0; !list.empty() && at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < lo || n > hi) {
      std::fprintf(stderr, "error: --%s=%s: '%s' is not %s %d..%d\n", name, list.c_str(), item.c_str(), what, lo, hi);
      return false;
    }
    out->push_back(static_cast<int>(n));
    at = comma + 1;
  }
  return true;
}

// --mode=pipeline's model shape from --pipeline_tokens, --pipeline_layers and --pipeline_wave_bytes;
// false after printing what is wrong (PipelineStream checks the rest: chunks dividing the waves,
// the buffer's size).
bool PipelineShapeFromFlags(tileinfer::PipelineShape* shape) {
  std::vector<int> waves;
  if (!AtLeast("pipeline_tokens", FLAGS_pipeline_tokens, 1) || !AtLeast("pipeline_layers", FLAGS_pipeline_layers, 1) ||
      !AtLeast("pipeline_chunk", FLAGS_pipeline_chunk, 0) ||
      !IntList("pipeline_wave_bytes", FLAGS_pipeline_wave_bytes, 16, 64 << 20, "a byte count", &waves)) {
    return false;
  }
  if (waves.size() != 3) {
    std::fprintf(stderr, "error: --pipeline_wave_bytes=%s: give three byte counts, QKV,ATTN_OUT,FFN\n",
                 FLAGS_pipeline_wave_bytes.c_str());
    return false;
  }
  shape->tokens = FLAGS_pipeline_tokens;
  shape->layers = FLAGS_pipeline_layers;
  shape->qkv_bytes = static_cast<uint32_t>(waves[0]);
  shape->attn_out_bytes = static_cast<uint32_t>(waves[1]);
  shape->ffn_bytes = static_cast<uint32_t>(waves[2]);
  return true;
}

// --pipeline_runs as one flag per run of kPipelineRuns (all when the flag is empty); false
// after printing what is wrong.
bool PipelineRunsChosen(std::vector<bool>* chosen) {
  std::vector<int> runs;
  if (!IntList("pipeline_runs", FLAGS_pipeline_runs, 1, kPipelineRunCount, "a run number", &runs)) return false;
  chosen->assign(kPipelineRunCount, runs.empty());
  for (const int n : runs) (*chosen)[n - 1] = true;
  return true;
}

// --mode=pipeline (see the top of this file). Returns the exit status.
// `chosen`: PipelineRunsChosen's, one flag per run of kPipelineRuns; `shape`: PipelineShapeFromFlags's.
int PipelineMode(const cudaDeviceProp& prop, const void* data, size_t bytes, uint32_t* sink,
                 const std::vector<bool>& chosen, tileinfer::PipelineShape shape) {
  const int blocks = prop.multiProcessorCount;
  if (FLAGS_pipeline_norm_ns < 0 || FLAGS_pipeline_attention_ns < 0 || FLAGS_pipeline_reduce_ns < 0) {
    std::fprintf(stderr, "error: --pipeline_*_ns must be >= 0\n");
    return 2;
  }
  const size_t layer_bytes = static_cast<size_t>(blocks) * (shape.qkv_bytes + shape.attn_out_bytes + shape.ffn_bytes);
  // The plain read of the same bytes at the worker's 1 x 512 shape: the layer's floor.
  const size_t read = std::min(layer_bytes * shape.layers, bytes) / 16 * 16;
  std::vector<float> plain;
  if (!TimedReps([&](float* t) { return tileinfer::StreamRead(data, read, blocks, 512, sink, t); }, &plain)) return 1;
  for (float& m : plain) m = static_cast<float>(read / (m * 1e6));  // ms -> GB/s
  const float gbps = Median(plain);
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"reps\": %d, \"tokens\": %d, \"layers\": %d,\n"
              "  \"bytes_per_block_layer\": [%u, %u, %u], \"plain_gbps\": %.1f, \"floor_us_per_layer\": %.2f,\n"
              "  \"runs\": [\n",
              prop.name, blocks, FLAGS_reps, shape.tokens, shape.layers, shape.qkv_bytes, shape.attn_out_bytes,
              shape.ffn_bytes, gbps, layer_bytes / (gbps * 1e3));
  bool first = true;
  for (int r = 0; r < kPipelineRunCount; ++r) {
    if (!chosen[r]) continue;
    const PipelineRun& run = kPipelineRuns[r];
    const uint32_t chunk = FLAGS_pipeline_chunk > 0 ? static_cast<uint32_t>(FLAGS_pipeline_chunk) : run.chunk;
    tileinfer::PipelineShape s = shape;
    s.norm_ns = run.spins ? FLAGS_pipeline_norm_ns : 0;
    s.attention_ns = run.spins ? FLAGS_pipeline_attention_ns : 0;
    s.reduce_ns = run.spins ? FLAGS_pipeline_reduce_ns : 0;
    s.work = run.work;
    s.all_warps_spin = run.all_warps_spin;
    s.fence_each_copy = run.fence_each_copy;
    s.loader_cp_async = run.cp_async;
    s.max_in_flight = run.max_in_flight;
    s.one_waiter = run.one_waiter;
    s.loader_sleep_ns = run.loader_sleep_ns;
    s.chain_phases = run.chain_phases;
    s.l2_prefetch_interval_ns = run.l2_prefetch_interval_ns;
    s.x_in_registers = run.x_in_registers;
    s.warp_chunks = run.warp_chunks;
    s.warp_pipeline = run.warp_pipeline;
    s.warp_rings = run.warp_rings;
    std::vector<float> ms, mhz;  // mhz: every run's, warm-ups first
    std::vector<tileinfer::PipelineWaits> waits;  // likewise
    const bool ok = TimedReps([&](float* t) {
      float sm_mhz = 0;
      tileinfer::PipelineWaits w;
      const std::string err =
          tileinfer::PipelineStream(data, bytes, blocks, s, run.ring, chunk, run.stages, t, &sm_mhz, &w);
      mhz.push_back(sm_mhz);
      waits.push_back(w);
      return err;
    }, &ms);
    if (!ok) return 1;
    mhz.erase(mhz.begin(), mhz.begin() + 2);
    waits.erase(waits.begin(), waits.begin() + 2);
    using W = tileinfer::PipelineWaits;
    std::vector<float> us;
    for (float m : ms) us.push_back(m * 1e3f / (s.tokens * s.layers));
    auto yes = [](bool b) { return b ? "true" : "false"; };
    std::printf("%s    {\"run\": %d, \"weights\": \"%s\", \"chunk\": %u, \"stages\": %d, \"spin_ns\": [%u, %u, %u], "
                "\"work\": %s, \"all_warps_spin\": %s, \"fence_each_copy\": %s, \"max_in_flight\": %d, "
                "\"one_waiter\": %s, \"loader_sleep_ns\": %u, \"chain_phases\": %s, \"l2_prefetch_interval_ns\": %u, "
                "\"x_in_registers\": %s, \"warp_chunks\": %s, \"warp_pipeline\": %s, \"warp_rings\": %s, "
                "\"us_per_layer\": %.2f, \"sm_mhz\": %.0f, \"block0_waits_us_per_layer\": {\"loader_empty\": %.2f, "
                "\"loader_cap\": %.2f, \"compute_full\": %.2f, \"compute_barrier\": %.2f, \"compute_phase\": %.2f, "
                "\"chain_load_us\": %.3f}}",
                first ? "" : ",\n", r + 1, run.ring ? (run.cp_async ? "ring_cp_async" : "ring") : "loads",
                run.ring ? chunk : 0, run.stages, s.norm_ns, s.attention_ns, s.reduce_ns, yes(run.work),
                yes(run.all_warps_spin), yes(run.fence_each_copy), run.max_in_flight, yes(run.one_waiter),
                run.loader_sleep_ns, yes(run.chain_phases), run.l2_prefetch_interval_ns, yes(run.x_in_registers),
                yes(run.warp_chunks), yes(run.warp_pipeline), yes(run.warp_rings), Median(us), Median(mhz),
                MedianOf(waits, &W::loader_empty_us), MedianOf(waits, &W::loader_cap_us),
                MedianOf(waits, &W::compute_full_us), MedianOf(waits, &W::compute_barrier_us),
                MedianOf(waits, &W::compute_phase_us), MedianOf(waits, &W::chain_load_us));
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

// --mode=loaded_barrier (see the top of this file). Returns the exit status.
int LoadedBarrierMode(const cudaDeviceProp& prop, const void* data, size_t bytes) {
  const int blocks = prop.multiProcessorCount;
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"reps\": %d, \"runs\": [\n", prop.name, blocks, FLAGS_reps);
  const struct {
    int warps, unroll, stages;
    uint32_t chunk;
    bool quiet_block0;  // the recorded block streams nothing: is the queue its own or shared?
  } runs[] = {{0, 8, 0, 0},      {16, 1, 0, 0},     {16, 2, 0, 0},     {16, 4, 0, 0},
              {16, 8, 0, 0},     {4, 8, 0, 0},      {8, 8, 0, 0},      {0, 0, 1, 16384},
              {0, 0, 2, 16384},  {0, 0, 4, 16384},  {0, 0, 8, 16384},  {0, 0, 12, 16384},
              {0, 0, 6, 32768},  {16, 8, 0, 0, true}, {0, 0, 4, 16384, true}, {0, 0, 12, 16384, true},
              {0, 8, 0, 0}};  // idle again last: did the machine drift?
  bool first = true;
  for (const auto& run : runs) {
    tileinfer::LoadedBarrierShape shape;
    shape.stream_warps = run.warps;
    shape.unroll = run.unroll;
    shape.bulk_stages = run.stages;
    shape.bulk_chunk = run.chunk;
    shape.barriers = FLAGS_loaded_barriers;
    shape.quiet_block0 = run.quiet_block0;
    using R = tileinfer::LoadedBarrierResult;
    std::vector<R> results;  // every run's, warm-ups first
    std::vector<float> ms;   // unused: each result carries its own times
    const bool ok = TimedReps([&](float*) {
      results.emplace_back();
      return tileinfer::LoadedBarrier(data, bytes, blocks, shape, &results.back());
    }, &ms);
    if (!ok) return 1;
    results.erase(results.begin(), results.begin() + 2);
    const size_t in_flight = run.stages > 0 ? static_cast<size_t>(run.stages) * run.chunk
                                            : static_cast<size_t>(run.warps) * 32 * run.unroll * 16;
    std::printf("%s    {\"stream\": \"%s\", \"warps\": %d, \"unroll\": %d, \"stages\": %d, \"chunk\": %u, "
                "\"in_flight_kb_per_sm\": %zu, \"quiet_block0\": %s, \"barrier_us\": %.3f, \"barrier_us_p90\": %.3f, "
                "\"load_us\": %.3f, \"load_us_p90\": %.3f, \"stream_gbps\": %.1f, \"sm_mhz\": %.0f}",
                first ? "" : ",\n", run.stages > 0 ? "bulk" : run.warps > 0 ? "loads" : "none", run.warps,
                run.unroll, run.stages, run.chunk, in_flight >> 10, run.quiet_block0 ? "true" : "false",
                MedianOf(results, &R::barrier_us_median), MedianOf(results, &R::barrier_us_p90),
                MedianOf(results, &R::load_us_median), MedianOf(results, &R::load_us_p90),
                MedianOf(results, &R::stream_gbps), MedianOf(results, &R::sm_mhz));
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

// --reduce_adders as block counts 1..blocks, after `blocks` itself (every block adds); false
// after printing what is wrong.
bool ReduceAdders(int blocks, std::vector<int>* adders) {
  std::vector<int> counts;
  if (!IntList("reduce_adders", FLAGS_reduce_adders, 1, blocks, "a block count", &counts)) return false;
  adders->assign(1, blocks);
  for (const int n : counts) {
    if (n != blocks) adders->push_back(n);
  }
  return true;
}

// --mode=reduce (see the top of this file). Returns the exit status.
int ReduceMode(const cudaDeviceProp& prop) {
  constexpr int kThreads = 512, kRounds = 2000;
  const int blocks = prop.multiProcessorCount;
  std::vector<int> adder_counts;
  if (!ReduceAdders(blocks, &adder_counts)) return 2;
  const int hiddens[] = {576, 2048};  // SmolLM2-135M, Llama-3.2-1B
  constexpr int kMaxHidden = 2048;
  float* parts = nullptr;
  float* out = nullptr;
  unsigned long long* acc = nullptr;
  if (!Check(cudaMalloc(&parts, static_cast<size_t>(blocks) * kMaxHidden * sizeof(float)), "cudaMalloc (parts)") ||
      !Check(cudaMalloc(&out, kMaxHidden * sizeof(float)), "cudaMalloc (out)") ||
      !Check(cudaMalloc(&acc, kMaxHidden * sizeof(unsigned long long)), "cudaMalloc (acc)") ||
      !Check(cudaMemset(out, 0, kMaxHidden * sizeof(float)), "cudaMemset (out)")) {
    return 1;
  }
  const struct { tileinfer::ReduceKind kind; const char* name; } kinds[] = {
      {tileinfer::kBarrierOnly, "one grid barrier"},
      {tileinfer::kPartsBarrier, "parts stored, one barrier"},
      {tileinfer::kPartsReduce, "parts stored, barrier, FFN_REDUCE wave, barrier"},
      {tileinfer::kFixedPointRed, "fixed-point red.add.u64, one barrier"}};
  std::printf("{\n  \"gpu\": \"%s\", \"blocks\": %d, \"threads\": %d, \"reps\": %d, \"rounds\": %d,\n"
              "  \"reduce\": [\n", prop.name, blocks, kThreads, FLAGS_reps, kRounds);
  int clock_khz = 0;
  if (!Check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "cudaDeviceGetAttribute (clock rate)")) {
    return 1;
  }
  int status = 0;
  bool first = true;
  for (const int spread_ns : {0, 2000}) {
    for (const int hidden : hiddens) {
      // SM clocks for spread_ns at the GPU's clock rate (kHz); the round's time includes the
      // spread, the same for every kind: compare kinds at one spread.
      const uint32_t spread_clk = static_cast<uint32_t>(static_cast<long long>(spread_ns) * clock_khz / 1000000);
      // The exact sum over the adding blocks and rounds 0..n-1 of the fixed-point parts, per row.
      auto exact = [&](int adders, int rounds, int r) {
        long long total = 0;
        for (int i = 0; i < rounds; ++i) {
          for (int b = 0; b < adders; ++b) {
            total += static_cast<long long>(tileinfer::ReducePartValue(b, r, i) * 1024.0f) * (1LL << 22);  // v * 2^32
          }
        }
        return total;
      };
      for (const auto& k : kinds) {
        for (const int adders : adder_counts) {
          if (k.kind != tileinfer::kFixedPointRed && adders != blocks) continue;  // one row: every block
          std::vector<float> us;
          uint64_t mismatches = 0;
          if (k.kind == tileinfer::kFixedPointRed) {  // a short launch whose sums are checked
            constexpr int kCheckRounds = 7;
            float ms = 0;
            std::vector<long long> got(hidden);
            const std::string err =
                !Check(cudaMemset(acc, 0, hidden * sizeof(unsigned long long)), "cudaMemset (acc)")
                    ? "cudaMemset"
                    : tileinfer::ReduceRounds(blocks, kThreads, hidden, k.kind, adders, kCheckRounds, spread_clk,
                                              parts, out, acc, &ms);
            if (!err.empty() ||
                !Check(cudaMemcpy(got.data(), acc, hidden * sizeof(long long), cudaMemcpyDeviceToHost),
                       "cudaMemcpy (acc)")) {
              std::fprintf(stderr, "error: %s\n", err.c_str());
              return 1;
            }
            for (int row = 0; row < hidden; ++row) mismatches += got[row] != exact(adders, kCheckRounds, row);
          }
          const bool ok = RoundUs(kRounds, [&](int n, float* ms) {
            return tileinfer::ReduceRounds(blocks, kThreads, hidden, k.kind, adders, n, spread_clk, parts, out, acc,
                                           ms);
          }, &us);
          if (!ok) return 1;
          if (mismatches != 0) status = 1;
          std::printf("%s    {\"spread_ns\": %d, \"hidden\": %d, \"kind\": \"%s\", \"adders\": %d, "
                      "\"us_per_round\": %.3f, \"sum_mismatches\": %llu}",
                      first ? "" : ",\n", spread_ns, hidden, k.name, adders, Median(us),
                      static_cast<unsigned long long>(mismatches));
          first = false;
        }
      }
    }
  }
  std::printf("\n  ]\n}\n");
  cudaFree(parts);
  cudaFree(out);
  cudaFree(acc);
  if (status != 0) std::fprintf(stderr, "error: the atomics' sums differ from the exact sums\n");
  return status;
}

// --idle_copy_kb as bytes (multiples of 16, at most 1 MB); false after printing what is wrong.
bool IdleCopySizes(std::vector<uint32_t>* copies) {
  copies->clear();
  for (size_t at = 0; at <= FLAGS_idle_copy_kb.size();) {
    const size_t comma = std::min(FLAGS_idle_copy_kb.find(',', at), FLAGS_idle_copy_kb.size());
    const std::string item = FLAGS_idle_copy_kb.substr(at, comma - at);
    char* end = nullptr;
    const double copy_bytes = std::strtod(item.c_str(), &end) * 1024;
    if (item.empty() || *end != '\0' || !(copy_bytes >= 0 && copy_bytes <= 1024 * 1024) ||
        copy_bytes != 16 * static_cast<double>(static_cast<uint32_t>(copy_bytes / 16))) {
      std::fprintf(stderr, "error: --idle_copy_kb=%s: '%s' is not a size in KB from 0 to 1024 in steps of 1/64 "
                   "(16-byte copies)\n", FLAGS_idle_copy_kb.c_str(), item.c_str());
      return false;
    }
    copies->push_back(static_cast<uint32_t>(copy_bytes));
    at = comma + 1;
  }
  return true;
}

// --mode=idle_copy (see the top of this file), for the stages `copies` (bytes). Returns the
// exit status.
int IdleCopyMode(const cudaDeviceProp& prop, const void* data, size_t bytes, const std::vector<uint32_t>& copies) {
  const int rounds = FLAGS_idle_copy_rounds;
  const int blocks = std::min(128, prop.multiProcessorCount);
  tileinfer::IdleCopyShape shape;
  shape.chain = FLAGS_idle_copy_chain;
  std::printf("{\n  \"gpu\": \"%s\", \"blocks\": %d, \"threads\": %d, \"owners\": %d, \"chain\": %d, "
              "\"task_bytes\": %u, \"reps\": %d, \"rounds\": %d,\n  \"idle_copy\": [\n",
              prop.name, blocks, tileinfer::kIdleCopyThreads, shape.owners, shape.chain, shape.task_bytes, FLAGS_reps,
              rounds);
  bool first = true;
  for (const uint32_t copy : copies) {
    for (const bool owners_short : {false, true}) {
      if (owners_short && copy == 0) continue;  // the same run as without
      shape.copy_bytes = copy;
      shape.owners_short = owners_short;
      std::vector<float> us, chain_us, mhz;
      tileinfer::IdleCopyResult result;
      const bool ok = RoundUs(rounds, [&](int n, float* ms) {
        shape.rounds = n;
        return tileinfer::IdleCopyRounds(data, bytes, blocks, shape, ms, &result);
      }, [&] {
        chain_us.push_back(result.chain_us_median);
        mhz.push_back(result.sm_mhz);
      }, &us);
      if (!ok) return 1;
      std::printf("%s    {\"copy_kb\": %.3f, \"owners_short\": %s, \"us_per_round\": %.3f, \"chain_us\": %.3f, "
                  "\"sm_mhz\": %.0f}",
                  first ? "" : ",\n", copy / 1024.0, owners_short ? "true" : "false", Median(us), Median(chain_us),
                  Median(mhz));
      first = false;
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

// --mode=handoff (see the top of this file). Returns the exit status.
int HandoffMode(const cudaDeviceProp& prop) {
  const struct {
    const char* shape;
    int n, groups, blocks;
  } shapes[] = {{"1B residual (hidden 2048), read by every block", 2048, 1, 128},
                {"1B QKV outputs (3072), a K/V head's group of 16 blocks reads its 384", 3072, 8, 128},
                {"SmolLM2 residual (hidden 576), read by every block", 576, 1, 128},
                {"SmolLM2 QKV outputs (960), a K/V head's group of 42 blocks reads its 320", 960, 3, 126}};
  const struct {
    tileinfer::HandoffKind kind;
    const char* name;
  } kinds[] = {{tileinfer::kHandoffGridSync, "grid.sync() between plain stores and plain loads (the worker's)"},
               {tileinfer::kHandoffTagged, "tagged 8-byte words, no barrier; stale words reloaded one by one"},
               {tileinfer::kHandoffTaggedBatch, "tagged 8-byte words, no barrier; a thread's stale words reloaded together"},
               {tileinfer::kHandoffGridSyncOnly, "grid.sync() alone"}};
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"reps\": %d, \"rounds\": %d, \"shapes\": [\n", prop.name,
              prop.multiProcessorCount, FLAGS_reps, FLAGS_handoff_rounds);
  int status = 0;
  bool first_shape = true;
  for (const auto& sh : shapes) {
    const int blocks = std::min(sh.blocks, prop.multiProcessorCount);
    const int groups = blocks % sh.groups == 0 ? sh.groups : 1;
    std::printf("%s    {\"shape\": \"%s\", \"words\": %d, \"groups\": %d, \"blocks\": %d, \"runs\": [\n",
                first_shape ? "" : ",\n", sh.shape, sh.n, groups, blocks);
    first_shape = false;
    bool first_run = true;
    for (const auto& k : kinds) {
      std::vector<float> us;
      uint64_t missed = 0;
      const bool ok = RoundUs(FLAGS_handoff_rounds, [&](int n, float* ms) {
        tileinfer::HandoffResult r;
        const std::string e = tileinfer::HandoffRounds(blocks, k.kind, sh.n, groups, n, &r);
        *ms = r.ms;
        missed += r.mismatches;
        return e;
      }, &us);
      if (!ok) return 1;
      if (missed != 0) status = 1;
      std::printf("%s      {\"kind\": \"%s\", \"us_per_round\": %.3f, \"missed_reads\": %llu}", first_run ? "" : ",\n",
                  k.name, Median(us), static_cast<unsigned long long>(missed));
      first_run = false;
    }
    std::printf("\n    ]}");
  }
  std::printf("\n  ]\n}\n");
  if (status != 0) std::fprintf(stderr, "error: a round read a word without the round's value\n");
  return status;
}

// --mode=cluster (see the top of this file), for the sizes `sizes`. Returns the exit status.
int ClusterMode(const cudaDeviceProp& prop, const void* data, size_t bytes, const std::vector<int>& sizes) {
  const int sms = prop.multiProcessorCount;
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"reps\": %d, \"rounds\": %d, \"sizes\": [\n", prop.name,
              sms, FLAGS_reps, FLAGS_cluster_rounds);
  const struct { tileinfer::ClusterKind kind; const char* name; } kinds[] = {
      {tileinfer::kClusterHardware, "cluster.sync(): barrier.cluster, every thread"},
      {tileinfer::kClusterMbarrier, "mbarrier handoff: a lane a block arrives (release), lane 0 waits (acquire)"},
      {tileinfer::kStAsyncHandoff, "st.async handoff: a lane a block stores, complete_tx on its mbarrier"},
      {tileinfer::kGroupCounter, "the cluster-sized group through an L2 counter (one thread)"},
      {tileinfer::kGridCounter, "grid barrier: one L2 counter over all blocks (one thread)"},
      {tileinfer::kHierarchicalGrid, "grid barrier: cluster round, a counter over the clusters, cluster round"},
      {tileinfer::kRemoteSmemChase, "dependent load from the next rank's shared memory"},
      {tileinfer::kL2Chase, "dependent relaxed load from L2"},
      {tileinfer::kClusterHardwareLoads, "every thread: loads in flight across cluster.sync()"},
      {tileinfer::kClusterRelaxedLoads, "every thread: loads in flight across barrier.cluster.arrive.relaxed"},
      {tileinfer::kGridCounterLoads, "every thread: loads in flight across the counter grid barrier"},
      {tileinfer::kGridSplitLoads, "every thread: loads issued between the grid barrier's arrival and its wait"},
      {tileinfer::kLoadsOnly, "every thread: the same loads across __syncthreads (the reference)"}};
  int status = 0;
  bool first_size = true;
  for (const int size : sizes) {
    int resident = 0;
    std::string err = tileinfer::MaxActiveClusters(size, &resident);
    if (!err.empty()) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      return 1;
    }
    const int clusters = std::min(resident, sms / size);
    const int blocks = clusters * size;
    std::printf("%s    {\"cluster_size\": %d, \"max_active_clusters\": %d, \"blocks\": %d", first_size ? "" : ",\n",
                size, resident, blocks);
    first_size = false;
    if (clusters < 1) {
      std::printf(", \"runs\": []}");
      continue;
    }
    // Does a cooperative launch take a cluster dimension? A refused launch is reported, not
    // fatal (its error is not sticky); the measured runs then go without the attribute.
    tileinfer::ClusterRoundsResult probe;
    const std::string coop_err =
        tileinfer::ClusterRounds(nullptr, 0, blocks, size, tileinfer::kGridCounter, false, true, 10, &probe);
    cudaGetLastError();
    const bool cooperative = coop_err.empty();
    std::string shown = cooperative ? "ok" : coop_err;
    std::replace(shown.begin(), shown.end(), '"', '\'');  // a JSON string
    std::printf(", \"cooperative_launch\": \"%s\", \"runs\": [\n", shown.c_str());
    bool first_run = true;
    for (const auto& k : kinds) {
      for (const bool stream : {false, true}) {
        if ((stream && k.kind == tileinfer::kClusterHardware) || (!stream && tileinfer::LoadsAcrossBarrier(k.kind))) {
          continue;
        }
        if (k.kind == tileinfer::kStAsyncHandoff && size < 2) continue;  // st.async needs another block
        std::vector<float> us;
        uint64_t missed = 0;
        unsigned long long streamed = 0;
        float long_ms = 0;
        const bool ok = RoundUs(FLAGS_cluster_rounds, [&](int n, float* ms) {
          tileinfer::ClusterRoundsResult r;
          const std::string e = tileinfer::ClusterRounds(data, bytes, blocks, size, k.kind, stream, cooperative, n, &r);
          *ms = r.ms;
          missed += r.mismatches;
          streamed = r.streamed_bytes;
          long_ms = r.ms;
          return e;
        }, &us);
        if (!ok) return 1;
        if (missed != 0) status = 1;
        std::printf("%s      {\"kind\": \"%s\", \"stream\": %s, \"us_per_round\": %.3f, \"missed_writes\": %llu, "
                    "\"stream_gbps\": %.1f}",
                    first_run ? "" : ",\n", k.name, stream ? "true" : "false", Median(us),
                    static_cast<unsigned long long>(missed), long_ms > 0 ? streamed / (long_ms * 1e6) : 0.0);
        first_run = false;
      }
    }
    std::printf("\n    ]}");
  }
  std::printf("\n  ]\n}\n");
  if (status != 0) std::fprintf(stderr, "error: a round let a read miss a write made before it\n");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_mode != "plain" && FLAGS_mode != "bulk_ring" && FLAGS_mode != "gemv" && FLAGS_mode != "barrier" &&
      FLAGS_mode != "pipeline" && FLAGS_mode != "loaded_barrier" && FLAGS_mode != "reduce" &&
      FLAGS_mode != "idle_copy" && FLAGS_mode != "cluster" && FLAGS_mode != "handoff") {
    std::fprintf(stderr,
                 "error: --mode=%s: give plain, bulk_ring, gemv, barrier, pipeline, loaded_barrier, reduce, "
                 "idle_copy, cluster or handoff\n",
                 FLAGS_mode.c_str());
    return 2;
  }
  // Flags checked before any GPU work or output.
  if (!AtLeast("reps", FLAGS_reps, 1) || !AtLeast("loaded_barriers", FLAGS_loaded_barriers, 10)) return 2;
  std::vector<bool> chosen;
  if (!PipelineRunsChosen(&chosen)) return 2;
  tileinfer::PipelineShape pipeline_shape;
  if (FLAGS_mode == "pipeline" && !PipelineShapeFromFlags(&pipeline_shape)) return 2;
  std::vector<uint32_t> idle_copies;
  if (FLAGS_mode == "idle_copy" && !IdleCopySizes(&idle_copies)) return 2;
  if (!AtLeast("idle_copy_chain", FLAGS_idle_copy_chain, 1) || !AtLeast("idle_copy_rounds", FLAGS_idle_copy_rounds, 1)) {
    return 2;
  }
  std::vector<int> cluster_sizes;
  if (!IntList("cluster_sizes", FLAGS_cluster_sizes, 1, 16, "a cluster size", &cluster_sizes) ||
      !AtLeast("cluster_rounds", FLAGS_cluster_rounds, 1) || !AtLeast("handoff_rounds", FLAGS_handoff_rounds, 1)) {
    return 2;
  }
  if (FLAGS_mode == "cluster" && cluster_sizes.empty()) {
    std::fprintf(stderr, "error: --cluster_sizes is empty: give one or more sizes 1..16, e.g. 2,8,16\n");
    return 2;
  }
  cudaDeviceProp prop;
  if (!Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  if (FLAGS_mode == "barrier") return BarrierMode(prop);
  if (FLAGS_mode == "reduce") return ReduceMode(prop);
  if (FLAGS_mode == "handoff") return HandoffMode(prop);
  const size_t bytes = FLAGS_bytes / 16 * 16;
  void* data = nullptr;
  uint32_t* sink = nullptr;
  if (!Check(cudaMalloc(&data, bytes), "cudaMalloc (buffer)") ||
      !Check(cudaMalloc(&sink, 4096 * sizeof(uint32_t)), "cudaMalloc (sink)") ||
      !Check(cudaMemset(data, 0x5A, bytes), "cudaMemset")) {
    return 1;
  }
  // GB/s of the buffer read by run(&ms) (an error string, empty on success): the median of
  // --reps runs after 2 warm-ups; -1 after printing the error.
  auto median_gbps = [&](auto&& run) -> float {
    std::vector<float> ms;
    if (!TimedReps(run, &ms)) return -1;
    for (float& m : ms) m = static_cast<float>(bytes / (m * 1e6));  // ms -> GB/s
    return Median(ms);
  };
  // chunk 0: plain loads, else a bulk ring.
  auto measure = [&](int blocks, int threads, uint32_t chunk = 0, int stages = 0) -> float {
    return median_gbps([&](float* ms) {
      return chunk == 0 ? tileinfer::StreamRead(data, bytes, blocks, threads, sink, ms)
                        : tileinfer::StreamReadBulk(data, bytes, blocks, threads, chunk, stages, sink, ms);
    });
  };
  const int sms = prop.multiProcessorCount;
  if (FLAGS_mode == "pipeline" || FLAGS_mode == "loaded_barrier" || FLAGS_mode == "idle_copy" ||
      FLAGS_mode == "cluster") {
    const int status = FLAGS_mode == "pipeline"         ? PipelineMode(prop, data, bytes, sink, chosen, pipeline_shape)
                       : FLAGS_mode == "loaded_barrier" ? LoadedBarrierMode(prop, data, bytes)
                       : FLAGS_mode == "cluster"        ? ClusterMode(prop, data, bytes, cluster_sizes)
                                                        : IdleCopyMode(prop, data, bytes, idle_copies);
    cudaFree(data);
    cudaFree(sink);
    return status;
  }
  if (FLAGS_mode == "gemv") {
    float* y = nullptr;
    if (!Check(cudaMalloc(&y, bytes / (2 * tileinfer::kGemvStreamK) * sizeof(float) + 16), "cudaMalloc (y)")) return 1;
    std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"bytes\": %zu, \"reps\": %d, \"k\": %d,\n  \"gemv\": [\n",
                prop.name, sms, bytes, FLAGS_reps, tileinfer::kGemvStreamK);
    bool first_gemv = true;
    for (int per_sm : {1, 2}) {
      for (int threads : {256, 512, 1024}) {
        if (per_sm * threads > 2048) continue;
        const float plain = measure(per_sm * sms, threads);
        if (plain < 0) return 1;
        for (int rows : {1, 2, 4}) {
          int fit = 0;
          const std::string err = tileinfer::StreamGemvBlocksPerSm(threads, rows, &fit);
          if (!err.empty()) {
            std::fprintf(stderr, "error: %s\n", err.c_str());
            return 1;
          }
          std::printf("%s    {\"blocks_per_sm\": %d, \"threads\": %d, \"rows_in_flight\": %d, \"plain_gbps\": %.1f, ",
                      first_gemv ? "" : ",\n", per_sm, threads, rows, plain);
          first_gemv = false;
          if (fit < per_sm) {  // registers: this shape does not fit
            std::printf("\"gemv_gbps\": null, \"fits_per_sm\": %d}", fit);
            continue;
          }
          const float gemv = median_gbps(
              [&](float* ms) { return tileinfer::StreamGemv(data, bytes, per_sm * sms, threads, rows, y, ms); });
          if (gemv < 0) return 1;
          std::printf("\"gemv_gbps\": %.1f}", gemv);
        }
      }
    }
    std::printf("\n  ]\n}\n");
    cudaFree(y);
    cudaFree(data);
    cudaFree(sink);
    return 0;
  }
  if (FLAGS_mode == "bulk_ring") {
    constexpr int kThreads = 256;
    std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"bytes\": %zu, \"reps\": %d,\n", prop.name, sms, bytes,
                FLAGS_reps);
    const float plain = measure(sms, 512), plain_one = measure(1, 512);
    if (plain < 0 || plain_one < 0) return 1;
    std::printf("  \"plain_1x512\": {\"gbps\": %.1f, \"one_sm_gbps\": %.1f},\n  \"bulk_ring\": [\n", plain, plain_one);
    bool first_ring = true;
    for (uint32_t chunk : {8192u, 16384u, 32768u, 65536u}) {
      for (int stages : {2, 3, 6, 12}) {
        if (static_cast<size_t>(chunk) * stages > prop.sharedMemPerBlockOptin) continue;
        const float all = measure(sms, kThreads, chunk, stages), one = measure(1, kThreads, chunk, stages);
        if (all < 0 || one < 0) return 1;
        std::printf("%s    {\"chunk\": %u, \"stages\": %d, \"threads\": %d, \"gbps\": %.1f, \"one_sm_gbps\": %.1f}",
                    first_ring ? "" : ",\n", chunk, stages, kThreads, all, one);
        first_ring = false;
      }
    }
    std::printf("\n  ]\n}\n");
    cudaFree(data);
    cudaFree(sink);
    return 0;
  }
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"bytes\": %zu, \"reps\": %d,\n  \"shapes\": [\n", prop.name,
              sms, bytes, FLAGS_reps);
  float best = 0;
  bool first = true;
  for (int per_sm : {1, 2, 4, 8}) {
    for (int threads : {256, 512, 1024}) {
      if (per_sm * threads > 2048) continue;
      const float g = measure(per_sm * sms, threads);
      if (g < 0) return 1;
      best = std::max(best, g);
      std::printf("%s    {\"blocks_per_sm\": %d, \"threads\": %d, \"gbps\": %.1f}", first ? "" : ",\n", per_sm,
                  threads, g);
      first = false;
    }
  }
  std::printf("\n  ],\n  \"best_gbps\": %.1f,\n  \"by_active_sms\": [\n", best);
  first = true;
  for (int active = 1; active <= sms; active = active * 2 > sms && active != sms ? sms : active * 2) {
    const float g = measure(active, 512);
    if (g < 0) return 1;
    std::printf("%s    {\"sms\": %d, \"gbps\": %.1f}", first ? "" : ",\n", active, g);
    first = false;
  }
  std::printf("\n  ]\n}\n");
  cudaFree(data);
  cudaFree(sink);
  return 0;
}
