// Device discovery for the host: works (reports no device) on machines without a driver.
#include "cuda/device_query.h"

#include <cuda_runtime.h>

namespace tileinfer {

DeviceInfo QueryDevices() {
  DeviceInfo info;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // The runtime says "insufficient driver" also when no NVIDIA driver is installed at all
    // (a machine without a GPU): name both causes rather than suggest a driver upgrade.
    const char* cause = err == cudaErrorInsufficientDriver ? "no NVIDIA driver is loaded, or it is older than this "
                                                             "build's CUDA runtime; "
                        : err == cudaErrorNoDevice         ? "no CUDA device is visible; "
                                                           : "";
    info.why_none = std::string(cause) + "cudaGetDeviceCount: " + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return info;
  }
  if (count == 0) {
    info.why_none = "no CUDA device is visible";
    return info;
  }
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    info.why_none = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(err);
    return info;
  }
  info.count = count;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  return info;
}

}  // namespace tileinfer
