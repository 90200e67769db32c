// JobProfilesFromPredictor: seconds per query on a whole GPU, by model, from a predictor's
// profile matrix; and drmaestro placing with those profiles where it would place neutrally
// without them (what `tessera schedule --policy drmaestro` gains from them).
//
// The profile used throughout ("baseline" completion, every cell measured): app "train" runs
// 100 queries/s on a whole A100-40GB and 25 on a whole V100-32GB, app "serve" 80 and 40:
// seconds per query 0.01, 0.04, 0.0125 and 0.025.
#include "policy/job_profile.h"

#include <gtest/gtest.h>

#include "model/cluster.h"
#include "policy/drmaestro.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "predictor_fixture.h"

namespace tessera::policy {
namespace {

using model::ClusterState;

const model::GpuModelId kA100 = *model::FindGpuModel("A100-40GB");
const model::GpuModelId kV100 = *model::FindGpuModel("V100-32GB");

predict::Predictor MakePredictor(int refit_every = 1) {
  return testing_predict::MeasuredPredictor({{"train", "A100-40GB/whole/100", 100},
                                             {"train", "V100-32GB/whole/100", 25},
                                             {"serve", "A100-40GB/whole/100", 80},
                                             {"serve", "V100-32GB/whole/100", 40}},
                                            refit_every);
}

TEST(JobProfileTest, SecondsPerQueryAreOneOverWholeGpuQps) {
  const predict::Predictor predictor = MakePredictor();
  const JobProfiles profiles = JobProfilesFromPredictor(predictor);
  ASSERT_EQ(profiles.size(), 2u);
  const JobProfile& train = profiles.at("train");
  ASSERT_EQ(train.seconds_per_query.size(), 2u);  // no H100, K80, … column: unknown there
  EXPECT_NEAR(train.seconds_per_query.at(kA100), 1.0 / 100, 1e-9);
  EXPECT_NEAR(train.seconds_per_query.at(kV100), 1.0 / 25, 1e-9);
  const JobProfile& serve = profiles.at("serve");
  ASSERT_EQ(serve.seconds_per_query.size(), 2u);
  EXPECT_NEAR(serve.seconds_per_query.at(kA100), 1.0 / 80, 1e-9);
  EXPECT_NEAR(serve.seconds_per_query.at(kV100), 1.0 / 40, 1e-9);
  // A profile matrix says nothing about remote GPUs or the network: the defaults.
  EXPECT_EQ(train.remote_slowdown, 1);
  EXPECT_EQ(train.network_sensitivity, 0);
  EXPECT_EQ(train.network_share, 0);
}

// A configuration that is not a whole GPU of a known model gives nothing, and an application
// with no readable whole-GPU cell (here: new since the last refit, measured only on an unknown
// model) is left out.
TEST(JobProfileTest, AppWithoutWholeGpuCellIsLeftOut) {
  predict::Predictor predictor = MakePredictor(/*refit_every=*/1000);
  ASSERT_TRUE(predictor.Observe("fresh", "NoSuchGpu/whole/100", 10).has_value());
  ASSERT_TRUE(predictor.Observe("fresh", "A100-40GB/1g.5gb/100", 5).has_value());
  ASSERT_EQ(predictor.num_apps(), 3);  // a row of the matrix, with no readable whole-GPU cell
  const JobProfiles profiles = JobProfilesFromPredictor(predictor);
  EXPECT_EQ(profiles.size(), 2u);
  EXPECT_FALSE(profiles.contains("fresh"));
  EXPECT_EQ(profiles.at("train").seconds_per_query.size(), 2u);
}

TEST(JobProfileTest, EmptyPredictorGivesNoProfiles) {
  predict::ProfileMatrix profile;
  profile.AddCol("A100-40GB/whole/100");
  auto p = predict::Predictor::Create(profile, {}, {.method = "baseline"});
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_TRUE(JobProfilesFromPredictor(*p).empty());
}

// drmaestro through the registry, as k8s::Scheduler makes it (PolicyContext::job_profiles),
// with and without the predictor's profiles.
//
// Node 0 "v100": one V100-32GB, 16 cores, 64 GiB free. Node 1 "a100": one A100-40GB, its CPU all
// held, so the job's CPU and memory can only go to node 0. The job: app "train", 1,000 queries,
// 8 cores, 16 GiB, one whole GPU, goal τ = 20 s, z = 5. Options: remote_preference P_r = 1.5,
// unscheduled_preference P_u = 2 (the default). Costs × 1000 (src/policy/drmaestro.cc:
// DrmaestroUtility at :181, Phi at :224 — φ = queries × seconds per query, × remote_slowdown 1 —
// Cost at :244; the unscheduled arc takes φ on the fastest allowed model, like the remote class):
//   with profiles: φ = 1000 × 0.04 = 40 s on the V100, 1000 × 0.01 = 10 s on the A100.
//     Local V100: Ut = (20 − 40)/20 · (10 − 5)/9 = −5/9, cost (1 + 5/9) · 1 = 1,556. Remote
//     (phase 1's class takes the fastest allowed model, the A100): Ut = 0.5, cost 0.5 · 1.5 =
//     750. Unscheduled: 0.5 · 2 + W 0 = 1,000. Phase 1 picks the remote class on node 0; phase 2
//     the A100 via its remote aggregator (750, vs 1,556 for node 0's own V100, 2,333 for the
//     V100 aggregator, 1,000 unscheduled): the GPU is node 1's A100, a remote slice.
//     (With the default P_r = 2 remote ties waiting at 1,000 in the first cycle; the job would
//     go remote a cycle later, once W = 1.)
//   without profiles: every 1 − Ut is the neutral 1: local 1,000, remote 1,500, unscheduled
//     2,000, so the job takes node 0's V100, local.
class DrmaestroWithJobProfilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.AddNode(model::UniformNode("v100", kV100, 1, 16000, 64 << 10)));
    ASSERT_TRUE(c_.AddNode(model::UniformNode("a100", kA100, 1, 16000, 64 << 10)));
    Workload hold;
    hold.id = 100;
    hold.name = "warmup";
    hold.cpu_milli = c_.node(1).cpu_milli;
    ASSERT_TRUE(c_.Place(hold, {.workload = 100, .node = 1}));
    job_.id = 1;
    job_.name = "job-1";
    job_.app = "train";
    job_.klass = model::WorkloadClass::kOffline;
    job_.queries = 1000;
    job_.cpu_milli = 8000;
    job_.memory_mib = 16 << 10;
    job_.gpu = {.count = 1, .milli = 1000};
    job_.goal_s = 20;
    job_.goal_z = 5;
  }

  // Where drmaestro puts the job's one GPU: its model, whether remote; and phase 1's cost of
  // the local class (arc 0).
  struct Outcome {
    model::GpuModelId gpu_model = -1;
    bool remote = false;
    int64_t local_cost = 0;
  };
  Outcome Place(const JobProfiles* profiles) {
    auto made = MakePolicy("drmaestro", {.job_profiles = profiles}, {{"remote_preference", 1.5}});
    EXPECT_TRUE(made) << made.error().message;
    auto& p = static_cast<Drmaestro&>(**made);
    p.RecordNetworks(true);
    const Workload* pending[] = {&job_};
    auto out = p.PlaceBatch(pending, c_);
    EXPECT_TRUE(out);
    EXPECT_EQ(out->size(), 1u);
    if (!out || out->size() != 1) return {};
    const Placement& placed = out->at(0).placement;
    EXPECT_EQ(placed.node, 0);  // the CPU and memory: the only node with room
    EXPECT_EQ(placed.slices.size(), 1u);
    if (placed.slices.size() != 1) return {};
    return {c_.gpu(c_.partition(placed.slices[0].partition).gpu).model, placed.slices[0].remote,
            p.last_cycle().phase1.network.at(0).cost};
  }

  ClusterState c_;
  Workload job_;
};

TEST_F(DrmaestroWithJobProfilesTest, WithoutProfilesCostsAreNeutralAndTheJobStaysLocal) {
  const Outcome o = Place(nullptr);
  EXPECT_EQ(o.gpu_model, kV100);
  EXPECT_FALSE(o.remote);
  EXPECT_EQ(o.local_cost, 1000);
}

TEST_F(DrmaestroWithJobProfilesTest, PredictorProfilesSendTheJobToTheFasterModel) {
  const predict::Predictor predictor = MakePredictor();
  const JobProfiles profiles = JobProfilesFromPredictor(predictor);
  const Outcome o = Place(&profiles);
  EXPECT_EQ(o.gpu_model, kA100);
  EXPECT_TRUE(o.remote);
  EXPECT_EQ(o.local_cost, 1556);
}

}  // namespace
}  // namespace tessera::policy
