// The core's kept Filter verdicts (OfferInputs::node_local_filter), its kept rankings
// (node_local_score: every policy here but random) and the fragmentation policies' kept offers
// (issue #39) never change a decision: on random clusters changed at random — arrivals of random
// shapes, departures, nodes going down and coming back, GPUs taken away — a scheduler whose policy
// declares node_local_filter binds every workload where, and fails it why, a scheduler with an
// exhaustive twin does: one that declares nothing (Filter on every node, every time; every node
// scored) and, for fgd and frag-pack, builds a fresh policy for every workload (no offer kept from
// an earlier state).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "model/mig.h"
#include "policy/frag.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace tessera::policy {
namespace {

using model::ClusterState;

// Forwards to a policy made by `make`, counting Filter calls; `exhaustive`: declares no kept
// verdicts and, when `fresh`, makes a new policy whenever a new workload is scored.
class Probe final : public Policy {
 public:
  Probe(std::function<std::unique_ptr<Policy>()> make, bool exhaustive, bool fresh)
      : make_(std::move(make)), inner_(make_()), exhaustive_(exhaustive), fresh_(fresh) {}
  std::string_view name() const override { return inner_->name(); }
  Feasibility Filter(const Workload& w, NodeIndex n, const ClusterState& c) const override {
    ++filters;
    Renew(w);
    return inner_->Filter(w, n, c);
  }
  OfferInputs OffersDependOn() const override {
    OfferInputs in = inner_->OffersDependOn();
    if (exhaustive_) in.node_local_filter = in.node_local_score = false;
    return in;
  }
  std::optional<Candidate> Score(const Workload& w, NodeIndex n, const ClusterState& c) override {
    Renew(w);
    return inner_->Score(w, n, c);
  }
  bool ScoreInto(const Workload& w, NodeIndex n, const ClusterState& c, Candidate& out) override {
    ++scores;
    Renew(w);
    if (exhaustive_) return Policy::ScoreInto(w, n, c, out);  // through Score
    return inner_->ScoreInto(w, n, c, out);
  }
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex g, const ClusterState& c) override {
    return inner_->Reshape(g, c);
  }
  mutable int filters = 0;
  int scores = 0;

 private:
  void Renew(const Workload& w) const {
    if (fresh_ && w.id != last_) inner_ = make_();
    last_ = w.id;
  }
  std::function<std::unique_ptr<Policy>()> make_;
  mutable std::unique_ptr<Policy> inner_;
  bool exhaustive_, fresh_;
  mutable WorkloadId last_ = 0;
};

// 30 nodes of V100s, A30s (MIG off, or cut in 2g+2g or 1g×4) and T4s.
ClusterState RandomCluster(Rng& rng) {
  ClusterState c;
  const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
  const model::GpuModelId a30 = *model::FindGpuModel("A30-24GB");
  const model::GpuModelId t4 = *model::FindGpuModel("T4");
  const char* layouts[] = {"2g.12gb@0,2g.12gb@2", "1g.6gb@0,1g.6gb@1,1g.6gb@2,1g.6gb@3"};
  for (int n = 0; n < 30; ++n) {
    const int kind = static_cast<int>(rng.Below(3));
    const int gpus = 1 + static_cast<int>(rng.Below(4));
    const int64_t cpu = 8000 + 4000 * static_cast<int64_t>(rng.Below(4));
    const int64_t mem = 32768 * (1 + static_cast<int64_t>(rng.Below(3)));
    const std::string name = fmt::format("n{}", n);
    model::NodeSpec spec;
    if (kind == 1 && rng.Below(2) == 0) {
      auto layout = model::ParseLayout(model::GetGpuModel(a30), layouts[rng.Below(2)]);
      EXPECT_TRUE(layout.has_value());
      spec = model::UniformNode(name, a30, gpus, cpu, mem, *layout);
    } else {
      spec = model::UniformNode(name, kind == 0 ? v100 : kind == 1 ? a30 : t4, gpus, cpu, mem);
    }
    EXPECT_TRUE(c.AddNode(spec).has_value());
  }
  return c;
}

Workload RandomWorkload(Rng& rng, WorkloadId id, double now) {
  Workload w;
  w.id = id;
  w.name = fmt::format("w{}", id);
  w.arrival_s = now;
  // A few dozen shapes, so that shapes recur (kept verdicts are per shape).
  w.cpu_milli = rng.Below(2) == 0 ? 1000 : 6000;
  w.memory_mib = 4096;
  const int kind = static_cast<int>(rng.Below(5));
  const int shares[] = {250, 500, 700};
  if (kind <= 2) {
    w.gpu.count = 1;
    w.gpu.milli = shares[kind];
    if (rng.Below(10) == 0) w.gpu.memory_mib = 6144;
  } else {
    w.gpu.count = kind == 3 ? 1 : 2;
    w.gpu.milli = 1000;
  }
  if (rng.Below(10) == 0) w.gpu.models = {*model::FindGpuModel("T4")};
  return w;
}

