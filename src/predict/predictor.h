#pragma once
// Predictor: what the policies ask (DESIGN §4, seed 000 Ch. 8.3): the isolated throughput of an
// application on a configuration it may never have run on, and the fraction of its QPS a
// neighbour takes away. It owns the profile matrix and the interference matrices, keeps every
// cell of both completed in a cache, and folds live measurements back in (Observe).
//
// Lookups by integer handle (AppId/ConfigId from FindApp/FindConfig) are one array read; the
// string forms add a hash lookup. Completion happens in Create, in Refit, and after every
// `refit_every`-th observation; between refits an observed cell reads its own mean and a brand
// new application or configuration reads nothing (nullopt / NaN) until the next refit. With the
// default refit_every = 1 a new application with one or two measured configurations has a full
// predicted row as soon as Observe returns (Paragon-style cold start). A refit re-completes the
// interference matrices only when an interference observation came in since (the completion is
// deterministic, so the result is the same).
//
// Profiles are completed in log space (throughput spans four orders of magnitude); interference
// fractions in linear space, clamped to [0, 1]. What each application declares (features.h)
// reaches a method that reads it (`features`, the default); an application that declares nothing
// is completed from its cells alone.
//
// Every isolated prediction has an uncertainty (uncertainty.h): σ of the log value, a measured
// cell's from its runs, a completed cell's from a model calibrated on held-out observed cells at
// Create and every `calibrate_every`-th refit; IntervalAt turns it into a central interval.
// Calibration costs several completions and most policies never read σ, so it runs lazily: a
// refit at which it is due keeps its matrix, and the first SigmaAt/IntervalAt/uncertainty()
// after a refit calibrates on the matrix kept (once per due point, however many refits later)
// and fills the completed cells' σ. Every σ read gives exactly what calibrating at the refit
// would have, and costs one atomic load more than an array read (the first after a refit, the
// fill too).
//
// Not thread-safe: Observe/Refit/SetFeatures must not run concurrently with anything else;
// concurrent const lookups are fine (the first σ read after a refit fills σ under a mutex).
//
// A copy is an independent predictor in the same state (the completion methods, immutable, are
// shared): what an experiment hands each run that would otherwise refit the same samples. Copy
// only while nothing else uses the source.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/completer.h"
#include "predict/interference.h"
#include "predict/matrix.h"
#include "predict/uncertainty.h"

namespace tessera::predict {

struct PredictorOptions {
  std::string method = "features";          // profile completion (registry.h)
  std::string interference_method = "svd";  // interference completion
  int refit_every = 1;                      // observations between re-completions (>= 1)
  int calibrate_every = 100;                // refits between re-calibrations (0: Create only)

  bool operator==(const PredictorOptions&) const = default;
};

struct Interval {
  double low = 0, high = 0;  // QPS
};

using AppId = int;
using ConfigId = int;

class Predictor {
 public:
  // Completes `profile` (values must be positive) and `interference` once.
  [[nodiscard]] static Expected<Predictor> Create(ProfileMatrix profile,
                                                  InterferenceMatrices interference = {},
                                                  PredictorOptions options = {},
                                                  FeatureTable features = {});

  std::optional<AppId> FindApp(const std::string& app) const { return profile_.FindRow(app); }
  std::optional<ConfigId> FindConfig(const std::string& config) const {
    return profile_.FindCol(config);
  }
  int num_apps() const { return profile_.rows(); }
  int num_configs() const { return profile_.cols(); }

  // Hot path: predicted (or observed) isolated QPS; NaN only for a row/column added since the
  // last refit. Handles must come from FindApp/FindConfig.
  double IsolatedAt(AppId app, ConfigId config) const {
    return isolated_[static_cast<size_t>(app) * static_cast<size_t>(stride_) +
                     static_cast<size_t>(config)];
  }
  bool IsObserved(AppId app, ConfigId config) const { return profile_.Has(app, config); }
  // σ of the log of IsolatedAt (about its relative error); NaN where IsolatedAt is NaN. The
  // first read after a refit may calibrate (see above).
  double SigmaAt(AppId app, ConfigId config) const {
    EnsureSigma();
    return sigma_[static_cast<size_t>(app) * static_cast<size_t>(stride_) +
                  static_cast<size_t>(config)];
  }
  // The central interval holding the true QPS with probability `coverage` (calibrated at 0.9).
  Interval IntervalAt(AppId app, ConfigId config, double coverage = 0.9) const;
  const UncertaintyModel& uncertainty() const {
    EnsureSigma();
    return uncertainty_;
  }
  // How many times the uncertainty model was fitted (0 until σ is first read): what the lazy
  // calibration saved, for tests and benchmarks.
  int calibrations() const { return sigma_state_->calibrations; }
  // False when no application was measured both on `config` and on one of `app`'s measured
  // configurations: the value is then only the bias model's extrapolation (in MIGProfiler, any
  // A100-40GB application on an A100-80GB profile). Policies should not trust such a cell.
  // Refreshed with the completion (false for rows/columns added since the last refit).
  bool Supported(AppId app, ConfigId config) const {
    return supported_[static_cast<size_t>(app) * static_cast<size_t>(stride_) +
                      static_cast<size_t>(config)] != 0;
  }

