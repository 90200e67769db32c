#include "sim/contention_check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "model/cluster.h"
#include "predict/interference.h"
#include "predict/matrix.h"
#include "sim/calibrate.h"

namespace tessera::sim {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// t(p) = a / p + b, a, b ≥ 0, least squares of (t_model − t) / t over the points.
ContentionCheck::Roofline FitTwoTerms(const std::string& app,
                                      const std::vector<std::pair<double, double>>& share_qps) {
  // Rows divided by the measured time t = 1 / qps: a (qps / p) + b qps ≈ 1.
  double sxx = 0, sxy = 0, syy = 0, sx = 0, sy = 0;
  for (const auto& [p, qps] : share_qps) {
    const double x = qps / p, y = qps;
    sxx += x * x, sxy += x * y, syy += y * y, sx += x, sy += y;
  }
  double a = 0, b = 0;
  const double det = sxx * syy - sxy * sxy;
  if (det > 1e-12 * sxx * syy) {
    a = (sx * syy - sy * sxy) / det;
    b = (sy * sxx - sx * sxy) / det;
  }
  if (!(a >= 0 && b >= 0)) {  // one term alone: the better of the two
    const double a_only = sx / sxx, b_only = sy / syy;
    auto sse = [&](double ca, double cb) {
      double s = 0;
      for (const auto& [p, qps] : share_qps) s += std::pow(ca * qps / p + cb * qps - 1, 2);
      return s;
    };
    if (sse(a_only, 0) <= sse(0, b_only)) {
      a = a_only, b = 0;
    } else {
      a = 0, b = b_only;
    }
  }
  double worst = 0;
  for (const auto& [p, qps] : share_qps) worst = std::max(worst, std::abs((a / p + b) * qps - 1));
  return {app, a, b, worst};
}

struct FitWorld {
  AppCatalog catalog;
  model::GpuModelId gpu = 0;
};

// Each pair as it ran: one GPU with the victim (workload 1) beside the aggressor (2). Built once
// per fit: a grid of 6,161 candidate constants reads every pair under each.
using Scenes = std::vector<std::unique_ptr<model::ClusterState>>;

Scenes ScenesOf(const FitWorld& world, const std::vector<ContentionPair>& pairs) {
  auto workload = [](model::WorkloadId id, const std::string& app) {
    model::Workload w;
    w.id = id;
    w.app = app;
    w.queries = 1000;
    w.gpu.count = 1;
    return w;
  };
  Scenes scenes;
  for (const ContentionPair& p : pairs) {
    const bool mps = p.kind == "mps";
    auto c = std::make_unique<model::ClusterState>();
    auto node = c->AddNode(model::UniformNode("gpu", world.gpu, 1, 1 << 20, 1 << 30));
    TESSERA_CHECK(node.has_value());
    // Time-slicing: each process has the whole GPU in its slices; the aggressor is entered as a
    // best-effort client so that the partition is not over-reserved (the victim is guaranteed,
    // and Physics stretches it by the aggressor's engine-active time either way).
    model::Slice victim{.partition = 0, .milli = mps ? 500 : 1000};
    model::Slice aggressor{.partition = 0, .milli = mps ? 500 : 1000, .best_effort = !mps};
    TESSERA_CHECK(c->Place(workload(1, p.victim), {1, 0, {victim}}).has_value());
    TESSERA_CHECK(c->Place(workload(2, p.aggressor), {2, 0, {aggressor}}).has_value());
    scenes.push_back(std::move(c));
  }
  return scenes;
}

// Sets each pair's predicted rate: its victim's beside its aggressor as the pair ran, under
// `options` (noise off), on the pairs' scenes. One Physics per kind serves every pair: its
// caches hold functions of the application and the options alone.
void Predict(const FitWorld& world, const PhysicsOptions& options, const Scenes& scenes,
             std::vector<ContentionPair>& pairs) {
  std::optional<Physics> mps, time_slice;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const bool is_mps = pairs[i].kind == "mps";
    std::optional<Physics>& physics = is_mps ? mps : time_slice;
    if (!physics) {
      PhysicsOptions o = options;
      if (!is_mps) o.sharing = PhysicsOptions::Sharing::kTimeSlice;
      physics.emplace(world.catalog, 0, o);
    }
    const model::ClusterState& c = *scenes[i];
    pairs[i].predicted_qps = physics->Rate(*c.Find(1), c).qps;
  }
}

std::vector<ContentionPair> Predicted(const FitWorld& world, const PhysicsOptions& options,
                                      std::vector<ContentionPair> pairs) {
  Predict(world, options, ScenesOf(world, pairs), pairs);
  return pairs;
}

