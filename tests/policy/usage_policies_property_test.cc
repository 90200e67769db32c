// Property: the five policies that share GPUs by memory (gpushare, resource-aware, knots-resag,
// knots-cbp, knots-pp), driven through the scheduler core for 600 one-second steps of random
// arrivals and departures with over-provisioned requests, keep every ClusterState invariant
// after every cycle, and keep to their own rules: a GPU shared by memory hosts only memory
// shares (never beside a whole-GPU pod, never on a MIG GPU); the request-packers never let
// requests exceed a GPU's memory; the usage-aware three reserve no memory and do pack beyond
// the requests. The cluster: two nodes of two V100-32GB, one A100-40GB node, and an A30 with
// MIG on. Telemetry, as DCGM at 1 Hz: each pod uses 25–40 % of its request (±3 % noise), SM
// activity and bandwidth at random; per GPU the sums, per pod its own series by name,
// forgotten when it leaves.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <map>

#include "base/clock.h"
#include "base/rng.h"
#include "model/mig.h"
#include "policy/registry.h"
#include "policy/usage_view.h"
#include "sched/scheduler.h"
#include "telemetry/telemetry.h"
#include "usage_fixtures.h"

namespace tessera::policy {
namespace {

using model::ClusterState;

ClusterState Cluster() {
  ClusterState c;
  testing::AddV100Nodes(c, 2, 2);
  EXPECT_TRUE(
      c.AddNode(model::UniformNode("a100", *model::FindGpuModel("A100-40GB"), 1, 64000, 1 << 20)));
  const model::GpuModel& a30 = model::GetGpuModel(*model::FindGpuModel("A30-24GB"));
  EXPECT_TRUE(c.AddNode(model::UniformNode("a30", *model::FindGpuModel("A30-24GB"), 1, 64000,
                                           1 << 20, model::ValidLayouts(a30).front())));
  return c;
}

struct Running {
  Workload w;
  double use = 0;  // fraction of its request in use
};

class UsagePoliciesProperty : public ::testing::TestWithParam<const char*> {};

TEST_P(UsagePoliciesProperty, EveryCycleKeepsTheInvariantsAndThePolicysRules) {
  const std::string name = GetParam();
  const bool by_request = name == "gpushare" || name == "knots-resag";
  ClusterState c = Cluster();
  telemetry::StaticTelemetry telemetry;
  ManualClock clock;
  Rng rng(17);
  auto policy = MakePolicy(name, {.rng = &rng, .clock = &clock, .telemetry = &telemetry}, {});
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  sched::Scheduler s(c, **policy, clock, rng, {});
  std::map<model::WorkloadId, Running> running;  // placed, with their use
  model::WorkloadId next = 1;
  int bound = 0, overcommitted = 0, whole = 0;
  for (int step = 0; step < 600; ++step) {
    const double t = step;
    clock.Set(t + 0.5);
    // Arrivals: memory shares of apps a..d asking 4–16 GiB at 300 % over-provisioning, now and
    // then a whole GPU; departures at random.
    if (rng.Uniform() < 0.35) {
      Workload w = testing::MemoryPod(next, 0, fmt::format("{}", char('a' + rng.Below(4))), t);
      w.gpu.memory_mib = rng.Uniform() < 0.1 ? 0 : 1024 * (4 + int(rng.Below(13)));
      ++next;
      ASSERT_TRUE(s.Submit(w));
    }
    if (!running.empty() && rng.Uniform() < 0.25) {
      auto it = running.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng.Below(running.size())));
      ASSERT_TRUE(s.Finish(it->first));
      telemetry.Forget(it->second.w.name);
      running.erase(it);
    }
    // Telemetry of the second that just ended.
    std::map<GpuIndex, double> gpu_used;
    for (const auto& [id, r] : running) {
      const GpuIndex g = c.partition(c.Find(id)->placement.slices.at(0).partition).gpu;
      const double used = r.use * static_cast<double>(r.w.gpu.memory_mib) * rng.Uniform(0.97, 1.03);
      gpu_used[g] += used;
      telemetry.AddMemorySample(r.w.name, t, used);
      telemetry.AddSmActivitySample(r.w.name, t, rng.Uniform(0.05, 0.6));
      telemetry.AddBandwidthSample(r.w.name, t, rng.Uniform(0.01, 0.4));
    }
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      telemetry.AddMemorySample(c.gpu(g).uuid, t, gpu_used[g]);
      telemetry.AddSmActivitySample(c.gpu(g).uuid, t, rng.Uniform(0.05, 0.9));
      telemetry.AddBandwidthSample(c.gpu(g).uuid, t, rng.Uniform(0.01, 0.5));
    }

    const sched::CycleStats st = s.RunCycle();
    bound += st.bound;
    const Expected<void> ok = c.CheckInvariants();
    ASSERT_TRUE(ok.has_value()) << name << " step " << step << ": " << ok.error().message;
    ASSERT_EQ(s.totals().policy_errors, 0) << name << " step " << step;
    for (const auto& [id, pw] : c.placed()) {
      if (!running.contains(id)) running[id] = {pw.workload, rng.Uniform(0.25, 0.4)};
    }
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      const model::Gpu& gpu = c.gpu(g);
      int shares = 0, others = 0;
      for (const model::Partition& p : c.partitions_of(g)) {
        for (const model::Client& cl : p.clients) {
          const Workload& w = c.Find(cl.workload)->workload;
          if (SharesByMemory(w)) {
            ++shares;
            ASSERT_TRUE(cl.best_effort) << name << " step " << step;
            ASSERT_EQ(cl.memory_mib, by_request ? w.gpu.memory_mib : 0) << name;
          } else {
            ++others;
          }
        }
      }
      ASSERT_TRUE(shares == 0 || (others == 0 && !gpu.mig)) << name << " step " << step;
      whole += others > 0 && !gpu.mig;
      if (shares == 0) continue;
      const int64_t requested = RequestedMib(g, c);
      if (by_request) {
        ASSERT_LE(requested, CapacityMib(g, c)) << name << " step " << step;
      }
      overcommitted += requested > CapacityMib(g, c);
    }
    // Explain works for whatever waits.
    if (step % 100 == 0 && s.pending_count() > 0) {
      const std::string why = (*policy)->Explain(*s.pending().front(), c);
      EXPECT_NE(why.find("policy " + name), std::string::npos) << why;
    }
  }
  EXPECT_GT(bound, 100) << name;
  EXPECT_GT(whole, 0) << name;
  if (by_request) {
    EXPECT_EQ(overcommitted, 0) << name;
  } else {
    EXPECT_GT(overcommitted, 50) << name << ": packs by use beyond the requests";
  }
}

INSTANTIATE_TEST_SUITE_P(MemorySharing, UsagePoliciesProperty,
                         ::testing::Values("gpushare", "resource-aware", "knots-resag", "knots-cbp",
                                           "knots-pp"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace tessera::policy
