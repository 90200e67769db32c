// `tessera predict interference` and the evaluation it runs, on the simulator's thesis
// profiling (predict cannot reach the simulator, so this check lives here).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "predict/interference_eval.h"
#include "sim/embedded_apps.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/thesis.h"

namespace tessera::cli {
namespace {

TEST(PredictInterferenceTest, TheThesisProfilingsMpsMatrixIsCompletedBetterThanByItsMean) {
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  ASSERT_TRUE(catalog.has_value()) << catalog.error().message;
  sim::Physics physics(*catalog, 1);
  Expected<sim::ProfileSamples> samples =
      sim::Profiler(physics, sim::ThesisProfiling({}, 1)).Sample({"V100-32GB", "A30-24GB"}, 1);
  ASSERT_TRUE(samples.has_value()) << samples.error().message;
  const predict::SparseMatrix* mps = samples->interference().Find("mps");
  ASSERT_NE(mps, nullptr);
  Expected<predict::InterferenceEvalResult> r =
      predict::EvaluateInterference(*mps, {"svd", 0.5, 1});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->observed, mps->ObservedCount());
  EXPECT_GT(r->observed, 1000);  // ~30 % of the catalogue's ordered pairs
  EXPECT_NEAR(r->errors.n, 0.5 * r->observed, 0.02 * r->observed);
  EXPECT_LT(r->errors.mae, r->mean_errors.mae);
  EXPECT_LT(r->errors.p90_ae, r->mean_errors.p90_ae);
}

// The subcommand under a bare `predict`, as AddPredict mounts it.
struct Cli {
  CLI::App app{"tessera"};
  Status status;
  Cli() {
    CLI::App* predict = app.add_subcommand("predict");
    AddPredictInterference(predict, &status);
  }
  void Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "tessera");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

TEST(PredictInterferenceTest, JsonHasOneEntryPerSeedAndTheirMedian) {
  Cli cli;
  testing::internal::CaptureStdout();
  cli.Parse({"predict", "interference", "--seeds", "2-3", "--method", "baseline", "--missing",
             "0.25", "--json"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(cli.status.has_value()) << cli.status.error().message;
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["kind"], "mps");
  EXPECT_EQ(j["method"], "baseline");
  EXPECT_EQ(j["missing"], 0.25);
  ASSERT_EQ(j["seeds"].size(), 2u);
  EXPECT_EQ(j["seeds"][0]["seed"], 2);
  EXPECT_EQ(j["seeds"][1]["seed"], 3);
  for (const nlohmann::json& s : j["seeds"]) {
    EXPECT_GT(s["observed"].get<int>(), 0);
    for (const char* field : {"n", "mae_pp", "median_ae_pp", "p90_ae_pp", "rmse_pp"}) {
      EXPECT_TRUE(s["errors"].contains(field)) << field;
      EXPECT_TRUE(s["mean_errors"].contains(field)) << field;
    }
  }
  EXPECT_TRUE(j["median_over_seeds"]["errors"].contains("mae_pp"));
}

TEST(PredictInterferenceTest, TextHasARowPerSeedAndTheMedian) {
  Cli cli;
  testing::internal::CaptureStdout();
  cli.Parse({"predict", "interference", "--seeds", "2"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(cli.status.has_value()) << cli.status.error().message;
  EXPECT_NE(out.find("interference kind mps, method svd"), std::string::npos) << out;
  EXPECT_NE(out.find("\n1 "), std::string::npos) << out;
  EXPECT_NE(out.find("\n2 "), std::string::npos) << out;
  EXPECT_NE(out.find("\nmedian "), std::string::npos) << out;
}

TEST(PredictInterferenceTest, BadFlagsAreUsageErrors) {
  {
    Cli cli;
    cli.Parse({"predict", "interference", "--kind", "mig"});
    ASSERT_FALSE(cli.status.has_value());
    EXPECT_EQ(cli.status.error().code, ExitCode::kUsage);
    EXPECT_NE(cli.status.error().message.find("(it has: mps)"), std::string::npos)
        << cli.status.error().message;
  }
  {
    Cli cli;
    cli.Parse({"predict", "interference", "--missing", "1"});
    ASSERT_FALSE(cli.status.has_value());
    EXPECT_EQ(cli.status.error().code, ExitCode::kUsage);
  }
  {
    // Refused while parsing (Run turns a CLI11 error into exit 2), before the command runs.
    Cli cli;
    EXPECT_THROW(cli.Parse({"predict", "interference", "--seeds", "5-2"}), CLI::ValidationError);
  }
  Cli cli;
  EXPECT_THROW(cli.Parse({"predict", "interference", "--method", "nope"}), CLI::ValidationError);
}

// --data evaluates a measured matrix (tools/characterise writes one): 4 victims x 4
// aggressors of kind "timeslice", every cell observed; a bad file is one error naming its line.
TEST(PredictInterferenceTest, DataEvaluatesAMeasuredMatrix) {
  const std::string path = testing::TempDir() + "/measured_interference.csv";
  {
    std::ofstream f(path);
    f << "kind,victim,aggressor,value,count,variance\n";
    for (int v = 0; v < 4; ++v) {
      for (int a = 0; a < 4; ++a) {
        f << "timeslice,app" << v << "/bs8,app" << a << "/bs8," << 0.1 * (v + 1) + 0.05 * a
          << ",5,0.0001\n";
      }
    }
  }
  Cli cli;
  testing::internal::CaptureStdout();
  cli.Parse(
      {"predict", "interference", "--data", path, "--kind", "timeslice", "--seeds", "3", "--json"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(cli.status.has_value()) << cli.status.error().message;
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_EQ(j["seeds"].size(), 3u);
  for (const auto& seed : j["seeds"]) {
    EXPECT_EQ(seed["victims"], 4);
    EXPECT_EQ(seed["aggressors"], 4);
    EXPECT_EQ(seed["observed"], 16);
  }
  {
    Cli wrong_kind;
    wrong_kind.Parse({"predict", "interference", "--data", path});  // --kind mps by default
    ASSERT_FALSE(wrong_kind.status.has_value());
    EXPECT_EQ(wrong_kind.status.error().code, ExitCode::kUsage);
    EXPECT_NE(wrong_kind.status.error().message.find(path + " has no such interference (it "
                                                            "has: timeslice)"),
              std::string::npos)
        << wrong_kind.status.error().message;
  }
  {
    std::ofstream f(path, std::ios::app);
    f << "timeslice,app9/bs8,app0/bs8,1.5,5,0\n";  // a fraction above 1
  }
  Cli bad;
  bad.Parse({"predict", "interference", "--data", path, "--kind", "timeslice"});
  ASSERT_FALSE(bad.status.has_value());
  EXPECT_EQ(bad.status.error().code, ExitCode::kFailed);
  EXPECT_NE(bad.status.error().message.find(path + ":18"), std::string::npos)
      << bad.status.error().message;
}

}  // namespace
}  // namespace tessera::cli