double MeanError(const std::vector<ContentionPair>& pairs) {
  double s = 0;
  for (const ContentionPair& p : pairs) s += p.error();
  return pairs.empty() ? 0 : s / static_cast<double>(pairs.size());
}

double MedianError(const std::vector<ContentionPair>& pairs) {
  std::vector<double> e;
  for (const ContentionPair& p : pairs) e.push_back(p.error());
  return Median(std::move(e));
}

PhysicsOptions With(PhysicsOptions o, const std::string& kind, double x, double y) {
  if (kind == "mps") {
    o.mps_front_kappa = x;
    o.mps_sm_kappa = y;
  } else {
    o.fixed_active = x;
  }
  return o;
}

// The grid's constants that give `pairs` the least mean relative error.
ContentionFit Fit(const FitWorld& world, const PhysicsOptions& base, const std::string& kind,
                  const std::vector<ContentionPair>& pairs) {
  ContentionFit best;
  double best_error = INFINITY;
  const bool mps = kind == "mps";
  const int ny = mps ? 60 : 0;  // time slicing has one constant
  const Scenes scenes = ScenesOf(world, pairs);
  std::vector<ContentionPair> scratch = pairs;  // each candidate's predictions, in place
  for (int i = 0; i <= 100; ++i) {
    const double x = 0.01 * i;  // front_kappa 0..1 (MPS); fixed_active 0..1 (time slicing)
    for (int j = 0; j <= ny; ++j) {
      const double y = 0.05 * j;  // sm_kappa 0..3
      Predict(world, With(base, kind, x, y), scenes, scratch);
      const double e = MeanError(scratch);
      if (e < best_error - 1e-12) {
        best_error = e;
        best =
            mps ? ContentionFit{.front_kappa = x, .sm_kappa = y} : ContentionFit{.fixed_active = x};
      }
    }
  }
  PhysicsOptions o = base;
  o = mps ? With(o, kind, best.front_kappa, best.sm_kappa) : With(o, kind, best.fixed_active, 0);
  Predict(world, o, scenes, scratch);
  best.train_median = MedianError(scratch);
  return best;
}

PhysicsOptions Options(const PhysicsOptions& base, const std::string& kind,
                       const ContentionFit& f) {
  return kind == "mps" ? With(base, kind, f.front_kappa, f.sm_kappa)
                       : With(base, kind, f.fixed_active, 0);
}

// Each application's rates alone on the campaign's GPU, by MPS share.
struct AloneRates {
  std::map<std::string, std::vector<std::pair<double, double>>> points;  // app -> (share, qps)
  std::map<std::pair<std::string, int>, double> at;  // (app, MPS %) -> samples/s
};

// The GPU model (into out.gpu and world.gpu) and each application's alone rates by MPS share;
// refuses MIG columns, two GPU models and an empty profile.
Expected<AloneRates> ReadAloneRates(const predict::SparseMatrix& profile,
                                    const std::string& profile_path, ContentionCheck& out,
                                    FitWorld& world) {
  AloneRates alone;
  for (int r = 0; r < profile.rows(); ++r) {
    for (int col = 0; col < profile.cols(); ++col) {
      if (!profile.Has(r, col)) continue;
      auto m = ParseConfigKey(profile.col_keys()[col]);
      if (!m)
        return Fail("{}: column '{}': {}", profile_path, profile.col_keys()[col],
                    m.error().message);
      const std::string gpu = model::GetGpuModel(m->gpu).name;
      if (m->profile != -1) {
        return Fail("{}: column '{}' is a MIG instance; the check takes whole-GPU campaigns",
                    profile_path, profile.col_keys()[col]);
      }
      if (out.gpu.empty()) out.gpu = gpu, world.gpu = m->gpu;
      if (gpu != out.gpu) {
        return Fail("{}: columns name two GPU models ({} and {}); the check takes one",
                    profile_path, out.gpu, gpu);
      }
      const double qps = profile.Mean(r, col);
      const std::string& app = profile.row_keys()[r];
      alone.points[app].push_back({m->milli / 1000.0, qps});
      alone.at[{app, static_cast<int>(std::lround(m->milli / 10.0))}] = qps;
    }
  }
  if (alone.points.empty()) return Fail("{}: no measurements", profile_path);
  return alone;
}

// The world's catalogue: each application's two-term roofline (into out.rooflines), its
// constant term the fixed or the memory part, and its measured alone rates.
void BuildCatalog(const AloneRates& alone, ConstantPart constant_part, ContentionCheck& out,
                  FitWorld& world) {
  world.catalog.reference_gpu = out.gpu;
  for (const auto& [app, points] : alone.points) {
    ContentionCheck::Roofline r = FitTwoTerms(app, points);
    out.rooflines.push_back(r);
    AppSpec spec;
    spec.key = app;
    spec.compute_s = r.a;
    (constant_part == ConstantPart::kFixed ? spec.fixed_s : spec.memory_s) = r.b;
    spec.footprint_mib = 1;
    for (const auto& [share, qps] : points) {
      spec.measured[ConfigKey(out.gpu, "whole", static_cast<int>(std::lround(share * 100)))] = qps;
    }
    world.catalog.apps.push_back(std::move(spec));
  }
}

