#pragma once
// data/apps.yaml as it was at build time, so the simulator's defaults work from any directory.

#include <string_view>

namespace tessera::sim {

std::string_view EmbeddedAppsYaml();

}  // namespace tessera::sim
