// The host must start on machines with no GPU and no driver: QueryDevices never throws and
// either finds a device with sane properties or explains why there is none.
#include "cuda/device_query.h"

#include <gtest/gtest.h>

namespace tileinfer {
namespace {

TEST(DeviceQueryTest, ReportsDeviceOrReason) {
  DeviceInfo info = QueryDevices();
  if (info.count == 0) {
    EXPECT_FALSE(info.why_none.empty());
  } else {
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.cc_major, 8);
    EXPECT_GT(info.sm_count, 0);
  }
}

}  // namespace
}  // namespace tileinfer
