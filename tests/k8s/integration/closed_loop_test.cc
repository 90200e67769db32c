// The closed loop in a cluster, end to end: the fake API server (the one fake: no real API
// server runs here), a real Redis and a real Prometheus (scripts/harness.sh) scraping per-pod
// Triton-style counters this test writes (tests/tools/metrics_file_exporter.cc).
//
// slo-aware places a pod with an SLO of 100 QPS where the profile predicts 150 (A100) or 120
// (V100) QPS; the pod serves 40. The scheduler reads that from Prometheus, the learner folds it
// into the cell (count 1 in the profile: the cell's mean becomes (p + 40) / 2 < 100), and
// slo-aware moves the pod to the other GPU through the Eviction API: a PodDisruptionBudget
// first refuses it (429), the scheduler retries, and once the budget allows it the pod is
// evicted; the test, as its ReplicaSet, creates the replacement, which lands on the other node.
// A second scheduler started on the same Redis learns the observation again from the store.
// Before anything that includes <resolv.h> (cpp-httplib does), whose `_res` macro breaks Eigen.
#include "predict/predictor.h"
#include "predictor_fixture.h"
//
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "k8s/integration/loop_fixture.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::A100Inventory;
using testing_support::WaitFor;

constexpr const char* kApp = "triton/resnet50";
// The harness scrapes every second: a 5 s window holds enough samples for a rate.
constexpr const char* kQpsQuery =
    R"(sum(rate(nv_inference_request_success{namespace="$namespace",pod="$pod"}[5s])))";

store::NodeInventory V100Inventory(const std::string& node) {
  store::NodeInventory inv = A100Inventory(node, 1);
  store::GpuInventory& g = inv.gpus[0];
  g.product_name = "Tesla V100-SXM2-32GB";
  g.model = "V100-32GB";
  g.memory_mib = 32768;
  g.partitions = {{g.uuid, "", -1, 0, 32768}};
  return inv;
}

// Two applications on two whole-GPU configurations, each cell run once.
predict::Predictor ClosedLoopPredictor() {
  return testing_predict::MeasuredPredictor({{kApp, "A100-40GB/whole/100", 150},
                                             {kApp, "V100-32GB/whole/100", 120},
                                             {"triton/bert", "A100-40GB/whole/100", 80},
                                             {"triton/bert", "V100-32GB/whole/100", 60}});
}

