#pragma once
// The application catalogue `tessera simulate` embeds (data/apps.yaml), for the simulator's
// tests (one definition: unity builds put several test files in one translation unit).
#include <gtest/gtest.h>

#include <string>

#include "sim/apps.h"
#include "sim/embedded_apps.h"

namespace tessera::sim {

inline AppCatalog Shipped() {
  auto c = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
  EXPECT_TRUE(c) << c.error().message;
  return *c;
}

}  // namespace tessera::sim