  // Interference by handle, for the scoring hot path: a partition kind from FindKind, victim
  // and aggressor from FindApp (profile rows). Fraction in [0, 1] (observed mean, else the
  // completion), or NaN when the kind has no row or column for either application, or the
  // application was added since the last refit. One array read.
  std::optional<int> FindKind(const std::string& kind) const;
  double InterferenceAt(int kind, AppId victim, AppId aggressor) const {
    const KindCache& k = kinds_[static_cast<size_t>(kind)];
    if (victim >= k.apps || aggressor >= k.apps) return kMissing;
    return k.lost[static_cast<size_t>(victim) * static_cast<size_t>(k.apps) +
                  static_cast<size_t>(aggressor)];
  }
  // Mean of the kind's observed fractions (0 when none): the prior for an unknown pair.
  double InterferenceMean(int kind) const { return kinds_[static_cast<size_t>(kind)].mean; }

  std::optional<double> Isolated(const std::string& app, const std::string& config) const;
  // Fraction in [0, 1] of the victim's QPS lost next to the aggressor on a partition of `kind`.
  std::optional<double> Interference(const std::string& victim, const std::string& aggressor,
                                     const std::string& kind) const;

  // Folds a measurement in (qps > 0); new keys become new rows/columns. The observation sink,
  // when set, hears every measurement folded in (a driver persists them: k8s::Scheduler keeps
  // them in the store so that a restarted scheduler learns them again).
  [[nodiscard]] Expected<void> Observe(const std::string& app, const std::string& config,
                                       double qps);
  using ObservationSink =
      std::function<void(const std::string& app, const std::string& config, double qps)>;
  void set_observation_sink(ObservationSink sink) { sink_ = std::move(sink); }
  [[nodiscard]] Expected<void> ObserveInterference(const std::string& kind,
                                                   const std::string& victim,
                                                   const std::string& aggressor,
                                                   double lost_fraction);
  // Declares (replaces) what an application is; a new application becomes an empty row (so that
  // after the next Refit it has a row predicted from its features alone). True when anything
  // changed (the caller refits when it wants the declaration to count now); an Error, and no
  // change, for a malformed feature or one whose kind disagrees with the table (features.h).
  [[nodiscard]] Expected<bool> SetFeatures(const std::string& app, AppFeatures features);
  const FeatureTable& features() const { return features_; }
  // Re-completes every matrix now.
  [[nodiscard]] Expected<void> Refit();

  // Changes whenever any prediction may have changed (every Observe and Refit): callers that
  // cache predictions compare it.
  uint64_t generation() const { return generation_; }

  const ProfileMatrix& profile() const { return profile_; }
  const InterferenceMatrices& interference() const { return interference_; }
  const PredictorOptions& options() const { return options_; }

 private:
  Predictor() = default;
  [[nodiscard]] Expected<void> RefitProfile();
  [[nodiscard]] Expected<void> RefitInterference();
  [[nodiscard]] Expected<void> AfterObservation();
  void ResizeCache();
  // The lazy σ: a cheap check on the hot path, the work out of line.
  void EnsureSigma() const {
    if (!sigma_state_->ready.load(std::memory_order_acquire)) FillSigma();
  }
  void FillSigma() const;

  PredictorOptions options_;
  std::shared_ptr<const Completer> profile_method_, interference_method_;
  ProfileMatrix profile_;
  InterferenceMatrices interference_;
  FeatureTable features_;
  mutable UncertaintyModel uncertainty_;  // written only by FillSigma, under its mutex
  int refits_since_calibration_ = 0;
  bool calibration_due_ = false;  // a calibration was scheduled (run or kept in sigma_state_)
  // What FillSigma needs, kept by the last refit; behind a pointer so that Predictor moves.
  struct SigmaState {
    mutable std::mutex mutex;  // also locked to copy a const SigmaState
    std::atomic<bool> ready{true};  // sigma_ and uncertainty_ are final for this refit
    // The matrix (log values) and features of the last calibration due and not yet run.
    std::optional<Eigen::MatrixXd> calibrate_on;
    EncodedFeatures calibrate_features;
    // The last refit's log values and completion: the completed cells' σ comes from them.
    Eigen::MatrixXd observed, completed;
    int calibrations = 0;

    SigmaState() = default;
    SigmaState(const SigmaState& other);  // under other.mutex; a mutex of its own
  };
  // Owns its SigmaState; a copy gets its own (a new mutex, the same pending calibration).
  struct SigmaStateBox {
    std::unique_ptr<SigmaState> state = std::make_unique<SigmaState>();
    SigmaStateBox() = default;
    SigmaStateBox(const SigmaStateBox& other) : state(std::make_unique<SigmaState>(*other.state)) {}
    SigmaStateBox& operator=(const SigmaStateBox& other) {
      if (this != &other) state = std::make_unique<SigmaState>(*other.state);
      return *this;
    }
    SigmaStateBox(SigmaStateBox&&) = default;
    SigmaStateBox& operator=(SigmaStateBox&&) = default;
    SigmaState* operator->() const { return state.get(); }
    SigmaState& operator*() const { return *state; }
  };
  SigmaStateBox sigma_state_;
  std::vector<double> isolated_;  // rows × stride_, row-major
  // Same layout: σ of log isolated. A completed cell's is written by FillSigma (const, under
  // sigma_state_->mutex, before `ready`); readers read it only after `ready`.
  mutable std::vector<double> sigma_;
  std::vector<unsigned char> supported_;  // same layout
  int stride_ = 0;
  std::map<std::string, Eigen::MatrixXd> interference_completed_;
  bool interference_changed_ = true;  // since interference_completed_ was computed
  // Per kind, the interference of every profile row on every other (victim-major), rebuilt
  // with each refit.
  struct KindCache {
    std::string name;
    int apps = 0;
    std::vector<double> lost;
    double mean = 0;
  };
  std::vector<KindCache> kinds_;
  void RebuildKindCaches();
  int pending_ = 0;  // observations since the last refit
  uint64_t generation_ = 0;
  ObservationSink sink_;
};

}  // namespace tessera::predict
