#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_args.h"
#include "policy/registry.h"

namespace tessera::cli {
namespace {

TEST(CliTest, HelpWorksEverywhere) {
  EXPECT_EQ(RunArgs({"--help"}), 0);
  for (const char* sub :
       {"simulate", "predict", "explain", "schedule", "extender", "agent", "plan", "version"}) {
    EXPECT_EQ(RunArgs({sub, "--help"}), 0) << sub;
  }
}

TEST(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunArgs({}), 2);        // a subcommand is required
  EXPECT_EQ(RunArgs({"plan"}), 2);  // a services file or --example
  EXPECT_EQ(RunArgs({"plan", "--example", "nope"}), 2);
  EXPECT_EQ(RunArgs({"plan", "--example", "thesis-slo4", "--confidence", "0.2"}), 2);
  EXPECT_EQ(RunArgs({"plan", "--example", "thesis-slo4", "--explain", "nope"}), 2);
  EXPECT_EQ(RunArgs({"plan", "/nonexistent/services.yaml"}), 1);
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "nope"}), 2);
  EXPECT_EQ(RunArgs({"simulate", "--seeds", "9-3"}), 2);
  EXPECT_EQ(RunArgs({"simulate", "--seed", "1", "--policy", "nope"}), 2);
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "packing", "--policy", "nope"}), 2);
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "openb-alloc"}), 2);  // needs --trace
  EXPECT_EQ(RunArgs({"explain", "--policy", "predictive{oops"}), 2);
  EXPECT_EQ(RunArgs({"explain", "--policy", "nope"}), 2);
}

TEST(CliTest, AnUnknownSubcommandIsNamedWithTheKnownOnes) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"bogus"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("tessera: unknown subcommand 'bogus' (known: simulate, predict, explain, "
                     "schedule, extender, agent, plan, version)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;  // printed once, on one line

  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "bogus"}), 2);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("tessera predict: unknown subcommand 'bogus' (known: methods, evaluate, "
                     "sweep, complete, interference, contention)"),
            std::string::npos)
      << err;
}

// The same mistake exits with the same code whichever daemon makes it: a Redis address
// without a port is a usage error (2), found before any server is contacted.
TEST(CliTest, ABadRedisAddressIsAUsageErrorInEveryDaemon) {
  for (const char* sub : {"agent", "schedule", "extender"}) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(RunArgs({sub, "--store", "redis", "--redis", "no-port-here"}), 2) << sub;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string("tessera ") + sub + ": --redis: redis address 'no-port-here'"),
              std::string::npos)
        << err;
  }
}

// The daemons take a policy's options as every other command does (--policy NAME{json}) or by
// --policy-options, not both; a malformed spec names itself. Found before any server is
// contacted (exit 2).
TEST(CliTest, DaemonsTakeThePolicyOptionGrammarOfEveryCommand) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--policy", R"(fgd{"typical_pods":[]})", "--policy-options", R"({"typical_pods":[]})"},
       "carries options and --policy-options gives more"},
      {{"--policy", R"(fgd{"typical_pods":)"}, "--policy: "},
      {{"--policy", R"(nope{"a":1})"}, "nope"},
  };
  for (const char* sub : {"schedule", "extender"}) {
    for (const auto& [flags, want] : bad) {
      std::vector<std::string> args = {sub, "--store", "memory"};
      args.insert(args.end(), flags.begin(), flags.end());
      testing::internal::CaptureStderr();
      EXPECT_EQ(RunArgs(args), 2) << sub << " " << flags[1];
      const std::string err = testing::internal::GetCapturedStderr();
      EXPECT_NE(err.find(want), std::string::npos) << err;
    }
  }
}

