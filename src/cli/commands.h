#pragma once
// The subcommands of `tessera`. Each Add* function (one per cli/<name>_cmd.cc) adds its
// subcommand to the app; when the subcommand runs, its body stores how it ended in *status.
// Run is the one place that prints a failure ("tessera <subcommand>: <message>", on stderr)
// and turns it into the process exit code:
//
//   0  ok
//   1  failed: the command line was fine but the run was not — an input file that is missing
//      or malformed, a server that cannot be reached, a port that cannot be bound, a policy
//      that rejects its options
//   2  usage: the command line is wrong — an unknown subcommand or flag, a flag value that does
//      not parse or names nothing (seeds, JSON, host:port, a Redis address, a policy or an
//      application that does not exist), a required flag missing, flags that do not go together
//
// The same kind of error exits with the same code in every subcommand. kExitCodes is the table
// as `tessera --help` prints it.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <expected>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "cli/seed_flags.h"

namespace tessera::cli {

enum class ExitCode : int { kOk = 0, kFailed = 1, kUsage = 2 };

inline constexpr const char* kExitCodes =
    "Exit codes: 0 ok; 1 failed (bad input data, unreachable server, broken run); 2 usage (unknown "
    "subcommand or flag, bad flag value, flags that do not go together).";

// Why a subcommand failed, and which exit code that is.
struct Failure {
  ExitCode code = ExitCode::kFailed;
  std::string message;
};

// What a subcommand's body returns: nothing on success, else its Failure.
using Status = std::expected<void, Failure>;

[[nodiscard]] inline std::unexpected<Failure> Failed(Error e) {
  return std::unexpected(Failure{ExitCode::kFailed, std::move(e.message)});
}
[[nodiscard]] inline std::unexpected<Failure> Usage(Error e) {
  return std::unexpected(Failure{ExitCode::kUsage, std::move(e.message)});
}
template <typename... Args>
[[nodiscard]] std::unexpected<Failure> Failed(fmt::format_string<Args...> format, Args&&... args) {
  return Failed(Error{fmt::format(format, std::forward<Args>(args)...)});
}
template <typename... Args>
[[nodiscard]] std::unexpected<Failure> Usage(fmt::format_string<Args...> format, Args&&... args) {
  return Usage(Error{fmt::format(format, std::forward<Args>(args)...)});
}

// Parses argv and runs the chosen subcommand; returns the process exit code.
int Run(int argc, const char* const* argv);

// The version `tessera --version` and `tessera version` print: "tessera <CMake project version>".
std::string VersionLine();

void AddVersion(CLI::App& app, Status* status);
void AddSimulate(CLI::App& app, Status* status);
void AddPredict(CLI::App& app, Status* status);
// `predict interference`, added under AddPredict's `predict` subcommand.
void AddPredictInterference(CLI::App* predict, Status* status);
// `predict contention` (predict_contention_cmd.cc), likewise.
void AddPredictContention(CLI::App* predict, Status* status);
void AddExplain(CLI::App& app, Status* status);
void AddSchedule(CLI::App& app, Status* status);
void AddExtender(CLI::App& app, Status* status);
void AddAgent(CLI::App& app, Status* status);
void AddPlan(CLI::App& app, Status* status);

}  // namespace tessera::cli
