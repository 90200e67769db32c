#include "policy/prediction_view.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "model/mig.h"
#include "policy/fit.h"
#include "predict/config_key.h"

namespace tessera::policy {

Expected<void> CheckInterferenceKind(std::string_view policy, const predict::Predictor& predictor,
                                     const nlohmann::json& options) {
  if (!options.is_object() || !options.contains("interference_kind") ||
      !options["interference_kind"].is_string()) {
    return {};  // absent (the default), or the option reader's type error to report
  }
  const std::string kind = options["interference_kind"].get<std::string>();
  // No interference data at all: every kind is as empty as the default's.
  if (predictor.FindKind(kind) || predictor.interference().by_kind().empty()) return {};
  return Fail(
      "policy {}: option 'interference_kind': the predictor has no '{}' interference "
      "measurements",
      policy, kind);
}

using predict::AppId;
using predict::ConfigId;

Feasibility PredictingFilter(const model::Workload& w, model::NodeIndex node,
                             const model::ClusterState& c, bool predictable,
                             const std::vector<int>& percents, bool reshape) {
  const model::Node& n = c.node(node);
  if (!n.ready) return Feasibility::No("node not ready");
  if (w.cpu_milli > n.free_cpu_milli()) return Feasibility::No("not enough CPU");
  if (w.memory_mib > n.free_memory_mib()) return Feasibility::No("not enough memory");
  if (!predictable) return NodeFits(w, node, c);
  bool any_gpu = false;
  // A share of p % needs p × 10 milli free and x's memory free: a partition short of either
  // for the smallest share has none.
  const int least = percents.empty() ? 0 : *std::min_element(percents.begin(), percents.end());
  for (model::GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available || !w.gpu.AllowsModel(gpu.model)) continue;
    any_gpu = true;
    if (reshape && gpu.idle() && model::GetGpuModel(gpu.model).mig_capable() &&
        c.MayReshapeTo(g, true)) {
      return Feasibility::Yes();
    }
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const model::Partition& part = c.partition(model::ClusterState::PartitionOf(g, slot));
      if (least * 10 > part.free_milli() || w.gpu.memory_mib > part.free_memory_mib()) continue;
      for (int pct : percents) {
        if (ShareFits(part, pct, w.gpu.memory_mib)) return Feasibility::Yes();
      }
    }
  }
  return Feasibility::No(any_gpu ? "no partition has a free MPS share with enough GPU memory"
                                 : "no available GPU of an allowed model");
}

PredictionView::PredictionView(const predict::Predictor& predictor,
                               const telemetry::Telemetry* telemetry, Options options)
    : predictor_(predictor),
      telemetry_(telemetry),
      options_(std::move(options)),
      kind_(predictor.FindKind(options_.interference_kind)) {}

ConfigId PredictionView::Config(model::GpuModelId gpu_model, int profile, int percent) {
  if (configs_seen_ != predictor_.num_configs()) {
    config_ids_.assign(model::AllGpuModels().size() * kProfiles * kPercents, -2);
    brackets_.assign(config_ids_.size(), {-2, -2});
    profiled_.assign(model::AllGpuModels().size() * kProfiles, std::nullopt);
    configs_seen_ = predictor_.num_configs();
  }
  if (profile + 1 >= kProfiles || percent < 0 || percent >= kPercents) return -1;
  int& id = config_ids_[(static_cast<size_t>(gpu_model) * kProfiles + (profile + 1)) * kPercents +
                        percent];
  if (id == -2) {
    const model::GpuModel& m = model::GetGpuModel(gpu_model);
    const std::string_view prof =
        profile < 0 ? predict::kWholeGpu : std::string_view(m.mig_profiles[profile].name);
    id = predictor_.FindConfig(predict::ConfigKey(m.name, prof, percent)).value_or(-1);
  }
  return id;
}

