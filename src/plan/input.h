#pragma once
// What `tessera plan` is asked (docs/planning.md): the services to host, each with its
// throughput objective at peak, and the GPU models it may buy, each with a price.
//
// The services file (YAML):
//   gpus: [V100-32GB, A30-24GB]          # optional menu; default every catalogue model
//   services:
//     - name: detector                   # unique
//       app: onnx/ssd-mobilenet           # a profiled application, or `features:` below
//       features: {model: resnet50, task: cv, batch: 8}   # for one nobody profiled
//       slo_qps: 40                       # queries/s it must serve at peak
//       min_replicas: 2                   # optional, default 1
//       memory_mib: 4096                  # optional: GPU memory a replica needs
//       load: {trough: 0.3, peak_hour: 20}  # optional daily curve (sim/load_curve.h); default
//                                           # flat at slo_qps all day
// The prices file (YAML): `source: "..."` and `prices: {V100-32GB: 3.06, ...}` in any unit per
// GPU-hour (data/plan/prices.yaml). Without one every GPU costs 1: the plan counts GPUs.
//
// Parsing is all or nothing: the first problem is one Error naming the file and line, and the
// service when it concerns one. Checks that need the catalogue or the predictor (an unknown
// application without features, an SLO no GPU can serve) are the planner's (plan.h).

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/gpu_model.h"
#include "predict/features.h"
#include "sim/load_curve.h"

namespace tessera::plan {

struct ServiceSpec {
  std::string name;
  std::string app;                     // empty when only `features` are given
  predict::AppFeatures features;       // empty when not given
  double slo_qps = 0;                  // > 0
  int min_replicas = 1;                // >= 1
  int64_t memory_mib = 0;              // 0: what its application is known to need
  std::optional<sim::DailyLoad> load;  // peak_qps = slo_qps
  int line = 0;                        // where it starts in its file, for errors

  // The predictor's row for it: `app`, or "plan/<name>" for a service known by features only.
  std::string AppKey() const { return app.empty() ? "plan/" + name : app; }
  // Its offered load at t seconds since midnight.
  double QpsAt(double t) const { return load ? load->QpsAt(t) : slo_qps; }
};

struct GpuOffer {
  model::GpuModelId model = 0;
  double price = 1;  // per GPU-hour
};

struct PlanInput {
  std::string file;  // for errors
  std::vector<ServiceSpec> services;
  std::vector<GpuOffer> gpus;  // the menu
  std::string price_source;    // empty: no prices given, every GPU costs 1
};

// Parses the services file's text. `menu` (comma-separated GPU model names), when not empty,
// replaces the file's `gpus:`.
[[nodiscard]] Expected<PlanInput> ParsePlanInput(const std::string& yaml_text,
                                                 const std::string& file_name,
                                                 const std::string& menu = "");
// The menu `--gpus` names (comma-separated GPU model names), or an Error naming the first
// unknown one.
[[nodiscard]] Expected<std::vector<GpuOffer>> ParseMenuFlag(const std::string& menu);

// Applies a prices file's text to `input`'s menu: every GPU model on the menu needs a price
// (> 0); prices for other models are ignored.
[[nodiscard]] Expected<void> ApplyPrices(PlanInput& input, const std::string& yaml_text,
                                         const std::string& file_name);

}  // namespace tessera::plan
