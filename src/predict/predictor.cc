#include "predict/predictor.h"

#include <algorithm>
#include <cmath>

#include "predict/registry.h"

namespace tessera::predict {

Expected<Predictor> Predictor::Create(ProfileMatrix profile, InterferenceMatrices interference,
                                      PredictorOptions options, FeatureTable features) {
  if (options.refit_every < 1) return Fail("refit_every must be at least 1");
  if (options.calibrate_every < 0) return Fail("calibrate_every must not be negative");
  Predictor p;
  Expected<std::unique_ptr<Completer>> profile_method = MakeCompleter(options.method);
  if (!profile_method) return std::unexpected(profile_method.error());
  Expected<std::unique_ptr<Completer>> interference_method =
      MakeCompleter(options.interference_method);
  if (!interference_method) return std::unexpected(interference_method.error());
  for (int r = 0; r < profile.rows(); ++r) {
    for (int c = 0; c < profile.cols(); ++c) {
      if (profile.Has(r, c) && !(profile.Mean(r, c) > 0)) {
        return Fail("profile cell ({}, {}) = {} is not a positive throughput",
                    profile.row_keys()[r], profile.col_keys()[c], profile.Mean(r, c));
      }
    }
  }
  p.options_ = std::move(options);
  p.profile_method_ = std::move(*profile_method);
  p.interference_method_ = std::move(*interference_method);
  p.profile_ = std::move(profile);
  p.features_ = std::move(features);
  p.interference_ = std::move(interference);
  if (Expected<void> ok = p.Refit(); !ok) return std::unexpected(ok.error());
  return p;
}

Predictor::SigmaState::SigmaState(const SigmaState& other) {
  std::lock_guard lock(other.mutex);
  ready.store(other.ready.load(std::memory_order_acquire), std::memory_order_relaxed);
  calibrate_on = other.calibrate_on;
  calibrate_features = other.calibrate_features;
  observed = other.observed;
  completed = other.completed;
  calibrations = other.calibrations;
}

Expected<void> Predictor::Refit() {
  pending_ = 0;
  ++generation_;
  if (Expected<void> ok = RefitProfile(); !ok) return ok;
  return RefitInterference();
}

Expected<void> Predictor::RefitProfile() {
  stride_ = profile_.cols();
  isolated_.assign(static_cast<size_t>(profile_.rows()) * static_cast<size_t>(stride_), kMissing);
  supported_.assign(isolated_.size(), 0);
  sigma_.assign(isolated_.size(), kMissing);
  SigmaState& lazy = *sigma_state_;
  lazy.observed.resize(0, 0);
  lazy.completed.resize(0, 0);
  lazy.ready.store(true, std::memory_order_relaxed);
  if (profile_.ObservedCount() == 0) return {};
  // (app, c) is supported when some application was measured on c and on a configuration the
  // app was measured on: (mask * overlap)(a, c) > 0 with overlap = mask^T mask.
  const Eigen::MatrixXd mask = KnownMask(profile_.ToDense());
  const Eigen::MatrixXd reach = mask * (mask.transpose() * mask);
  for (int r = 0; r < profile_.rows(); ++r) {
    for (int c = 0; c < stride_; ++c) {
      supported_[static_cast<size_t>(r) * stride_ + c] = reach(r, c) > 0 ? 1 : 0;
    }
  }
  Eigen::MatrixXd log_values = profile_.ToDense().array().log();
  EncodedFeatures encoded = Encode(features_, profile_.row_keys(), profile_.col_keys());
  Expected<Eigen::MatrixXd> completed = profile_method_->CompleteWith(log_values, encoded);
  if (!completed) return std::unexpected(completed.error());
  if (!calibration_due_ ||
      (options_.calibrate_every > 0 && ++refits_since_calibration_ >= options_.calibrate_every)) {
    // Due now, run at the first σ read: on this matrix, replacing one due earlier and never read.
    lazy.calibrate_on = log_values;
    lazy.calibrate_features = std::move(encoded);
    calibration_due_ = true;
    refits_since_calibration_ = 0;
  }
  for (int r = 0; r < profile_.rows(); ++r) {
    for (int c = 0; c < stride_; ++c) {
      const size_t i = static_cast<size_t>(r) * stride_ + c;
      isolated_[i] = std::exp((*completed)(r, c));
      // A measured cell's σ does not depend on the calibration (Calibrate keeps the floor).
      if (profile_.Has(r, c)) {
        sigma_[i] = uncertainty_.Measured(profile_.Mean(r, c), profile_.Variance(r, c),
                                          profile_.Count(r, c));
      }
    }
  }
  lazy.observed = std::move(log_values);
  lazy.completed = std::move(*completed);
  lazy.ready.store(false, std::memory_order_release);
  return {};
}

void Predictor::FillSigma() const {
  SigmaState& lazy = *sigma_state_;
  std::lock_guard<std::mutex> lock(lazy.mutex);
  if (lazy.ready.load(std::memory_order_relaxed)) return;  // another reader filled it
  if (lazy.calibrate_on) {
    Expected<UncertaintyModel> model =
        Calibrate(*profile_method_, *lazy.calibrate_on, lazy.calibrate_features);
    // The method completed this very matrix when the calibration fell due, and every hold-out
    // keeps a cell in each row it holds out from: only a broken method fails here.
    if (!model) Die("predictor: calibration failed: " + model.error().message);
    uncertainty_ = *model;
    lazy.calibrate_on.reset();
    lazy.calibrate_features = {};
    ++lazy.calibrations;
  }
  // The completed cells of the last refit; a cell observed since keeps its measured σ, and rows
  // and columns added since stay NaN until the next refit, as their IsolatedAt does.
  const Eigen::MatrixXd sigma = CellSigmas(uncertainty_, lazy.observed, lazy.completed);
  for (Eigen::Index r = 0; r < lazy.observed.rows(); ++r) {
    for (Eigen::Index c = 0; c < lazy.observed.cols(); ++c) {
      if (IsKnown(lazy.observed(r, c)) || profile_.Has(static_cast<int>(r), static_cast<int>(c))) {
        continue;
      }
      sigma_[static_cast<size_t>(r) * static_cast<size_t>(stride_) + static_cast<size_t>(c)] =
          sigma(r, c);
    }
  }
  lazy.ready.store(true, std::memory_order_release);
}

Expected<void> Predictor::RefitInterference() {
  // The completion reads only the interference matrices, and a method is deterministic: unless
  // an interference observation came in, it is the one already there (a profile observation,
  // with refit_every = 1, refits everything; re-completing unchanged matrices was a third of
  // `tessera simulate`). The caches still follow the profile's rows.
  if (interference_changed_) {
    interference_completed_.clear();
    for (const auto& [kind, m] : interference_.by_kind()) {
      Expected<Eigen::MatrixXd> completed = interference_method_->Complete(m.ToDense());
      if (!completed) return std::unexpected(completed.error());
      interference_completed_.emplace(kind, completed->cwiseMax(0.0).cwiseMin(1.0));
    }
    interference_changed_ = false;
  }
  RebuildKindCaches();
  return {};
}

void Predictor::RebuildKindCaches() {
  kinds_.clear();
  const int apps = profile_.rows();
  for (const auto& [kind, m] : interference_.by_kind()) {
    KindCache k{kind, apps, std::vector<double>(static_cast<size_t>(apps) * apps, kMissing), 0};
    // Profile row -> interference row/column (-1: the application is not in this kind).
    std::vector<int> as_row(apps, -1), as_col(apps, -1);
    for (int a = 0; a < apps; ++a) {
      as_row[a] = m.FindRow(profile_.row_keys()[a]).value_or(-1);
      as_col[a] = m.FindCol(profile_.row_keys()[a]).value_or(-1);
    }
    const Eigen::MatrixXd& completed = interference_completed_.at(kind);
    for (int v = 0; v < apps; ++v) {
      if (as_row[v] < 0) continue;
      for (int a = 0; a < apps; ++a) {
        if (as_col[a] < 0) continue;
        k.lost[static_cast<size_t>(v) * apps + a] = m.Has(as_row[v], as_col[a])
                                                        ? m.Mean(as_row[v], as_col[a])
                                                        : completed(as_row[v], as_col[a]);
      }
    }
    double sum = 0;
    int n = 0;
    for (int r = 0; r < m.rows(); ++r) {
      for (int c = 0; c < m.cols(); ++c) {
        if (m.Has(r, c)) {
          sum += m.Mean(r, c);
          ++n;
        }
      }
    }
    k.mean = n > 0 ? sum / n : 0;
    kinds_.push_back(std::move(k));
  }
}

std::optional<int> Predictor::FindKind(const std::string& kind) const {
  for (size_t i = 0; i < kinds_.size(); ++i) {
    if (kinds_[i].name == kind) return static_cast<int>(i);
  }
  return std::nullopt;
}

void Predictor::ResizeCache() {
  if (profile_.cols() == stride_ &&
      isolated_.size() == static_cast<size_t>(profile_.rows()) * stride_) {
    return;
  }
  const size_t size = static_cast<size_t>(profile_.rows()) * profile_.cols();
  std::vector<double> cache(size, kMissing), sigma(size, kMissing);
  std::vector<unsigned char> supported(size, 0);
  const int old_rows = stride_ == 0 ? 0 : static_cast<int>(isolated_.size()) / stride_;
  for (int r = 0; r < old_rows; ++r) {
    for (int c = 0; c < stride_; ++c) {
      const size_t from = static_cast<size_t>(r) * stride_ + c;
      const size_t to = static_cast<size_t>(r) * profile_.cols() + c;
      cache[to] = isolated_[from];
      sigma[to] = sigma_[from];
      supported[to] = supported_[from];
    }
  }
  isolated_ = std::move(cache);
  sigma_ = std::move(sigma);
  supported_ = std::move(supported);
  stride_ = profile_.cols();
}

Expected<void> Predictor::AfterObservation() {
  ++generation_;
  if (++pending_ >= options_.refit_every) return Refit();
  return {};
}

Expected<void> Predictor::Observe(const std::string& app, const std::string& config, double qps) {
  if (app.empty() || config.empty())
    return Fail("observation needs an application and a configuration");
  if (!(qps > 0) || !std::isfinite(qps)) {
    return Fail("observation of {} on {}: throughput {} is not positive", app, config, qps);
  }
  const int r = profile_.AddRow(app), c = profile_.AddCol(config);
  profile_.Observe(r, c, qps);
  ResizeCache();
  isolated_[static_cast<size_t>(r) * stride_ + c] = profile_.Mean(r, c);
  sigma_[static_cast<size_t>(r) * stride_ + c] =
      uncertainty_.Measured(profile_.Mean(r, c), profile_.Variance(r, c), profile_.Count(r, c));
  ++generation_;
  supported_[static_cast<size_t>(r) * stride_ + c] = 1;
  if (sink_) sink_(app, config, qps);
  return AfterObservation();
}

Expected<void> Predictor::ObserveInterference(const std::string& kind, const std::string& victim,
                                              const std::string& aggressor, double lost_fraction) {
  if (Expected<void> ok = interference_.Observe(kind, victim, aggressor, lost_fraction); !ok) {
    return ok;
  }
  interference_changed_ = true;
  return AfterObservation();
}

Interval Predictor::IntervalAt(AppId app, ConfigId config, double coverage) const {
  EnsureSigma();
  const double q = IsolatedAt(app, config);
  const double z = coverage == 0.9 ? uncertainty_.z90 : uncertainty_.Z(coverage);
  const double half = z * SigmaAt(app, config);
  return {q * std::exp(-half), q * std::exp(half)};
}

Expected<bool> Predictor::SetFeatures(const std::string& app, AppFeatures features) {
  const AppFeatures* old = features_.Find(app);
  if (old != nullptr && *old == features && profile_.FindRow(app)) return false;
  if (Expected<void> ok = features_.Set(app, std::move(features)); !ok) {
    return std::unexpected(ok.error());
  }
  profile_.AddRow(app);
  ResizeCache();
  ++generation_;
  return true;
}

std::optional<double> Predictor::Isolated(const std::string& app, const std::string& config) const {
  const std::optional<AppId> r = FindApp(app);
  const std::optional<ConfigId> c = FindConfig(config);
  if (!r || !c) return std::nullopt;
  const double v = IsolatedAt(*r, *c);
  if (std::isnan(v)) return std::nullopt;
  return v;
}

std::optional<double> Predictor::Interference(const std::string& victim,
                                              const std::string& aggressor,
                                              const std::string& kind) const {
  const SparseMatrix* m = interference_.Find(kind);
  if (m == nullptr) return std::nullopt;
  const std::optional<int> r = m->FindRow(victim);
  const std::optional<int> c = m->FindCol(aggressor);
  if (!r || !c) return std::nullopt;
  if (m->Has(*r, *c)) return m->Mean(*r, *c);
  const auto it = interference_completed_.find(kind);
  if (it == interference_completed_.end() || *r >= it->second.rows() || *c >= it->second.cols()) {
    return std::nullopt;  // added since the last refit
  }
  return it->second(*r, *c);
}

}  // namespace tessera::predict