std::optional<std::pair<int, int>> PredictionView::Bracket(model::GpuModelId gpu_model, int profile,
                                                           int percent) {
  if (profile + 1 >= kProfiles || percent < 0 || percent >= kPercents) return std::nullopt;
  Config(gpu_model, profile, percent);  // sizes the tables for the current columns
  std::pair<int8_t, int8_t>& cached =
      brackets_[(static_cast<size_t>(gpu_model) * kProfiles + (profile + 1)) * kPercents + percent];
  if (cached.first == -2) {
    int below = -1, above = -1;
    for (int q = percent - 1; q >= 1 && below < 0; --q) {
      if (Config(gpu_model, profile, q) >= 0) below = q;
    }
    for (int q = percent + 1; q <= 100 && above < 0; ++q) {
      if (Config(gpu_model, profile, q) >= 0) above = q;
    }
    cached = below < 0 || above < 0 ? std::pair<int8_t, int8_t>{-1, -1}
                                    : std::pair<int8_t, int8_t>(below, above);
  }
  if (cached.first < 0) return std::nullopt;
  return std::pair<int, int>{cached.first, cached.second};
}

PredictionView::Prediction PredictionView::Read(AppId app, model::GpuModelId gpu_model, int profile,
                                                int percent, bool with_sigma) {
  const Prediction none{predict::kMissing, options_.completed_sigma};
  if (app < 0) return none;
  const ConfigId c = Config(gpu_model, profile, percent);
  if (c >= 0) {
    return {predictor_.IsolatedAt(app, c),
            with_sigma ? CellSigma(app, c) : options_.completed_sigma};
  }
  if (!options_.interpolate) return none;
  const auto b = Bracket(gpu_model, profile, percent);
  if (!b) return none;
  const ConfigId lo = Config(gpu_model, profile, b->first);
  const ConfigId hi = Config(gpu_model, profile, b->second);
  const double q_lo = predictor_.IsolatedAt(app, lo), q_hi = predictor_.IsolatedAt(app, hi);
  const double sigma =
      with_sigma ? std::max(CellSigma(app, lo), CellSigma(app, hi)) : options_.completed_sigma;
  if (!(q_lo > 0) || !(q_hi > 0)) return {predict::kMissing, sigma};
  // Time per query t(s) = a / s + b between the two profiled shares.
  const double x_lo = 1.0 / b->first, x_hi = 1.0 / b->second, x = 1.0 / percent;
  const double w = (x - x_lo) / (x_hi - x_lo);
  return {1.0 / ((1 - w) / q_lo + w / q_hi), sigma};
}

PredictionView::Bounds PredictionView::SharesBounds(AppId app, model::GpuModelId gpu_model,
                                                    int profile) {
  if (app < 0 || profile + 1 >= kProfiles) return {};
  Config(gpu_model, profile, 100);  // sizes the tables for the current columns
  const size_t per_app = model::AllGpuModels().size() * kProfiles;
  if (bounds_generation_ != predictor_.generation()) {
    bounds_.assign(static_cast<size_t>(predictor_.num_apps()) * per_app, std::nullopt);
    bounds_generation_ = predictor_.generation();
  }
  const size_t key = static_cast<size_t>(app) * per_app +
                     static_cast<size_t>(gpu_model) * kProfiles + (profile + 1);
  if (key < bounds_.size() && bounds_[key]) return *bounds_[key];
  std::optional<std::vector<int>>& shares =
      profiled_[static_cast<size_t>(gpu_model) * kProfiles + (profile + 1)];
  if (!shares) {
    shares.emplace();
    for (int q = 1; q <= 100; ++q) {
      if (Config(gpu_model, profile, q) >= 0) shares->push_back(q);
    }
  }
  Bounds b{predict::kMissing, options_.completed_sigma, shares->empty() ? 101 : shares->front()};
  for (int q : *shares) {
    const predict::ConfigId c = Config(gpu_model, profile, q);
    const double v = predictor_.IsolatedAt(app, c);
    if (std::isnan(b.max_isolated) || v > b.max_isolated) b.max_isolated = v;
    b.min_sigma = std::min(b.min_sigma, CellSigma(app, c));
  }
  if (key < bounds_.size()) bounds_[key] = b;
  return b;
}

