// `floor`: achieved read bandwidth on this GPU for a buffer the size of a model, best over
// launch shapes, and against the number of active SMs (one block per SM). Prints JSON.
//
//   floor [--bytes=2471628800] [--reps=20] [--mode=plain|bulk_ring|gemv|barrier]
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
// with release / acquire atomics, polled by acquire loads or by relaxed loads and one fence
// (cuda/stream_read.h GridBarrier); microseconds per barrier
// from launches of N and 2N barriers, (t(2N) - t(N)) / N, medians of --reps; and how many
// reads after a barrier missed a write made before it (must be 0).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "cuda/stream_read.h"

DEFINE_uint64(bytes, 2471628800ull, "Buffer size (default: Llama-3.2-1B's BF16 weights).");
DEFINE_int32(reps, 20, "Timed repetitions per configuration (median reported).");
DEFINE_string(mode, "plain", "plain: the floor (plain loads, launch shapes, active SMs); bulk_ring: bulk-copy "
              "rings; gemv: the worker's GEMV loop; barrier: grid-barrier latency.");

namespace {

float Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(err));
  return err == cudaSuccess;
}

// --mode=barrier (see the top of this file). Returns the exit status.
int BarrierMode(const cudaDeviceProp& prop) {
  constexpr int kThreads = 512, kIterations = 10000;
  const int blocks = prop.multiProcessorCount;
  uint32_t* scratch = nullptr;
  if (!Check(cudaMalloc(&scratch, (2 + 2 * static_cast<size_t>(blocks)) * sizeof(uint32_t)), "cudaMalloc (scratch)")) {
    return 1;
  }
  std::printf("{\n  \"gpu\": \"%s\", \"sm_count\": %d, \"blocks\": %d, \"threads\": %d, \"reps\": %d,\n"
              "  \"barriers\": [\n", prop.name, prop.multiProcessorCount, blocks, kThreads, FLAGS_reps);
  const struct { tileinfer::BarrierKind kind; const char* name; } kinds[] = {
      {tileinfer::kGridSync, "cooperative_groups grid.sync"},
      {tileinfer::kCounterBarrier, "counter, release add, acquire polls"},
      {tileinfer::kCounterRelaxedPoll, "counter, release add, relaxed polls + fence.acq_rel"}};
  int status = 0;
  for (const auto& k : kinds) {
    std::vector<float> us;
    uint64_t missed = 0;
    for (int r = 0; r < FLAGS_reps + 2; ++r) {
      float ms[2] = {0, 0};
      for (int twice = 0; twice < 2; ++twice) {
        uint32_t mismatches = 0;
        const std::string err =
            tileinfer::GridBarrier(blocks, kThreads, k.kind, kIterations * (1 + twice), scratch, &ms[twice], &mismatches);
        if (!err.empty()) {
          std::fprintf(stderr, "error: %s\n", err.c_str());
          return 1;
        }
        missed += mismatches;
      }
      if (r >= 2) us.push_back((ms[1] - ms[0]) * 1e3f / kIterations);
    }
    if (missed != 0) status = 1;
    std::printf("%s    {\"kind\": \"%s\", \"us_per_barrier\": %.3f, \"missed_writes\": %llu}",
                &k == kinds ? "" : ",\n", k.name, Median(us), static_cast<unsigned long long>(missed));
  }
  std::printf("\n  ]\n}\n");
  cudaFree(scratch);
  if (status != 0) std::fprintf(stderr, "error: a barrier let a read miss a write made before it\n");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_mode != "plain" && FLAGS_mode != "bulk_ring" && FLAGS_mode != "gemv" && FLAGS_mode != "barrier") {
    std::fprintf(stderr, "error: --mode=%s: give plain, bulk_ring, gemv or barrier\n", FLAGS_mode.c_str());
    return 2;
  }
  cudaDeviceProp prop;
  if (!Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  if (FLAGS_mode == "barrier") return BarrierMode(prop);
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
    std::vector<float> gbps;
    for (int r = 0; r < FLAGS_reps + 2; ++r) {
      float ms = 0;
      const std::string err = run(&ms);
      if (!err.empty()) {
        std::fprintf(stderr, "error: %s\n", err.c_str());
        return -1;
      }
      if (r >= 2) gbps.push_back(static_cast<float>(bytes / (ms * 1e6)));
    }
    return Median(gbps);
  };
  // chunk 0: plain loads, else a bulk ring.
  auto measure = [&](int blocks, int threads, uint32_t chunk = 0, int stages = 0) -> float {
    return median_gbps([&](float* ms) {
      return chunk == 0 ? tileinfer::StreamRead(data, bytes, blocks, threads, sink, ms)
                        : tileinfer::StreamReadBulk(data, bytes, blocks, threads, chunk, stages, sink, ms);
    });
  };
  const int sms = prop.multiProcessorCount;
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
