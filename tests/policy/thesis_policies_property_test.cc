// Property: whatever arrives and leaves, no placement the thesis's policies propose (predictive,
// slo-aware and the baselines of Ch. 9.2, plus whole-gpu) breaks a ClusterState invariant. 1,000
// random arrival/departure sequences on a mixed cluster — A30, A100-40GB, H100-80GB (one of each
// with MIG on, one off) and V100-32GB — each replayed under every policy through the scheduler
// core, with reshapes taking effect at once. After every cycle: CheckInvariants, and every
// placement's MPS shares and pinned memory stay within its partition. Telemetry reports each
// running pod at a random 0.5-1.2 x its SLO, so slo-aware also moves pods (resubmitted, as the
// simulator does).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/mig.h"
#include "policy/registry.h"
#include "predict/config_key.h"
#include "predict/predictor.h"
#include "sched/scheduler.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

constexpr const char* kModels[] = {"A30-24GB", "A100-40GB", "H100-80GB", "V100-32GB"};
constexpr int kAppCount = 6;

// Synthetic profile over every (model, profile, MPS %) configuration: app i runs at
// base_i · (compute share)^e_i · (MPS share)^0.5, and about half the cells are observed, so
// the policy scores completed predictions too. Interference: f(i, j) = 0.05 · (1 + (i+j) % 4).
predict::Predictor SyntheticPredictor() {
  Rng rng(7);
  predict::ProfileMatrix m;
  predict::InterferenceMatrices im;
  for (int i = 0; i < kAppCount; ++i) {
    const std::string app = fmt::format("app{}", i);
    const double base = 20.0 + 15.0 * i, e = 0.2 + 0.1 * i;
    for (const char* name : kModels) {
      const model::GpuModel& g = model::GetGpuModel(*model::FindGpuModel(name));
      std::vector<std::pair<std::string, double>> parts = {{"whole", 1.0}};
      for (const model::MigProfile& p : g.mig_profiles) {
        if (p.name.find("+me") == std::string::npos) {
          parts.emplace_back(p.name, static_cast<double>(p.compute_slices) / g.mig_compute_slices);
        }
      }
      for (const auto& [profile, share] : parts) {
        for (int pct : {100, 50, 25}) {
          if (rng.Uniform(0, 1) < 0.5 && !(pct == 100 && profile == "whole")) continue;
          m.Observe(m.AddRow(app), m.AddCol(predict::ConfigKey(name, profile, pct)),
                    base * std::pow(share, e) * std::sqrt(pct / 100.0));
        }
      }
    }
    for (int j = 0; j < kAppCount; ++j) {
      EXPECT_TRUE(im.Observe("mps", app, fmt::format("app{}", j), 0.05 * (1 + (i + j) % 4)));
    }
  }
  auto p = predict::Predictor::Create(std::move(m), std::move(im));
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

model::ClusterState MixedCluster() {
  model::ClusterState c;
  int n = 0;
  for (const char* name : kModels) {
    const model::GpuModelId id = *model::FindGpuModel(name);
    const model::GpuModel& g = model::GetGpuModel(id);
    model::NodeSpec spec;
    spec.name = fmt::format("node-{}", n++);
    spec.cpu_milli = 64000;
    spec.memory_mib = 1 << 20;
    for (int i = 0; i < 2; ++i) {
      model::GpuSpec gpu;
      gpu.model = id;
      if (i == 0 && g.mig_capable()) gpu.mig = model::ValidLayouts(g)[0];
      spec.gpus.push_back(gpu);
    }
    EXPECT_TRUE(c.AddNode(spec).has_value());
  }
  return c;
}

void ExpectSlicesWithinPartitions(const model::ClusterState& c) {
  for (const auto& [id, pw] : c.placed()) {
    for (const model::Slice& s : pw.placement.slices) {
      const model::Partition& part = c.partition(s.partition);
      ASSERT_LE(part.used_milli, 1000) << part.uuid;
      ASSERT_LE(part.used_memory_mib, part.memory_mib) << part.uuid;
      ASSERT_GE(s.milli, 1);
    }
  }
}

TEST(ThesisPoliciesPropertyTest, NoPlacementEverBreaksAnInvariant) {
  const predict::Predictor predictor = SyntheticPredictor();
  const char* policies[] = {"predictive", "slo-aware", "min", "max", "round-robin", "whole-gpu"};
  int bound_total = 0, moves_total = 0;
  for (int seq = 0; seq < 1000; ++seq) {
    for (const char* name : policies) {
      Rng rng(static_cast<uint64_t>(seq) + 1);
      // Telemetry reports each running pod at 0.5-1.2 x its SLO, so slo-aware moves some: the
      // driver resubmits a move, as the simulator does.
      telemetry::StaticTelemetry telemetry;
      PolicyContext ctx{
          .rng = &rng, .predictor = &predictor, .telemetry = &telemetry, .can_move = true};
      auto policy = MakePolicy(name, ctx);
      ASSERT_TRUE(policy.has_value()) << policy.error().message;
      model::ClusterState c = MixedCluster();
      ManualClock clock;
      sched::Scheduler* core = nullptr;
      sched::Hooks hooks;
      hooks.evict = [&](const Workload& w, const Eviction& e) -> Expected<void> {
        EXPECT_TRUE(e.requeue);
        ++moves_total;
        EXPECT_TRUE(core->Submit(w).has_value());
        return {};
      };
      sched::Scheduler s(c, **policy, clock, rng, hooks);
      core = &s;
      // The same sequence for every policy: a fresh generator per (sequence, policy).
      Rng draw(static_cast<uint64_t>(seq) * 7919 + 3);
      std::vector<model::WorkloadId> running;
      for (int step = 0; step < 16; ++step) {
        if (!running.empty() && draw.Uniform(0, 1) < 0.35) {
          const size_t k = draw.Below(running.size());
          ASSERT_TRUE(s.Finish(running[k]).has_value());
          running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          Workload w;
          w.id = seq * 100 + step + 1;
          w.name = fmt::format("w{}", w.id);
          w.app = fmt::format("app{}", draw.Below(kAppCount + 1));  // app6 is unknown
          w.slo_qps = draw.Uniform(5, 80);
          w.cpu_milli = 1000;
          w.memory_mib = 2048;
          w.gpu.count = draw.Uniform(0, 1) < 0.1 ? 2 : 1;
          w.gpu.memory_mib = static_cast<int64_t>(draw.Below(4)) * 3000;
          if (w.gpu.count == 1 && draw.Uniform(0, 1) < 0.2)
            w.gpu.milli = 250 + 250 * static_cast<int>(draw.Below(3));
          ASSERT_TRUE(s.Submit(w).has_value());
        }
        for (const auto& [id, pw] : c.placed()) {
          telemetry.SetWorkloadQps(pw.workload.name, pw.workload.slo_qps * draw.Uniform(0.5, 1.2));
        }
        s.RunCycle();
        // What runs now: a moved workload left (it is queued again) until it is bound anew.
        std::vector<model::WorkloadId> now;
        for (const auto& [id, pw] : c.placed()) {
          now.push_back(id);
          if (std::find(running.begin(), running.end(), id) == running.end()) ++bound_total;
        }
        running = std::move(now);
        const Expected<void> ok = c.CheckInvariants();
        ASSERT_TRUE(ok.has_value())
            << name << " sequence " << seq << " step " << step << ": " << ok.error().message;
        ExpectSlicesWithinPartitions(c);
        ASSERT_EQ(s.totals().policy_errors, 0) << name << " sequence " << seq;
      }
      // No telemetry from here on: nothing is seen below its SLO, so nothing moves.
      for (int step = 0; step < 16; ++step) {
        telemetry.Forget(fmt::format("w{}", seq * 100 + step + 1));
      }
      // slo-aware waits rather than bind below an SLO, but never forever: once everything
      // running finishes, each cycle binds at least the queue's head (on an empty cluster its
      // best configuration is free, and its target is at most that configuration's bound).
      for (int round = 0; std::string_view(name) == "slo-aware" && s.pending_count() > 0; ++round) {
        ASSERT_LT(round, 100) << "sequence " << seq;
        for (model::WorkloadId id : running) ASSERT_TRUE(s.Finish(id).has_value());
        running.clear();
        const size_t before = s.pending_count();
        s.RunCycle();
        ASSERT_LT(s.pending_count(), before) << "sequence " << seq << ": nobody placed";
        for (const auto& [id, pw] : c.placed()) running.push_back(id);
        ASSERT_TRUE(c.CheckInvariants().has_value());
      }
    }
  }
  // The sequences exercise placement, not just refusal, and slo-aware's moves.
  EXPECT_GT(bound_total, 20000);
  EXPECT_GT(moves_total, 100);
}

// Forwards to slo-aware, counting Filter calls; `exhaustive` declares no kept verdicts, so the
// core asks Filter of every node for every workload.
class FilterProbe final : public Policy {
 public:
  FilterProbe(std::unique_ptr<Policy> inner, bool exhaustive)
      : inner_(std::move(inner)), exhaustive_(exhaustive) {}
  std::string_view name() const override { return inner_->name(); }
  Feasibility Filter(const Workload& w, NodeIndex n, const model::ClusterState& c) const override {
    ++filters;
    return inner_->Filter(w, n, c);
  }
  OfferInputs OffersDependOn() const override {
    OfferInputs in = inner_->OffersDependOn();
    if (exhaustive_) in.node_local_filter = false;
    return in;
  }
  std::optional<Candidate> Score(const Workload& w, NodeIndex n,
                                 const model::ClusterState& c) override {
    return inner_->Score(w, n, c);
  }
  std::optional<double> ScoreCeiling(const Workload& w, NodeIndex n,
                                     const model::ClusterState& c) override {
    return inner_->ScoreCeiling(w, n, c);
  }
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex g,
                                                  const model::ClusterState& c) override {
    return inner_->Reshape(g, c);
  }
  CycleActions AfterCycle(const model::ClusterState& c) override { return inner_->AfterCycle(c); }
  mutable int filters = 0;

 private:
  std::unique_ptr<Policy> inner_;
  bool exhaustive_;
};

