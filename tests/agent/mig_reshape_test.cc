// The agent's MIG reshape path (docs/runtime.md, "MIG reshapes") against the stand-in NVML
// (tests/agent/fake_nvml/fake_nvml.cc): NvmlBackend's MigControl, the reshaper's plan, busy
// instances, NVML's failures with their rollback, the budget, a dry run, and the agent
// answering the scheduler's requests through the store. The A100 starts as GI 5 = 1g.5gb at
// slice 0 (pid 200 runs on it) and GI 1 = 3g.20gb at slice 4.
#include "store/mig_reshape.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/agent.h"
#include "agent/fake_backend.h"
#include "agent/mig_reshaper.h"
#include "agent/nvml_backend.h"
#include "fake_nvml/fake_nvml_fixture.h"
#include "model/gpu_model.h"
#include "store/memory_store.h"

namespace tessera::agent {
namespace {

constexpr int kInUse = 19, kInsufficientResources = 23;  // nvmlReturn_t

// Each reading is `step` seconds after the previous one: a reshape whose NVML calls are slow.
class TickingClock : public Clock {
 public:
  explicit TickingClock(double step) : step_(step) {}
  double Now() const override { return step_ * static_cast<double>(n_++); }

 private:
  double step_;
  mutable int n_ = 0;
};

class MigReshapeTest : public FakeNvmlFixture {
 protected:
  void SetUp() override {
    FakeNvmlFixture::SetUp();
    if (HasFatalFailure()) return;
    processes_ = Control<void (*)(int)>("fake_nvml_a100_processes");
    mutations_ = Control<int (*)()>("fake_nvml_mutations");
    fail_call_ = Control<void (*)(const char*, int, int)>("fake_nvml_fail_call");
    auto gpus = backend_->Discover();
    ASSERT_TRUE(gpus) << gpus.error().message;
    a100_ = (*gpus)[0];
    h100_ = (*gpus)[1];
  }
  // The A100's instances now, as "profile-id@start" in order of start.
  std::string Layout() {
    auto now = backend_->ListInstances(a100_);
    EXPECT_TRUE(now) << now.error().message;
    std::string out;
    for (const auto& s : *now) {
      out +=
          (out.empty() ? "" : ",") + std::to_string(s.profile_id) + "@" + std::to_string(s.start);
    }
    return out;
  }
  ReshapeOutcome Reshape(const std::string& layout, bool dry_run = false) {
    return ReshapeMig(*backend_, a100_, layout, clock_, 5, dry_run);
  }

  void (*processes_)(int) = nullptr;
  int (*mutations_)() = nullptr;
  void (*fail_call_)(const char*, int, int) = nullptr;
  ManualClock clock_;
  store::GpuInventory a100_, h100_;
};

TEST_F(MigReshapeTest, ListsGpuInstancesWithTheirProcesses) {
  ASSERT_NE(backend_->mig_control(), nullptr);
  auto now = backend_->ListInstances(a100_);
  ASSERT_TRUE(now) << now.error().message;
  ASSERT_EQ(now->size(), 2u);
  // pid 200 runs on GI 5; pid 201 names GI 7, which does not exist, and counts nowhere.
  EXPECT_EQ((*now)[0], (MigInstanceState{5, 19, 0, 1, 1}));
  EXPECT_EQ((*now)[1], (MigInstanceState{1, 9, 4, 1, 0}));
}

TEST_F(MigReshapeTest, KeepsWhatIsInPlaceAndCreatesTheRest) {
  const ReshapeOutcome out = Reshape("1g.5gb@0,2g.10gb@2,3g.20gb@4");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kDone) << out.error->message;
  // Both old instances stay (GI 5 is busy, and is not touched); one GI + one CI are made.
  EXPECT_EQ(out.steps, std::vector<std::string>{"created 2g.10gb@2 (GI 8)"});
  EXPECT_EQ(mutations_(), 2);
  EXPECT_EQ(Layout(), "19@0,14@2,9@4");
  // Discovery sees the new MIG device with the catalog's profile name.
  auto gpus = backend_->Discover();
  ASSERT_TRUE(gpus);
  ASSERT_EQ((*gpus)[0].partitions.size(), 3u);
  EXPECT_EQ((*gpus)[0].partitions[1].profile, "2g.10gb");
  EXPECT_EQ((*gpus)[0].partitions[1].gi_id, 8);
  EXPECT_EQ((*gpus)[0].partitions[1].start, 2);
}

TEST_F(MigReshapeTest, DestroysBeforeCreating) {
  processes_(0);
  const ReshapeOutcome out = Reshape("7g.40gb@0");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kDone) << out.error->message;
  EXPECT_EQ(out.steps,
            (std::vector<std::string>{"destroyed 1g.5gb@0 (GI 5)", "destroyed 3g.20gb@4 (GI 1)",
                                      "created 7g.40gb@0 (GI 8)"}));
  EXPECT_EQ(mutations_(), 6);  // 2 × (CI + GI) destroyed, 1 × (GI + CI) created
  EXPECT_EQ(Layout(), "0@0");
  // Asked again, nothing is left to do.
  const ReshapeOutcome again = Reshape("7g.40gb@0");
  EXPECT_EQ(again.state, ReshapeOutcome::State::kDone);
  EXPECT_TRUE(again.steps.empty());
  EXPECT_EQ(mutations_(), 6);
}

