// Property (seeds 003 and 004): the five policies that share GPUs by memory, driven by the
// simulator on applications whose use grows past what their pods request (sim/usage.h), so GPUs run
// out of memory and pods crash and relaunch in place. After every scheduling cycle every
// ClusterState invariant holds; every workload ends, none failed or lost; a crash never moves a
// workload; the request-blind packers (gpushare, knots-resag) crash pods, which is what CBP and PP
// exist for. The cluster: two nodes of two V100-32GB (32,768 MiB). 160 pods of three applications
// arrive over 400 s asking 4–16 GiB each, whatever they will use:
//  - "steady" holds 3,000 MiB for 20 s, then 6,000 MiB;
//  - "grower" holds 2,000 MiB for 10 s, 8,000 MiB for 30 s, then 14,000 MiB;
//  - "bursty" alternates 4,000 and 5,000 MiB every 15 s, and bursts to 12,000 MiB (SM 0.9,
//    bandwidth 0.8) for the last 3 s of every 40 s.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/clock.h"
#include "base/rng.h"
#include "policy/registry.h"
#include "policy/usage_fixtures.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {
namespace {

AppCatalog Apps() {
  auto c = ParseAppCatalog(R"(
reference_gpu: A100-40GB
apps:
  - key: steady
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 100
    usage:
      phases:
        - {duration_s: 20, memory_mib: 3000, sm: 0.2, bandwidth: 0.1}
        - {duration_s: 1, memory_mib: 6000, sm: 0.3, bandwidth: 0.2}
  - key: grower
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 100
    usage:
      phases:
        - {duration_s: 10, memory_mib: 2000, sm: 0.1, bandwidth: 0.05}
        - {duration_s: 30, memory_mib: 8000, sm: 0.4, bandwidth: 0.2}
        - {duration_s: 1, memory_mib: 14000, sm: 0.5, bandwidth: 0.3}
  - key: bursty
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 100
    usage:
      repeat: loop
      phases:
        - {duration_s: 15, memory_mib: 4000, sm: 0.1, bandwidth: 0.05}
        - {duration_s: 15, memory_mib: 5000, sm: 0.3, bandwidth: 0.1}
      burst: {period_s: 40, duration_s: 3, memory_mib: 12000, sm: 0.9, bandwidth: 0.8}
)",
                           "oom-property.yaml");
  EXPECT_TRUE(c) << c.error().message;
  return *c;
}

// The policy under test, checking the cluster's invariants whenever the core calls it at the
// end of a cycle (AfterCycle: every cycle, after its placements).
class Checking final : public policy::Policy {
 public:
  explicit Checking(policy::Policy& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  bool CustomOrder() const override { return inner_.CustomOrder(); }
  void Order(std::vector<const model::Workload*>& pending) const override { inner_.Order(pending); }
  policy::Feasibility Filter(const model::Workload& w, model::NodeIndex node,
                             const model::ClusterState& c) const override {
    return inner_.Filter(w, node, c);
  }
  OfferInputs OffersDependOn() const override { return inner_.OffersDependOn(); }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex node,
                                         const model::ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  bool Batches() const override { return inner_.Batches(); }
  std::optional<std::vector<policy::Candidate>> PlaceBatch(
      std::span<const model::Workload* const> pending, const model::ClusterState& c) override {
    return inner_.PlaceBatch(pending, c);
  }
  std::optional<std::optional<model::MigLayout>> Reshape(model::GpuIndex g,
                                                         const model::ClusterState& c) override {
    return inner_.Reshape(g, c);
  }
  policy::CycleActions AfterCycle(const model::ClusterState& c) override {
    ++checks;
    if (auto ok = c.CheckInvariants(); !ok && first_violation.empty()) {
      first_violation = ok.error().message;
    }
    return inner_.AfterCycle(c);
  }
  std::string Explain(const model::Workload& w, const model::ClusterState& c) override {
    return inner_.Explain(w, c);
  }

  int checks = 0;
  std::string first_violation;

 private:
  policy::Policy& inner_;
};

class UsageOomProperty : public ::testing::TestWithParam<const char*> {};

TEST_P(UsageOomProperty, CrashesRelaunchInPlaceAndEveryCycleKeepsTheInvariants) {
  const std::string name = GetParam();
  model::ClusterState c;
  policy::testing::AddV100Nodes(c, 2, 2);
  telemetry::StaticTelemetry telemetry;
  ManualClock clock;
  Rng rng(23);
  auto inner =
      policy::MakePolicy(name, {.rng = &rng, .clock = &clock, .telemetry = &telemetry}, {});
  ASSERT_TRUE(inner.has_value()) << inner.error().message;
  Checking policy(**inner);
  Physics physics(Apps(), 5);
  Engine engine(c, policy, physics, rng, {.telemetry = &telemetry, .clock = &clock});
  Rng draw(99);
  const char* apps[] = {"steady", "grower", "bursty"};
  for (model::WorkloadId id = 1; id <= 160; ++id) {
    model::Workload w = policy::testing::MemoryPod(id, 1024 * (4 + int64_t(draw.Below(13))),
                                                   apps[draw.Below(3)], draw.Uniform(0, 400));
    w.queries = 2000 + int64_t(draw.Below(4000));
    ASSERT_TRUE(engine.Add(w));
  }
  const EngineResult r = engine.Run();
  EXPECT_TRUE(policy.first_violation.empty()) << name << ": " << policy.first_violation;
  EXPECT_GT(policy.checks, 100) << name;
  int kills = 0, killed = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    ASSERT_TRUE(o.end_s.has_value()) << name << ": workload " << o.workload.id << " never ended";
    EXPECT_FALSE(o.failed) << name << ": " << o.failure;
    EXPECT_EQ(o.moves, 0) << name;  // a crash relaunches in place
    EXPECT_DOUBLE_EQ(o.queries_done, static_cast<double>(o.workload.queries));
    kills += o.oom_kills;
    killed += o.oom_kills > 0;
  }
  EXPECT_TRUE(c.CheckInvariants().has_value());
  EXPECT_EQ(c.placed_count(), 0u);
  std::printf("%s: %d OOM kills of %d workloads, makespan %.0f s\n", name.c_str(), kills, killed,
              r.end_s - r.first_arrival_s);
  if (name == "gpushare" || name == "knots-resag") {
    EXPECT_GT(kills, 0) << name << ": packing by request under growing use must crash pods";
  }
}

INSTANTIATE_TEST_SUITE_P(MemorySharing, UsageOomProperty,
                         ::testing::Values("gpushare", "resource-aware", "knots-resag", "knots-cbp",
                                           "knots-pp"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace tessera::sim