// slo-aware's Filter verdicts, kept per node under the request shape without the SLO's value
// and dropped when its predictor learns (OfferInputs::filter_epoch), decide as a Filter asked
// of every node: every bind (node and slices) and every failure reason alike, over 300 random
// sequences on the mixed cluster with observations folded into the predictor (app6 starts
// unknown and is profiled halfway, so its workloads become predictable mid-run) and moves.
TEST(ThesisPoliciesPropertyTest, SloAwareKeptFilterVerdictsDecideAsAFilterOnEveryNode) {
  const predict::Predictor base = SyntheticPredictor();
  int64_t kept_filters = 0, every_filters = 0, binds = 0, fails = 0;
  for (int seq = 0; seq < 300; ++seq) {
    std::vector<std::string> traces[2];
    for (int exhaustive = 0; exhaustive < 2; ++exhaustive) {
      Rng rng(static_cast<uint64_t>(seq) + 11);
      predict::Predictor learner = base;
      telemetry::StaticTelemetry telemetry;
      PolicyContext ctx{.rng = &rng,
                        .predictor = &learner,
                        .telemetry = &telemetry,
                        .learner = &learner,
                        .can_move = true};
      auto inner = MakePolicy("slo-aware", ctx);
      ASSERT_TRUE(inner.has_value()) << inner.error().message;
      FilterProbe probe(std::move(*inner), exhaustive == 1);
      model::ClusterState c = MixedCluster();
      ManualClock clock;
      std::vector<std::string>& trace = traces[exhaustive];
      sched::Scheduler* core = nullptr;
      sched::Hooks hooks;
      hooks.bind = [&](const Workload& w, const model::Placement& p,
                       const model::Environment&) -> Expected<void> {
        std::string e = fmt::format("bind {} on {}:", w.id, p.node);
        for (const model::Slice& sl : p.slices) {
          e += fmt::format(" {}/{}/{}", sl.partition, sl.milli, sl.memory_mib);
        }
        trace.push_back(e);
        return {};
      };
      hooks.unschedulable = [&](const Workload& w, const std::string& why, bool) {
        trace.push_back(fmt::format("fail {}: {}", w.id, why));
      };
      hooks.evict = [&](const Workload& w, const Eviction&) -> Expected<void> {
        trace.push_back(fmt::format("move {}", w.id));
        EXPECT_TRUE(core->Submit(w).has_value());
        return {};
      };
      sched::Scheduler s(c, probe, clock, rng, hooks);
      core = &s;
      Rng draw(static_cast<uint64_t>(seq) * 7919 + 5);
      std::vector<model::WorkloadId> running;
      for (int step = 0; step < 24; ++step) {
        clock.Advance(1);
        // Halfway, the driver profiles app6: its workloads are predictable from here on, and
        // slo-aware filters them by free MPS shares, not by NodeFits' whole GPU.
        if (step == 12) {
          ASSERT_TRUE(learner.Observe("app6", predict::ConfigKey("A30-24GB", "whole", 100), 40)
                          .has_value());
        }
        if (!running.empty() && draw.Uniform(0, 1) < 0.35) {
          const size_t k = draw.Below(running.size());
          ASSERT_TRUE(s.Finish(running[k]).has_value());
          running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          Workload w;
          w.id = seq * 100 + step + 1;
          w.name = fmt::format("w{}", w.id);
          w.app = fmt::format("app{}", draw.Below(kAppCount + 1));  // app6 is unknown
          w.slo_qps = draw.Uniform(5, 80);
          w.cpu_milli = 1000 * (1 + static_cast<int64_t>(draw.Below(2)));
          w.memory_mib = 2048;
          w.gpu.count = 1;
          w.gpu.memory_mib = static_cast<int64_t>(draw.Below(4)) * 3000;
          ASSERT_TRUE(s.Submit(w).has_value());
        }
        for (const auto& [id, pw] : c.placed()) {
          telemetry.SetWorkloadQps(pw.workload.name, pw.workload.slo_qps * draw.Uniform(0.5, 1.2));
        }
        s.RunCycle();
        running.clear();
        for (const auto& [id, pw] : c.placed()) running.push_back(id);
        std::sort(running.begin(), running.end());
      }
      (exhaustive == 1 ? every_filters : kept_filters) += probe.filters;
    }
    ASSERT_EQ(traces[0].size(), traces[1].size()) << "sequence " << seq;
    for (size_t i = 0; i < traces[0].size(); ++i) {
      ASSERT_EQ(traces[0][i], traces[1][i]) << "sequence " << seq << ", event " << i;
      (traces[0][i].starts_with("bind") ? binds : fails) +=
          traces[0][i].starts_with("move") ? 0 : 1;
    }
  }
  // Both outcomes occur, and the verdicts were kept (each cycle changes a node or two of four,
  // and most arrivals share a shape with an earlier one).
  EXPECT_GT(binds, 1000);
  EXPECT_GT(fails, 100);
  EXPECT_LT(kept_filters * 4, every_filters * 3) << kept_filters << " vs " << every_filters;
}

}  // namespace
}  // namespace tessera::policy
