#include "cli/policy_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::cli {
namespace {

TEST(PolicyListTest, PrintsEachPolicyWithItsOptionsOrNone) {
  const std::vector<policy::PolicyInfo> policies = {
      {.name = "alpha",
       .summary = "Packs tightly (§1).",
       .needs_predictor = true,
       .options = {{"headroom", "0.1", "Spare SLO fraction"}, {"weights", "[1,2]", "Per term"}}},
      {.name = "beta", .summary = "Spreads.", .options = {}},
  };
  const std::string out = PolicyList(policies);
  const std::string blocks =
      "\nalpha: Packs tightly (§1). [needs a predictor]\n"
      "    headroom (default 0.1): Spare SLO fraction\n"
      "    weights (default [1,2]): Per term\n"
      "\nbeta: Spreads.\n"
      "    (no options)\n";
  ASSERT_GE(out.size(), blocks.size());
  EXPECT_EQ(out.substr(out.size() - blocks.size()), blocks) << out;
  // One header line, then the blocks (each opens with a blank line).
  EXPECT_EQ(out.find('\n') + 1, out.size() - blocks.size());
}

TEST(PolicyListTest, TheRegistryDecidesWhatIsAPolicy) {
  ASSERT_FALSE(policy::Policies().empty());
  for (const policy::PolicyInfo& p : policy::Policies()) {
    EXPECT_TRUE(CheckRegistered(p.name).has_value()) << p.name;
  }
  const Expected<void> bad = CheckRegistered("no-such-policy");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("--policy no-such-policy"), std::string::npos);
  EXPECT_NE(bad.error().message.find("--list-policies"), std::string::npos);

  const Expected<policy::PolicySpec> spec =
      ParseRegisteredPolicy(policy::Policies()[0].name + "{\"k\": 2}");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->name, policy::Policies()[0].name);
  EXPECT_EQ(spec->options["k"], 2);
  EXPECT_FALSE(ParseRegisteredPolicy("no-such-policy").has_value());
  EXPECT_FALSE(ParseRegisteredPolicy(policy::Policies()[0].name + "{oops").has_value());
}

}  // namespace
}  // namespace tessera::cli
