#include <cstdio>

#include "cli/commands.h"

namespace tessera::cli {

// TESSERA_VERSION is the CMake project version (src/cli/CMakeLists.txt).
std::string VersionLine() { return "tessera " TESSERA_VERSION; }

void AddVersion(CLI::App& app, Status* status) {
  app.add_subcommand("version", "Print the version")->callback([status] {
    std::printf("%s\n", VersionLine().c_str());
    *status = {};
  });
}

}  // namespace tessera::cli