// What a run did: each bind (workload, node, slices) and each failure (workload, why).
struct Trace {
  std::vector<std::string> events;
  int filters = 0;
  int scores = 0;
};

Trace Replay(const std::string& name, uint64_t seed, bool exhaustive) {
  Rng rng(seed);
  ClusterState c = RandomCluster(rng);
  std::vector<PodShape> typical = {{1000, 1, 500, 0, 0.5}, {2000, 1, 1000, 0, 0.5}};
  const ShapeDistribution pods(typical);
  Rng policy_rng(seed + 1);
  ManualClock clock;
  PolicyContext context{.rng = &policy_rng, .clock = &clock, .typical_pods = &pods};
  const bool fresh = exhaustive && (name == "fgd" || name == "frag-pack");
  Probe probe(
      [&] {
        auto p = MakePolicy(name, context);
        EXPECT_TRUE(p.has_value()) << name;
        return std::move(*p);
      },
      exhaustive, fresh);
  Trace trace;
  sched::Hooks hooks;
  hooks.bind = [&](const Workload& w, const model::Placement& p,
                   const model::Environment&) -> Expected<void> {
    std::string e = fmt::format("bind {} on {}:", w.id, p.node);
    for (const model::Slice& s : p.slices)
      e += fmt::format(" {}/{}/{}", s.partition, s.milli, s.memory_mib);
    trace.events.push_back(e);
    return {};
  };
  hooks.unschedulable = [&](const Workload& w, const std::string& why, bool) {
    trace.events.push_back(fmt::format("fail {}: {}", w.id, why));
  };
  Rng sched_rng(seed + 2);
  sched::Scheduler s(c, probe, clock, sched_rng, hooks, {.drop_unschedulable = true});
  std::vector<WorkloadId> running;
  WorkloadId next = 1;
  for (int step = 0; step < 600; ++step) {
    clock.Advance(1);
    const uint64_t what = rng.Below(10);
    if (what < 6) {
      EXPECT_TRUE(s.Submit(RandomWorkload(rng, next++, clock.Now())).has_value());
    } else if (what < 8 && !running.empty()) {
      const size_t i = rng.Below(running.size());
      EXPECT_TRUE(s.Finish(running[i]).has_value());
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (what == 8) {
      const model::NodeIndex n = static_cast<model::NodeIndex>(rng.Below(c.node_count()));
      c.SetNodeReady(n, !c.node(n).ready);
    } else {
      const GpuIndex g = static_cast<GpuIndex>(rng.Below(c.gpu_count()));
      if (c.gpu(g).idle() || !c.gpu(g).available) c.SetGpuAvailable(g, !c.gpu(g).available);
    }
    s.RunCycle();
    running.clear();
    for (const auto& [id, pw] : c.placed()) running.push_back(id);
    std::sort(running.begin(), running.end());
  }
  trace.filters = probe.filters;
  trace.scores = probe.scores;
  return trace;
}

class KeptVerdictsProperty : public ::testing::TestWithParam<std::tuple<std::string, uint64_t>> {};

TEST_P(KeptVerdictsProperty, KeptAndExhaustiveSchedulersDecideAlike) {
  const auto& [name, seed] = GetParam();
  const Trace kept = Replay(name, seed, false);
  const Trace exhaustive = Replay(name, seed, true);
  ASSERT_EQ(kept.events.size(), exhaustive.events.size());
  for (size_t i = 0; i < kept.events.size(); ++i) {
    ASSERT_EQ(kept.events[i], exhaustive.events[i]) << "event " << i;
  }
  // The verdicts were kept: fewer Filter calls (each cycle changes a node or two of 30, and a
  // shape's verdicts are reused when it comes again).
  EXPECT_LT(kept.filters * 3, exhaustive.filters * 2)
      << kept.filters << " vs " << exhaustive.filters;
  // A ranking kept per shape re-rates only the nodes touched since its shape's last decision
  // (fgd: 0.62-0.65 of the scan's calls; 30 nodes, a few dozen shapes, one or two nodes
  // changed per step).
  if (name != "random") {  // its offers draw from the policy's generator
    EXPECT_LT(kept.scores * 4, exhaustive.scores * 3) << kept.scores << " vs " << exhaustive.scores;
  }
  int binds = 0, fails = 0;
  for (const std::string& e : kept.events) (e.starts_with("bind") ? binds : fails)++;
  EXPECT_GT(binds, 50);  // the runs exercise both outcomes
  EXPECT_GT(fails, 5);
}

INSTANTIATE_TEST_SUITE_P(DeclaringPolicies, KeptVerdictsProperty,
                         ::testing::Combine(::testing::Values("first-fit", "best-fit", "random",
                                                              "dot-product", "gpu-packing",
                                                              "gpu-clustering", "fgd", "frag-pack",
                                                              "whole-gpu", "max"),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return fmt::format("{}_{}", n, std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tessera::policy