TEST_F(MigReshapeTest, ABusyInstanceIsNotTouched) {
  const ReshapeOutcome out = Reshape("7g.40gb@0");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed);
  EXPECT_EQ(out.error->fault, MigFault::kBusy);
  EXPECT_NE(out.error->message.find("1g.5gb@0 (GI 5) runs 1 process"), std::string::npos)
      << out.error->message;
  EXPECT_FALSE(out.rolled_back);
  EXPECT_EQ(mutations_(), 0);
  EXPECT_EQ(Layout(), "19@0,9@4");
}

// NVML's own IN_USE (a process the listing missed) on the second destroy: the first one is
// undone, so the GPU keeps its layout (the re-created instance has a new GI id).
TEST_F(MigReshapeTest, InUseMidwayIsRolledBack) {
  processes_(0);
  fail_call_("nvmlComputeInstanceDestroy", 2, kInUse);
  const ReshapeOutcome out = Reshape("7g.40gb@0");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed);
  EXPECT_EQ(out.error->fault, MigFault::kBusy);
  EXPECT_NE(out.error->message.find("In use by another client (NVML 19)"), std::string::npos)
      << out.error->message;
  EXPECT_TRUE(out.rolled_back);
  EXPECT_TRUE(out.restored);
  EXPECT_EQ(out.steps, (std::vector<std::string>{"destroyed 1g.5gb@0 (GI 5)",
                                                 "rollback: re-created 1g.5gb@0 (GI 8)"}));
  EXPECT_EQ(Layout(), "19@0,9@4");
}

// Partial creation: the second of two new instances finds its slices taken; the first is
// destroyed again.
TEST_F(MigReshapeTest, InsufficientResourcesAfterAPartialCreationIsRolledBack) {
  fail_call_("nvmlDeviceCreateGpuInstanceWithPlacement", 2, kInsufficientResources);
  const ReshapeOutcome out = Reshape("1g.5gb@0,1g.5gb@1,2g.10gb@2,3g.20gb@4");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed);
  EXPECT_EQ(out.error->fault, MigFault::kInsufficientResources);
  EXPECT_NE(out.error->message.find("creating a profile-14 instance at slice 2"), std::string::npos)
      << out.error->message;
  EXPECT_TRUE(out.rolled_back);
  EXPECT_TRUE(out.restored);
  EXPECT_EQ(out.steps, (std::vector<std::string>{"created 1g.5gb@1 (GI 8)",
                                                 "rollback: destroyed 1g.5gb@1 (GI 8)"}));
  EXPECT_EQ(Layout(), "19@0,9@4");
}

// A compute instance that cannot be made takes its GPU instance with it.
TEST_F(MigReshapeTest, AFailedComputeInstanceLeavesNoEmptyGpuInstance) {
  fail_call_("nvmlGpuInstanceCreateComputeInstance", 1, kInsufficientResources);
  const ReshapeOutcome out = Reshape("1g.5gb@0,2g.10gb@2,3g.20gb@4");
  ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed);
  EXPECT_EQ(out.error->fault, MigFault::kInsufficientResources);
  EXPECT_FALSE(out.rolled_back);  // nothing had changed
  EXPECT_EQ(Layout(), "19@0,9@4");
  EXPECT_EQ(mutations_(), 2);  // the GPU instance, made and destroyed
}

