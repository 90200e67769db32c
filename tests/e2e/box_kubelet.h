#pragma once
// EmulatedKubelet: the nodes of the emulated cluster (docs/cluster-box.md). It creates each pod
// of a scenario in the API server at its arrival, and once the scheduler has bound it, reads
// its slice from its ConfigMap exactly as the container would (CUDA_VISIBLE_DEVICES,
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) and runs it: it serves at
// the rate the simulator's ground truth (sim::Physics) gives for that slice beside its current
// co-runners, re-rated whenever a co-runner starts or ends; its served queries are a Triton
// counter (nv_inference_request_success) in a file the metrics exporter serves to Prometheus;
// its node's fake GPU file (what `tessera agent --fake` reads) shows the GPU's utilisation,
// memory, SM activity, power and MPS clients; when its queries are done its phase becomes
// Succeeded. A slice the kubelet cannot honour (a uuid not on the node, more compute or memory
// than is free: a double booking) fails the pod with the reason.
//
// Seed 001's pods (the online-offline scenario): an offline workload's pod says so
// (`tessera.io/class: offline`); an application with a usage trajectory (sim/usage.h: a service's
// resident cache and its burst) holds what the trajectory says since its start, in the node file
// per process and per GPU, rewritten every second while any such pod or any service with an
// offered load runs (re-rated at the clock's time); a GPU whose memory in use passes its memory
// counts an OOM against the pods there whose use grew (BoxPod::oom: the kubelet does not crash
// them, the run reports it); an evicted pod that checkpoints comes back from its last checkpoint
// (Workload::checkpoint_queries); services with an offered load serve until the run ends.
//
// Pods have a controller (an ownerReference to a ReplicaSet named after the pod), so the
// scheduler's moves go through the Eviction API: an evicted pod stops serving at once, and the
// kubelet, standing in for its ReplicaSet, creates its replacement (`<name>-m1`, …) with the
// queries still to do; once bound, the new container serves nothing for `restart_s` (container
// start and model load: sim::EngineOptions::move_restart_s, 10 s), as in the simulator.
//
// The mirror cluster is the simulator's own ClusterState for the run (same GPUs, uuids and MIG
// layouts); the kubelet places and removes the pods it runs there, so Physics sees the same
// co-location the engine would. Single-threaded: the box calls Tick from one loop.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/fake_api_server.h"
#include "model/cluster.h"
#include "sim/physics.h"

namespace tessera::e2e {

struct BoxPod {
  model::Workload workload;  // as the simulator has it (arrival, queries, SLO)
  std::string name;          // its first pod's name
  std::string api_name;  // the pod that runs it now: name, then name-m1, name-m2 … after moves
  bool created = false;
  std::optional<double> start_s, end_s;  // seconds since the run started
  std::string node, partition, profile;  // as the kubelet ran it
  int32_t milli = 0;
  double served = 0;  // queries
  double qps = 0;     // its current rate
  bool failed = false;
  std::string failure;
  double last_s = 0;         // progress counted up to here
  int moves = 0;             // times it was evicted and came back as its controller's new pod
  double served_before = 0;  // by its earlier pods: the current pod's counter starts after it
  double resume_at = 0;      // after a move, the new container serves nothing before this
  int oom = 0;  // times its GPU's memory in use passed the GPU's while it held a growing share
  bool ready = false;   // reported Ready (after resume_at): its server answers
  bool placed = false;  // holds a slice in the mirror now
  bool running() const { return placed && !end_s; }
  double achieved_qps() const {
    return start_s && end_s && !failed && *end_s > *start_s
               ? static_cast<double>(workload.queries) / (*end_s - *start_s)
               : 0;
  }
};

struct KubeletOptions {
  std::string ns = "thesis";
  std::string exporter_file;                      // the pods' Triton counters (.prom)
  std::map<std::string, std::string> node_files;  // node name -> its agent's fake GPU file
  double restart_s = 10;  // a moved pod's new container: nothing served for this long
};

class EmulatedKubelet {
 public:
  EmulatedKubelet(k8s::testing_support::FakeApiServer& api, sim::Physics& physics,
                  model::ClusterState& mirror, std::vector<model::Workload> pods,
                  KubeletOptions options);
  // The node files and the exporter file as they are before any pod: written once before the
  // agents start.
  void WriteFiles();
  // One pass at `now` (seconds since the run started): progress and completions, arrivals,
  // starts of newly bound pods, then the files when anything changed.
  void Tick(double now);
  // Every pod ended, but for those in `may_wait` that never started (the simulator never
  // started them either: slo-aware's admission control keeps a pod whose SLO no slice meets
  // waiting for good) and the services with an offered load, which serve until the run ends.
  bool AllDone(const std::set<int64_t>& may_wait = {}) const;
  const std::vector<BoxPod>& pods() const { return pods_; }

 private:
  void Advance(double now);
  // Running pods whose pod object is gone (evicted): off their slice, replaced by a new pod.
  void ReplaceEvicted(double now);
  void CreatePod(const BoxPod& pod);
  void CreateArrived(double now);
  void StartBound(double now);
  // Reads the pod's binding and places it in the mirror; false while it is not bound yet.
  bool Start(BoxPod& pod, double now);
  void Fail(BoxPod& pod, double now, const std::string& why);
  void Rerate(double now);
  // What a pod holds on its GPU now: its trajectory's memory since its start, else its slice's.
  double MemoryInUse(const BoxPod& p, const model::Client& c, double now) const;
  // Counts an OOM against the growing pods of every GPU whose memory in use just passed its own.
  void CheckMemory(double now);
  // Whether some running pod's use or rate moves with time (a trajectory, an offered load).
  bool TimeVarying() const;
  void WriteNodeFile(model::NodeIndex n, double now) const;
  void WriteExporterFile() const;

  k8s::testing_support::FakeApiServer& api_;
  sim::Physics& physics_;
  model::ClusterState& mirror_;
  std::vector<BoxPod> pods_;
  std::vector<size_t> by_arrival_;  // pods_ indices in order of arrival
  KubeletOptions options_;
  std::map<model::WorkloadId, sim::RunRate> rates_;
  bool changed_ = true;
  double last_export_ = -1;
  double last_sample_ = -1;         // last periodic re-rate of time-varying pods
  std::set<model::GpuIndex> over_;  // GPUs whose memory in use is past their memory now
  std::map<model::WorkloadId, double> last_use_;  // memory in use at the last CheckMemory
};

// A pod name for a workload: "p07-onnx-resnet50" (Kubernetes names have no '/').
std::string PodName(const model::Workload& w);

// The API server's name for the simulator's node `n`: "n0-v100". The API server lists nodes by
// name and the scheduler keeps that order, while the simulator keeps its cluster's order; a
// policy's choice between equal offers follows the order, so the names keep the simulator's.
std::string ApiNodeName(const model::ClusterState& cluster, model::NodeIndex n);

}  // namespace tessera::e2e