// The agent's periods have bounds (docs/runtime.md): --interval 0.1..3600 s, --heartbeat-ttl
// 1..86400 s and at least twice --interval. --interval 1e-9 would spin a core at 100 %, and a
// TTL below one round would let the node count as dead between two heartbeats.
TEST(CliTest, AgentPeriodsOutsideTheirBoundsAreUsageErrors) {
  const std::string fake = std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml";
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--interval", "1e-9"}, "--interval: 1e-9 s is below the 0.1 s minimum"},
      {{"--interval", "0.05"}, "--interval: 0.05 s is below the 0.1 s minimum"},
      {{"--interval", "7200"}, "--interval: 7200 s is above the 3600 s maximum"},
      {{"--interval", "nan"}, "--interval: 'nan' is not a number of seconds"},
      {{"--interval", "inf"}, "--interval: 'inf' is not a number of seconds"},
      {{"--heartbeat-ttl", "1e-4"}, "--heartbeat-ttl: 1e-4 s is below the 1 s minimum"},
      {{"--heartbeat-ttl", "-1"}, "--heartbeat-ttl: -1 s is below the 1 s minimum"},
      {{"--heartbeat-ttl", "1e6"}, "--heartbeat-ttl: 1e6 s is above the 86400 s maximum"},
      {{"--interval", "10", "--heartbeat-ttl", "15"},
       "--heartbeat-ttl 15 s must be at least twice --interval (10 s)"},
      {{"--mps-stuck-samples", "0"}, "--mps-stuck-samples: Value 0 not in range 1 to 1000"},
      {{"--mps-stuck-seconds", "-1"}, "--mps-stuck-seconds: -1 s is below the 0 s minimum"},
      {{"--mps-stuck-seconds", "nan"}, "--mps-stuck-seconds: 'nan' is not a number of seconds"},
  };
  for (const auto& [flags, want] : bad) {
    std::vector<std::string> args = {"agent", "--fake", fake, "--once"};
    args.insert(args.end(), flags.begin(), flags.end());
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = RunArgs(args);
    testing::internal::GetCapturedStdout();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2) << flags[1] << "\n" << err;
    EXPECT_NE(err.find("tessera agent: " + want), std::string::npos) << err;
  }
  testing::internal::CaptureStdout();
  EXPECT_EQ(
      RunArgs({"agent", "--fake", fake, "--once", "--interval", "0.1", "--heartbeat-ttl", "1"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("fake-node-1"), std::string::npos);
}

TEST(CliTest, ListPoliciesNamesEveryRegisteredPolicy) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"simulate", "--list-policies"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_FALSE(policy::Policies().empty());
  for (const policy::PolicyInfo& p : policy::Policies()) {
    // Its block: "\n<name>: <summary>", then its options or "(no options)".
    const size_t at = out.find("\n" + p.name + ": " + p.summary);
    ASSERT_NE(at, std::string::npos) << p.name << "\n" << out;
    const size_t next = out.find("\n\n", at + 1);
    const std::string block = out.substr(at, next == std::string::npos ? next : next - at);
    if (p.options.empty()) {
      EXPECT_NE(block.find("\n    (no options)"), std::string::npos) << block;
    }
    for (const policy::OptionInfo& o : p.options) {
      EXPECT_NE(block.find("\n    " + o.name + " (default " + o.default_json + "): "),
                std::string::npos)
          << block;
    }
  }
}

TEST(CliTest, SimulateRunsAndFailsCleanlyOnBadInput) {
  EXPECT_EQ(RunArgs({"simulate", "--seed", "1", "--json"}), 0);  // thesis
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "packing", "--seed", "1", "--cluster-nodes", "8",
                     "--json"}),
            0);
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "thesis-scale", "--workloads", "40",
                     "--cluster-nodes", "2", "--policy", "min,max", "--json"}),
            0);
  EXPECT_EQ(RunArgs({"simulate", "--seed", "1", "--apps", "/nonexistent/apps.yaml"}), 1);
}

