// Streaming-read benchmark kernel (the bandwidth floor); plain C++ header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tileinfer {

// Reads `bytes` (a multiple of 16) at `data` (device) with `blocks` x `threads`; `sink` is a
// device array of `blocks` words. Returns a CUDA error string (empty on success) and the
// kernel's time in *ms (CUDA events).
std::string StreamRead(const void* data, size_t bytes, int blocks, int threads, uint32_t* sink, float* ms);

// The same read through shared memory by bulk copies (sm_90 and later): each of `blocks`
// blocks of `threads` keeps a ring of `stages` buffers of `chunk` bytes (a multiple of 16;
// stages * chunk <= the GPU's opt-in shared memory per block, stages <= kMaxBulkStages).
// Thread 0 issues one cp.async.bulk per chunk, completing on that stage's mbarrier; every
// thread reads each landed chunk from shared memory (XOR), then the stage is refilled with
// the chunk `stages` ahead. Measures how many bytes one SM can keep in flight this way,
// against the plain loads of StreamRead. Errors as StreamRead's, and on GPUs before sm_90.
inline constexpr int kMaxBulkStages = 16;
std::string StreamReadBulk(const void* data, size_t bytes, int blocks, int threads, uint32_t chunk, int stages,
                           uint32_t* sink, float* ms);

// The same read as the worker's GEMV loop does it: `data` as BF16 rows of kGemvStreamK
// values, y[r] = row r . x with x (FP32, kGemvStreamK) in shared memory, one warp per row,
// each lane 8 x 16-byte loads per row, `rows_in_flight` (1, 2 or 4) rows' loads issued per
// warp before any is used, each dot the worker's own (cuda/common.cuh Dot8, WarpSum). Each
// block takes a contiguous share of the rows. `y`: device, bytes / (2 * kGemvStreamK)
// floats. Separates the GEMV loop's own rate from the rest of a task (norm, phases, tails).
// Errors as StreamRead's; a shape that does not fit (StreamGemvBlocksPerSm) fails to launch.
inline constexpr int kGemvStreamK = 2048;
std::string StreamGemv(const void* data, size_t bytes, int blocks, int threads, int rows_in_flight, float* y,
                       float* ms);

// How many StreamGemv blocks of `threads` fit on one SM (its registers decide; 0: none).
// Returns a CUDA error string, empty on success.
std::string StreamGemvBlocksPerSm(int threads, int rows_in_flight, int* blocks_per_sm);

// Grid-barrier latency at the worker's launch shape: one cooperative launch of `blocks` x
// `threads` passes `iterations` grid barriers of `kind`: kGridSync (cooperative_groups'
// grid.sync(), the worker's barrier) or kCounterBarrier (one monotonic counter: after
// __syncthreads, thread 0 adds 1 with release semantics at GPU scope and polls with
// acquire loads until all blocks have arrived, then __syncthreads) or kCounterRelaxedPoll
// (the same with relaxed polls and one fence.acq_rel after them) or kFlagBarrier (a flag
// word per block: thread 0 stores the stamp with release semantics, thread t polls block t's
// flag with acquire loads; docs/PERFORMANCE.md v57) or kFlagGather (the flags gathered by
// block 0 alone, whose thread 0 then stores the stamp into one more word, with release
// semantics, that thread 0 of every other block polls with acquire loads) or kCounterWake
// (thread 0 of each block adds 1 to the counter with acq_rel semantics and reads the old value;
// the block whose add completed the count stores the stamp, with release semantics, into every
// other block's own 128-byte wake line, which that block's thread 0 polls with acquire loads:
// no word polled by more than one block). poll_sleep_ns > 0 (at most 1 ms; not for kGridSync
// and kCounterRelaxedPoll): every acquire poll that did not see its target is followed by
// __nanosleep(poll_sleep_ns). On the H200 (docs/PERFORMANCE.md, calls FB and FB2) none of the
// kinds or sleeps beat kCounterBarrier without a sleep. Before each barrier a second warp of
// every block writes the iteration into a slot that the next block reads after it;
// *mismatches counts reads that did not see it (0 for a correct barrier).
// `threads`: a multiple of 32, at least 64, and at least `blocks` for kFlagBarrier, kFlagGather
// and kCounterWake.
// `scratch`: device, at least kBarrierScratchFixed + kBarrierScratchPerBlock * blocks words.
// *ms: the launch's time (CUDA events).
// Errors as StreamRead's; also when the blocks cannot all be resident (a cooperative
// launch would fail).
enum BarrierKind {
  kGridSync = 0,
  kCounterBarrier = 1,
  kCounterRelaxedPoll = 2,
  kFlagBarrier = 3,
  kFlagGather = 4,
  kCounterWake = 5
};
inline constexpr size_t kBarrierScratchFixed = 3, kBarrierScratchPerBlock = 3 + 32;
std::string GridBarrier(int blocks, int threads, BarrierKind kind, int iterations, uint32_t poll_sleep_ns,
                        uint32_t* scratch, float* ms, uint32_t* mismatches);

