// The command line run in-process by the CLI tests: RunArgs({"simulate", "--seed", "1"}) is
// `tessera simulate --seed 1`, and returns its exit code.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"

namespace tessera::cli {

inline int RunArgs(std::vector<std::string> args) {
  args.insert(args.begin(), "tessera");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return Run(static_cast<int>(argv.size()), argv.data());
}

}  // namespace tessera::cli
