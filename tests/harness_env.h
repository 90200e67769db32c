#pragma once
// Integration tests need the servers scripts/harness.sh starts (their addresses arrive as
// TESSERA_TEST_* variables). TESSERA_SKIP_WITHOUT_HARNESS(what) where one is missing: run by
// hand, the test skips, saying what is missing (and CTest lists it as skipped, not passed:
// SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt); under the test command (the harness exports
// TESSERA_REQUIRE_HARNESS=1) it fails instead, so a harness that did not come up cannot pass CI
// by skipping.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace tessera::testing_harness {

inline bool Required() {
  const char* v = std::getenv("TESSERA_REQUIRE_HARNESS");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace tessera::testing_harness

#define TESSERA_SKIP_WITHOUT_HARNESS(what)                                                    \
  do {                                                                                        \
    if (::tessera::testing_harness::Required()) {                                             \
      FAIL() << (what) << " is missing although the test command's harness should provide it"; \
    }                                                                                         \
    GTEST_SKIP() << (what) << " is missing: run scripts/test.sh for the integration harness"; \
  } while (0)