double PredictionView::CellSigma(AppId app, ConfigId config) {
  const predict::ProfileMatrix& m = predictor_.profile();
  if (app >= m.rows() || config >= m.cols()) return options_.completed_sigma;
  if (sigma_generation_ != predictor_.generation()) {
    cell_sigma_.assign(static_cast<size_t>(m.rows()) * static_cast<size_t>(m.cols()),
                       predict::kMissing);
    sigma_generation_ = predictor_.generation();
  }
  double& cached = cell_sigma_[static_cast<size_t>(app) * static_cast<size_t>(m.cols()) +
                               static_cast<size_t>(config)];
  if (std::isnan(cached)) {
    // A new run deviates from the mean of n runs by the run spread s and the mean's own error
    // s / √n: a prediction interval of s · √(1 + 1/n).
    // One run, or none: the predictor's calibrated σ (a completed cell's calibrated error, a
    // single run's floor) when asked for and known, else `completed_sigma`.
    // The predictor's σ is read only when it is used: the first read calibrates (predictor.h).
    const int count = m.Count(app, config);
    if (count >= 2) {
      cached = std::sqrt(m.Variance(app, config) * (1 + 1.0 / count)) / m.Mean(app, config);
    } else {
      const double calibrated =
          options_.calibrated_sigma ? predictor_.SigmaAt(app, config) : predict::kMissing;
      cached = std::isfinite(calibrated) ? calibrated : options_.completed_sigma;
    }
  }
  return cached;
}

double PredictionView::Lost(AppId victim, AppId aggressor) const {
  if (!kind_) return 0;
  if (victim >= 0 && aggressor >= 0) {
    const double f = predictor_.InterferenceAt(*kind_, victim, aggressor);
    if (!std::isnan(f)) return f;
  }
  return predictor_.InterferenceMean(*kind_);
}

AppId PredictionView::AppOf(const std::string& app) {
  if (app.empty()) return -1;
  if (app_ >= 0 && app == app_key_) return app_;
  const std::optional<AppId> id = predictor_.FindApp(app);
  if (!id) return -1;
  app_key_ = app;
  app_ = *id;
  return app_;
}

const std::vector<PredictionView::Member>& PredictionView::Members(model::PartitionIndex p,
                                                                   const model::ClusterState& c) {
  if (partitions_.size() < static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions) {
    partitions_.resize(static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions);
  }
  const model::Partition& part = c.partition(p);
  const model::Gpu& gpu = c.gpu(part.gpu);
  PartitionCache& cache = partitions_[p];
  const uint64_t version = part.version;
  if (cache.stamp.Holds(version, predictor_.generation())) {
    return cache.members;
  }
  // A change to a partition is mostly one client more or less: a client read before — the
  // same workload (id, SLO, application: a copy of the state may hold another workload under
  // the same id) at the same share of the same cut under the same predictions — is taken over
  // as it was, without looking its application up or reading its prediction again.
  std::vector<Member>& before = scratch_members_;
  before.clear();
  if (cache.stamp.valid && cache.stamp.generation == predictor_.generation() &&
      cache.built == part.built) {
    before.swap(cache.members);
  }
  cache.members.clear();
  const std::vector<std::string>& app_names = predictor_.profile().row_keys();
  for (const model::Client& client : part.clients) {
    const int percent = client.milli / 10;
    const model::PlacedWorkload* pw = c.Find(client.workload);
    TESSERA_CHECK(pw != nullptr);
    auto same = std::find_if(before.begin(), before.end(), [&](const Member& m) {
      return m.id == client.workload && m.percent == percent && m.slo == pw->workload.slo_qps &&
             m.app >= 0 && static_cast<size_t>(m.app) < app_names.size() &&
             app_names[static_cast<size_t>(m.app)] == pw->workload.app;
    });
    if (same != before.end()) {
      Member m = *same;
      m.lost_base = 0;
      cache.members.push_back(m);
      continue;
    }
    Member m{client.workload, -1, pw->workload.slo_qps, predict::kMissing, 0, 0, percent};
    if (!pw->workload.app.empty()) m.app = predictor_.FindApp(pw->workload.app).value_or(-1);
    const Prediction at = At(m.app, gpu.model, part.profile, percent);
    m.isolated = at.isolated;
    m.sigma = at.sigma;
    cache.members.push_back(m);
  }
  cache.built = part.built;
  for (Member& y : cache.members) {
    for (const Member& z : cache.members) {
      if (&y != &z) y.lost_base += Lost(y.app, z.app);
    }
  }
  cache.stamp.Set(version, predictor_.generation());
  return cache.members;
}

std::optional<Candidate> PredictionView::FirstFitOffer(const model::Workload& w,
                                                       model::NodeIndex node,
                                                       const model::ClusterState& c) const {
  if (!NodeFits(w, node, c).ok()) return std::nullopt;
  std::optional<model::Placement> p = FirstFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  double util = 0;
  for (const model::Slice& s : p->slices) util += Util(c.partition(s.partition));
  if (!p->slices.empty()) util /= static_cast<double>(p->slices.size());
  return Candidate{100.0 * (1.0 - util), std::move(*p), {}, {}};
}