// Each clock reading is 1 s later: the budget of 2.5 s runs out before the third step, and the
// two destroyed instances come back.
TEST_F(MigReshapeTest, PastTheBudgetItRollsBack) {
  processes_(0);
  TickingClock slow(1);
  const ReshapeOutcome out = ReshapeMig(*backend_, a100_, "7g.40gb@0", slow, 2.5, false);
  ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed);
  EXPECT_EQ(out.error->fault, MigFault::kTimedOut);
  EXPECT_NE(out.error->message.find("past the 2.5 s budget, before creating 7g.40gb@0"),
            std::string::npos)
      << out.error->message;
  EXPECT_TRUE(out.restored);
  EXPECT_EQ(Layout(), "19@0,9@4");
}

TEST_F(MigReshapeTest, ADryRunListsTheStepsAndTouchesNothing) {
  processes_(0);
  const ReshapeOutcome out = Reshape("7g.40gb@0", /*dry_run=*/true);
  ASSERT_EQ(out.state, ReshapeOutcome::State::kPlanned);
  EXPECT_EQ(out.steps,
            (std::vector<std::string>{"would destroy 1g.5gb@0 (GI 5)",
                                      "would destroy 3g.20gb@4 (GI 1)", "would create 7g.40gb@0"}));
  EXPECT_EQ(mutations_(), 0);
}

TEST_F(MigReshapeTest, RequestsItCannotMeetAreRefusedUntouched) {
  struct Case {
    const store::GpuInventory* gpu;
    std::string layout;
    MigFault fault;
    std::string says;
  };
  const std::vector<Case> cases = {
      {&a100_, "", MigFault::kNotSupported, "turns MIG off; the agent never changes MIG mode"},
      {&h100_, "7g.80gb@0", MigFault::kNotSupported, "nvidia-smi -i 1 -mig 1"},
      {&a100_, "7g.40gb@0,1g.5gb@0", MigFault::kInvalid, "layout '7g.40gb@0,1g.5gb@0'"},
      {&a100_, "9g.80gb@0", MigFault::kInvalid, "9g.80gb"},
  };
  for (const Case& c : cases) {
    const ReshapeOutcome out = ReshapeMig(*backend_, *c.gpu, c.layout, clock_, 5, false);
    ASSERT_EQ(out.state, ReshapeOutcome::State::kFailed) << c.layout;
    EXPECT_EQ(out.error->fault, c.fault) << c.layout;
    EXPECT_NE(out.error->message.find(c.says), std::string::npos) << out.error->message;
  }
  EXPECT_EQ(mutations_(), 0);
}

// The scheduler's request (replica-a's, at `at`) for GPU `uuid`, index 0, of node n1.
store::MigReshapeRequest Request(const std::string& uuid, const std::string& mig,
                                 const std::string& at) {
  return {.node = "n1",
          .gpu_index = 0,
          .gpu_uuid = uuid,
          .mig = mig,
          .requested_by = "replica-a",
          .requested_at = at};
}

// Puts `request` where n1's agent looks for it.
void Ask(store::Store& store, const store::MigReshapeRequest& request) {
  ASSERT_TRUE(
      store.PutProfile(store::MigReshapeRequestKey("n1", request.gpu_uuid), store::ToJson(request))
          .has_value());
}

// n1's agent's answer for GPU `uuid` (empty, with a test failure, when there is none or it is
// malformed).
store::MigReshapeStatus Answer(store::Store& store, const std::string& uuid) {
  const std::string key = store::MigReshapeStatusKey("n1", uuid);
  auto doc = store.GetProfile(key);
  if (!doc || !*doc) {
    ADD_FAILURE() << "no answer under " << key;
    return {};
  }
  auto s = store::MigReshapeStatusFromJson(**doc, key);
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return {};
  }
  return *s;
}