// A model of the worker's layer (the 1B's waves, per block): can a loader warp that streams
// the weights into a shared-memory ring, ahead of the computing warps and never waiting at
// their barriers, hide the dependent phases that the weights do not need? Each of `blocks`
// blocks runs `tokens` x `layers` x five waves, each ending at a grid barrier of the 16
// computing warps (a counter barrier on named barrier 1; the loader warp is not in it):
//   QKV       spin norm_ns, then GEMV work on qkv_bytes of weights
//   ATTENTION spin attention_ns (no weights)
//   ATTN_OUT  spin norm_ns, then GEMV work on attn_out_bytes
//   FFN       spin norm_ns, then GEMV work on ffn_bytes
//   REDUCE    spin reduce_ns (no weights)
// "GEMV work" is 8 FMAs per BF16x8 word against x in shared memory. The spins (SM clocks at
// the GPU's peak clock rate) stand for the dependent phases (the norm's round trip,
// attention, the FFN reduction) at the lengths the worker's trace measured.
// ring false: the computing warps load their wave's bytes themselves (16-byte loads, 8 in
// flight per thread), as the worker does. ring true: warp 16 fills a ring of `stages` chunks
// of `chunk` bytes (full and empty mbarriers per stage), running through all waves' chunks in
// order: one cp.async.bulk a chunk, or its lanes' 16-byte cp.async (loader_cp_async). Block b reads its own
// contiguous (qkv + attn_out + ffn) * layers bytes at data + b * that; every token reads
// them again. Wave sizes: multiples of `chunk` (a multiple of 16). *ms: the launch's time
// (CUDA events); *sm_mhz: block 0's SM clock over the launch (clock64 against %globaltimer),
// which the spins' lengths in ns depend on. Errors as StreamRead's; also for shapes that do
// not fit (bytes, shared memory, sm_90, blocks more than SMs), when two blocks shared an SM,
// and when a wait traps (~10 s: a protocol bug, not a hang).
struct PipelineShape {
  int tokens = 4;
  int layers = 16;
  uint32_t qkv_bytes = 0, attn_out_bytes = 0, ffn_bytes = 0;  // per block and layer
  uint32_t norm_ns = 0, attention_ns = 0, reduce_ns = 0;
  bool work = true;  // false (ring only): the computing warps take each chunk and release it
                     // unread, so the run shows the decoupled stream alone (no shared-memory reads)
  // How a spin is done. false: warp 1 alone counts the clocks while the other computing warps
  // wait at named barrier 1, so that the spin, like a phase that waits on latency, takes no
  // issue slots from the loader (warp 16 shares warp 0's scheduler, warps 0, 4, 8, 12). true:
  // all 16 computing warps spin on clock64, as the model was first built (suspected of
  // starving the loader; measured the same, 45.33 against 45.46 us a layer, 2026-11-30).
  bool all_warps_spin = false;
  // true (ring only): the loader issues fence.proxy.async.shared::cta before every copy, as the
  // model was first built (SASS MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S; suspected of holding each
  // copy until the one before it had landed; measured the same, 45.57 against 45.46 us).
  // false: none; the empty mbarrier's arrive / wait orders the consumers' reads of a stage
  // before its refill, as in CUTLASS's TMA pipelines.
  bool fence_each_copy = false;
  // Ring only: how the loader warp fills a stage. false: lane 0 issues one cp.async.bulk of the
  // whole chunk, completing on the stage's full mbarrier by its byte count (measured: the ring
  // gained nothing from depth, as if one SM's bulk copies completed one after another). true:
  // all 32 lanes issue cp.async.cg (LDGSTS) 16-byte copies, 512 bytes a warp instruction, and
  // each lane's cp.async.mbarrier.arrive.noinc arrives on the full mbarrier (count 32) when its
  // copies have landed: no per-copy setup, as many bytes in flight as stages allow.
  bool loader_cp_async = false;
  // Bulk-copy ring only: the most copies the loader keeps outstanding, fewer than the ring's
  // stages (0: as many as free stages allow). Before issuing chunk k it waits until chunk
  // k - max_in_flight has landed, so the ring still fills to its depth while the computing
  // warps wait, but never with more than max_in_flight x chunk bytes in flight: floor
  // --mode=loaded_barrier measured every L2 round trip queueing behind the bytes in flight
  // (a queue all SMs share; 192 KB a SM: a load 5.9 us, a barrier 20 us).
  int max_in_flight = 0;
  // Ring only: how the computing warps take a stage. false: each of the 16 warps waits on its
  // full mbarrier and arrives on its empty one (32 mbarrier operations a chunk). true: thread
  // 0 alone waits, named barrier 1 passes the stage on, a second one gathers the reads, and
  // thread 0 alone arrives (empty counts 1): 2 mbarrier operations and 2 named barriers a chunk.
  bool one_waiter = false;
  // Ring only: the loader sleeps this long (__nanosleep, at most 1 ms) after each try that
  // found its next stage still in use, instead of polling the empty mbarrier back to back
  // (0: no sleep).
  uint32_t loader_sleep_ns = 0;
  // Loads mode only. chain_phases: each phase is, instead of a spin, warp 1 loading an L2 word
  // phase clocks / 300 times (an idle round trip's clocks), each address depending on the last
  // value: a fixed number of round trips, as attention's and the norm's chains are, so that
  // the phase lasts longer when round trips do. l2_prefetch_interval_ns > 0 (at most 1 ms): during
  // every phase warp 2 issues one 16 KB cp.async.bulk.prefetch.L2 of the block's next bytes
  // per interval (paced: ~16 KB / interval in flight), at most l2_prefetch_ahead bytes past
  // what the computing warps have loaded; their loads then find those bytes in L2 (a token's
  // bytes a multiple of 16 KB). Neither combines with all_warps_spin.
  bool chain_phases = false;
  uint32_t l2_prefetch_interval_ns = 0;
  uint32_t l2_prefetch_ahead = 256 << 10;
  // Ring only, chunks of at most 32 KB: each computing thread holds in registers the x values
  // that its words of a chunk meet (the same in every chunk), so that the work reads one
  // 16-byte word of shared memory per 16 bytes of weights instead of three: can consumers
  // that outrun the stream let the ring run ahead?
  bool x_in_registers = false;
  // Ring of 16 stages only: each chunk is one computing warp's alone (chunk k: warp k % 16,
  // stage k % 16), which waits for it, reads all of it and releases it, instead of all 16
  // warps taking 1/16 of every chunk.
  // Call Z11 (Nsight Compute) found the consumers issue-bound on ~98 instructions a warp a chunk
  // of bookkeeping against ~18 of work; a chunk a warp spreads that over 16 times the work.
  bool warp_chunks = false;
  // Ring only, alone: no loader warp; each computing warp copies its own chunks (chunk k: warp
  // k % 16, counted over all waves) into `stages` (2..8) stages of its own with cp.async (16
  // bytes a lane, one commit group a chunk), `stages` - 1 chunks ahead of the one it reads,
  // across waves, barriers and spins; cp.async.wait_group and __syncwarp before each read.
  // Shared memory: 16 x stages x chunk. A producer per warp: no consumer waits on another
  // warp's stage (call Z12b: one in-order loader for 16 out-of-order consumers blocked).
  bool warp_pipeline = false;
  // Ring alone (with loader_cp_async, max_in_flight and chain_phases only): the loader warp feeds 16
  // rings, one a computing warp (`stages` stages of `chunk` bytes each, 2..kMaxWarpRingStages;
  // shared memory 16 x stages x chunk). Chunk k is warp k % 16's, in its ring's stage (k / 16) %
  // stages; the loader copies the next chunk of every ring that has a free stage, lowest ring first,
  // so no warp waits behind another warp's stage (call Z12b's head-of-line blocking), and it runs
  // ahead through barriers and phases as far as the rings' depth allows (call Z13b's producer per
  // warp issued only as its warp consumed). The loader's lanes copy with cp.async (loader_cp_async)
  // or, lanes 0-15 each its own ring's chunks, with bulk copies. max_in_flight here: at most that
  // many chunks outstanding over the rings (cp.async 1..8, bulk 1..16 x stages; 0: no cap).
  // chain_phases: the phases are chains of L2 round trips, as in the loads mode, so that they
  // lengthen as the ring's bytes in flight queue ahead of them.
  bool warp_rings = false;
};
inline constexpr int kMaxWarpRingStages = 8;
inline constexpr int kPipelineComputeThreads = 512;  // 16 warps; the ring's loader is a 17th
// Where block 0's time went, us a layer (clock64 over its measured clock rate): its loader
// waiting for a free stage (the ring full) or for the max_in_flight cap, and its thread 0
// waiting for a chunk to land (the ring empty), in the barriers and in the spins; with
// chain_phases, the mean round trip of the phases' chained loads.
struct PipelineWaits {
  float loader_empty_us = 0, loader_cap_us = 0;
  float compute_full_us = 0, compute_barrier_us = 0, compute_phase_us = 0;
  float chain_load_us = 0;  // chain_phases: the mean round trip of warp 1's chained loads
};
std::string PipelineStream(const void* data, size_t bytes, int blocks, const PipelineShape& shape, bool ring,
                           uint32_t chunk, int stages, float* ms, float* sm_mhz, PipelineWaits* waits = nullptr);

