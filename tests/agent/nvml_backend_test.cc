#include "agent/nvml_backend.h"

#include <gtest/gtest.h>

namespace tessera::agent {
namespace {

// Without the driver's library (this machine, CI) opening NVML is a clear Error, not a crash.
TEST(NvmlBackendTest, MissingLibraryIsAnErrorNamingIt) {
  auto b = NvmlBackend::Open("libnvidia-ml-not-here.so.1");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("libnvidia-ml-not-here.so.1"), std::string::npos)
      << b.error().message;
}

// A library that is not NVML at all lacks its symbols.
TEST(NvmlBackendTest, LibraryWithoutNvmlSymbolsIsRefused) {
  auto b = NvmlBackend::Open("libm.so.6");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("lacks nvmlInit_v2"), std::string::npos) << b.error().message;
}

}  // namespace
}  // namespace tessera::agent
