#include <cstdio>

#include "cli/commands.h"

namespace tessera::cli {

void AddVersion(CLI::App& app, int* exit_code) {
  app.add_subcommand("version", "Print the version")->callback([exit_code] {
    std::printf("tessera 0.1.0\n");
    *exit_code = 0;
  });
}

}  // namespace tessera::cli
