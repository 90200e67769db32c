#pragma once
// Workload: one inference job as the scheduler sees it (DESIGN §2) — what it is (application
// key, the "user" of the collaborative filter), what it declares about itself (features), what
// it must achieve (SLO), and what it asks for (CPU, memory, GPUs, GPU share, GPU memory,
// GPU-type constraints). A plain value.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/error.h"
#include "model/gpu_model.h"

namespace tessera::model {

using WorkloadId = int64_t;

// Side information (docs/prediction.md): feature name -> a number or a category, e.g. {model:
// bert-base, batch: 32}. The very type predict::AppFeatures names (predict/features.h, which model
// may not include); whoever fills it checks names and values there (k8s annotations, apps.yaml).
using AppFeatures = std::map<std::string, std::variant<double, std::string>, std::less<>>;

enum class WorkloadClass { kOnline, kOffline };  // latency-critical | best-effort
std::string_view ToString(WorkloadClass c);

struct GpuRequest {
  int count = 0;                   // GPUs; 0 = CPU-only workload
  int milli = 1000;                // share of each GPU, 1..1000; 1000 = the whole GPU
  int64_t memory_mib = 0;          // GPU memory per GPU; 0 = not stated
  std::vector<GpuModelId> models;  // allowed GPU models; empty = any
  std::string mig_profile;         // a specific MIG instance ("1g.5gb"); empty = none

  bool sharing() const { return count == 1 && milli < 1000; }
  // Inline: every fit check of every node asks it.
  bool AllowsModel(GpuModelId m) const {
    return models.empty() || std::find(models.begin(), models.end(), m) != models.end();
  }
};

struct Workload {
  WorkloadId id = 0;
  std::string name;
  std::string app;       // application key, e.g. "onnx/resnet50/bs1"; may be empty
  AppFeatures features;  // what it declares about itself; empty = nothing
  WorkloadClass klass = WorkloadClass::kOnline;
  int priority = 0;           // beside klass: no padding (bytes per placed workload, #39)
  double slo_qps = 0;         // target throughput; 0 = no SLO
  double slo_latency_ms = 0;  // optional; 0 = none
  int64_t queries = 0;        // amount of work; 0 = runs until removed
  // Offline work that checkpoints: its progress is saved every this many queries (iterations),
  // and an eviction resumes it from the last multiple. 0: nothing is lost (a move keeps all).
  int64_t checkpoint_queries = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  GpuRequest gpu;
  // A batch job's completion-time goal (seed 002's τ: its run, from start to end, in seconds;
  // 0 = none) and how much missing it matters, z: 1 (most) .. 10 (least). DRMaestro's utility
  // (policy/drmaestro.h) turns both into costs.
  double goal_s = 0;
  int goal_z = 5;
  double arrival_s = 0;

  // Ok, or what is wrong with the request, naming the workload.
  [[nodiscard]] Expected<void> Validate() const;
};

}  // namespace tessera::model
