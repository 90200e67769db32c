// The tessera command line: builds the app from every subcommand, runs it, and is the one place
// that prints a failure and maps it to the exit code (commands.h).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"

namespace tessera::cli {
namespace {

// The deepest subcommand the command line chose (the app itself when none).
CLI::App* Chosen(CLI::App* app) {
  for (;;) {
    std::vector<CLI::App*> parsed = app->get_subcommands();
    if (parsed.empty()) return app;
    app = parsed.front();
  }
}

// "tessera", "tessera simulate", "tessera predict evaluate" (whatever argv[0] was).
std::string PathOf(const CLI::App* app) {
  std::string path;
  for (; app->get_parent() != nullptr; app = app->get_parent()) path = " " + app->get_name() + path;
  return "tessera" + path;
}

// A word the command line gave where `app` wanted a subcommand: "unknown subcommand 'x'
// (known: …)". Empty when that is not what went wrong.
std::string UnknownSubcommand(CLI::App* app) {
  std::vector<CLI::App*> subs = app->get_subcommands([](CLI::App*) { return true; });
  if (subs.empty() || !app->get_subcommands().empty()) return "";
  for (const std::string& word : app->remaining()) {
    if (word.starts_with("-")) continue;
    std::string known;
    for (const CLI::App* s : subs) known += (known.empty() ? "" : ", ") + s->get_name();
    return fmt::format("unknown subcommand '{}' (known: {})", word, known);
  }
  return "";
}

void Print(const std::string& path, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", path.c_str(), message.c_str());
}

}  // namespace

int Run(int argc, const char* const* argv) {
  CLI::App app{"Tessera: predictive GPU-sharing scheduler for inference workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionLine());
  app.footer(kExitCodes);
  Status status;
  AddSimulate(app, &status);
  AddPredict(app, &status);
  AddExplain(app, &status);
  AddSchedule(app, &status);
  AddExtender(app, &status);
  AddAgent(app, &status);
  AddPlan(app, &status);
  AddVersion(app, &status);
  RefuseEmptyValues(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e);  // --help, --version: printed on stdout
    }
    CLI::App* at = Chosen(&app);
    std::string message = UnknownSubcommand(at);
    if (message.empty()) message = fmt::format("{} (see {} --help)", e.what(), PathOf(at));
    Print(PathOf(at), message);
    return static_cast<int>(ExitCode::kUsage);
  }
  if (!status) {
    Print(PathOf(Chosen(&app)), status.error().message);
    return static_cast<int>(status.error().code);
  }
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace tessera::cli
