// FiniteRange and Seconds, the CLI11 checks behind the daemons' duration flags: unlike CLI11's
// PositiveNumber and Range they refuse NaN, which as "--refresh nan" or "--retry-period nan"
// would make a daemon spin.
#include "cli/number_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {
namespace {

// What the check says of `text` ("" when it passes).
std::string Check(const CLI::Validator& v, std::string text) { return v(text); }

TEST(NumberFlagsTest, FiniteRangeRefusesNonFiniteAndOutOfRangeValues) {
  const CLI::Validator v = FiniteRange(0.01, 10);
  for (const char* ok : {"0.01", "1", "1.3", "10", "1e0", "5E-1"})
    EXPECT_EQ(Check(v, ok), "") << ok;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"nan", "'nan' is not a finite number"},
      {"NaN", "'NaN' is not a finite number"},
      {"inf", "'inf' is not a finite number"},
      {"-inf", "'-inf' is not a finite number"},
      {"infinity", "'infinity' is not a finite number"},
      {"", "'' is not a finite number"},
      {"1.5x", "'1.5x' is not a finite number"},
      {" 1", "' 1' is not a finite number"},
      {"+1", "'+1' is not a finite number"},
      {"1e309", "'1e309' is not a finite number"},  // out of double's range
      {"1e308", "1e308 is above the 10 maximum"},
      {"-0", "-0 is below the 0.01 minimum"},
      {"0.001", "0.001 is below the 0.01 minimum"},
  };
  for (const auto& [text, want] : bad) EXPECT_EQ(Check(v, text), want) << text;
}

TEST(NumberFlagsTest, SecondsSayTheirUnit) {
  const CLI::Validator v = Seconds(0.1, 3600);
  EXPECT_EQ(Check(v, "2"), "");
  EXPECT_EQ(Check(v, "nan"), "'nan' is not a number of seconds");
  EXPECT_EQ(Check(v, "0.05"), "0.05 s is below the 0.1 s minimum");
  EXPECT_EQ(Check(v, "7200"), "7200 s is above the 3600 s maximum");
}

}  // namespace
}  // namespace tessera::cli
