// The registry's contract (policy/registry.h): what a policy advertises in PolicyInfo::options is
// exactly what MakePolicy accepts, and option errors name the policy and the option.
#include "policy/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "base/rng.h"
#include "policy/predictive.h"
#include "predict/predictor.h"

namespace tessera::policy {
namespace {

using ::testing::HasSubstr;

// Predictive's factory only needs some predictor; one cell is enough.
predict::Predictor OneCellPredictor() {
  predict::ProfileMatrix profile;
  profile.Observe(profile.AddRow("a"), profile.AddCol("V100-32GB/whole/100"), 40);
  auto p = predict::Predictor::Create(std::move(profile), {},
                                      {.method = "baseline", .interference_method = "baseline"});
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest() : predictor_(OneCellPredictor()) {
    ctx_.rng = &rng_;
    ctx_.clock = &clock_;
    ctx_.predictor = &predictor_;
  }
  Rng rng_{7};
  ManualClock clock_;
  predict::Predictor predictor_;
  PolicyContext ctx_;
};

TEST_F(RegistryTest, PoliciesAdvertiseTheOptionsTheirFactoriesRead) {
  const std::map<std::string, std::set<std::string>> expected = {
      {"predictive", {"mps_percents", "reshape", "interference_kind", "slo_headroom"}},
      {"slo-aware",
       {"admission", "protect_neighbours", "margin_z", "completed_sigma", "calibrated_sigma",
        "co_runner_sigma", "mps_step", "observe", "replace", "max_moves", "reshape",
        "interference_kind"}},
      {"muxflow",
       {"dynamic_sm", "fixed_sm_percent", "matching", "offline_period", "period_s", "memory_quota",
        "min_offline_percent", "resize_step", "gpu_util_thresholds", "sm_activity_thresholds",
        "memory_thresholds", "clock_drop_thresholds", "base_hold_s", "max_hold_s", "history_s",
        "interference_kind", "reference_gpu"}},
      {"resource-aware",
       {"cbp", "peak_prediction", "cv_threshold", "percentile", "cbp_window_s", "lag",
        "autocorrelation_threshold", "pp_window_s", "min_samples", "resize", "unseen_by_ratio",
        "cover_growth"}},
      {"knots-cbp",
       {"correlation_threshold", "percentile", "window_s", "history_s", "min_samples"}},
      {"knots-pp",
       {"correlation_threshold", "percentile", "window_s", "history_s", "min_samples", "lag",
        "horizon_s", "steer", "peak_window_s"}},
      {"drmaestro",
       {"disaggregate", "network_aware", "remote_preference", "unscheduled_preference",
        "load_buckets", "max_postpone_cycles", "summed_supply"}},
      {"fgd", {"typical_pods"}},
      {"min", {"mps_slots"}},
      {"round-robin", {"mps_chunks"}},
      {"frag-pack", {"typical_pods", "stranding_weight", "lookahead"}},
  };
  for (const PolicyInfo& info : Policies()) {
    std::set<std::string> names;
    for (const OptionInfo& o : info.options) names.insert(o.name);
    auto it = expected.find(info.name);
    EXPECT_EQ(names, it == expected.end() ? std::set<std::string>{} : it->second) << info.name;
    for (const OptionInfo& o : info.options) {
      // The factory reads every advertised key: a value of no option's type is refused, naming
      // the policy and the option.
      auto bad = MakePolicy(info.name, ctx_, {{o.name, nlohmann::json::object()}});
      ASSERT_FALSE(bad.has_value()) << info.name << " " << o.name;
      EXPECT_THAT(bad.error().message, HasSubstr("policy " + info.name)) << bad.error().message;
      EXPECT_THAT(bad.error().message, HasSubstr(o.name)) << bad.error().message;
      EXPECT_FALSE(o.help.empty()) << info.name << " " << o.name;
    }
  }
}

TEST_F(RegistryTest, EveryAdvertisedDefaultIsAccepted) {
  for (const PolicyInfo& info : Policies()) {
    nlohmann::json all = nlohmann::json::object();
    for (const OptionInfo& o : info.options) {
      const nlohmann::json value = nlohmann::json::parse(o.default_json, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << info.name << " " << o.name << ": " << o.default_json;
      all[o.name] = value;
      EXPECT_TRUE(MakePolicy(info.name, ctx_, {{o.name, value}}).has_value())
          << info.name << " " << o.name;
    }
    auto made = MakePolicy(info.name, ctx_, all);
    ASSERT_TRUE(made.has_value()) << info.name << ": " << made.error().message;
    EXPECT_EQ((*made)->name(), info.name);
    // The core calls PlaceBatch only for a policy that says it batches: the registry's flag
    // and the policy's own must agree.
    EXPECT_EQ((*made)->Batches(), info.batch) << info.name;
  }
}

TEST_F(RegistryTest, AnUnknownOptionIsRefusedNamingThePolicy) {
  for (const PolicyInfo& info : Policies()) {
    auto made = MakePolicy(info.name, ctx_, {{"bogus", 1}});
    ASSERT_FALSE(made.has_value()) << info.name;
    EXPECT_THAT(made.error().message, HasSubstr("policy " + info.name + ": unknown option 'bogus'"))
        << made.error().message;
    EXPECT_FALSE(MakePolicy(info.name, ctx_, nlohmann::json::array({1})).has_value()) << info.name;
  }
}

}  // namespace
}  // namespace tessera::policy