// The agent answers the scheduler's request through the store, once, across restarts too.
TEST_F(MigReshapeTest, TheAgentAppliesARequestOnceAndAnswersIt) {
  processes_(0);
  ManualClock clock;
  store::MemoryStore store(clock);
  const store::MigReshapeRequest req =
      Request("GPU-f0", "2g.10gb@0,2g.10gb@2,3g.20gb@4", "2026-11-25T10:00:00.000000Z");
  EXPECT_EQ(store::MigReshapeRequestKey("n1", "GPU-f0"), "mig-reshape/n1/GPU-f0");
  {
    Agent agent({.node = "n1"}, *backend_, &store, clock);
    agent.Tick();  // discovers: generation 1
    Ask(store, req);
    agent.Tick();  // applies, then discovers and publishes the new layout
    const store::MigReshapeStatus status = Answer(store, "GPU-f0");
    EXPECT_EQ(status.state, "done");
    EXPECT_TRUE(status.Answers(req));
    EXPECT_EQ(status.agent_id, agent.agent_id());
    EXPECT_EQ(status.steps,
              (std::vector<std::string>{"destroyed 1g.5gb@0 (GI 5)", "created 2g.10gb@0 (GI 8)",
                                        "created 2g.10gb@2 (GI 9)"}));
    auto inv = store.GetInventory("n1").value();
    ASSERT_TRUE(inv.has_value());
    EXPECT_EQ(inv->generation, 2);
    ASSERT_EQ(inv->gpus[0].partitions.size(), 3u);
    EXPECT_EQ(agent.Stats().reshapes_done, 1);
    EXPECT_NE(agent.Metrics().find(
                  "tessera_agent_mig_reshapes_total{Hostname=\"n1\",result=\"done\"} 1\n"),
              std::string::npos);
    const int made = mutations_();
    agent.Tick();  // the same request is not applied again
    EXPECT_EQ(mutations_(), made);
  }
  // A restarted agent finds the answer in the store.
  Agent again({.node = "n1"}, *backend_, &store, clock);
  again.Tick();
  again.Tick();
  EXPECT_EQ(again.Stats().reshapes_done, 0);
  EXPECT_EQ(Layout(), "14@0,14@2,9@4");
}

TEST_F(MigReshapeTest, TheAgentAnswersFailuresDryRunsAndMalformedRequests) {
  ManualClock clock;
  store::MemoryStore store(clock);
  Agent agent({.node = "n1"}, *backend_, &store, clock);
  agent.Tick();
  // Busy: refused, nothing touched.
  Ask(store, Request("GPU-f0", "7g.40gb@0", "t1"));
  agent.Tick();
  EXPECT_EQ(Answer(store, "GPU-f0").state, "failed");
  EXPECT_EQ(Answer(store, "GPU-f0").fault, "busy");
  EXPECT_EQ(agent.Stats().reshapes_failed, 1);
  // Malformed: answered as invalid, naming the document.
  ASSERT_TRUE(store
                  .PutProfile(store::MigReshapeRequestKey("n1", "GPU-f0"),
                              R"({"node": "n1", "gpu_index": "zero"})")
                  .has_value());
  agent.Tick();
  const store::MigReshapeStatus malformed = Answer(store, "GPU-f0");
  EXPECT_EQ(malformed.fault, "invalid");
  EXPECT_NE(malformed.error.find("mig-reshape/n1/GPU-f0: malformed MIG reshape request"),
            std::string::npos)
      << malformed.error;
  EXPECT_EQ(mutations_(), 0);
  // A dry-run agent plans and reports, and changes nothing.
  processes_(0);
  Agent planner({.node = "n1", .mig_reshape = AgentOptions::MigReshape::kDryRun}, *backend_, &store,
                clock);
  Ask(store, Request("GPU-f0", "7g.40gb@0", "t2"));
  planner.Tick();
  planner.Tick();
  EXPECT_EQ(Answer(store, "GPU-f0").state, "planned");
  EXPECT_EQ(Answer(store, "GPU-f0").steps.size(), 3u);
  EXPECT_EQ(mutations_(), 0);
}

// An agent told not to reshape refuses, and says why, so the scheduler need not wait.
TEST_F(MigReshapeTest, AnAgentWithReshapesOffRefusesThem) {
  processes_(0);
  ManualClock clock;
  store::MemoryStore store(clock);
  Agent agent({.node = "n1", .mig_reshape = AgentOptions::MigReshape::kOff}, *backend_, &store,
              clock);
  agent.Tick();
  Ask(store, Request("GPU-f0", "7g.40gb@0", "t1"));
  agent.Tick();
  const store::MigReshapeStatus s = Answer(store, "GPU-f0");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.fault, "not-supported");
  EXPECT_NE(s.error.find("--mig-reshape off"), std::string::npos) << s.error;
  EXPECT_EQ(mutations_(), 0);
}

