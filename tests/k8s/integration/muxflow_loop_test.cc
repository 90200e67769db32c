// muxflow in a cluster, end to end: the Kubernetes scheduler (tessera::k8s::Scheduler) runs
// muxflow against the fake API server (the one fake), a real Redis and a real Prometheus
// (scripts/harness.sh) scraping DCGM-style GPU series this test writes
// (tests/tools/metrics_file_exporter.cc).
//
// An online service and an offline job share one A100 (the job as a best-effort MPS client).
// While the GPU's series are healthy nothing is evicted; once its SM clock drops far enough
// below the highest clock the GPU reported, SysMonitor puts the GPU in Overlimit and muxflow's
// AfterCycle evicts the offline job, which the scheduler carries out through the Eviction API.
// Before anything that includes <resolv.h> (cpp-httplib does), whose `_res` macro breaks Eigen.
#include "predict/predictor.h"
#include "predictor_fixture.h"
//
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "k8s/integration/loop_fixture.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::A100Inventory;
using testing_support::WaitFor;

constexpr const char* kServiceApp = "triton/resnet50";
constexpr const char* kJobApp = "train/bert";

// The healthy GPU: graphics engine half busy, the service's SM activity 0.3 (the GPU's own
// while no offline job shares it: dynamic SM then offers the job 100 − 30 = 70 %), the SM
// clock at the A100's 1410 MHz boost, 8 GiB of 40 GiB in use: every SysMonitor metric below
// its healthy threshold (defaults: src/policy/sys_monitor.h:47-53).
constexpr double kUtil = 0.5;
constexpr double kSmActive = 0.3;
constexpr double kMaxClockMhz = 1410;
constexpr double kFbUsedMib = 8192;
// Overlimit by the SM clock: muxflow feeds SysMonitor clock_drop = 1 − clock / the highest
// clock the GPU has reported (src/policy/muxflow.cc:246-249); its overlimit threshold is 0.20
// (SysMonitorOptions::clock_drop {0.05, 0.10, 0.20}, src/policy/sys_monitor.h:53; reaching it
// is Overlimit, src/policy/sys_monitor.cc:33-35), and AfterCycle evicts an Overlimit GPU's
// offline jobs (Impl::Evictions, src/policy/muxflow.cc:462-479, called at :571).
// 1050 MHz after 1410: drop 0.255.
constexpr double kDroppedClockMhz = 1050;

// Both applications on the A100 at 50 % and 100 % (MPS), so the matching weighs the job.
predict::Predictor MuxflowLoopPredictor() {
  return testing_predict::MeasuredPredictor({{kServiceApp, "A100-40GB/whole/50", 90},
                                             {kServiceApp, "A100-40GB/whole/100", 150},
                                             {kJobApp, "A100-40GB/whole/50", 6},
                                             {kJobApp, "A100-40GB/whole/100", 10}});
}

class MuxflowLoopTest : public testing_support::LoopFixture {
 protected:
  void SetUp() override {
    Connect("mux");
    if (HasFatalFailure() || IsSkipped()) return;
    // Unique per process: the exposition and Prometheus are shared with other tests.
    node_ = fmt::format("node-mux-{}", ::getpid());
    const store::NodeInventory inv = A100Inventory(node_, 1);
    uuid_ = inv.gpus[0].uuid;
    series_path_ = fmt::format("{}/{}-gpu.prom", exporter_dir_, ns_);
    AddNodeWith(inv);
  }

  void TearDown() override {
    LoopFixture::TearDown();
    if (!series_path_.empty()) std::filesystem::remove(series_path_);
  }

  // The GPU's DCGM series, as dcgm-exporter labels them; atomically (a scrape never reads half
  // a file). No "# TYPE" lines: the exposition concatenates several tests' files.
  void WriteGpu(double sm_clock_mhz) {
    const std::string labels = fmt::format(R"({{gpu="0",UUID="{}",Hostname="{}"}})", uuid_, node_);
    const std::string tmp = series_path_ + ".tmp";
    std::ofstream(tmp) << fmt::format(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE{0} {1}\n"
        "DCGM_FI_PROF_SM_ACTIVE{0} {2}\n"
        "DCGM_FI_DEV_SM_CLOCK{0} {3}\n"
        "DCGM_FI_DEV_FB_USED{0} {4}\n",
        labels, kUtil, kSmActive, sm_clock_mhz, kFbUsedMib);
    std::filesystem::rename(tmp, series_path_);
  }
  // Whether the scheduler's telemetry reads the GPU as written.
  bool TelemetryShows(double sm_clock_mhz) const {
    return telemetry_->SmClockMhz(uuid_) == sm_clock_mhz &&
           telemetry_->Utilization(uuid_) == kUtil && telemetry_->SmActivity(uuid_) == kSmActive &&
           telemetry_->MemoryUsedMib(uuid_) == kFbUsedMib;
  }

  SchedulerConfig Config(predict::Predictor& predictor) {
    SchedulerConfig c = BaseConfig("mux-a", "muxflow", predictor);
    // A matching round every second (001's 15 min would outlast the test).
    c.policy_options = {{"period_s", 1}};
    return c;
  }