TEST(CliTest, APolicysOptionsMayHoldCommas) {
  // Two options in one object, beside a second policy: the list is split only at commas
  // outside braces, not at every comma as CLI11 would split it.
  EXPECT_EQ(
      RunArgs({"simulate", "--experiment", "thesis-scale", "--workloads", "40", "--cluster-nodes",
               "2", "--policy", R"(predictive{"slo_headroom":0.1,"reshape":false},min)", "--json"}),
      0);
  EXPECT_EQ(RunArgs({"simulate", "--seed", "1", "--policy", R"(predictive{"reshape":false)"}), 2);
  EXPECT_EQ(RunArgs({"simulate", "--seed", "1", "--policy", "min,,max"}), 2);
  // The packing replay takes name{json} too, not only a bare name, and a key the policy does
  // not know is a usage error before any run (exit 2, not exit 1 from inside the run).
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "packing", "--seed", "1", "--cluster-nodes", "8",
                     "--policy", "best-fit,fgd{}", "--json"}),
            0);
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "packing", "--seed", "1", "--cluster-nodes", "8",
                     "--policy", R"(fgd{"nope":1})", "--json"}),
            2);
}

TEST(CliTest, VersionPrintsTheProjectVersion) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"version"}), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "tessera 0.1.0\n");  // CMake project()
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"--version"}), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "tessera 0.1.0\n");
}

TEST(CliTest, HelpDocumentsTheExitCodes) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"--help"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("Exit codes: 0 ok; 1 failed"), std::string::npos) << out;
  EXPECT_NE(out.find("2 usage"), std::string::npos) << out;
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(CliTest, ExplainSloAwareShowsTargetMarginAndWhyNot) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "slo-aware"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("slo-aware: workload 3 (onnx/resnet50-3)"), std::string::npos) << out;
  EXPECT_NE(out.find("ceiling "), std::string::npos) << out;
  EXPECT_NE(out.find("margin: lower = iso x (1 - interference) - 2.00 x iso"), std::string::npos);
  // Admissible options come first, then those that miss, each saying why.
  const size_t admissible = out.find("  admissible  ");
  const size_t missed = out.find("not: x below its target");
  ASSERT_NE(admissible, std::string::npos) << out;
  ASSERT_NE(missed, std::string::npos) << out;
  EXPECT_LT(admissible, missed);
  // An SLO no configuration can be predicted to meet: it aims at its best one.
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "slo-aware", "--slo", "1000"}), 0);
  const std::string high = testing::internal::GetCapturedStdout();
  EXPECT_NE(high.find("no configuration is predicted to meet the SLO: aims at its best"),
            std::string::npos)
      << high;
}

// muxflow's scene (seed 001): every GPU's SysMonitor state, and why the job went where it did.
TEST(CliTest, ExplainMuxflowShowsEachGpusStateAndTheMatch) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "muxflow"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("muxflow: offline job-6 (train/resnet50); matching on, dynamic SM on"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("matched at t=72000s to GPU-"), std::string::npos) << out;
  EXPECT_NE(out.find("(next best of 3 free GPUs"), std::string::npos) << out;
  EXPECT_NE(out.find("(service translate-1): Healthy"), std::string::npos) << out;
  // The GPU it was matched to and GPU 3 (VGG16) now share; the other two still offer a share.
  size_t sharing = 0;
  for (size_t at = out.find("shares with 1 offline job(s)"); at != std::string::npos;
       at = out.find("shares with 1 offline job(s)", at + 1)) {
    ++sharing;
  }
  EXPECT_EQ(sharing, 2u) << out;
  // An inference app is not an offline job.
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"explain", "--policy", "muxflow", "--app", "onnx/resnet50"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("not one of the catalogue's `training`"),
            std::string::npos);
}