// What one grid barrier costs while the SMs stream: does a barrier's L2 round trip queue
// behind the weight bytes in flight (its SM's, or all SMs')? One cooperative launch, one block per SM
// (each asks for more than half the opt-in shared memory). In every block warp 16's lane 0
// passes `barriers` counter barriers of its own (a release add to one counter, acquire polls
// until every block has added: CounterBarrier's protocol, without the block's __syncthreads),
// each after `gap_ns` of spinning and one timed relaxed load of a word of its own in L2.
// Meanwhile, until the last barrier, the block streams its contiguous share of `bytes`
// (wrapping around) in one of three ways:
//   stream_warps 0: nothing (the idle barrier);
//   stream_warps 1..16, bulk_stages 0: that many warps of plain 16-byte loads, `unroll`
//     (1, 2, 4 or 8) in flight per lane, as the worker's GEMV loop issues them;
//   bulk_stages 1..kMaxBulkStages: thread 0 keeps that many cp.async.bulk copies of
//     bulk_chunk bytes in flight into a shared-memory ring, refilling each stage as soon
//     as it lands (the pipeline model's loader with nobody consuming).
// Bytes in flight per SM: stream_warps x 32 x unroll x 16, or bulk_stages x bulk_chunk.
// quiet_block0: block 0 (the one recorded) streams nothing while the others do, which
// separates a queue of the SM's own requests from one that all SMs share.
// Results from block 0 (barriers after the first tenth): each barrier's time from its add
// to the poll that saw every block's, and each relaxed load's round trip, medians and 90th
// percentiles in us (SM clocks over block 0's clock rate in the launch), and the bytes all
// blocks streamed over the launch's time. Errors as PipelineStream's (sm_90, one block per
// SM, the shape's bounds; a wait that traps after ~10 s).
struct LoadedBarrierShape {
  int stream_warps = 0;
  int unroll = 8;
  int bulk_stages = 0;
  uint32_t bulk_chunk = 16384;
  bool quiet_block0 = false;
  int barriers = 2000;
  uint32_t gap_ns = 3000;
};
struct LoadedBarrierResult {
  float barrier_us_median = 0, barrier_us_p90 = 0;  // add to the poll that saw every block's add
  float load_us_median = 0, load_us_p90 = 0;        // one relaxed load of an L2-resident word
  float stream_gbps = 0;                            // all blocks' streamed bytes / launch time
  float sm_mhz = 0;                                 // block 0's clock rate in the launch
};
inline constexpr int kLoadedBarrierWarp = 16;  // the barrier warp; warps 0..15 may stream
std::string LoadedBarrier(const void* data, size_t bytes, int blocks, const LoadedBarrierShape& shape,
                          LoadedBarrierResult* result);

