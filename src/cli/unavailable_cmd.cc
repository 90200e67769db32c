// Subcommands whose modules are not built yet. Each moves to its own <name>_cmd.cc when its
// module lands (and its line here goes).
#include "cli/commands.h"

namespace tessera::cli {

void AddSchedule(CLI::App& app, int* exit_code) {
  AddUnavailable(app, "schedule", "Run as a Kubernetes scheduler for schedulerName: tessera",
                 exit_code);
}
void AddExtender(CLI::App& app, int* exit_code) {
  AddUnavailable(app, "extender", "Serve the kube-scheduler extender protocol", exit_code);
}

}  // namespace tessera::cli
