// `probe`: the target description of this GPU and this build's worker, as JSON on stdout,
// for the planner (`bazel run //py/planner -- --target=PROBE.json`).
//
//   probe [--shared_bytes=N] [--device=0]
//
// workers_per_sm is the occupancy of the compiled worker kernels (the lower of the two,
// cuda/worker.h WorkerWide) at --shared_bytes of dynamic shared memory (the host refuses
// a plan with more workers than fit, so a wrong guess here fails loudly at load, never hangs).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <gflags/gflags.h>

#include "cuda/worker.h"

DEFINE_int32(shared_bytes, 48 * 1024, "Dynamic shared memory per worker to size occupancy for.");
DEFINE_int32(device, 0, "CUDA device index.");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  cudaDeviceProp prop;
  cudaError_t err = cudaSetDevice(FLAGS_device);
  if (err == cudaSuccess) err = cudaGetDeviceProperties(&prop, FLAGS_device);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "error: no usable GPU (%s): the probe needs one; plan with a shipped "
                 "target file (--target=h200) instead\n", cudaGetErrorString(err));
    return 1;
  }
  // Both compilations of the worker (cuda/worker.h WorkerWide): the target holds the more
  // demanding, so that a plan fits whichever kernel its model runs.
  int blocks = 0, regs = 0, local = 0;
  for (const bool wide : {false, true}) {
    int b = 0, r = 0, l = 0;
    const std::string occ = tileinfer::WorkerOccupancy(wide, FLAGS_shared_bytes, &b, &r, &l);
    if (!occ.empty()) {
      std::fprintf(stderr, "error: %s\n", occ.c_str());
      return 1;
    }
    blocks = wide ? std::min(blocks, b) : b;
    regs = std::max(regs, r);
    local = std::max(local, l);
  }
  std::printf(
      "{\n  \"name\": \"%s\",\n  \"compute_capability\": [%d, %d],\n  \"sm_count\": %d,\n"
      "  \"workers_per_sm\": %d,\n  \"threads_per_worker\": %d,\n  \"registers_per_thread\": %d,\n"
      "  \"local_bytes_per_thread\": %d,\n"
      "  \"shared_memory_per_worker\": %d,\n  \"worker_fingerprint\": \"%s\"\n}\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, blocks, tileinfer::kWorkerThreads,
      regs, local, FLAGS_shared_bytes, tileinfer::WorkerFingerprint());
  std::fprintf(stderr, "probe: %zu bytes of shared memory per block at most; %d bytes of L2\n",
               prop.sharedMemPerBlockOptin, prop.l2CacheSize);
  return 0;
}