// How the worker could sum the FFN's per-block partial vectors (floor --mode=reduce; the idea
// in docs/PERFORMANCE.md "The FFN's parts summed by integer atomics"). One cooperative launch
// of `blocks` x `threads` runs `iterations` rounds; in each, every block b first spins
// b * spread_clk / blocks SM clocks (the FFN tasks' ends spread over ~2 us in the worker;
// 0: all blocks at once, the worst case for the atomics), then makes a partial vector of
// `hidden` floats, part[b, r] = ReducePartValue(b, r, round), and `kind` decides what happens
// to it:
//   kBarrierOnly: nothing; one grid barrier (cooperative_groups grid.sync, the worker's).
//   kPartsBarrier: stored to `parts` (blocks, hidden) f32; one grid barrier (the FFN wave's
//     end in the worker now).
//   kPartsReduce: as kPartsBarrier, then each block sums its share of the rows (split as the
//     planner's split_rows) over all parts in package format 1's FFN_REDUCE order (groups of
//     threads, then the group sums, then out[r] = out[r] / 2 + sum: a dependent read like
//     FFN_REDUCE's residual); a second grid barrier. That is format 1's FFN wave end, its
//     FFN_REDUCE wave and barrier: what the atomics replaced (format 2).
//   kFixedPointRed: each value rounded to a signed 64-bit integer in units of 2^-32
//     (__float2ll_rn(v * 2^32)) and added to acc[r] by red.relaxed.gpu.global.add.u64; one
//     grid barrier. Integer sums do not depend on the order of the adds, so acc ends at the
//     exact sum every run (the caller checks it against ReducePartValue's). Only blocks
//     0..adders-1 add (a plan with fewer FFN parts than workers: the planner's --ffn_parts);
//     the others spin and meet the barrier. Other kinds: adders must be `blocks`.
// `parts`: device, blocks * hidden floats; `out`: hidden floats; `acc`: hidden 64-bit words
// (each may be null where the kind does not use it). *ms: the launch's time (CUDA events).
// Errors as GridBarrier's; also hidden < 1 or hidden > blocks * threads (a block's rows must
// fit its threads) or threads > 1024, or adders outside 1..blocks (1..blocks only for
// kFixedPointRed; `blocks` for the others).
enum ReduceKind { kBarrierOnly = 0, kPartsBarrier = 1, kPartsReduce = 2, kFixedPointRed = 3 };
std::string ReduceRounds(int blocks, int threads, int hidden, ReduceKind kind, int adders, int iterations,
                         uint32_t spread_clk, float* parts, float* out, unsigned long long* acc, float* ms);