void PredictionView::BeginNode() {
  util_version_ = telemetry_ ? telemetry_->UtilizationVersion() : std::nullopt;
  if (util_version_ == util_synced_) return;
  util_changed_.clear();
  if (util_version_ && util_synced_ &&
      telemetry_->UtilizationChangedSince(*util_synced_, &util_changed_)) {
    for (std::string_view uuid : util_changed_) {
      auto it = util_index_.find(uuid);
      if (it == util_index_.end()) continue;
      utils_[it->second].epoch = 0;
      ++gpu_util_changes_[static_cast<size_t>(it->second) / model::kMaxPartitions];
    }
  } else {
    ++util_epoch_;
    util_index_.clear();
    ++util_index_epoch_;
  }
  util_synced_ = util_version_;
}

double PredictionView::Util(const model::Partition& part) const {
  return UtilAndSource(part).first;
}

std::pair<double, bool> PredictionView::UtilAndSource(const model::Partition& part) const {
  if (telemetry_) {
    if (std::optional<double> u = telemetry_->Utilization(part.uuid)) {
      return {std::clamp(*u, 0.0, 1.0), true};
    }
  }
  return {part.empty() ? 0.0 : part.used_milli / 1000.0, false};
}

double PredictionView::CachedUtil(model::PartitionIndex p, const model::ClusterState& c) {
  const model::Partition& part = c.partition(p);
  if (!telemetry_ || !util_version_) return Util(part);
  if (utils_.size() < static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions) {
    utils_.resize(static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions);
    gpu_util_changes_.resize(static_cast<size_t>(c.gpu_count()));
  }
  UtilCache& cache = utils_[p];
  if (cache.epoch == util_epoch_ &&
      cache.stamp == (cache.from_telemetry ? part.built : part.version)) {
    return cache.util;
  }
  std::tie(cache.util, cache.from_telemetry) = UtilAndSource(part);
  cache.epoch = util_epoch_;
  cache.stamp = cache.from_telemetry ? part.built : part.version;
  // The uuid's next change drops this entry. Entries of uuids cut away since stay until the
  // index outgrows the partitions, then everything is read again.
  if (cache.index_epoch == util_index_epoch_ && cache.indexed_built == part.built) {
    return cache.util;  // mapped already
  }
  if (util_index_.size() > 2 * utils_.size()) {
    util_index_.clear();
    ++util_index_epoch_;
    ++util_epoch_;
    cache.epoch = util_epoch_;
  }
  auto [it, fresh] = util_index_.try_emplace(part.uuid, p);
  if (!fresh) it->second = p;
  cache.index_epoch = util_index_epoch_;
  cache.indexed_built = part.built;
  return cache.util;
}

std::optional<PredictionView::UtilStamp> PredictionView::UtilStampOf(model::GpuIndex first,
                                                                     int count) const {
  if (!telemetry_) return UtilStamp{};  // the fallback follows the partition alone
  if (!util_version_) return std::nullopt;
  UtilStamp stamp{util_epoch_, 0};
  // Counters only grow, so their sum moves whenever one of them does.
  for (model::GpuIndex g = first; g < first + count; ++g) {
    if (static_cast<size_t>(g) < gpu_util_changes_.size()) {
      stamp.changes += gpu_util_changes_[static_cast<size_t>(g)];
    }
  }
  return stamp;
}

const std::vector<std::vector<std::optional<PredictionView::LayoutChoice>>>&
PredictionView::Layouts() {
  static const auto table = [] {
    std::vector<std::vector<std::optional<LayoutChoice>>> t;
    for (const model::GpuModel& m : model::AllGpuModels()) {
      std::vector<std::optional<LayoutChoice>> per(m.mig_profiles.size());
      for (const model::MigLayout& l : model::ValidLayouts(m)) {
        for (size_t slot = 0; slot < l.instances.size(); ++slot) {
          std::optional<LayoutChoice>& choice = per[l.instances[slot].profile];
          if (!choice || l.instances.size() > choice->layout.instances.size()) {
            choice = LayoutChoice{l, static_cast<int>(slot)};
          }
        }
      }
      t.push_back(std::move(per));
    }
    return t;
  }();
  return table;
}

}  // namespace tessera::policy