// The memory-sharing policies' scene (seeds 003 and 004): which check let the engine in on each
// GPU. On GPU 1 the use is an exact ramp 4,000 + 400 t: AR(1) forecasts 15,600 + 400 = 16,000 MiB,
// and 32,768 − 16,000 = 16,768 MiB free. resource-aware's checks 2 and 3 size the engine by the
// most an engine of its application was seen holding (`resize`): engine-3's 15,600 MiB, which
// fits there (and in GPU 0's 32,768 − 14,120 = 18,648 by CBP).
TEST(CliTest, ExplainMemorySharingShowsTheCheckThatLetThePodIn) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "resource-aware"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("agnostic: 28672 of 32768 MiB requested → 4096 MiB free < 14336"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("in by CBP"), std::string::npos) << out;
  EXPECT_NE(out.find("resized to its application's seen peak, 15600 MiB"), std::string::npos)
      << out;
  EXPECT_NE(out.find("AR(1) 400.0 + 1.000·15600 = 16000 MiB + 0 MiB not yet seen → 16768 MiB "
                     "free ≥ 15600: in"),
            std::string::npos)
      << out;
  // Kube-Knots' CBP refuses the GPU whose series moves with the pod's own history.
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "knots-cbp"}), 0);
  const std::string knots = testing::internal::GetCapturedStdout();
  EXPECT_NE(knots.find("memory r 1.000 ≥ 0.5"), std::string::npos) << knots;
  EXPECT_NE(knots.find("CBP refuses (correlated)"), std::string::npos) << knots;
  EXPECT_NE(knots.find("in by CBP"), std::string::npos) << knots;
}

TEST(CliTest, OverprovisionWritesItsJsonAndReport) {
  const std::string dir = testing::TempDir() + "/overprovision_cli";
  testing::internal::CaptureStdout();
  EXPECT_EQ(
      RunArgs({"simulate", "--experiment", "overprovision", "--seed", "1", "--policy",
               "whole-gpu,resource-aware{\"peak_prediction\":false}", "--json", "--out", dir}),
      0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j["experiment"], "overprovision");
  // 2 mixes × 2 policies × 6 percentages.
  ASSERT_EQ(j["results"].size(), 24u);
  EXPECT_EQ(j["results"][0]["policy"], "whole-gpu");
  EXPECT_EQ(j["results"][6]["policy"], "resource-aware{\"peak_prediction\":false}");
  EXPECT_EQ(j["results"][0]["oom_kills"], 0.0);  // one engine per GPU never runs out
  EXPECT_TRUE(std::ifstream(dir + "/report.html").good());
  EXPECT_TRUE(std::ifstream(dir + "/report.json").good());
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "overprovision", "--policy", "fifo"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("fifo"), std::string::npos);
}

TEST(CliTest, KnotsWritesItsJsonAndReport) {
  const std::string dir = testing::TempDir() + "/knots_cli";
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "knots", "--seed", "1", "--policy",
                     "whole-gpu,knots-pp", "--json", "--out", dir}),
            0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j["experiment"], "knots");
  // Three mixes × two policies, mix by mix.
  ASSERT_EQ(j["results"].size(), 6u);
  const std::array<std::string, 3> mixes = {"inference-heavy", "mixed", "batch-heavy"};
  for (size_t m = 0; m < mixes.size(); ++m) {
    const nlohmann::json& uniform = j["results"][2 * m];
    const nlohmann::json& pp = j["results"][2 * m + 1];
    EXPECT_EQ(uniform["mix"], mixes[m]);
    EXPECT_EQ(pp["mix"], uniform["mix"]);
    EXPECT_EQ(uniform["policy"], "whole-gpu");
    EXPECT_EQ(uniform["oom_kills"], 0.0);
    EXPECT_LT(pp["jct_s_mean"].get<double>(), uniform["jct_s_mean"].get<double>()) << m;
  }
  EXPECT_TRUE(std::ifstream(dir + "/report.html").good());
  EXPECT_TRUE(std::ifstream(dir + "/report.json").good());
}