// What the idle workers of a short-context ATTENTION wave could do for the FFN after it
// (floor --mode=idle_copy; docs/PERFORMANCE.md, Next of the twenty-first session, item 4).
// One cooperative launch of `blocks` x kIdleCopyThreads runs `rounds` rounds of two phases,
// each ended by cooperative_groups' grid.sync():
//   A, the attention wave: blocks [0, owners) run a chain of `chain` dependent L2 round trips
//     (thread 0 loads a table word through L2 only, ld.global.cg, at the index the previous
//     load gave; __syncthreads passes it to the block), block 0 timing it with clock64; the
//     other blocks start cp.async copies (16 bytes a thread, L2 only) of the first
//     `copy_bytes` of their phase-B bytes into shared memory, not waited for here (0: they
//     go straight to the barrier, as the worker's empty ATTENTION tasks do).
//   B, the FFN wave: every block reads its `task_bytes` of `data` (16-byte loads, 4 a thread
//     in flight, summed into a sink); the copying blocks first wait for their copies
//     (cp.async.wait_all) and sum them from shared memory, then load only the rest; with
//     owners_short the owners read copy_bytes less too (otherwise they are the wave's
//     stragglers by construction).
// Round r, block b reads task_bytes from offset ((r * blocks + b) * task_bytes) mod (bytes -
// task_bytes + 16) of data: new bytes every round while the buffer lasts (it wraps after
// bytes / (blocks * task_bytes) rounds; 2.47 GB / 96 MB = 25 at the defaults; a round's 96 MB
// is beyond L2's 60 MB).
// Results: *ms (the launch, CUDA events); chain_us_median, block 0's chain in phase A over the
// rounds after the first tenth (us at its clock rate in the launch, sm_mhz). Errors: rounds
// < 1, owners outside [0, blocks], chain < 1, task_bytes or copy_bytes not a multiple of 16,
// copy_bytes > task_bytes, task_bytes > bytes, a shared-memory stage the GPU cannot give, or
// blocks that cannot all be resident (a cooperative launch needs it).
inline constexpr int kIdleCopyThreads = 512;  // the worker's block
struct IdleCopyShape {
  int owners = 8;                  // the 1B's K/V heads: the ATTENTION tasks with positions
  int chain = 16;                  // dependent round trips in phase A
  uint32_t task_bytes = 786432;    // the 1B's FFN task: 64 gate + 64 up + 64 down rows x 4 KB
  uint32_t copy_bytes = 0;         // staged by each non-owner block in phase A
  bool owners_short = false;       // owners read task_bytes - copy_bytes in phase B (a planner
                                   // that gives the attention's owners less FFN work)
  int rounds = 200;
};
struct IdleCopyResult {
  float chain_us_median = 0;
  float sm_mhz = 0;
};
std::string IdleCopyRounds(const void* data, size_t bytes, int blocks, const IdleCopyShape& shape, float* ms,
                           IdleCopyResult* result);

