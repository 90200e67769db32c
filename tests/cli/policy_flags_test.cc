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

  // Options are checked against what the policy takes (a bad one is a usage error before any
  // run): an unknown key is refused, naming it; a known one passes through.
  const Expected<policy::PolicySpec> unknown =
      ParseRegisteredPolicy(policy::Policies()[0].name + "{\"k\": 2}");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("unknown option 'k'"), std::string::npos)
      << unknown.error().message;
  const Expected<policy::PolicySpec> spec = ParseRegisteredPolicy("predictive{\"reshape\": false}");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->name, "predictive");
  EXPECT_EQ(spec->options["reshape"], false);
  EXPECT_FALSE(ParseRegisteredPolicy("no-such-policy").has_value());
  EXPECT_FALSE(ParseRegisteredPolicy(policy::Policies()[0].name + "{oops").has_value());
}

}  // namespace
}  // namespace tessera::cli

namespace tessera::cli {
namespace {

TEST(SplitPolicyListTest, CommasInsideOptionsDoNotSplit) {
  using V = std::vector<std::string>;
  EXPECT_EQ(*SplitPolicyList("fgd"), V{"fgd"});
  EXPECT_EQ(*SplitPolicyList("best-fit,fgd"), (V{"best-fit", "fgd"}));
  EXPECT_EQ(*SplitPolicyList(R"(fgd,predictive{"slo_headroom":0.1,"reshape":false})"),
            (V{"fgd", R"(predictive{"slo_headroom":0.1,"reshape":false})"}));
  EXPECT_EQ(*SplitPolicyList(R"(predictive{"mps_percents":[25,50]},min)"),
            (V{R"(predictive{"mps_percents":[25,50]})", "min"}));
  // A comma, a brace and an escaped quote inside a JSON string are text.
  EXPECT_EQ(*SplitPolicyList(R"(x{"k":"a,}\",b"},y)"), (V{R"(x{"k":"a,}\",b"})", "y"}));
}

TEST(SplitPolicyListTest, MalformedListsNameTheProblem) {
  const auto message = [](std::string_view text) {
    Expected<std::vector<std::string>> r = SplitPolicyList(text);
    EXPECT_FALSE(r.has_value()) << text;
    return r ? std::string() : r.error().message;
  };
  EXPECT_NE(message("fgd,,min").find("empty policy at offset 4"), std::string::npos);
  EXPECT_NE(message("fgd,").find("empty policy"), std::string::npos);
  EXPECT_NE(message("").find("empty policy"), std::string::npos);
  EXPECT_NE(message(R"(p{"a":[1})").find("unbalanced '}'"), std::string::npos);
  EXPECT_NE(message(R"(p{"a":1)").find("'{' is never closed"), std::string::npos);
  EXPECT_NE(message(R"(p{"a":"x})").find("not terminated"), std::string::npos);
  EXPECT_NE(message("p}").find("unbalanced '}' at offset 1"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cli
