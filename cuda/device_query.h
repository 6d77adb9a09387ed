// Which CUDA devices this process can use, asked of the driver through static cudart.
// A plain C++ header: host code includes it without nvcc.
#pragma once

#include <string>

namespace tileinfer {

struct DeviceInfo {
  int count = 0;             // usable CUDA devices; 0 when there is no GPU or no driver
  std::string why_none;      // when count == 0: the driver's answer, for the user
  std::string name;          // device 0
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
};

// Never throws and never aborts: no driver or no GPU gives count == 0 and a reason.
DeviceInfo QueryDevices();

}  // namespace tileinfer
