// The daemons' policy inputs: profile and interference CSVs become a completed predictor, and
// bad files are refused naming file and line before anything starts.
#include "cli/policy_inputs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "predict/features.h"
#include "predict/predictor.h"

namespace tessera::cli {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(PolicyInputsTest, ProfilesBecomeAPredictorAndBadFilesNameTheirLine) {
  ManualClock clock;
  PolicyInputFlags f;
  f.profile = Write("profile.csv",
                    "row,column,value,count,variance\n"
                    "a,V100-32GB/whole/100,40,1,0\n"
                    "a,V100-32GB/whole/25,20,1,0\n"
                    "b,V100-32GB/whole/100,60,1,0\n");
  f.interference = Write("interference.csv",
                         "kind,victim,aggressor,value,count,variance\n"
                         "mps,a,b,0.25,1,0\n");
  Expected<PolicyInputs> in = OpenPolicyInputs(f, clock);
  ASSERT_TRUE(in.has_value()) << in.error().message;
  ASSERT_NE(in->predictor, nullptr);
  EXPECT_EQ(in->predictor->num_apps(), 2);
  EXPECT_NEAR(*in->predictor->Isolated("a", "V100-32GB/whole/25"), 20.0, 1e-9);
  // b at 25% was never measured: the completion predicts it (about half of b's whole rate).
  EXPECT_GT(*in->predictor->Isolated("b", "V100-32GB/whole/25"), 0.0);
  EXPECT_NEAR(*in->predictor->Interference("a", "b", "mps"), 0.25, 1e-12);
  EXPECT_EQ(in->telemetry_view(), nullptr);

  f.profile = Write("bad.csv", "row,column,value,count,variance\na,V100-32GB/whole/100,fast,1,0\n");
  Expected<PolicyInputs> bad = OpenPolicyInputs(f, clock);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("bad.csv:2"), std::string::npos) << bad.error().message;

  PolicyInputFlags only_interference;
  only_interference.interference = f.interference;
  EXPECT_FALSE(OpenPolicyInputs(only_interference, clock).has_value());
  PolicyInputFlags bad_url;
  bad_url.prometheus = "ftp://nowhere";
  EXPECT_FALSE(OpenPolicyInputs(bad_url, clock).has_value());
  EXPECT_FALSE(OpenPolicyInputs({}, clock)->predictor);  // nothing asked, nothing loaded
}

// --features hands the predictor every application's features from the start (the simulator's
// predictors have the catalogue's); a bad file names its line, and features without a profile
// are refused.
TEST(PolicyInputsTest, FeaturesReachThePredictorFromTheStart) {
  ManualClock clock;
  PolicyInputFlags f;
  f.profile = Write("fprofile.csv",
                    "row,column,value,count,variance\n"
                    "a,V100-32GB/whole/100,40,1,0\n"
                    "b,V100-32GB/whole/100,60,1,0\n");
  f.features = Write("features.csv",
                     "app,feature,value\n"
                     "a,gflops,4.1\n"
                     "b,gflops,0.3\n"
                     "c,gflops,8.2\n");
  Expected<PolicyInputs> in = OpenPolicyInputs(f, clock);
  ASSERT_TRUE(in.has_value()) << in.error().message;
  const predict::FeatureTable& features = in->predictor->features();
  EXPECT_EQ(features.size(), 3u);
  ASSERT_NE(features.Find("c"), nullptr);  // known before any pod of it arrives
  EXPECT_EQ(std::get<double>(features.Find("c")->at("gflops")), 8.2);

  f.features = Write("bad-features.csv", "app,feature,value\na,gflops,4.1\n,gflops,1\n");
  Expected<PolicyInputs> bad = OpenPolicyInputs(f, clock);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("bad-features.csv:3"), std::string::npos)
      << bad.error().message;

  PolicyInputFlags no_profile;
  no_profile.features = f.features;
  Expected<PolicyInputs> refused = OpenPolicyInputs(no_profile, clock);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message,
            "--features needs --profile (features complete the profile's rows)");
}

// The history the usage-aware policies read comes at --telemetry-step resolution over
// --telemetry-window: a step longer than the window would fetch at most one sample.
TEST(PolicyInputsTest, TelemetryStepLongerThanItsWindowIsRefused) {
  ManualClock clock;
  PolicyInputFlags f;
  f.prometheus = "http://127.0.0.1:1";
  f.telemetry_window_s = 30;
  f.telemetry_step_s = 60;
  Expected<PolicyInputs> in = OpenPolicyInputs(f, clock);
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().message, "--telemetry-step 60 s is longer than --telemetry-window 30 s");
  f.telemetry_step_s = 1;
  Expected<PolicyInputs> ok = OpenPolicyInputs(f, clock);  // nobody answers: the poller logs it
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_NE(ok->telemetry_view(), nullptr);
}

}  // namespace
}  // namespace tessera::cli
