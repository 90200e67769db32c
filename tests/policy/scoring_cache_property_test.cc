// The predicting policies' caches (issue #39) never change an answer: a policy that has scored
// many earlier states — and so holds per-partition terms, members, utils and per-configuration
// rows keyed on partition versions, the telemetry's version and the predictor's generation —
// offers exactly what a policy built fresh for the current state offers, on every node, on
// random clusters changed at random between decisions: placements, removals, resizes,
// reshapes, telemetry samples, new observations, and copies of the state that reuse a
// workload id for another workload. And predictive's score ceilings never change a choice: no
// offer exceeds its node's ceiling, and the best node found skipping the nodes whose ceiling is
// below the best so far is the one found scoring every node.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "model/cluster.h"
#include "model/mig.h"
#include "policy/predictive.h"
#include "policy/slo_aware.h"
#include "slo_workload.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::PartitionIndex;
using testing::App;

constexpr const char* kApps[] = {"a", "b", "c"};

// Every (model, profile, share) of the V100 and the A30 the scenario can use, with random
// rates; one cell left out per application so that completion fills it.
predict::Predictor RandomPredictor(Rng& rng) {
  predict::ProfileMatrix m;
  predict::InterferenceMatrices im;
  const std::vector<std::string> configs = {
      "V100-32GB/whole/100",  "V100-32GB/whole/50",  "V100-32GB/whole/25",   "A30-24GB/whole/100",
      "A30-24GB/whole/50",    "A30-24GB/whole/25",   "A30-24GB/1g.6gb/100",  "A30-24GB/1g.6gb/50",
      "A30-24GB/2g.12gb/100", "A30-24GB/2g.12gb/50", "A30-24GB/4g.24gb/100", "A30-24GB/4g.24gb/50"};
  for (const char* app : kApps) {
    const int skip = static_cast<int>(rng.Below(configs.size()));
    for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
      if (i == skip) continue;
      m.Observe(m.AddRow(app), m.AddCol(configs[i]), rng.Uniform(5, 80));
    }
    for (const char* other : kApps) {
      EXPECT_TRUE(im.Observe("mps", app, other, rng.Uniform(0, 0.3)));
    }
  }
  predict::PredictorOptions o;
  o.method = "baseline";
  o.interference_method = "baseline";
  auto p = predict::Predictor::Create(std::move(m), std::move(im), o);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

// The same offer, to the bit.
void ExpectSame(const std::optional<Candidate>& kept, const std::optional<Candidate>& fresh,
                const std::string& where) {
  ASSERT_EQ(kept.has_value(), fresh.has_value()) << where;
  if (!kept) return;
  EXPECT_EQ(kept->score, fresh->score) << where;
  EXPECT_EQ(kept->placement.node, fresh->placement.node) << where;
  ASSERT_EQ(kept->placement.slices.size(), fresh->placement.slices.size()) << where;
  for (size_t i = 0; i < kept->placement.slices.size(); ++i) {
    EXPECT_EQ(kept->placement.slices[i].partition, fresh->placement.slices[i].partition) << where;
    EXPECT_EQ(kept->placement.slices[i].milli, fresh->placement.slices[i].milli) << where;
    EXPECT_EQ(kept->placement.slices[i].memory_mib, fresh->placement.slices[i].memory_mib) << where;
  }
  EXPECT_EQ(kept->reshape.has_value(), fresh->reshape.has_value()) << where;
}

class ScoringCacheProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ScoringCacheProperty, AKeptPolicyOffersWhatAFreshOneOffers) {
  Rng rng(GetParam());
  predict::Predictor predictor = RandomPredictor(rng);
  telemetry::StaticTelemetry telemetry;
  ClusterState c;
  const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
  const model::GpuModelId a30 = *model::FindGpuModel("A30-24GB");
  const std::vector<model::MigLayout>& layouts = model::ValidLayouts(model::GetGpuModel(a30));
  for (int n = 0; n < 6; ++n) {
    std::optional<model::MigLayout> mig;
    if (n % 2 == 1 && n > 1) mig = layouts[rng.Below(layouts.size())];
    ASSERT_TRUE(c.AddNode(model::UniformNode(fmt::format("n{}", n), n % 2 == 0 ? v100 : a30, 2,
                                             64000, 1 << 20, mig)));
  }
  Predictive predictive(predictor, &telemetry);
  SloAware slo_aware(predictor, &telemetry);
  // Without admission a partition where x pushes a member below its target still offers.
  SloAware no_admission(predictor, &telemetry, {.admission = false});
  model::WorkloadId next_id = 1;
  std::vector<model::WorkloadId> placed;
  std::optional<ClusterState> snapshot;  // an older copy, scored again later

