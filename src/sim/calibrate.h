#pragma once
// Calibration of the simulator's physics against real measurements (docs/simulator.md).
//
// FitRoofline finds the non-negative roofline (compute_s, memory_s, fixed_s) whose predicted
// time per query best matches measured throughputs in relative terms (least squares of
// (t_model − t_measured) / t_measured, over the 7 non-empty sets of free coefficients — an
// exact non-negative least squares for three unknowns). CalibrateMigProfiler turns every
// MIGProfiler application into a catalogue entry: the fitted roofline for configurations never
// measured, the measurements themselves as `measured` overrides, and the least framebuffer it
// ran in as its footprint.

#include <string>
#include <vector>

#include "base/error.h"
#include "model/gpu_model.h"
#include "sim/apps.h"
#include "sim/experiment.h"

namespace tessera::sim {

struct Measurement {
  model::GpuModelId gpu = 0;
  int profile = -1;      // MIG profile index; -1 = whole GPU
  int32_t milli = 1000;  // MPS thread share
  double qps = 0;
};

struct RooflineFit {
  double compute_s = 0, memory_s = 0, fixed_s = 0;
  double max_relative_error = 0;  // of the roofline alone over the measurements
};

// Needs at least one measurement; the reference GPU sets the relative speeds.
[[nodiscard]] Expected<RooflineFit> FitRoofline(const std::vector<Measurement>& points,
                                                model::GpuModelId reference);

// Parses "A100-40GB/1g.5gb/100" (or ".../whole/25") into a measurement slot.
[[nodiscard]] Expected<Measurement> ParseConfigKey(const std::string& key);

struct CalibrationReport {
  AppCatalog catalog;                                          // the MIGProfiler applications only
  std::vector<std::pair<std::string, double>> roofline_error;  // app, max relative error
  int measurements = 0;
};

[[nodiscard]] Expected<CalibrationReport> CalibrateMigProfiler(const std::string& dir,
                                                               const std::string& reference_gpu);

// `tessera simulate --experiment calibrate` (registered in experiments.cc): fits the
// MIGProfiler applications under --data, reports how well a roofline alone matches them, and
// writes the catalogue (--apps or the built-in one, with those applications replaced or added)
// to --out. It runs no policy. CheckCalibrateArgs: the usage error for a missing --data.
[[nodiscard]] Expected<void> CheckCalibrateArgs(const ExperimentArgs& args);
[[nodiscard]] Expected<ExperimentOutput> RunCalibrateExperiment(const ExperimentArgs& args,
                                                                const Experiment& experiment);

}  // namespace tessera::sim
