#pragma once
// The slices of Kubernetes objects Tessera reads (pods, nodes) and how a pod becomes a
// model::Workload (DESIGN §6, docs/kubernetes.md "Annotations").
//
// A pod asks for GPUs through its containers' resources — `nvidia.com/gpu: N` (whole GPUs),
// `nvidia.com/mig-<profile>: 1` (one MIG instance), `tessera.io/gpu-milli` (a share of one GPU,
// 1..1000) and `tessera.io/gpu-memory` (GPU memory; a plain number is MiB, a quantity with a
// suffix is bytes) — and describes itself through annotations under `tessera.io/`
// (kAnnotation* below). WorkloadFromPod either succeeds or fails with one message naming the
// pod and the offending annotation or resource; it never guesses. Plain values; no I/O.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "k8s/node_rules.h"
#include "model/workload.h"

namespace tessera::k8s {

inline constexpr std::string_view kPrefix = "tessera.io/";
// Inputs (set by the user on the pod).
inline constexpr std::string_view kAnnotationApp = "tessera.io/app";
inline constexpr std::string_view kAnnotationSloQps = "tessera.io/slo-qps";
inline constexpr std::string_view kAnnotationSloLatency = "tessera.io/slo-latency-ms";
inline constexpr std::string_view kAnnotationClass = "tessera.io/class";
inline constexpr std::string_view kAnnotationPriority = "tessera.io/priority";
inline constexpr std::string_view kAnnotationGpuModels = "tessera.io/gpu-models";
inline constexpr std::string_view kAnnotationGpuMilli = "tessera.io/gpu-milli";
inline constexpr std::string_view kAnnotationGpuMemory = "tessera.io/gpu-memory";
inline constexpr std::string_view kAnnotationGoal = "tessera.io/goal-s";
inline constexpr std::string_view kAnnotationGoalZ = "tessera.io/goal-z";
// The PromQL the scheduler reads this pod's QPS with, $namespace and $pod substituted
// (telemetry::WorkloadQpsQuery); default: the scheduler's --qps-query.
inline constexpr std::string_view kAnnotationQpsQuery = "tessera.io/qps-query";
// `tessera.io/feature.<name>: <value>`, one per feature the pod declares (Workload::features).
inline constexpr std::string_view kAnnotationFeaturePrefix = "tessera.io/feature.";
// Outputs (written by the scheduler before it binds).
inline constexpr std::string_view kAnnotationPlacement = "tessera.io/placement";
inline constexpr std::string_view kAnnotationVisibleDevices = "tessera.io/cuda-visible-devices";
inline constexpr std::string_view kAnnotationThreadPercentage = "tessera.io/mps-thread-percentage";
inline constexpr std::string_view kAnnotationPinnedMemLimit = "tessera.io/mps-pinned-mem-limit";
inline constexpr std::string_view kAnnotationRemoteGpus = "tessera.io/remote-gpus";

inline constexpr std::string_view kResourceGpu = "nvidia.com/gpu";
inline constexpr std::string_view kResourceMigPrefix = "nvidia.com/mig-";
inline constexpr std::string_view kResourceGpuMilli = "tessera.io/gpu-milli";
inline constexpr std::string_view kResourceGpuMemory = "tessera.io/gpu-memory";

struct Pod {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string scheduler_name;
  std::string node_name;  // empty while unbound
  int priority = 0;       // spec.priority (from its PriorityClass; 0 when unset)
  bool preempts = true;   // spec.preemptionPolicy: PreemptLowerPriority (the default), or Never
  std::string phase;      // Pending | Running | Succeeded | Failed | Unknown
  // Condition Ready ("True" or not); none when the status has no Ready condition.
  std::optional<bool> ready;
  bool deleting = false;  // metadata.deletionTimestamp is set
  std::map<std::string, std::string> annotations;
  std::string controller;  // "ReplicaSet/web-5d8f" (its controller owner), "" when none
  // Σ over containers (max with each init container), as kube-scheduler counts requests.
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::map<std::string, std::string> extended;  // other resource name -> quantity text
  // Which nodes it may use (nodeSelector, required node affinity, tolerations; node_rules.h).
  // A malformed rule leaves them empty and says why in rules_error: the pod is not scheduled
  // (a bound one is still counted where it runs).
  NodeRules node_rules;
  std::string rules_error;

  std::string Key() const { return namespace_ + "/" + name; }
  // Holds no resources any more (finished or being deleted).
  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct Node {
  std::string name;
  std::string resource_version;
  bool ready = false;          // condition Ready=True
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;                // spec.taints
  std::vector<std::string> taints_skipped;  // malformed ones, left out, for the log
  int64_t cpu_milli = 0;                    // status.allocatable
  int64_t memory_mib = 0;
};

// `object`'s member `key` when `object` is an object and the member a string; else `fallback`.
// json::value throws on a member of another type; an object from the API server or a client is
// read with this instead, so a mistyped member is absent, not an exception out of a daemon.
std::string StringMember(const nlohmann::json& object, std::string_view key,
                         std::string fallback = "");

// The error names the object ("pod ns/name: ...") and the field.
[[nodiscard]] Expected<Pod> PodFromJson(const nlohmann::json& object);
[[nodiscard]] Expected<Node> NodeFromJson(const nlohmann::json& object);

// A Kubernetes resource quantity ("250m", "2", "1.5", "512Mi", "1G", "1e3") in units of
// 1/`milli_scale`: ParseQuantity("250m", 1000) = 250, ParseQuantity("2Gi", 1) = 2147483648.
[[nodiscard]] Expected<int64_t> ParseQuantity(std::string_view text, int64_t scale = 1);

// The workload the scheduler core sees for this pod; `id` is the driver's numeric handle.
[[nodiscard]] Expected<model::Workload> WorkloadFromPod(const Pod& pod, model::WorkloadId id);

}  // namespace tessera::k8s