  auto random_workload = [&](model::WorkloadId id) {
    return App(id, kApps[rng.Below(3)], rng.Uniform(3, 60), rng.Below(3) == 0 ? 2048 : 0);
  };
  auto place_one = [&](ClusterState& s, model::WorkloadId id) {
    const model::GpuIndex g = static_cast<model::GpuIndex>(rng.Below(s.gpu_count()));
    const int slot = static_cast<int>(rng.Below(s.gpu(g).partition_count));
    const PartitionIndex p = ClusterState::PartitionOf(g, slot);
    const int percent = std::vector<int>{25, 50, 100}[rng.Below(3)];
    const model::Workload w = random_workload(id);
    const int64_t memory = s.partition(p).memory_mib * percent / 100;
    return s.Place(w, {id, s.gpu(g).node, {{p, percent * 10, memory}}}).has_value();
  };
  // A new incoming workload each time: an id names one workload (slo-aware keeps x's ceiling
  // by id, as the core and the Kubernetes driver give every workload its own).
  model::WorkloadId next_x = 1'000'000;
  int skipped = 0;             // nodes the ceilings spared, in node order
  int best_first_skipped = 0;  // and highest ceiling first
  int refused = 0;             // slo-aware's nodes without an offer, a higher SLO tried
  auto compare_all = [&](const ClusterState& s, int step) {
    const model::Workload x = random_workload(next_x++);
    Predictive fresh_predictive(predictor, &telemetry);
    SloAware fresh_slo_aware(predictor, &telemetry);
    // The core's choice with the ceilings (a node below the best so far not scored) and
    // without: the same node and score.
    std::optional<Candidate> pruned, exhaustive;
    for (model::NodeIndex n = 0; n < s.node_count(); ++n) {
      if (!predictive.Filter(x, n, s).ok()) continue;
      const std::optional<Candidate> offer = fresh_predictive.Score(x, n, s);
      if (offer && (!exhaustive || offer->score > exhaustive->score)) exhaustive = offer;
      if (pruned && *predictive.ScoreCeiling(x, n, s) < pruned->score) {
        ++skipped;
        continue;
      }
      const std::optional<Candidate> kept = predictive.Score(x, n, s);
      if (kept && (!pruned || kept->score > pruned->score)) pruned = kept;
    }
    ExpectSame(pruned, exhaustive, fmt::format("seed {} step {} choice", GetParam(), step));
    // As the core visits a policy that declares its ceilings (OfferInputs::score_ceilings):
    // highest ceiling first, until a ceiling is below the best offer; ties to the lower node.
    const auto choose_best_first = [&](Policy& policy) {
      std::vector<std::pair<double, model::NodeIndex>> order;
      for (model::NodeIndex n = 0; n < s.node_count(); ++n) {
        if (policy.Filter(x, n, s).ok()) order.emplace_back(*policy.ScoreCeiling(x, n, s), n);
      }
      std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
      });
      std::optional<Candidate> best;
      for (size_t i = 0; i < order.size(); ++i) {
        if (best && order[i].first < best->score) {
          best_first_skipped += static_cast<int>(order.size() - i);
          break;
        }
        const std::optional<Candidate> offer = policy.Score(x, order[i].second, s);
        if (offer &&
            (!best || offer->score > best->score ||
             (offer->score == best->score && offer->placement.node < best->placement.node))) {
          best = offer;
        }
      }
      return best;
    };
    ExpectSame(choose_best_first(predictive), exhaustive,
               fmt::format("seed {} step {} best first", GetParam(), step));
    std::optional<Candidate> slo_exhaustive;
    for (model::NodeIndex n = 0; n < s.node_count(); ++n) {
      if (!slo_aware.Filter(x, n, s).ok()) continue;
      const std::optional<Candidate> offer = fresh_slo_aware.Score(x, n, s);
      if (offer && (!slo_exhaustive || offer->score > slo_exhaustive->score))
        slo_exhaustive = offer;
    }
    ExpectSame(choose_best_first(slo_aware), slo_exhaustive,
               fmt::format("seed {} step {} slo-aware best first", GetParam(), step));
    for (model::NodeIndex n = 0; n < s.node_count(); ++n) {
      const std::string where = fmt::format("seed {} step {} node {}", GetParam(), step, n);
      ASSERT_EQ(predictive.Filter(x, n, s).ok(), fresh_predictive.Filter(x, n, s).ok()) << where;
      if (predictive.Filter(x, n, s).ok()) {
        const std::optional<Candidate> offer = predictive.Score(x, n, s);
        ExpectSame(offer, fresh_predictive.Score(x, n, s), where + " predictive");
        // The ceiling the core prunes by is one: no offer exceeds it (#39).
        const std::optional<double> ceiling = predictive.ScoreCeiling(x, n, s);
        ASSERT_TRUE(ceiling.has_value()) << where;
        if (offer) {
          EXPECT_LE(offer->score, *ceiling) << where;
        }
        // Options weighs every partition and share (none skipped by its ceiling, #39): the
        // offer is its best.
        const std::vector<PartitionOption> options = predictive.Options(x, n, s);
        ASSERT_EQ(offer.has_value(), !options.empty()) << where;
        if (offer) {
          EXPECT_EQ(offer->score, options.front().set.score) << where << " options";
        }
      }
      if (slo_aware.Filter(x, n, s).ok()) {
        const std::optional<Candidate> offer = slo_aware.Score(x, n, s);
        ExpectSame(offer, fresh_slo_aware.Score(x, n, s), where + " slo-aware");
        const std::optional<double> ceiling = slo_aware.ScoreCeiling(x, n, s);
        ASSERT_TRUE(ceiling.has_value()) << where;
        if (offer) {
          EXPECT_LE(offer->score, *ceiling) << where << " slo-aware";
        }
        const std::optional<Candidate> any = no_admission.Score(x, n, s);
        if (any) {
          EXPECT_LE(any->score, *no_admission.ScoreCeiling(x, n, s)) << where;
        }
        // A higher SLO, the rest equal, has no offer where this one has none
        // (OfferInputs::slo_monotone), and the filter did not read it.
        if (!offer) {
          model::Workload higher = x;
          higher.id = next_x++;
          higher.slo_qps = x.slo_qps * rng.Uniform(1, 2);
          ASSERT_TRUE(slo_aware.Filter(higher, n, s).ok()) << where;
          EXPECT_FALSE(slo_aware.Score(higher, n, s).has_value()) << where << " higher SLO";
          ++refused;
        }
      }
    }
  };

  for (int step = 0; step < 250; ++step) {
    switch (rng.Below(8)) {
      case 0:
      case 1:
        if (place_one(c, next_id)) placed.push_back(next_id);
        ++next_id;
        break;
      case 2:
        if (!placed.empty()) {
          const size_t i = rng.Below(placed.size());
          ASSERT_TRUE(c.Remove(placed[i]));
          placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case 3:
        if (!placed.empty()) {  // a resize to a smaller share where it fits
          const model::PlacedWorkload* pw = c.Find(placed[rng.Below(placed.size())]);
          std::vector<model::Slice> slices = pw->placement.slices;
          slices[0].milli = std::max(50, slices[0].milli / 2);
          (void)c.Resize(pw->workload.id, slices);
        }
        break;
      case 4: {  // reshape an idle A30
        const model::GpuIndex g = static_cast<model::GpuIndex>(rng.Below(c.gpu_count()));
        if (c.gpu(g).model == a30 && c.gpu(g).idle()) {
          std::optional<model::MigLayout> to;
          if (rng.Below(3) != 0) to = layouts[rng.Below(layouts.size())];
          ASSERT_TRUE(c.Reshape(g, to));
        }
        break;
      }
      case 5: {  // a telemetry sample on some partitions
        for (int k = 0; k < 3; ++k) {
          const model::GpuIndex g = static_cast<model::GpuIndex>(rng.Below(c.gpu_count()));
          telemetry.SetUtilization(c.partition(ClusterState::PartitionOf(g, 0)).uuid,
                                   rng.Uniform(0, 1));
        }
        break;
      }
      case 6:  // a new observation: the predictor's generation moves
        ASSERT_TRUE(
            predictor.Observe(kApps[rng.Below(3)], "V100-32GB/whole/50", rng.Uniform(5, 80)));
        break;
      case 7:
        // A copy that reuses an id the state holds for another workload (another SLO, maybe
        // another application) on the same partition: scored, then the original again.
        if (!placed.empty()) {
          ClusterState copy = c;
          const model::PlacedWorkload* pw = copy.Find(placed[rng.Below(placed.size())]);
          const model::Placement where = pw->placement;
          const model::WorkloadId id = pw->workload.id;
          ASSERT_TRUE(copy.Remove(id));
          model::Workload other = random_workload(id);
          if (copy.Place(other, where)) compare_all(copy, step);
          snapshot = std::move(copy);
        }
        break;
    }
    compare_all(c, step);
    if (snapshot && rng.Below(10) == 0) compare_all(*snapshot, step);
    if (HasFatalFailure() || HasFailure()) return;
  }
  EXPECT_GT(skipped, 0);  // the comparisons above are not vacuous
  EXPECT_GT(best_first_skipped, 0);
  EXPECT_GT(refused, 0);
  fmt::print(
      "seed {}: nodes skipped in node order {}, highest ceiling first {}; no offer, a higher "
      "SLO tried {}\n",
      GetParam(), skipped, best_first_skipped, refused);
}

INSTANTIATE_TEST_SUITE_P(Seeds, ScoringCacheProperty, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace tessera::policy