// Thread-block clusters (sm_90) as the synchronisation of a group of SMs (floor
// --mode=cluster; docs/PERFORMANCE.md v59): what a worker whose K/V-head groups each ran in
// one cluster would pay for a handoff inside the group, against a grid barrier, idle and
// while every SM streams. One launch of `blocks` blocks of kClusterThreads threads in
// clusters of `cluster_size` blocks (1..16, a divisor of `blocks`; above 8 the non-portable
// size), one block per SM (each asks for more than half the opt-in shared memory, as
// LoadedBarrier's), runs `iterations` rounds of `kind`, each by one thread a block (warp
// kClusterSyncWarp's lane 0) unless said otherwise:
//   kClusterHardware: every thread of the block calls cooperative_groups' cluster.sync()
//     (barrier.cluster.arrive.release, barrier.cluster.wait.acquire).
//   kClusterMbarrier: two mbarriers in each block's shared memory, used in turn (round i:
//     mbarrier i % 2, expecting cluster_size arrivals a phase); lane k of the warp arrives
//     with release semantics at cluster scope on that mbarrier of block k of its cluster
//     (mapa, mbarrier.arrive.release.cluster.shared::cluster), all lanes at once, and lane 0
//     waits on its own with acquire semantics (mbarrier.try_wait.parity.acquire.cluster).
//     Its slot (below) is written and read by atomics, which racecheck does not count as a
//     hazard (the plain store and remote load before them did, call CL6); they add ~0.07 us
//     to a round against calls CL2-CL6 (call CL7c).
//   kStAsyncHandoff: data handed over by remote asynchronous stores, with no fence of the
//     sender's: lane 0 arrives on its own mbarrier of the round (two used in turn, one arrival
//     a phase) expecting cluster_size x 4 bytes; lane k stores the round's stamp into block
//     k's inbox slot for this block's rank by st.async.shared::cluster.mbarrier::complete_tx::
//     bytes, completing on block k's mbarrier of the round (the complete_tx has release
//     semantics at cluster scope); lane 0 waits for its phase with acquire semantics at
//     cluster scope and checks the next rank's slot (counted in mismatches). Clusters of 2
//     blocks or more (compute-sanitizer: a cluster of 1 cannot take st.async).
//   kGroupCounter: the same group through L2, as a worker without clusters would do it: one
//     counter per cluster-sized group of blocks, a release add at GPU scope and acquire polls
//     until every block of the group has added (CounterBarrier's protocol).
//   kGridCounter: the grid barrier on one counter over all blocks (CounterBarrier's protocol,
//     the fastest grid barrier measured: calls FB, FB2), in the same clustered launch.
//   kHierarchicalGrid: a grid barrier in three steps: a kClusterMbarrier round, then block
//     rank 0 of each cluster alone arrives at one counter over the clusters (release add,
//     acquire polls), then a second kClusterMbarrier round that releases the cluster.
//   kRemoteSmemChase: a round is one load from the next rank's shared memory (ld.shared::
//     cluster) at the index the previous load gave: the latency of a dependent remote read.
//   kL2Chase: a round is one relaxed load at GPU scope (ld.relaxed.gpu: from L2) at the index
//     the previous load gave: an L2 round trip, for comparison in the same launch.
// and, with every thread of the block, loads in flight across each barrier (a worker that
// asks for its next task's weights before it waits): in each round every thread issues
// kClusterStreamUnroll 16-byte loads of its block's share of `data` (34 KB a SM a round),
// then passes the round's barrier, then uses the loaded words:
//   kClusterHardwareLoads: cluster.sync() (arrive.release, wait.acquire);
//   kClusterRelaxedLoads: barrier.cluster.arrive.relaxed, then wait (no write is ordered by
//     it, so no slot is checked);
//   kGridCounterLoads: the counter grid barrier of the whole block (device::CounterBarrier);
//   kGridSplitLoads: the same barrier split around the loads: __syncthreads, thread 0's
//     release add (the arrival) before any thread issues the round's loads, then thread 0's
//     acquire polls and __syncthreads after them (the release has no loads to wait for);
//   kLoadsOnly: __syncthreads: the loads' own time a round, the reference.
// In each round of the barrier kinds the thread first writes the round's stamp into a slot
// of its block (shared memory for the cluster kinds, global for the others) and after the
// round reads the slot of the next block (the next rank of its cluster; the next block of the
// grid for kGridCounter and kHierarchicalGrid): result->mismatches counts reads that missed
// the stamp (0 for a correct protocol). stream: warps 0..kClusterSyncWarp - 1 of every block
// meanwhile read its contiguous share of `data` (`bytes`, wrapping) with 16-byte loads,
// kClusterStreamUnroll in flight a lane (32 KB a SM: what saturates HBM, call Z) until the
// rounds end (a stop signal the streaming threads test each round without waiting); not with
// kClusterHardware, whose barrier needs every thread; and required by the five kinds with
// loads across the barrier (their loads are the stream). cooperative: the
// launch also carries the cooperative attribute (whether a cooperative launch takes a
// cluster dimension is one of the questions; without it the host still refuses more blocks
// than cudaOccupancyMaxActiveClusters says can be resident). A wait that has not ended after
// ~10 s traps (the launch fails) rather than hang.
// Results: ms (the launch, CUDA events), mismatches, streamed_bytes (all blocks). Errors: a
// GPU below compute capability 9.0, a cluster size, block count or iteration count out of
// range (iterations x blocks must fit 32 bits: the counters' targets), kStAsyncHandoff in
// clusters of 1, stream with kClusterHardware, no stream with the kinds that need it, no `data`
// to stream, and CUDA errors.
enum ClusterKind {
  kClusterHardware = 0,
  kClusterMbarrier = 1,
  kGroupCounter = 2,
  kGridCounter = 3,
  kHierarchicalGrid = 4,
  kRemoteSmemChase = 5,
  kL2Chase = 6,
  kClusterHardwareLoads = 7,
  kClusterRelaxedLoads = 8,
  kGridCounterLoads = 9,
  kLoadsOnly = 10,
  kStAsyncHandoff = 11,
  kGridSplitLoads = 12
};
inline constexpr int kClusterSyncWarp = 16, kClusterThreads = (kClusterSyncWarp + 1) * 32, kClusterStreamUnroll = 4;
// The kinds in which every thread's loads cross the barrier (their loads are the stream, so
// ClusterRounds requires `stream` for them).
#ifdef __CUDACC__
__host__ __device__
#endif
inline constexpr bool LoadsAcrossBarrier(ClusterKind kind) {
  return kind == kClusterHardwareLoads || kind == kClusterRelaxedLoads || kind == kGridCounterLoads ||
         kind == kLoadsOnly || kind == kGridSplitLoads;
}
struct ClusterRoundsResult {
  float ms = 0;
  uint32_t mismatches = 0;
  unsigned long long streamed_bytes = 0;
};
std::string ClusterRounds(const void* data, size_t bytes, int blocks, int cluster_size, ClusterKind kind, bool stream,
                          bool cooperative, int iterations, ClusterRoundsResult* result);