TEST(CliTest, DisaggregationRunsOneScenarioOfTheGivenNodes) {
  // --cluster-nodes N: one scenario of N nodes with 002's 32 jobs a node (512 / 16).
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "disaggregation", "--seed", "1", "--policy",
                     "first-fit", "--cluster-nodes", "2", "--json"}),
            0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["scenario"], "nodes=2,jobs=64");
  EXPECT_EQ(j["results"][0]["jobs_done"], 64.0);
  // Past eight times 002's largest scenario it is a usage error naming the flag.
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "disaggregation", "--seed", "1", "--cluster-nodes",
                     "1025"}),
            2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--cluster-nodes 1025"), std::string::npos);
}

TEST(CliTest, DisaggregationWritesItsJsonAndReport) {
  const std::string dir = testing::TempDir() + "/disaggregation_cli";
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "disaggregation", "--seed", "1", "--policy",
                     "drmaestro{\"disaggregate\":false},drmaestro", "--json", "--out", dir}),
            0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j["experiment"], "disaggregation");
  ASSERT_EQ(j["results"].size(), 4u);  // 2 scenarios × 2 policies
  EXPECT_EQ(j["results"][0]["scenario"], "nodes=16,jobs=512");
  EXPECT_EQ(j["results"][2]["scenario"], "nodes=128,jobs=4096");
  EXPECT_EQ(j["results"][1]["policy"], "drmaestro");
  for (const nlohmann::json& r : j["results"]) {
    for (const char* key : {"makespan_s", "qos_violations", "jobs_done", "pending_s_mean"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
  }
  EXPECT_EQ(j["results"][0]["remote_jobs"], 0.0);
  EXPECT_LT(j["results"][1]["makespan_s"].get<double>(),
            j["results"][0]["makespan_s"].get<double>());
  EXPECT_TRUE(std::ifstream(dir + "/report.html").good());
  EXPECT_TRUE(std::ifstream(dir + "/report.json").good());
  // explain prints drmaestro's two networks and the fate of each job.
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "drmaestro"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("phase 2 (GPUs)"), std::string::npos) << out;
  EXPECT_NE(out.find("waiting was cheaper"), std::string::npos) << out;
  EXPECT_NE(out.find("job 6: W 1"), std::string::npos) << out;
  // Network-aware, the saturated link of k80-2 (the Iperf-like job) takes no job, and the jobs
  // that every placement left would slow past their goal are postponed.
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", R"(drmaestro{"network_aware":true})"}), 0);
  const std::string aware = testing::internal::GetCapturedStdout();
  EXPECT_NE(aware.find("postponed"), std::string::npos) << aware;
  EXPECT_EQ(aware.find("on k80-2"), std::string::npos) << aware;
  EXPECT_NE(out.find("on k80-2"), std::string::npos) << out;  // plain drmaestro uses it
}

TEST(CliTest, OnlineOfflineWritesItsJsonAndReport) {
  const std::string dir = testing::TempDir() + "/online_offline_cli";
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "online-offline", "--seed", "1", "--policy",
                     "online-only", "--json", "--out", dir}),
            0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j["experiment"], "online-offline");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["policy"], "online-only");
  EXPECT_EQ(j["results"][0]["executions"], 0.0);
  EXPECT_GT(j["results"][0]["online_latency_p99_ms"].get<double>(),
            j["results"][0]["online_latency_mean_ms"].get<double>());
  EXPECT_TRUE(std::ifstream(dir + "/report.html").good());
  EXPECT_TRUE(std::ifstream(dir + "/report.json").good());
  // Its policies are the experiment's variants: anything else is a usage error.
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"simulate", "--experiment", "online-offline", "--policy", "fifo"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown policy 'fifo'"),
            std::string::npos);
}

