#pragma once
// The subcommands of `tessera`. Each Add* function (one per cli/<name>_cmd.cc) adds its
// subcommand to the app; when the subcommand runs it stores the process exit code in *exit_code.
// Exit codes: 0 success, 1 failure (bad input, broken run), 2 usage.

#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

// Parses argv and runs the chosen subcommand; returns the process exit code.
int Run(int argc, const char* const* argv);

void AddVersion(CLI::App& app, int* exit_code);
void AddSimulate(CLI::App& app, int* exit_code);
void AddPredict(CLI::App& app, int* exit_code);
void AddExplain(CLI::App& app, int* exit_code);
void AddSchedule(CLI::App& app, int* exit_code);
void AddExtender(CLI::App& app, int* exit_code);
void AddAgent(CLI::App& app, int* exit_code);

}  // namespace tessera::cli