  // A one-GPU pod of `klass` owned by a controller (the Evictor never evicts a bare pod).
  void AddPod(const std::string& name, const std::string& klass, const std::string& app,
              const std::string& owner) {
    api_.AddPodWith(ns_, name, {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}},
                    {{"tessera.io/app", app}, {"tessera.io/class", klass}}, {{"app", owner}},
                    {{"apiVersion", "apps/v1"},
                     {"kind", klass == "online" ? "ReplicaSet" : "Job"},
                     {"name", owner},
                     {"uid", owner + "-uid"}});
  }
  // The placement the binder annotated on the pod ({} while unbound).
  json PlacementOf(const std::string& pod) {
    auto p = api_.Get("pods", ns_ + "/" + pod);
    if (!p) return {};
    const json& ann = (*p)["metadata"].value("annotations", json::object());
    auto it = ann.find("tessera.io/placement");
    if (it == ann.end() || !it->is_string()) return {};
    return json::parse(it->get<std::string>());
  }
  std::string EventsText(const std::string& pod) {
    std::string out;
    for (const json& e : api_.All("events")) {
      if (e["involvedObject"]["name"] != pod) continue;
      out += fmt::format("\n  {}: {}", e.value("reason", ""), e.value("message", ""));
    }
    return out;
  }
  bool Evicted(const std::string& pod) {
    const std::vector<std::string> e = api_.evictions();
    return std::find(e.begin(), e.end(), ns_ + "/" + pod) != e.end();
  }
  // Waits until the scheduler has run `cycles` more cycles and the telemetry has refreshed
  // `refreshes` more times: muxflow's AfterCycle has judged that many fresh samples.
  bool Progress(Scheduler& s, int64_t cycles, int64_t refreshes) {
    const int64_t c0 = s.stats().cycles;
    const int64_t r0 = telemetry_->Health().refreshes;
    return WaitFor(
        [&] {
          return s.stats().cycles >= c0 + cycles &&
                 telemetry_->Health().refreshes >= r0 + refreshes;
        },
        60);
  }

  std::string node_, uuid_, series_path_;
};

TEST_F(MuxflowLoopTest, AnOverlimitGpuEvictsItsOfflineJobThroughTheEvictionApi) {
  predict::Predictor predictor = MuxflowLoopPredictor();
  WriteGpu(kMaxClockMhz);
  ASSERT_TRUE(WaitFor([&] { return TelemetryShows(kMaxClockMhz); }, 60))
      << "telemetry never showed the healthy GPU: " << telemetry_->Health().last_error;
  Scheduler s(*client_, *store_, clock_, Config(predictor));
  ASSERT_TRUE(s.Start().has_value());

  // The service takes the whole GPU as a guaranteed MPS client.
  AddPod("svc-1", "online", kServiceApp, "svc-5d8f");
  ASSERT_TRUE(WaitFor([&] { return NodeOf("svc-1") == node_; }, 60));
  api_.SetPodRunning(ns_, "svc-1");
  // The offline job joins it on the same GPU at the round after SysMonitor found it Healthy,
  // best effort at dynamic SM's 70 %.
  AddPod("train-1", "offline", kJobApp, "train");
  ASSERT_TRUE(WaitFor([&] { return NodeOf("train-1") == node_; }, 60)) << "offline job not placed";
  api_.SetPodRunning(ns_, "train-1");
  const json svc = PlacementOf("svc-1"), job = PlacementOf("train-1");
  ASSERT_EQ(svc["slices"].size(), 1u) << svc.dump();
  ASSERT_EQ(job["slices"].size(), 1u) << job.dump();
  EXPECT_EQ(svc["slices"][0]["partition_uuid"], uuid_);
  EXPECT_EQ(job["slices"][0]["partition_uuid"], uuid_);
  EXPECT_EQ(svc["slices"][0]["milli"], 1000);
  EXPECT_FALSE(svc["slices"][0].value("best_effort", false));
  EXPECT_EQ(job["slices"][0]["milli"], 700);
  EXPECT_TRUE(job["slices"][0].value("best_effort", false));

  // Healthy: cycles keep judging fresh samples and nothing is evicted.
  ASSERT_TRUE(Progress(s, 10, 6));
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_FALSE(s.eviction_counts().contains({"muxflow", "evicted"}));
  EXPECT_EQ(s.stats().evicted, 0);

  // The SM clock drops to 1050 MHz: clock_drop 0.255 ≥ 0.20, Overlimit.
  WriteGpu(kDroppedClockMhz);
  ASSERT_TRUE(WaitFor([&] { return Evicted("train-1"); }, 60))
      << "offline job not evicted; telemetry SM clock "
      << telemetry_->SmClockMhz(uuid_).value_or(-1) << " MHz";
  ASSERT_TRUE(WaitFor([&] { return !EventsFor("train-1", "Evicted").empty(); }, 30));
  const std::string message = EventsFor("train-1", "Evicted")[0].value("message", "");
  EXPECT_NE(message.find("muxflow"), std::string::npos) << message;
  EXPECT_NE(message.find("SysMonitor Overlimit on " + uuid_), std::string::npos) << message;
  EXPECT_NE(message.find("clock_drop"), std::string::npos) << message;
  EXPECT_GE(s.eviction_counts().at({"muxflow", "evicted"}), 1);

  // The service stays where it was: only best-effort work is evicted. (The scheduler counts
  // the eviction once the API call returns, just after the API server shows it.)
  ASSERT_TRUE(Progress(s, 5, 4));
  EXPECT_EQ(s.stats().evicted, 1);
  EXPECT_FALSE(Evicted("svc-1"));
  EXPECT_EQ(api_.evictions().size(), 1u);
  EXPECT_EQ(NodeOf("svc-1"), node_);
  EXPECT_TRUE(EventsFor("svc-1", "Evicted").empty());

  // The Job's replacement waits: an Overlimit GPU (held 60 s) takes no offline work.
  AddPod("train-2", "offline", kJobApp, "train");
  ASSERT_TRUE(Progress(s, 10, 6));
  EXPECT_TRUE(NodeOf("train-2").empty());
  s.Stop();
}

}  // namespace
}  // namespace tessera::k8s
