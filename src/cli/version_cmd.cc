#include <cstdio>

#include "cli/commands.h"

namespace tessera::cli {

void AddVersion(CLI::App& app, int* exit_code) {
  app.add_subcommand("version", "Print the version")->callback([exit_code] {
    std::printf("tessera 0.1.0\n");
    *exit_code = 0;
  });
}

CLI::App* AddUnavailable(CLI::App& app, const std::string& name, const std::string& help,
                         int* exit_code) {
  CLI::App* sub = app.add_subcommand(name, help + " (not available in this build)");
  sub->allow_extras();
  sub->callback([name, exit_code] {
    std::fprintf(stderr, "tessera %s: not available in this build\n", name.c_str());
    *exit_code = 2;
  });
  return sub;
}

}  // namespace tessera::cli