// The measured pairs of `kind` (`m`: the victim's share of QPS lost), each with its victim's
// alone rate at the pair's setting, alternately in fold 0 and 1; starved victims left out.
Expected<std::vector<ContentionPair>> MeasuredPairs(const std::string& kind,
                                                    const predict::SparseMatrix& m,
                                                    const AloneRates& alone,
                                                    const std::string& pairs_path,
                                                    const std::string& profile_path) {
  const int setting = kind == "mps" ? 50 : 100;
  std::vector<ContentionPair> pairs;
  for (int r = 0; r < m.rows(); ++r) {
    for (int col = 0; col < m.cols(); ++col) {
      if (!m.Has(r, col)) continue;
      ContentionPair p{.kind = kind, .victim = m.row_keys()[r], .aggressor = m.col_keys()[col]};
      auto base = alone.at.find({p.victim, setting});
      if (base == alone.at.end() || !alone.points.contains(p.aggressor)) {
        return Fail("{}: {} pair {} beside {}: {} has no alone rate at {} % in {}", pairs_path,
                    kind, p.victim, p.aggressor, base == alone.at.end() ? p.victim : p.aggressor,
                    setting, profile_path);
      }
      p.alone_qps = base->second;
      p.measured_qps = p.alone_qps * (1 - m.Mean(r, col));
      if (!(p.measured_qps > 0)) continue;  // starved: no relative error to speak of
      p.fold = static_cast<int>(pairs.size() % 2);
      pairs.push_back(std::move(p));
    }
  }
  return pairs;
}

// k.pairs' errors under the defaults, under constants fitted on one fold and tested on the
// other (both ways), and under constants fitted on all of them.
void FitKind(const FitWorld& world, const PhysicsOptions& defaults, const std::string& kind,
             ContentionKindCheck& k) {
  k.pairs = Predicted(world, defaults, std::move(k.pairs));
  k.default_median = MedianError(k.pairs);
  std::vector<double> held_out;
  for (int fold = 0; fold < 2; ++fold) {
    std::vector<ContentionPair> train, test;
    for (const ContentionPair& p : k.pairs) (p.fold == fold ? test : train).push_back(p);
    ContentionFit f = Fit(world, defaults, kind, train);
    test = Predicted(world, Options(defaults, kind, f), std::move(test));
    f.held_out_median = MedianError(test);
    for (const ContentionPair& p : test) held_out.push_back(p.error());
    k.folds.push_back(f);
  }
  k.held_out_median = Median(std::move(held_out));
  k.all = Fit(world, defaults, kind, k.pairs);
  k.fitted_pairs = Predicted(world, Options(defaults, kind, k.all), k.pairs);
}

}  // namespace

Expected<ContentionCheck> CheckContention(const std::string& dir, ConstantPart constant_part) {
  const std::string profile_path = (std::filesystem::path(dir) / "profile.csv").string();
  const std::string pairs_path = (std::filesystem::path(dir) / "interference.csv").string();
  auto profile = predict::SparseMatrix::LoadCsv(profile_path);
  if (!profile) return std::unexpected(profile.error());
  auto measured = predict::InterferenceMatrices::LoadCsv(pairs_path);
  if (!measured) return std::unexpected(measured.error());

  ContentionCheck out;
  out.constant_part = constant_part;
  out.defaults.noise_sd = 0;
  out.defaults.noise_max = 0;
  FitWorld world;
  Expected<AloneRates> alone = ReadAloneRates(*profile, profile_path, out, world);
  if (!alone) return std::unexpected(alone.error());
  BuildCatalog(*alone, constant_part, out, world);
  for (const std::string kind : {"mps", "timeslice"}) {
    const predict::SparseMatrix* m = measured->Find(kind);
    if (!m) continue;
    ContentionKindCheck k;
    k.kind = kind;
    Expected<std::vector<ContentionPair>> pairs =
        MeasuredPairs(kind, *m, *alone, pairs_path, profile_path);
    if (!pairs) return std::unexpected(pairs.error());
    k.pairs = std::move(*pairs);
    FitKind(world, out.defaults, kind, k);
    out.kinds.push_back(std::move(k));
  }
  if (out.kinds.empty()) return Fail("{}: no mps or timeslice pairs", pairs_path);
  return out;
}

}  // namespace tessera::sim
