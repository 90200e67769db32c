// Subcommands whose modules are not built yet. Each moves to its own <name>_cmd.cc when its
// module lands (and its line here goes).
#include "cli/commands.h"

namespace tessera::cli {

void AddExplain(CLI::App& app, int* exit_code) {
  AddUnavailable(app, "explain", "Print the score breakdown of one scheduling decision", exit_code);
}

}  // namespace tessera::cli
