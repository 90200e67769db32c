#pragma once
// Seeds on the command line: the one parser behind every --seed and --seeds flag (simulate,
// predict evaluate / sweep / interference, explain, schedule, extender), and the CLI11 checks
// that make a bad value a usage error (exit 2) before a command runs.
//
//   --seed  S     one seed: a decimal integer 0..18446744073709551615 (2^64-1); no sign, no
//                 spaces, no exponent, no hex
//   --seeds N     seeds 1..N, 1 <= N <= kMaxSeeds
//   --seeds A-B   seeds A..B, A <= B, at most kMaxSeeds of them
//
// Anything else ("5x", "1-2-3", "1,2,3", "-1", "") is refused with one message naming the flag
// and the text.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace tessera::cli {

// The most seeds one --seeds may name: each is a whole run, and 10,000 of even the smallest
// experiment already take hours.
inline constexpr uint64_t kMaxSeeds = 10000;

// A seed list, as --seeds takes it: "N" = 1..N, "A-B" = A..B; an Error naming the text.
[[nodiscard]] Expected<std::vector<uint64_t>> ParseSeedRange(std::string_view text);

// CLI11 checks for --seed (one decimal integer 0..2^64-1) and --seeds (ParseSeedRange); CLI11
// prefixes the flag's name to their message.
CLI::Validator SeedCheck();
CLI::Validator SeedsCheck();

}  // namespace tessera::cli