// The fake file backend manages MIG on its description in memory, as NVML would on the device:
// the reshaper destroys the 7g.40gb instance, makes two 3g.20gb (GPU-instance profile 2, 4
// memory slices, at slices 0 and 4: the catalog's) with fresh uuids, and the agent publishes
// the new layout as generation 2.
class MigReshapeFakeBackendTest : public ::testing::Test {
 protected:
  void Write(const std::string& extra) {
    std::ofstream f(path_);
    f << "node: n1\ngpus:\n  - {uuid: GPU-a, model: A100-40GB, mig: \"7g.40gb@0\", instances: "
         "[{uuid: MIG-a1, gi_id: 1}]" +
             extra + "}\n";
  }
  // Loads the file, starts n1's agent on it and asks for `mig` on GPU-a: the answer.
  store::MigReshapeStatus StartAndReshape(const std::string& mig) {
    auto backend = FakeBackend::Load(path_, clock_, 0);
    if (!backend) {
      ADD_FAILURE() << backend.error().message;
      return {};
    }
    backend_ = std::move(*backend);
    agent_ = std::make_unique<Agent>(AgentOptions{.node = "n1"}, *backend_, &store_, clock_);
    agent_->Tick();
    return Reshape(mig, "t1");
  }
  store::MigReshapeStatus Reshape(const std::string& mig, const std::string& at) {
    Ask(store_, Request("GPU-a", mig, at));
    agent_->Tick();
    return Answer(store_, "GPU-a");
  }
  std::vector<store::PartitionInventory> Published() {
    auto inv = store_.GetInventory("n1");
    if (!inv || !*inv) {
      ADD_FAILURE() << "no inventory";
      return {};
    }
    return (*inv)->gpus[0].partitions;
  }

  // One file per test: ctest runs this fixture's tests as processes side by side, and a shared
  // path let one test's Write overwrite the node another's backend was reshaping (a CI failure:
  // the inventory stayed at generation 1).
  const std::string path_ = testing::TempDir() + "/mig_reshape_fake_node-" +
                            testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<Agent> agent_;
  ManualClock clock_;
  store::MemoryStore store_{clock_};
};

TEST_F(MigReshapeFakeBackendTest, AReshapeChangesTheLayoutTheAgentPublishes) {
  Write("");
  const store::MigReshapeStatus s = StartAndReshape("3g.20gb@0,3g.20gb@4");
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_EQ(s.steps,
            (std::vector<std::string>{"destroyed 7g.40gb@0 (GI 1)", "created 3g.20gb@0 (GI 1)",
                                      "created 3g.20gb@4 (GI 2)"}));
  EXPECT_EQ(store_.GetInventory("n1").value()->generation, 2);
  // Each instance holds what the catalog gives an A100-40GB's 3g.20gb.
  const model::GpuModel& a100 = model::GetGpuModel(*model::FindGpuModel("A100-40GB"));
  const int64_t mib =
      a100.mig_profiles[static_cast<size_t>(*a100.FindProfile("3g.20gb"))].memory_mib;
  std::vector<store::PartitionInventory> parts = Published();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (store::PartitionInventory{"MIG-GPU-a-1", "3g.20gb", 1, 0, mib}));
  EXPECT_EQ(parts[1], (store::PartitionInventory{"MIG-GPU-a-2", "3g.20gb", 2, 4, mib}));
  // Back to one 7g.40gb: a uuid never used before.
  EXPECT_EQ(Reshape("7g.40gb@0", "t2").state, "done");
  parts = Published();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].uuid, "MIG-GPU-a-3");
  // An edit of the file replaces what was reshaped: the file wins.
  Write(", script: {points: [{t: 0, power_w: 60}]}");
  agent_->Tick();
  parts = Published();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].uuid, "MIG-a1");
}

// An instance a process runs on is busy: the reshape fails, naming it, and nothing changes.
TEST_F(MigReshapeFakeBackendTest, AnInstanceAProcessRunsOnIsBusy) {
  Write(", processes: [{pid: 7, partition: MIG-a1, script: {points: [{t: 0, fb_used_mib: 100}]}}]");
  const store::MigReshapeStatus s = StartAndReshape("3g.20gb@0,3g.20gb@4");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.fault, "busy") << s.error;
  const std::vector<store::PartitionInventory> parts = Published();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].uuid, "MIG-a1");
}

}  // namespace
}  // namespace tessera::agent
