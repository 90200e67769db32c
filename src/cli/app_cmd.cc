// The tessera command line: builds the app from every subcommand and runs it.
#include "cli/commands.h"

namespace tessera::cli {

int Run(int argc, const char* const* argv) {
  CLI::App app{"Tessera: predictive GPU-sharing scheduler for inference workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  int exit_code = 0;
  AddSimulate(app, &exit_code);
  AddPredict(app, &exit_code);
  AddExplain(app, &exit_code);
  AddSchedule(app, &exit_code);
  AddExtender(app, &exit_code);
  AddAgent(app, &exit_code);
  AddVersion(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace tessera::cli