// A counter a Triton server would export, rising at `qps`, written where Prometheus scrapes it.
class TritonCounter {
 public:
  TritonCounter(std::string path, std::string ns, std::string pod, double qps)
      : path_(std::move(path)), ns_(std::move(ns)), pod_(std::move(pod)), qps_(qps) {
    thread_ = std::thread([this] {
      const auto start = std::chrono::steady_clock::now();
      while (!stop_) {
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string tmp = path_ + ".tmp";
        std::ofstream(tmp) << fmt::format(
            "nv_inference_request_success{{namespace=\"{}\",pod=\"{}\",model=\"resnet50\","
            "version=\"1\"}} {:.0f}\n",
            ns_, pod_, 1000 + qps_ * s);
        std::filesystem::rename(tmp, path_);  // a scrape never reads half a file
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      std::filesystem::remove(path_);
    });
  }
  ~TritonCounter() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::string path_, ns_, pod_;
  double qps_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class ClosedLoopTest : public testing_support::LoopFixture {
 protected:
  void SetUp() override {
    Connect("loop", kQpsQuery);
    if (HasFatalFailure() || IsSkipped()) return;
    AddNodeWith(A100Inventory("node-a100", 1));
    AddNodeWith(V100Inventory("node-v100"));
  }

  SchedulerConfig Config(const std::string& identity, predict::Predictor& predictor) {
    SchedulerConfig c = BaseConfig(identity, "slo-aware", predictor);
    c.learner = &predictor;
    c.watch_qps = [this](std::map<std::string, std::string> q) {
      telemetry_->SetWorkloadQueries(std::move(q));
    };
    return c;
  }

  void AddWebPod(const std::string& name) {
    api_.AddPodWith(ns_, name, {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}},
                    {{"tessera.io/app", kApp}, {"tessera.io/slo-qps", "100"}}, {{"app", "web"}},
                    {{"apiVersion", "apps/v1"},
                     {"kind", "ReplicaSet"},
                     {"name", "web-5d8f"},
                     {"uid", "rs-uid-1"}});
  }
  // Whether Prometheus computes `qps` ± tolerance for the pod with the scheduler's query.
  bool RateNear(const std::string& ns, const std::string& pod, double qps, double tolerance) {
    auto c = telemetry::PrometheusClient::Create({prometheus_, 5});
    if (!c) return false;
    auto r = c->Query(telemetry::WorkloadQpsQuery(kQpsQuery, ns, pod));
    return r && r->size() == 1 && std::abs((*r)[0].sample.value - qps) <= tolerance;
  }
};

TEST_F(ClosedLoopTest, APodBelowItsSloIsLearnedAndMovedThroughAPdbThatFirstRefuses) {
  predict::Predictor predictor = ClosedLoopPredictor();
  // Only one web pod exists and it must stay up: the first eviction is refused.
  api_.AddPdb(ns_, "web", {{"selector", {{"matchLabels", {{"app", "web"}}}}}, {"minAvailable", 1}});
  // The pod's server counts from before it is placed (as a container's would from its start,
  // seconds before the scheduler reads it); Prometheus has a steady rate by then.
  TritonCounter counter(exporter_dir_ + "/" + ns_ + "-web-1.prom", ns_, "web-1", 40);
  ASSERT_TRUE(WaitFor([&] { return RateNear(ns_, "web-1", 40, 3); }, 60));
  Scheduler s(*client_, *store_, clock_, Config("replica-a", predictor));
  ASSERT_TRUE(s.Start().has_value());
  AddWebPod("web-1");
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("web-1").empty(); }, 60));
  const std::string first = NodeOf("web-1");
  const std::string other = first == "node-a100" ? "node-v100" : "node-a100";
  const std::string cell = first == "node-a100" ? "A100-40GB/whole/100" : "V100-32GB/whole/100";
  const double profiled = first == "node-a100" ? 150 : 120;
  api_.SetPodRunning(ns_, "web-1");  // the kubelet: healthy, so the budget counts it

  ASSERT_TRUE(WaitFor([&] { return s.stats().observations >= 1; }, 60))
      << "no observation; telemetry says: " << telemetry_->WhyNoQps(ns_ + "/web-1");
  // Observed: the cell's mean moved from the profiled rate toward the ~40 QPS served.
  const double learned = *predictor.Isolated(kApp, cell);
  EXPECT_LT(learned, 100);
  EXPECT_GT(learned, (profiled + 30) / 2);
  EXPECT_LT(learned, (profiled + 50) / 2);

  // The move: refused by the budget first (429), never forced.
  ASSERT_TRUE(WaitFor([&] { return api_.eviction_refusals() >= 1; }, 60));
  ASSERT_TRUE(WaitFor([&] { return !EventsFor("web-1", "EvictionRefused").empty(); }, 30));
  EXPECT_EQ(NodeOf("web-1"), first);
  EXPECT_TRUE(api_.evictions().empty());
  // The status page (refreshed once a second) shows it running below its SLO.
  std::optional<StatusPod> shown;
  ASSERT_TRUE(WaitFor(
      [&] {
        shown.reset();
        for (const StatusNode& n : s.Status().nodes) {
          for (const StatusGpu& g : n.gpus) {
            for (const StatusPartition& p : g.partitions) {
              for (const StatusPod& pod : p.pods) {
                if (pod.name == ns_ + "/web-1" && pod.observed_qps) shown = pod;
              }
            }
          }
        }
        return shown.has_value();
      },
      30));
  EXPECT_EQ(shown->slo, StatusPod::Slo::kMissed);
  EXPECT_NEAR(*shown->observed_qps, 40, 10);
  EXPECT_EQ(*shown->slo_qps, 100);

  // The budget allows one disruption now: the retried eviction goes through.
  api_.AddPdb(ns_, "web",
              {{"selector", {{"matchLabels", {{"app", "web"}}}}}, {"maxUnavailable", 1}});
  ASSERT_TRUE(WaitFor([&] { return api_.evictions().size() == 1; }, 60));
  EXPECT_EQ(api_.evictions()[0], ns_ + "/web-1");
  ASSERT_TRUE(WaitFor([&] { return !EventsFor("web-1", "Evicted").empty(); }, 30));
  const auto counts = s.eviction_counts();
  EXPECT_EQ(counts.at({"slo-aware", "evicted"}), 1);
  EXPECT_GE(counts.at({"slo-aware", "refused_pdb"}), 1);
  // Counted once the API call returns, just after the API server shows the eviction.
  ASSERT_TRUE(WaitFor([&] { return s.stats().evicted >= 1; }, 30));
  EXPECT_EQ(s.stats().evicted, 1);

  // Its ReplicaSet's replacement is placed on the other GPU, predicted to keep the SLO.
  AddWebPod("web-2");
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("web-2").empty(); }, 60));
  EXPECT_EQ(NodeOf("web-2"), other);
  s.Stop();

  // A scheduler started afresh on the same store learns what the first one observed.
  predict::Predictor fresh = ClosedLoopPredictor();
  EXPECT_DOUBLE_EQ(*fresh.Isolated(kApp, cell), profiled);
  Scheduler b(*client_, *store_, clock_, Config("replica-b", fresh));
  ASSERT_TRUE(b.Start().has_value());
  ASSERT_TRUE(WaitFor([&] { return b.stats().observations_restored >= 1; }, 60));
  b.Stop();
  EXPECT_NEAR(*fresh.Isolated(kApp, cell), learned, 1e-9);
}

}  // namespace
}  // namespace tessera::k8s
