// `bazel run //host:decode`: load a TileInfer package and decode on the GPU or the CPU.
#include <cstdio>
#include <string>

#include <gflags/gflags.h>

#include "cuda/device_query.h"

DEFINE_string(package, "", "Path to a .tpkg package written by the planner.");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("decode --package=PATH [options]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  tileinfer::DeviceInfo dev = tileinfer::QueryDevices();
  if (dev.count == 0) {
    std::fprintf(stderr, "No usable GPU (%s): using the CPU executor.\n", dev.why_none.c_str());
  } else {
    std::fprintf(stderr, "GPU: %s (cc %d.%d, %d SMs)\n", dev.name.c_str(), dev.cc_major,
                 dev.cc_minor, dev.sm_count);
  }
  if (FLAGS_package.empty()) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "host/");
    return 0;
  }
  return 0;
}
