#include "cli/seed_flags.h"

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_args.h"

namespace tessera::cli {
namespace {

constexpr uint64_t kTop = 18446744073709551615u;  // 2^64-1

TEST(SeedFlagsTest, RangesNameExactlyTheirSeeds) {
  struct Case {
    std::string text;
    std::vector<uint64_t> seeds;
  };
  const std::vector<Case> cases = {
      {"3", {1, 2, 3}},
      {"42", std::vector<uint64_t>{}},  // filled below: 1..42
      {"42-44", {42, 43, 44}},
      {"0-1", {0, 1}},
      {"7-7", {7}},
      // The top of the range: the loop must stop at 2^64-1, not wrap to 0 and run forever.
      {"18446744073709551614-18446744073709551615", {kTop - 1, kTop}},
      {"18446744073709551615-18446744073709551615", {kTop}},
  };
  for (Case c : cases) {
    if (c.text == "42") {
      for (uint64_t s = 1; s <= 42; ++s) c.seeds.push_back(s);
    }
    Expected<std::vector<uint64_t>> got = ParseSeedRange(c.text);
    ASSERT_TRUE(got) << c.text << ": " << got.error().message;
    EXPECT_EQ(*got, c.seeds) << c.text;
  }
}

TEST(SeedFlagsTest, AtMostTenThousandSeeds) {
  Expected<std::vector<uint64_t>> most = ParseSeedRange("10000");
  ASSERT_TRUE(most);
  EXPECT_EQ(most->size(), 10000u);
  EXPECT_EQ(ParseSeedRange("5-10004")->size(), 10000u);
  for (const char* text : {"10001", "5-10005", "0-18446744073709551615"}) {
    Expected<std::vector<uint64_t>> got = ParseSeedRange(text);
    ASSERT_FALSE(got) << text;
    EXPECT_NE(got.error().message.find("more than 10000 seeds"), std::string::npos)
        << got.error().message;
  }
}

TEST(SeedFlagsTest, AnythingElseIsRefusedNamingTheText) {
  for (const char* text : {"5x", "1-2-3", "1,2,3", "-1", "", "0", "9-3", " 3", "3 ", "+3", "0x10",
                           "1e3", "1-", "-", "18446744073709551616", "3.0"}) {
    Expected<std::vector<uint64_t>> got = ParseSeedRange(text);
    ASSERT_FALSE(got) << "'" << text << "' accepted as " << got->size() << " seeds";
    EXPECT_TRUE(got.error().message.starts_with("--seeds ")) << got.error().message;
    EXPECT_NE(got.error().message.find(fmt::format("'{}'", text)), std::string::npos)
        << got.error().message;
  }
}

TEST(SeedFlagsTest, SeedCheckTakesOneDecimalInteger) {
  const CLI::Validator check = SeedCheck();
  for (std::string ok : {"0", "1", "42", "18446744073709551615"}) {
    EXPECT_EQ(check(ok), "") << ok;
  }
  for (std::string bad : {"-1", "18446744073709551616", "5x", "", "1-2", "+1", " 1", "1e3"}) {
    const std::string why = check(bad);
    EXPECT_NE(why.find("expected a seed 0..18446744073709551615"), std::string::npos)
        << "'" << bad << "': " << why;
  }
}

// Every command that takes --seed or --seeds refuses a bad one as a usage error, on one line
// that names the flag, before it runs anything.
TEST(SeedFlagsTest, EveryCommandRefusesABadSeedAsUsage) {
  const std::vector<std::vector<std::string>> commands = {
      {"simulate", "--seed", "-1"},
      {"simulate", "--seeds", "5x"},
      {"simulate", "--seeds", "18446744073709551614-18446744073709551615x"},
      {"simulate", "--seeds", "1-2-3"},
      {"simulate", "--seeds", "1,2,3"},
      {"simulate", "--seeds", "20000"},
      {"simulate", "--seed", "1", "--seeds", "2"},
      {"predict", "evaluate", "--data", "/nonexistent", "--seed", "-1"},
      {"predict", "evaluate", "--data", "/nonexistent", "--seeds", "1,2,3"},
      {"predict", "sweep", "--data", "/nonexistent", "--seeds", "1-2-3"},
      {"predict", "interference", "--seeds", "5x"},
      {"explain", "--seed", "-1"},
      {"schedule", "--seed", "-1"},
      {"extender", "--seed", "1e3"},
  };
  for (const std::vector<std::string>& args : commands) {
    testing::internal::CaptureStderr();
    const int code = RunArgs(args);
    const std::string err = testing::internal::GetCapturedStderr();
    const std::string line = fmt::format("{}", fmt::join(args, " "));
    EXPECT_EQ(code, 2) << line << "\n" << err;
    EXPECT_NE(err.find("--seed"), std::string::npos) << line << "\n" << err;
    EXPECT_EQ(err.find('\n'), err.size() - 1) << line << "\n" << err;
  }
}

}  // namespace
}  // namespace tessera::cli
