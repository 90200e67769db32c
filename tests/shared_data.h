#pragma once
// Tests on the real data in ../shared/data (DESIGN: shared/ sits beside the repository).
//
// TESSERA_NEED_DATA(path) at the top of a test body: if `path` is missing the test skips,
// saying which path, when run by hand; under the test command (scripts/test.sh exports
// TESSERA_REQUIRE_DATA=1) it fails instead, so a checkout without shared/ cannot pass CI by
// skipping.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace tessera::testing_data {

inline bool Required() {
  const char* v = std::getenv("TESSERA_REQUIRE_DATA");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace tessera::testing_data

#define TESSERA_NEED_DATA(path)                                                           \
  do {                                                                                    \
    if (!std::filesystem::exists(path)) {                                                 \
      if (::tessera::testing_data::Required()) {                                          \
        FAIL() << (path) << " is missing; the test command needs ../shared/data beside "  \
                            "the repository";                                             \
      }                                                                                   \
      GTEST_SKIP() << (path) << " is missing (TESSERA_REQUIRE_DATA=1 makes this a failure)"; \
    }                                                                                     \
  } while (0)