// How many clusters of `cluster_size` blocks (1..16) of ClusterRounds' kernel can be resident
// at once on this GPU (cudaOccupancyMaxActiveClusters), into *clusters. Errors as
// ClusterRounds' (sm_90, the size) and CUDA errors.
std::string MaxActiveClusters(int cluster_size, int* clusters);

// A model of the worker's handoff of an activation vector from one wave's tasks to the next's
// (docs/PERFORMANCE.md v60): can a tag carried in each word of the vector (an 8-byte store of
// the value and the round together, the idea of NCCL's "LL" protocol) hand it over sooner than
// the grid barrier the worker passes now, which needs a release of every block's writes before
// its arrival? One cooperative launch of `blocks` blocks of kHandoffThreads threads (at most
// one a SM) runs `iterations` rounds over a vector of `n` 32-bit words in `groups` closed
// groups of blocks: block b, of group g = b x groups / blocks, writes its share (words
// [b n / blocks, (b + 1) n / blocks)) of round i, each word HandoffValue(i, word), then reads and
// checks the words its group's blocks wrote (groups 1: every word, as each FFN task's norm reads
// the whole residual; groups 8 on the 1B's 3,072 QKV outputs: one K/V head's q, k and v rows,
// as an ATTENTION task reads them), then __syncthreads: the block has its inputs.
//   kHandoffGridSync: plain 4-byte stores, cooperative_groups' grid.sync() (the worker's
//     barrier), plain loads.
//   kHandoffTagged: no barrier. Each word is stored as ((i + 1) << 32 | value) by one 8-byte
//     relaxed store at GPU scope, which is single-copy atomic, so the tag and the value arrive
//     together with no fence; each reader reloads a word (relaxed, GPU scope: from L2) until
//     its tag is i + 1, one stale word after another. Rounds alternate between two halves of
//     the buffer: a block writes round i + 2 only after reading round i + 1 from every block
//     of its group, each of which had read round i before writing i + 1, so no word is
//     overwritten before its readers have it (the groups are closed: a block reads only what
//     its group wrote).
//   kHandoffTaggedBatch: kHandoffTagged with a thread's stale words reloaded together, all of a
//     pass's loads in flight at once, until every tag is the round's. (A 200 ns sleep before
//     each reload, or each pass, was slower in every shape: calls HO2, HO3.)
//   kHandoffGridSyncOnly: grid.sync() alone, with no data (the reference).
// n: 1..kHandoffMaxWords, at least `blocks` (every block writes a word); groups: 1..blocks, a
// divisor of blocks, with every group's words at most kHandoffThreads x kHandoffWordsPerThread.
// Results: ms (the launch, CUDA events), mismatches (words read with another value than the
// round's: 0 for a correct protocol). A wait that has not ended after ~10 s traps. Errors: a
// kind, n, groups or iterations out of range, blocks that cannot all be resident, CUDA errors.
enum HandoffKind { kHandoffGridSync = 0, kHandoffTagged = 1, kHandoffGridSyncOnly = 2, kHandoffTaggedBatch = 3 };
inline constexpr int kHandoffThreads = 512, kHandoffWordsPerThread = 8, kHandoffMaxWords = 1 << 16;
struct HandoffResult {
  float ms = 0;
  uint32_t mismatches = 0;
};
std::string HandoffRounds(int blocks, HandoffKind kind, int n, int groups, int iterations, HandoffResult* result);

// HandoffRounds' value of word j in round i.
#ifdef __CUDACC__
__host__ __device__
#endif
inline uint32_t HandoffValue(int i, int j) {
  return static_cast<uint32_t>(i) * 2654435761u ^ (static_cast<uint32_t>(j) * 40503u + 1u);
}

// ReduceRounds' part[b, r] in round i: a multiple of 2^-10 in [-1000 / 1024, 1000 / 1024], so
// that v * 2^32 is an integer and the exact sums are known on the host.
#ifdef __CUDACC__
__host__ __device__
#endif
inline float ReducePartValue(int b, int r, int i) {
  return static_cast<float>((b * 131 + r * 7 + i * 3) % 2001 - 1000) * (1.0f / 1024.0f);
}

}  // namespace tileinfer
