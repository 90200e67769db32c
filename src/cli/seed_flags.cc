#include "cli/seed_flags.h"

#include <charconv>
#include <system_error>

namespace tessera::cli {
namespace {

// A decimal integer and nothing else, or why not.
Expected<uint64_t> Decimal(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  // std::from_chars takes neither a sign, nor spaces, nor "0x" for an unsigned type.
  auto [at, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    return Fail("'{}' is larger than 18446744073709551615", text);
  }
  if (ec != std::errc{} || at != end) return Fail("'{}' is not a decimal integer", text);
  return value;
}

// ParseSeedRange without the flag's name (CLI11 prefixes it to a check's message).
Expected<std::vector<uint64_t>> Seeds(std::string_view text) {
  constexpr const char* kForm = "expected N (seeds 1..N) or A-B (seeds A..B)";
  const size_t dash = text.find('-');
  uint64_t lo = 1, hi = 0;
  if (dash == std::string_view::npos) {
    Expected<uint64_t> n = Decimal(text);
    if (!n) return Fail("{}; {}", n.error().message, kForm);
    if (*n == 0) return Fail("'{}' names no seeds; {}", text, kForm);
    hi = *n;
  } else {
    Expected<uint64_t> a = Decimal(text.substr(0, dash));
    Expected<uint64_t> b = Decimal(text.substr(dash + 1));
    if (!a || !b) return Fail("'{}': {}", text, kForm);
    if (*b < *a) return Fail("'{}' is an empty range ({} > {})", text, *a, *b);
    lo = *a;
    hi = *b;
  }
  // lo <= hi, so hi - lo does not wrap, and counting i up to it never passes 2^64-1.
  if (hi - lo >= kMaxSeeds) {
    return Fail("'{}' names more than {} seeds (the most one run takes)", text, kMaxSeeds);
  }
  std::vector<uint64_t> out;
  out.reserve(hi - lo + 1);
  for (uint64_t i = 0; i <= hi - lo; ++i) out.push_back(lo + i);
  return out;
}

constexpr const char* kSeedForm = "expected a seed 0..18446744073709551615";

}  // namespace

Expected<std::vector<uint64_t>> ParseSeedRange(std::string_view text) {
  Expected<std::vector<uint64_t>> seeds = Seeds(text);
  if (!seeds) return Fail("--seeds {}", seeds.error().message);
  return seeds;
}

CLI::Validator SeedCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Expected<uint64_t> seed = Decimal(text);
        return seed ? "" : fmt::format("{}: {}", seed.error().message, kSeedForm);
      },
      "SEED");
}

CLI::Validator SeedsCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Expected<std::vector<uint64_t>> seeds = Seeds(text);
        return seeds ? "" : seeds.error().message;
      },
      "N|A-B");
}

}  // namespace tessera::cli