// The breakdown's values and their order; how the columns are spaced is not the contract.
TEST(CliTest, ExplainPrintsTheBreakdownBestFirst) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  // The arriving pod: workload 3, onnx/resnet50, its 1400 MiB footprint rounded up to 1536.
  EXPECT_NE(out.find("predictive: workload 3 (onnx/resnet50-3), app onnx/resnet50, SLO "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("QPS, GPU memory 1536 MiB\n"), std::string::npos) << out;

  std::istringstream lines(out);
  int announced = -1;
  std::vector<double> scores;
  std::vector<std::string> nodes;
  bool filtered = false, cpu_filtered = false, v100_runs_both = false;
  int v100_members = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> w = Words(line);
    if (w.size() > 3 && w[1] == "candidate" && w[2] == "partition") announced = std::stoi(w[0]);
    if (w.size() > 3 && w[0] == "score" && w[2] == "node") {
      scores.push_back(std::stod(w[1]));
      nodes.push_back(w[3]);
      v100_members = 0;
    }
    // Member rows of a v100 option: the two running pods, ids 1 and 2.
    if (!nodes.empty() && nodes.back() == "v100" && w.size() > 2) {
      if ((w[0] == "1" && w[1] == "tf/mobilenet") || (w[0] == "2" && w[1] == "onnx/ssd-mobilenet"))
        ++v100_members;
      if (v100_members == 2) v100_runs_both = true;
    }
    if (line == "filtered nodes:") filtered = true;
    if (filtered && w.size() >= 4 && w[0] == "cpu:" && w[1] == "no" && w[2] == "available" &&
        w[3] == "GPU")
      cpu_filtered = true;
  }
  ASSERT_GT(announced, 0) << out;
  EXPECT_EQ(scores.size(), static_cast<size_t>(announced)) << out;
  EXPECT_TRUE(std::is_sorted(scores.rbegin(), scores.rend())) << out;  // best first
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "v100"), nodes.end()) << out;
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "a30"), nodes.end()) << out;
  EXPECT_EQ(std::find(nodes.begin(), nodes.end(), "cpu"), nodes.end()) << out;
  EXPECT_TRUE(v100_runs_both) << out;
  EXPECT_TRUE(cpu_filtered) << out;

  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--slo", "50"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find(", SLO 50.00 QPS,"), std::string::npos);
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"explain", "--policy", "min"}), 0);  // any policy explains itself
  EXPECT_NE(testing::internal::GetCapturedStdout().find("policy min for workload 3 "
                                                        "(onnx/resnet50-3):\n"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"explain", "--app", "no/such-app"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "tessera explain: --app: unknown application 'no/such-app'"),
            std::string::npos);
}

TEST(CliTest, PredictEvaluateReportsTheIssueFieldsAndErrorBySparsity) {
  // Throughput 100 * 2^row * 3^col: the bias model is exact in log space.
  const std::string path = testing::TempDir() + "/cli_profile.csv";
  {
    std::ofstream out(path);
    out << "row,column,value\n";
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 4; ++c)
        out << "app" << r << ",cfg" << c << "," << 100.0 * (1 << r) * std::pow(3.0, c) << "\n";
  }
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"predict", "evaluate", "--data", path, "--method", "baseline", "--protocol",
                     "leave-one-row-out", "--keep", "1", "--json"}),
            0);
  const std::string out = testing::internal::GetCapturedStdout();
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << out;
  for (const char* field : {"method", "protocol", "keep", "n", "mape", "median_ape", "p90_ape",
                            "rmse_log", "coverage90", "by_known"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_EQ(j["protocol"], "leave-one-row-out");
  EXPECT_EQ(j["n"], 6 * 3);  // every row keeps 1 of its 4 cells
  // Exact up to the bias model's λ = 1e-3 shrinkage of a one-cell row's level (per cent).
  EXPECT_LT(j["median_ape"].get<double>(), 0.5);
  ASSERT_EQ(j["by_known"].size(), 1u);
  EXPECT_EQ(j["by_known"][0]["known"], 1);
  EXPECT_EQ(j["by_known"][0]["n"], 18);

  const std::string bad = testing::TempDir() + "/cli_bad_profile.csv";
  std::ofstream(bad) << "row,column,value\napp0,cfg0,10\napp0,cfg1,fast\n";
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "evaluate", "--data", bad}), 1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(bad + ":3"), std::string::npos);
}

