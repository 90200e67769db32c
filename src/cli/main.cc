// tessera: one binary, one subcommand per mode (DESIGN §7).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: predictive GPU-sharing scheduler for inference workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  int exit_code = 0;
  tessera::cli::AddSimulate(app, &exit_code);
  tessera::cli::AddPredict(app, &exit_code);
  tessera::cli::AddExplain(app, &exit_code);
  tessera::cli::AddSchedule(app, &exit_code);
  tessera::cli::AddExtender(app, &exit_code);
  tessera::cli::AddAgent(app, &exit_code);
  tessera::cli::AddVersion(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