// Throughput 100 * 2^row * 3^col for 6 apps on 4 configurations, as a long CSV.
std::string ExactProfile(const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream out(path);
  out << "row,column,value\n";
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 4; ++c)
      out << "app" << r << ",cfg" << c << "," << 100.0 * (1 << r) * std::pow(3.0, c) << "\n";
  return path;
}

TEST(CliTest, PredictMethodsSeedsRowsOutAndFeatures) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"predict", "methods"}), 0);
  const std::string names = testing::internal::GetCapturedStdout();
  EXPECT_EQ(names, "svd\nimputer\nhybrid\nknn\nbaseline\nfeatures\n");

  const std::string path = ExactProfile("cli_profile_seeds.csv");
  // --missing means nothing to leave-one-row-out: a usage error, not a silent ignore.
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "evaluate", "--data", path, "--protocol", "leave-one-row-out",
                     "--missing", "0.3"}),
            2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--missing applies to --protocol random"),
            std::string::npos);

  // Three seeds: three per-seed results and their median; --out lists every hidden cell.
  const std::string cells = testing::TempDir() + "/cli_cells.csv";
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunArgs({"predict", "evaluate", "--data", path, "--method", "baseline", "--seeds", "3",
                     "--rows", "app[0-2]", "--missing", "0.5", "--out", cells, "--json"}),
            0);
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout(), nullptr,
                                                 /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["seeds"].size(), 3u);
  EXPECT_EQ(j["seeds"][2]["seed"], 3);
  EXPECT_TRUE(j["median_over_seeds"].contains("p90_ape"));
  std::ifstream in(cells);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "seed,app,config,known,truth,predicted,low90,high90");
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    // Only app0..app2 had cells hidden.
    EXPECT_TRUE(line.find(",app0,") != std::string::npos ||
                line.find(",app1,") != std::string::npos ||
                line.find(",app2,") != std::string::npos)
        << line;
  }
  int hidden = 0;
  for (const auto& seed : j["seeds"]) hidden += seed["n"].get<int>();
  EXPECT_EQ(rows, hidden);

  // A malformed feature file: exit 1 and file:line.
  const std::string features = testing::TempDir() + "/cli_features.csv";
  std::ofstream(features) << "app,feature,value\napp0,batch,8\napp1,Batch!,8\n";
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "evaluate", "--data", path, "--features", features}), 1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(features + ":3"), std::string::npos);
}

TEST(CliTest, PredictSweepWritesThePlotAndTheTable) {
  const std::string path = ExactProfile("cli_profile_sweep.csv");
  const std::string dir = testing::TempDir() + "/cli_sweep";
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "sweep", "--data", path, "--methods", "baseline", "svd",
                     "--missing", "0.25", "0.5", "--seeds", "2", "--out", dir, "--json"}),
            0);
  testing::internal::GetCapturedStderr();
  const nlohmann::json j = nlohmann::json::parse(testing::internal::GetCapturedStdout(), nullptr,
                                                 /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["points"].size(), 4u);  // 2 methods x 2 sparsities
  EXPECT_EQ(j["points"][0]["method"], "baseline");
  EXPECT_EQ(j["points"][1]["missing"], 0.5);
  EXPECT_EQ(j["points"][0]["per_seed"]["median_ape"].size(), 2u);
  // The bias model is exact here (up to its tiny shrinkage).
  EXPECT_LT(j["points"][0]["median_ape"].get<double>(), 0.5);
  std::ifstream svg(dir + "/fig7_1.svg");
  std::stringstream buffer;
  buffer << svg.rdbuf();
  const std::string text = buffer.str();
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '<') > 10, true);  // axes, lines, legend
  EXPECT_NE(text.find("baseline"), std::string::npos);
  // An unknown method is a usage error.
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunArgs({"predict", "sweep", "--data", path, "--methods", "magic"}), 2);
  testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace tessera::cli
