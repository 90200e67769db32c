#include "policy/slo_aware.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "model/mig.h"
#include "policy/fit.h"
#include "policy/node_rooms.h"
#include "policy/placed_changes.h"
#include "policy/prediction_view.h"
#include "predict/config_key.h"
#include "predict/predictor.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

using predict::AppId;

std::vector<OptionInfo> SloAwareOptionList() {
  const SloAwareOptions d;
  auto j = [](const auto& v) { return nlohmann::json(v).dump(); };
  return {
      {"admission", j(d.admission),
       "wait rather than bind where the SLO is not predicted to be met (Score makes no offer)"},
      {"protect_neighbours", j(d.protect_neighbours),
       "an option is not admissible if it pushes a co-runner below its target"},
      {"margin_z", j(d.margin_z),
       "score on mean - z x the prediction's standard deviation, 0..5; 0: on the mean"},
      {"completed_sigma", j(d.completed_sigma),
       "relative uncertainty of a completed (never measured) cell, 0..1, where the predictor "
       "gives none or calibrated_sigma is false"},
      {"calibrated_sigma", j(d.calibrated_sigma),
       "a cell run fewer than twice takes the predictor's calibrated uncertainty"},
      {"co_runner_sigma", j(d.co_runner_sigma),
       "uncertainty each co-runner's interference term adds (fraction of isolated), 0..1"},
      {"mps_step", j(d.mps_step),
       "MPS shares tried in steps of this many percent, interpolated between profiled shares; "
       "0: the thesis's 100/50/25"},
      {"observe", j(d.observe),
       "fold a lone pod's QPS from telemetry into the predictor (needs a learner and telemetry)"},
      {"replace", j(d.replace),
       "move a pod running below its target to a free option predicted to meet it"},
      {"max_moves", j(d.max_moves), "moves per pod at most, 0..10"},
      {"reshape", j(d.reshape), "reshape an idle MIG-capable GPU (as predictive, Ch. 8.3)"},
      {"interference_kind", j(d.interference_kind),
       "the predictor's interference kind for co-runners on one partition"},
  };
}

Expected<SloAwareOptions> ParseSloAwareOptions(const nlohmann::json& options) {
  constexpr std::string_view kName = "slo-aware";
  SloAwareOptions o;
  for (const Expected<void>& read :
       {ReadOption(kName, options, "admission", o.admission),
        ReadOption(kName, options, "protect_neighbours", o.protect_neighbours),
        ReadOption(kName, options, "margin_z", o.margin_z),
        ReadOption(kName, options, "completed_sigma", o.completed_sigma),
        ReadOption(kName, options, "calibrated_sigma", o.calibrated_sigma),
        ReadOption(kName, options, "co_runner_sigma", o.co_runner_sigma),
        ReadOption(kName, options, "mps_step", o.mps_step),
        ReadOption(kName, options, "observe", o.observe),
        ReadOption(kName, options, "replace", o.replace),
        ReadOption(kName, options, "max_moves", o.max_moves),
        ReadOption(kName, options, "reshape", o.reshape),
        ReadOption(kName, options, "interference_kind", o.interference_kind)}) {
    if (!read) return std::unexpected(read.error());
  }
  auto within = [&](const char* key, double v, double lo, double hi) -> Expected<void> {
    if (v >= lo && v <= hi) return {};
    return Fail("policy {}: option '{}': {} is outside {}..{}", kName, key, v, lo, hi);
  };
  for (const Expected<void>& check :
       {within("margin_z", o.margin_z, 0, 5), within("completed_sigma", o.completed_sigma, 0, 1),
        within("co_runner_sigma", o.co_runner_sigma, 0, 1), within("mps_step", o.mps_step, 0, 100),
        within("max_moves", o.max_moves, 0, 10)}) {
    if (!check) return std::unexpected(check.error());
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakeSloAware(const PolicyContext& context,
                                               const nlohmann::json& options) {
  auto o = ParseSloAwareOptions(options);
  if (!o) return std::unexpected(o.error());
  if (context.options_only) return std::unique_ptr<Policy>{};
  if (context.predictor == nullptr) {
    return Fail("policy slo-aware: needs a predictor (a profile matrix to predict from)");
  }
  if (auto ok = CheckInterferenceKind("slo-aware", *context.predictor, options); !ok) {
    return std::unexpected(ok.error());
  }
  if (context.learner != nullptr && context.learner != context.predictor) {
    return Fail("policy slo-aware: the learner must be the predictor it reads");
  }
  return std::make_unique<SloAware>(*context.predictor, context.telemetry, std::move(*o),
                                    context.learner, context.can_move, context.clock,
                                    context.qps_window_s);
}

// A cell with this many runs is known well enough; the thesis ran each configuration at
// least ten times (Ch. 6.1).
constexpr int kObserveUntil = 10;

struct SloAware::Impl {
  SloAwareOptions options;
  PredictionView view;
  predict::Predictor* learner;
  // Pods seen since their bind: true while alone every time (still to observe), false once
  // seen shared or observed.
  std::unordered_map<WorkloadId, bool> watch;
  int observed = 0;
  // Re-placement: per running pod, its moves so far and what was seen when it was last found
  // below its target (node version, telemetry version) or found nowhere better (cluster
  // version).
  bool can_move;
  const Clock* clock;
  double qps_window_s;
  struct Track {
    int moves = 0;
    std::optional<std::pair<uint64_t, uint64_t>> below;
    double below_at = 0;  // clock time of that sighting
    std::optional<uint64_t> nowhere;
    // At or above its target (or unmeasured) when last judged, under this predictor generation
    // and this many GPUs (its ceiling's models): judged alike until one of them or its QPS
    // (PlacedChanges::QpsMayHaveMoved) moves.
    bool fine = false;
    uint64_t fine_generation = 0;
    int fine_gpus = 0;
  };
  std::unordered_map<WorkloadId, Track> tracks;
  // Tracks judged below target (not fine) with moves left: looked at every pass.
  std::unordered_set<WorkloadId> unsettled;
  int moved = 0;
  // The closed loop looks only at what moved since its last pass (PlacedChanges), and at
  // everything when the predictor or the GPUs did.
  PlacedChanges changes;
  std::optional<uint64_t> loop_generation;
  int loop_gpus = -1;
  // The partition Offer must not consider (the pod's own, while judging a move).
  std::optional<model::PartitionIndex> skip;
  std::vector<int> percents;  // tried, smallest first (the first admissible one is taken)
  using Member = PredictionView::Member;

  // The cluster's GPU models (GPUs never change model; relisted when GPUs are added).
  std::vector<model::GpuModelId> models;
  int models_seen = -1;
  // Ceilings by application (any memory), refreshed with the predictor's generation.
  std::vector<double> app_ceiling;
  uint64_t ceiling_generation = ~uint64_t{0};
  // Ceilings by (application, GPU memory asked): x's own (its memory restricts the
  // configurations). Judge asks it of every workload below its SLO, many a pass: one per
  // workload kept a single entry and refilled it each time (3.7 k instructions).
  std::unordered_map<uint64_t, double> x_ceilings;
  uint64_t x_generation = ~uint64_t{0};
  int x_gpus = -1;

  Impl(const predict::Predictor& p, const telemetry::Telemetry* t, SloAwareOptions o,
       predict::Predictor* l, bool m, const Clock* clk, double window)
      : options(std::move(o)),
        view(p, t,
             {.interference_kind = options.interference_kind,
              .interpolate = options.mps_step > 0,
              .completed_sigma = options.completed_sigma,
              .calibrated_sigma = options.calibrated_sigma}),
        learner(l),
        can_move(m),
        clock(clk),
        qps_window_s(clk != nullptr ? window : 0) {
    if (options.mps_step > 0) {
      for (int pct = 100; pct >= 1; pct -= options.mps_step) percents.push_back(pct);
    } else {
      percents = {100, 50, 25};
    }
    std::reverse(percents.begin(), percents.end());
  }

  bool Predictable(const Workload& w) {
    return w.gpu.count == 1 && w.gpu.mig_profile.empty() && w.slo_qps > 0 && view.AppOf(w.app) >= 0;
  }

  // The lower bound the score uses.
  double Lower(double iso, double sigma, double lost, int co_runners) const {
    return LowerWith(iso, lost, Spread(sigma, co_runners));
  }
  // The highest lower bound any share of a (model, profile) row could give x: its best share,
  // alone, nothing lost. Whatever co-runners or loss there are only lower it.
  double AloneBound(const PredictionView::Bounds& b) const {
    return Lower(b.max_isolated, b.min_sigma, 0, 0);
  }
  // Its two parts: the relative spread, and the bound from it.
  double Spread(double sigma, int co_runners) const {
    return std::sqrt(sigma * sigma +
                     co_runners * options.co_runner_sigma * options.co_runner_sigma);
  }
  double LowerWith(double iso, double lost, double spread) const {
    if (std::isnan(iso)) return iso;
    const double mean = iso * std::max(0.0, 1 - lost);
    const double sd = iso * spread;
    return std::max(0.0, mean - options.margin_z * sd);
  }

  const std::vector<model::GpuModelId>& Models(const ClusterState& c) {
    if (models_seen != c.gpu_count()) {
      models.clear();
      for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
        if (std::find(models.begin(), models.end(), c.gpu(g).model) == models.end()) {
          models.push_back(c.gpu(g).model);
        }
      }
      models_seen = c.gpu_count();
    }
    return models;
  }

  // Best lower bound of `app` alone at 100 % on any configuration of the cluster's models
  // whose memory holds `memory_mib`.
  double CeilingOf(AppId app, int64_t memory_mib, const ClusterState& c) {
    double best = 0;
    for (model::GpuModelId m : Models(c)) {
      const model::GpuModel& gm = model::GetGpuModel(m);
      auto consider = [&](int profile, int64_t partition_mib) {
        if (memory_mib > partition_mib) return;
        const PredictionView::Prediction at = view.At(app, m, profile, 100);
        const double lb = Lower(at.isolated, at.sigma, 0, 0);
        if (lb > best) best = lb;
      };
      consider(-1, gm.memory_mib);
      if (!gm.mig_capable() || !options.reshape) continue;
      const auto& choices = PredictionView::Layouts()[m];
      for (int prof = 0; prof < static_cast<int>(choices.size()); ++prof) {
        if (choices[prof]) consider(prof, gm.mig_profiles[prof].memory_mib);
      }
    }
    return best;
  }

  double XCeiling(const Workload& x, const ClusterState& c) {
    if (x_generation != view.predictor().generation() || x_gpus != c.gpu_count()) {
      x_ceilings.clear();
      x_generation = view.predictor().generation();
      x_gpus = c.gpu_count();
    }
    const AppId app = view.AppOf(x.app);
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(app)) << 40) ^
                         static_cast<uint64_t>(x.gpu.memory_mib);
    auto [it, fresh] = x_ceilings.try_emplace(key, 0.0);
    if (fresh) it->second = CeilingOf(app, x.gpu.memory_mib, c);
    return it->second;
  }

  // A co-runner's target: min(SLO, its application's ceiling).
  double MemberTarget(const Member& y, const ClusterState& c) {
    if (y.app < 0) return y.slo;
    if (ceiling_generation != view.predictor().generation() || models_seen != c.gpu_count()) {
      app_ceiling.assign(static_cast<size_t>(view.predictor().num_apps()), predict::kMissing);
      ceiling_generation = view.predictor().generation();
    }
    if (static_cast<size_t>(y.app) >= app_ceiling.size()) return y.slo;
    double& ceiling = app_ceiling[static_cast<size_t>(y.app)];
    if (std::isnan(ceiling)) ceiling = CeilingOf(y.app, 0, c);
    return std::min(y.slo, ceiling);
  }

  // Per member of a partition, what does not depend on the workload being placed: its target,
  // its lower bound as it is, and its margin (z · √(σ² + n · σ_f²), as a fraction of its
  // isolated rate) once one more co-runner joins. Cached like PredictionView::Members.
  struct MemberTerms {
    double target = 0;
    double lower_before = 0;
    double margin_after = 0;
  };
  struct TermsCache {
    CacheStamp stamp;
    std::vector<MemberTerms> terms;
  };
  std::vector<TermsCache> terms_cache;
  const std::vector<MemberTerms>& Terms(model::PartitionIndex p, const ClusterState& c,
                                        const std::vector<Member>& members) {
    if (terms_cache.size() < static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions) {
      terms_cache.resize(static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions);
    }
    TermsCache& cache = terms_cache[p];
    const uint64_t version = c.partition(p).version;
    if (cache.stamp.Holds(version, view.predictor().generation()) && models_seen == c.gpu_count()) {
      return cache.terms;
    }
    const int n = static_cast<int>(members.size());
    cache.terms.clear();
    for (const Member& y : members) {
      MemberTerms t;
      t.target = MemberTarget(y, c);
      t.lower_before = Lower(y.isolated, y.sigma, y.lost_base, n - 1);
      t.margin_after =
          options.margin_z *
          std::sqrt(y.sigma * y.sigma + n * options.co_runner_sigma * options.co_runner_sigma);
      cache.terms.push_back(t);
    }
    cache.stamp.Set(version, view.predictor().generation());
    return cache.terms;
  }

  // Score2 = 1 / (1 + err) and Score1 = 1 / (1 + (err + 1)²) with err = |t − l| / t, each
  // written with one division (the hot loop's cost).
  static double Score2(double target, double lower) {
    return target / (target + std::abs(target - lower));
  }
  static double Score1(double target, double lower) {
    const double e = std::abs(target - lower) + target;
    return target * target / (target * target + e * e);
  }

  // The thesis's set score on (target, lower bound).
  struct Set {
    double s1 = 0, s2 = 0;
    int neg = 0, pos = 0;
    void Add(double target, double lower) {
      if (lower < target) {
        s1 += Score1(target, lower);
        ++neg;
      } else {
        s2 += Score2(target, lower);
        ++pos;
      }
    }
    double Finish(double util) const {
      const int n = neg + pos;
      if (n == 0) return 0;
      const double k = static_cast<double>(neg) / n;
      double inner = 0;
      if (neg > 0) inner += k * s1 / neg;
      if (pos > 0) inner += (1 - k) * s2 / pos;
      return 100.0 * (1 - util) * inner;
    }
  };

  struct Pick {
    bool admissible = false;
    double score = -1;
    model::PartitionIndex partition = 0;
    int percent = 0;
    int64_t memory_mib = 0;
    std::optional<ReshapeTo> reshape;
    bool Beats(const Pick& o) const {
      return admissible != o.admissible ? admissible : score > o.score;
    }
    // This pick becomes `o`, which has no reshape (the scoring loop's: no optional to move).
    void TakePlain(const Pick& o) {
      admissible = o.admissible;
      score = o.score;
      partition = o.partition;
      percent = o.percent;
      memory_mib = o.memory_mib;
      if (reshape) reshape.reset();
    }
  };

  // What x's arrival does to a partition's members, the same for every share x could get
  // (first order): their set score after, x's loss beside them, and whether x would push one
  // that meets its target below it. With `stop_at_push` the walk ends at the first push.
  struct Neighbours {
    Set others;
    double x_lost = 0;
    bool pushes = false;
    std::string why_not;          // explain only
    std::vector<SloMember> rows;  // explain only
  };
  Neighbours Assess(AppId xa, const std::vector<Member>& members,
                    const std::vector<MemberTerms>& terms, bool stop_at_push, bool explain) {
    Neighbours nb;
    const int n = static_cast<int>(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      const Member& y = members[i];
      nb.x_lost += view.Lost(xa, y.app);
      if (y.slo <= 0 || std::isnan(y.isolated)) continue;
      const double target = terms[i].target;
      const double lost = y.lost_base + view.Lost(y.app, xa);
      const double after = y.isolated * std::max(0.0, 1 - lost - terms[i].margin_after);
      nb.others.Add(target, after);
      if (options.protect_neighbours && !nb.pushes && after < target &&
          terms[i].lower_before >= target) {
        nb.pushes = true;
        if (stop_at_push) return nb;
        if (explain) {
          nb.why_not = fmt::format("pushes workload {} below its target ({:.2f} < {:.2f})", y.id,
                                   after, target);
        }
      }
      if (explain) nb.rows.push_back({y.id, target, y.isolated, y.sigma, lost, n, after});
    }
    return nb;
  }

  // Assess's result for the scoring loop (no explanation), with the partition's util, kept per
  // (application, partition) — a stream of mixed applications reads it once per partition
  // state and application: it holds while the partition's version does (0: never filled), and
  // all entries while the predictor's generation and the cluster's GPU count (the members'
  // targets) do.
  // One cache line each: the util is stamped with a local epoch for the telemetry version
  // it was read under (0: not read), not with the 64-bit version itself.
  struct alignas(64) Assessed {
    uint64_t partition_version = 0;
    Set others;
    double x_lost = 0;
    double util = 0;
    AppId app = -1;
    int members = 0;
    uint32_t util_epoch = 0;
    bool pushes = false;
  };
  static_assert(sizeof(Assessed) == 64);
  // [xa + 1][partition index] (slot 0: an unknown application); sized by PrepareAssessed.
  std::vector<std::vector<Assessed>> assessed;
  std::optional<std::pair<uint64_t, int>> assessed_for;  // (generation, GPU count)
  // The epoch of the telemetry version last seen (bumped when it changes).
  uint32_t util_epoch = 0;
  std::optional<std::optional<uint64_t>> util_epoch_of;
  uint32_t UtilEpoch() {
    const std::optional<uint64_t> now = view.utilization_version();
    if (util_epoch_of != now || util_epoch == 0) {
      if (++util_epoch == 0) {  // wrapped: no entry may keep an old stamp
        for (std::vector<Assessed>& table : assessed) {
          for (Assessed& a : table) a.util_epoch = 0;
        }
        util_epoch = 1;
      }
      util_epoch_of = now;
    }
    return util_epoch;
  }

  // x's predictions at each of `percents` (At) and their SharesBounds on a (GPU model,
  // profile), per (model, profile) for the last application asked; dropped with `assessed`.
  static constexpr int kSpreadRunners = 8;
  struct ShareRow {
    AppId app = -1;
    PredictionView::Bounds bounds;
    std::vector<PredictionView::Prediction> at;
    // Spread(at[i].sigma, n) at [n · at.size() + i] for n < kSpreadRunners, NaN until read.
    std::vector<double> spread;
    // Spread(bounds.min_sigma, n) for n < kSpreadRunners: SharesOf's first test.
    std::array<double, kSpreadRunners> bound_spread{};
  };
  double SpreadOf(ShareRow& r, size_t i, int n) {
    if (n >= kSpreadRunners) return Spread(r.at[i].sigma, n);
    double& s = r.spread[static_cast<size_t>(n) * r.at.size() + i];
    if (std::isnan(s)) s = Spread(r.at[i].sigma, n);
    return s;
  }
  static constexpr int kProfileSlots = 16;  // profile + 1 < this (PredictionView's bound)
  // [xa + 1][model · kProfileSlots + profile + 1], each filled on first use (a stream of mixed
  // applications reads each row once per predictor generation); `share_spill` for a profile or
  // model past the table, never kept.
  std::vector<std::vector<ShareRow>> share_rows;
  ShareRow share_spill;
  // The kept row last returned (a node's partitions mostly share one model and profile);
  // forgotten with `share_rows`. The rows' tables never move once sized.
  struct LastRow {
    AppId xa = -2;
    model::GpuModelId m = -1;
    int profile = -2;
    ShareRow* row = nullptr;
  } last_row;
  ShareRow& ShareRowOf(AppId xa, model::GpuModelId m, int profile) {
    if (last_row.row != nullptr && last_row.xa == xa && last_row.m == m &&
        last_row.profile == profile) {
      return *last_row.row;
    }
    static const size_t models = model::AllGpuModels().size();  // a fixed catalogue
    const bool kept = xa >= -1 && profile + 1 >= 0 && profile + 1 < kProfileSlots && m >= 0 &&
                      static_cast<size_t>(m) < models;
    ShareRow* row = &share_spill;
    if (kept) {
      const size_t slot = static_cast<size_t>(xa + 1);
      if (share_rows.size() <= slot) share_rows.resize(slot + 1);
      std::vector<ShareRow>& table = share_rows[slot];
      if (table.empty()) table.resize(models * kProfileSlots);
      row = &table[static_cast<size_t>(m) * kProfileSlots + static_cast<size_t>(profile + 1)];
      last_row = {xa, m, profile, row};
      if (row->app == xa) return *row;
    }
    ShareRow& r = *row;
    r.app = xa;
    r.bounds = view.SharesBounds(xa, m, profile);
    r.at.clear();
    for (int pct : percents) r.at.push_back(view.At(xa, m, profile, pct));
    r.spread.assign(r.at.size() * kSpreadRunners, predict::kMissing);
    for (int n = 0; n < kSpreadRunners; ++n) r.bound_spread[n] = Spread(r.bounds.min_sigma, n);
    return r;
  }

  // Once per node scored: sizes xa's `assessed` table for `c`, all dropped when their keys
  // moved.
  void PrepareAssessed(const ClusterState& c, AppId xa) {
    const std::pair<uint64_t, int> key{view.predictor().generation(), c.gpu_count()};
    const size_t partitions = static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions;
    if (assessed_for != key) {
      for (std::vector<Assessed>& table : assessed) table.assign(partitions, Assessed{});
      share_rows.clear();
      last_row = {};
      admit_bounds.clear();
      any_bounds.clear();
      assessed_for = key;
    }
    const size_t slot = static_cast<size_t>(xa + 1);
    if (assessed.size() <= slot) assessed.resize(slot + 1);
    if (assessed[slot].size() != partitions) assessed[slot].assign(partitions, Assessed{});
  }

  // x's assessment on partition p without its util (which AssessedOf reads).
  Assessed& Assessment(AppId xa, model::PartitionIndex p, const ClusterState& c) {
    Assessed& a = assessed[static_cast<size_t>(xa + 1)][p];
    const model::Partition& part = c.partition(p);
    if (a.app != xa || a.partition_version != part.version) {
      const std::vector<Member>& members = view.Members(p, c);
      const Neighbours nb = Assess(xa, members, Terms(p, c, members), options.admission, false);
      a = Assessed{};
      a.partition_version = part.version;
      a.others = nb.others;
      a.x_lost = nb.x_lost;
      a.app = xa;
      a.members = static_cast<int>(members.size());
      a.pushes = nb.pushes;
    }
    return a;
  }
  // `epoch`: UtilEpoch(), read once by a caller that walks many partitions.
  Assessed& AssessedOf(AppId xa, model::PartitionIndex p, const ClusterState& c, uint32_t epoch) {
    Assessed& a = Assessment(xa, p, c);
    const model::Partition& part = c.partition(p);
    // An empty partition is idle whatever the telemetry last saw (it lags the pod that just
    // left); a busy one keeps 5 % of the score so that its options still rank by their members.
    if (a.util_epoch != epoch) {
      a.util = part.empty() ? 0.0 : std::min(view.CachedUtil(p, c), 0.95);
      a.util_epoch = epoch;
    }
    return a;
  }

  // AssessedOf's figures for an explanation (the whole walk, not kept), with its rows in `nb`.
  Assessed Explained(AppId xa, model::PartitionIndex p, const ClusterState& c,
                     std::optional<Neighbours>& nb) {
    const model::Partition& part = c.partition(p);
    const std::vector<Member>& members = view.Members(p, c);
    nb = Assess(xa, members, Terms(p, c, members), false, true);
    Assessed a;
    a.others = nb->others;
    a.x_lost = nb->x_lost;
    a.pushes = nb->pushes;
    a.util = part.empty() ? 0.0 : std::min(view.CachedUtil(p, c), 0.95);
    a.members = static_cast<int>(members.size());
    return a;
  }

  // The most x can score on an occupied partition whose members do to x what `a` says: the
  // set score is 100 · (1 − util) times the mean of its terms, x's own ≤ 1, so the mean is at
  // most (Σ members' terms + 1) / (members + 1); with the ceilings' margin for rounding.
  static double WithXAtMost(const Assessed& a) {
    const Set& o = a.others;
    return 100.0 * (1 - a.util) * ((o.s1 + o.s2 + 1) / (o.neg + o.pos + 1)) * kCeilingMargin;
  }
  // The same before the members are read: 100 · (1 − util), util capped as AssessedOf caps it.
  static double UtilAtMost(double util) {
    return 100.0 * (1 - std::min(util, 0.95)) * kCeilingMargin;
  }

  // x on an existing partition at each share that fits. Under admission every pick is
  // admissible, so a partition whose ceiling is at most `floor` (the best admissible score the
  // node offers so far; −1: none) is not scored: it scores strictly below that (the ceiling's
  // margin), so it cannot change the node's answer, ties included.
  void ScorePartition(const Workload& x, AppId xa, double x_target, NodeIndex node,
                      model::PartitionIndex p, const ClusterState& c, Pick& best, double floor,
                      uint32_t epoch, std::vector<SloOption>* explain) {
    const model::Partition& part = c.partition(p);
    if (std::none_of(percents.begin(), percents.end(),
                     [&](int pct) { return ShareFits(part, pct, x.gpu.memory_mib); })) {
      return;
    }
    const model::Gpu& gpu = c.gpu(part.gpu);
    if (explain != nullptr) {
      std::optional<Neighbours> nb;  // the rows and the reason
      const Assessed a = Explained(xa, p, c, nb);
      SharesOf(x, x_target, p, part, a, ShareRowOf(xa, gpu.model, part.profile), best, node,
               explain, &*nb);
      return;
    }
    if (part.empty()) {
      const Pick local = EmptyPick(x, xa, x_target, p, part, gpu.model);
      if (local.score >= 0 && local.Beats(best)) best = local;
      return;
    }
    const Assessed& a = AssessedOf(xa, p, c, epoch);
    if (options.admission && floor >= 0 && WithXAtMost(a) <= floor) return;
    SharesOf(x, x_target, p, part, a, ShareRowOf(xa, gpu.model, part.profile), best);
  }

  // x's shares of partition `p`, whose members do to x what `a` says, weighed smallest first
  // into `best`; with `explain`, every option weighed (with `nb`'s rows and reason).
  void SharesOf(const Workload& x, double x_target, model::PartitionIndex p,
                const model::Partition& part, const Assessed& a, ShareRow& row, Pick& best,
                NodeIndex node = 0, std::vector<SloOption>* explain = nullptr,
                const Neighbours* nb = nullptr) {
    const bool only_admissible = options.admission && explain == nullptr;
    const Set& others = a.others;
    const double x_lost = a.x_lost, util = a.util;
    const bool pushes = a.pushes;
    const int n = a.members;
    if (pushes && only_admissible) return;  // no share of this partition is admissible
    const auto fits = [&](int pct) { return ShareFits(part, pct, x.gpu.memory_mib); };
    const PredictionView::Bounds& bounds = row.bounds;
    // No share predicts more than the best profiled one, nor is surer than the surest: if even
    // that bound misses the target, no share is admissible.
    if (only_admissible) {
      const double spread = n < kSpreadRunners ? row.bound_spread[static_cast<size_t>(n)]
                                               : Spread(bounds.min_sigma, n);
      if (!(LowerWith(bounds.max_isolated, x_lost, spread) >= x_target)) return;
    }
    bool admitted = false;
    // Smallest share first: the first admissible one is the partition's choice.
    for (size_t i = 0; i < percents.size(); ++i) {
      const int pct = percents[i];
      if (pct < bounds.min_share || !fits(pct)) continue;
      const auto [iso, sigma] = row.at[i];
      if (std::isnan(iso)) continue;
      const double lower = LowerWith(iso, x_lost, SpreadOf(row, i, n));
      // Under admission, only an admissible option can be offered, and it beats every one
      // that is not: the shares below it need no score.
      if (only_admissible && !(lower >= x_target && !pushes)) continue;
      Set set = others;
      set.Add(x_target, lower);
      Pick pick{lower >= x_target && !pushes, set.Finish(util), p, pct,
                part.memory_mib * pct / 100,  std::nullopt};
      const bool was_admitted = admitted;
      if (pick.admissible) admitted = true;
      if (explain == nullptr) {
        if (!was_admitted && pick.Beats(best)) best.TakePlain(pick);
        if (admitted) break;
        continue;
      }
      if (!was_admitted && pick.Beats(best)) best = pick;
      {
        SloOption o;
        o.node = node;
        o.gpu = part.gpu;
        o.partition = part.uuid;
        o.mps_percent = pct;
        o.util = util;
        o.score = pick.score;
        o.admissible = pick.admissible;
        o.why_not = pushes ? nb->why_not
                    : pick.admissible
                        ? ""
                        : fmt::format("x below its target ({:.2f} < {:.2f})", lower, x_target);
        o.members.push_back({x.id, x_target, iso, sigma, x_lost, n, lower});
        o.members.insert(o.members.end(), nb->rows.begin(), nb->rows.end());
        o.placement = {x.id, node, {{p, pct * 10, pick.memory_mib}}};
        explain->push_back(std::move(o));
      }
    }
  }

  // The best of x's options on the empty partition `p` (score −1: none), as ScorePartition's
  // loop would pick it from nothing. Every empty partition of one (model, profile, memory)
  // offers x the same (no members, util 0), so it is kept per x and rebased onto `p`.
  // An entry holds while its stamp is the memo's: a new (x, target) moves the stamp, so the
  // table is not cleared (nor reallocated) once per decision.
  struct EmptyEntry {
    uint64_t stamp = 0;
    int64_t memory_mib = 0;
    Pick pick;
  };
  struct EmptyMemo {
    AppId app = -1;
    double target = 0;
    int64_t memory_mib = -1;
    std::optional<std::pair<uint64_t, int>> assessed_for;
    uint64_t stamp = 0;
    std::vector<EmptyEntry> picks;  // [model · slots + profile + 1]
  } empty_memo;
  Pick EmptyPick(const Workload& x, AppId xa, double x_target, model::PartitionIndex p,
                 const model::Partition& part, model::GpuModelId gpu_model) {
    EmptyMemo& m = empty_memo;
    if (m.app != xa || m.target != x_target || m.memory_mib != x.gpu.memory_mib ||
        m.assessed_for != assessed_for) {
      m.app = xa;
      m.target = x_target;
      m.memory_mib = x.gpu.memory_mib;
      m.assessed_for = assessed_for;
      ++m.stamp;
      m.picks.resize(model::AllGpuModels().size() * kProfileSlots);
    }
    const bool kept = part.profile + 1 >= 0 && part.profile + 1 < kProfileSlots && gpu_model >= 0 &&
                      static_cast<size_t>(gpu_model) < model::AllGpuModels().size();
    EmptyEntry* slot =
        kept ? &m.picks[static_cast<size_t>(gpu_model) * kProfileSlots + (part.profile + 1)]
             : nullptr;
    Pick pick;
    if (slot && slot->stamp == m.stamp && slot->memory_mib == part.memory_mib) {
      pick = slot->pick;
    } else {
      SharesOf(x, x_target, p, part, Assessed{}, ShareRowOf(xa, gpu_model, part.profile), pick);
      if (slot) *slot = {m.stamp, part.memory_mib, pick};
    }
    pick.partition = p;
    return pick;
  }

  // x alone on an instance of `profile` (-1: MIG off) of the idle GPU `g`, after a reshape.
  void ScoreReshape(const Workload& x, NodeIndex node, GpuIndex g, int profile,
                    const ClusterState& c, Pick& best, std::vector<SloOption>* explain) {
    const model::Gpu& gpu = c.gpu(g);
    const model::GpuModel& m = model::GetGpuModel(gpu.model);
    const AppId xa = view.AppOf(x.app);
    const double x_target = std::min(x.slo_qps, XCeiling(x, c));
    const int64_t partition_mib = profile < 0 ? m.memory_mib : m.mig_profiles[profile].memory_mib;
    const auto& choice = PredictionView::Layouts()[gpu.model];
    const PredictionView::Bounds bounds = view.SharesBounds(xa, gpu.model, profile);
    // As in ScorePartition: when only an admissible option counts, a profile whose best
    // profiled share cannot reach the target offers nothing.
    if (options.admission && explain == nullptr && !(AloneBound(bounds) >= x_target)) {
      return;
    }
    bool admitted = false;
    // Smallest share first: the first admissible one is this profile's choice.
    for (auto it = percents.begin(); it != percents.end(); ++it) {
      const int pct = *it;
      const int64_t memory = partition_mib * pct / 100;
      if (pct < bounds.min_share || x.gpu.memory_mib > memory) continue;
      const auto [iso, sigma] = view.At(xa, gpu.model, profile, pct);
      if (std::isnan(iso)) continue;
      const double lower = Lower(iso, sigma, 0, 0);
      Set set;
      set.Add(x_target, lower);
      Pick pick{lower >= x_target, set.Finish(0), 0, pct, memory, std::nullopt};
      if (profile < 0) {
        pick.reshape = ReshapeTo{g, std::nullopt};
        pick.partition = ClusterState::PartitionOf(g, 0);
      } else {
        pick.reshape = ReshapeTo{g, choice[profile]->layout};
        pick.partition = ClusterState::PartitionOf(g, choice[profile]->slot);
      }
      if (explain) {
        SloOption o;
        o.node = node;
        o.gpu = g;
        o.partition = fmt::format(
            "{} (reshape: {})",
            profile < 0 ? std::string(predict::kWholeGpu) : m.mig_profiles[profile].name,
            profile < 0 ? std::string("MIG off")
                        : model::LayoutToString(m, choice[profile]->layout));
        o.mps_percent = pct;
        o.score = pick.score;
        o.admissible = pick.admissible;
        if (!pick.admissible) {
          o.why_not = fmt::format("x below its target ({:.2f} < {:.2f})", lower, x_target);
        }
        o.members.push_back({x.id, x_target, iso, sigma, 0, 0, lower});
        o.reshape = pick.reshape;
        o.placement = {x.id, node, {{pick.partition, pct * 10, memory}}};
        explain->push_back(std::move(o));
      }
      const bool admissible = pick.admissible;
      if (!admitted && pick.Beats(best)) best = std::move(pick);
      if (admissible && !admitted) {
        admitted = true;
        if (explain == nullptr) break;
      }
    }
  }

  // x alone on the idle MIG-capable GPU `g` after the best reshape. Every idle GPU of one model
  // and MIG state offers the same, so without `explain` the answer is kept for the workload
  // being placed and rebased onto the GPU asked about.
  struct ReshapeMemo {
    model::WorkloadId id = 0;
    double slo = 0;
    uint64_t generation = 0;
    int gpus = 0;  // the cluster's GPU count: x's target follows the cluster's models
    std::vector<std::optional<std::pair<Pick, int>>> picks;  // [model · 2 + mig]: pick, slot
  } reshape_memo;
  Pick BestReshape(const Workload& x, NodeIndex node, GpuIndex g, const ClusterState& c,
                   std::vector<SloOption>* explain) {
    const model::Gpu& gpu = c.gpu(g);
    auto compute = [&] {
      Pick reshaped;
      if (gpu.mig && c.MayReshapeTo(g, false)) ScoreReshape(x, node, g, -1, c, reshaped, explain);
      const auto& choices = PredictionView::Layouts()[gpu.model];
      for (int prof = 0; prof < static_cast<int>(choices.size()); ++prof) {
        if (choices[prof]) ScoreReshape(x, node, g, prof, c, reshaped, explain);
      }
      return reshaped;
    };
    if (explain != nullptr) return compute();
    ReshapeMemo& memo = reshape_memo;
    if (memo.id != x.id || memo.slo != x.slo_qps ||
        memo.generation != view.predictor().generation() || memo.gpus != c.gpu_count()) {
      memo = {x.id, x.slo_qps, view.predictor().generation(), c.gpu_count(), {}};
      memo.picks.resize(model::AllGpuModels().size() * 2);
    }
    std::optional<std::pair<Pick, int>>& kept =
        memo.picks[static_cast<size_t>(gpu.model) * 2 + (gpu.mig ? 1 : 0)];
    if (!kept) {
      const Pick p = compute();
      kept = {p, p.score >= 0 ? p.partition - ClusterState::PartitionOf(g, 0) : 0};
    }
    Pick p = kept->first;
    if (p.score >= 0) {
      p.partition = ClusterState::PartitionOf(g, kept->second);
      if (p.reshape) p.reshape->gpu = g;
    }
    return p;
  }

  // SloAware::ScoreCeiling: over the node's partitions with room, 100 · (1 − util) on an
  // occupied one (the set score is that factor times a mean of terms ≤ 1), x's pick on an
  // empty one (EmptyPick: exactly its offer there), and on an idle GPU the reshape's; the
  // node's side kept per node (NodeRooms), x's per workload.
  NodeRoomsCache rooms;
  // x's side of NodeCeiling — its application, its target, its tables sized — for the
  // decision in progress: the core asks every node in one cluster state.
  struct CeilingFor {
    model::WorkloadId id = 0;
    uint64_t cluster = 0, generation = 0;
    int gpus = -1;
    AppId xa = -1;
    double target = 0;
  } ceiling_for;
  double NodeCeiling(const Workload& x, NodeIndex node, const ClusterState& c) {
    CeilingFor& d = ceiling_for;
    if (d.id != x.id || d.cluster != c.version() || d.gpus != c.gpu_count() ||
        d.generation != view.predictor().generation()) {
      d = {x.id, c.version(), view.predictor().generation(), c.gpu_count(), view.AppOf(x.app), 0};
      PrepareAssessed(c, d.xa);
      d.target = std::min(x.slo_qps, XCeiling(x, c));
    }
    const AppId xa = d.xa;
    const double x_target = d.target;
    // Under admission most nodes of a full cluster have nothing x could be admitted to: their
    // kept bound says so without the walk below.
    if (options.admission && !(AnyBound(xa, node, c) >= x_target)) {
      return -std::numeric_limits<double>::infinity();
    }
    const NodeRooms& shape = rooms.ShapeOf(node, c, view, percents);
    // −∞ until some option is possible: Policy::ScoreCeiling's "no offer".
    double ceiling = -std::numeric_limits<double>::infinity();
    for (const NodeRooms::Idle& idle : shape.idle) {
      if (options.reshape && x.gpu.AllowsModel(idle.model) &&
          model::GetGpuModel(idle.model).mig_capable()) {
        const Pick pick = BestReshape(x, node, idle.gpu, c, nullptr);
        if (pick.score >= 0) ceiling = std::max(ceiling, pick.score);
      }
    }
    for (const NodeRooms::Empty& e : shape.empties) {
      if (x.gpu.memory_mib > e.memory_mib || !x.gpu.AllowsModel(e.model)) continue;
      const Pick pick = EmptyPick(x, xa, x_target, e.partition, c.partition(e.partition), e.model);
      if (pick.score >= 0) ceiling = std::max(ceiling, pick.score);
    }
    ceiling *= kCeilingMargin;
    if (shape.occupied.empty() ||
        (options.admission && !(AdmitBound(xa, node, shape, c) >= x_target))) {
      return ceiling;  // no occupied partition could admit x
    }
    const NodeRooms& r = rooms.Of(node, c, view, percents);  // the shape, with utilisations
    // On an occupied partition the mean of terms is at most (Σ members' terms + 1) / (members +
    // 1), x's own term being ≤ 1, and under admission a partition where x would push a member
    // below its target offers nothing: read from its kept assessment while 100 · (1 − util),
    // the bound without it, can still beat the best so far.
    const uint32_t epoch = UtilEpoch();
    for (const NodeRooms::Occupied& o : r.occupied) {  // lowest util first
      if (UtilAtMost(o.util) <= ceiling) break;
      if (x.gpu.memory_mib > o.memory_mib || !x.gpu.AllowsModel(o.model) ||
          (options.admission && !MayAdmit(xa, x_target, o.model, o.profile))) {
        continue;
      }
      const Assessed& a = AssessedOf(xa, o.partition, c, epoch);
      if (options.admission && a.pushes) continue;
      if (options.admission) {  // SharesOf's own first test: no share can reach the target
        const PredictionView::Bounds& b = ShareRowOf(xa, o.model, o.profile).bounds;
        if (!(Lower(b.max_isolated, b.min_sigma, a.x_lost, a.members) >= x_target)) continue;
      }
      ceiling = std::max(ceiling, WithXAtMost(a));
    }
    return ceiling;
  }
  // Whether any share of a partition of (model, profile) could admit x: SharesOf's first test,
  // with no loss and no co-runner (each only lowers the bound).
  bool MayAdmit(AppId xa, double x_target, model::GpuModelId m, int profile) {
    const PredictionView::Bounds& b = ShareRowOf(xa, m, profile).bounds;
    return AloneBound(b) >= x_target;
  }

  // Under admission, the highest target at which some occupied partition of a node could admit
  // a workload of application xa — the largest over the node's rooms of the least of MayAdmit's
  // and SharesOf's first bounds, −∞ where x would push a member — kept per (application, node)
  // while the node's version and the assessments' keys hold: a target above it makes every
  // occupied partition skip, so NodeCeiling need not walk them. The rooms' set of occupied
  // partitions does not follow utilisation, only the node's version.
  struct AdmitEntry {
    uint64_t node_version = 0;  // 0: never filled
    double most = 0;
  };
  std::vector<std::vector<AdmitEntry>> admit_bounds;  // [xa + 1][node]; dropped with `assessed`
  // xa's entry for `node` in `tables` ([xa + 1][node]), sized to the cluster.
  static AdmitEntry& EntryOf(std::vector<std::vector<AdmitEntry>>& tables, AppId xa, NodeIndex node,
                             const ClusterState& c) {
    const size_t slot = static_cast<size_t>(xa + 1);
    if (tables.size() <= slot) tables.resize(slot + 1);
    std::vector<AdmitEntry>& table = tables[slot];
    if (table.size() < static_cast<size_t>(c.node_count())) table.resize(c.node_count());
    return table[static_cast<size_t>(node)];
  }
  double AdmitBound(AppId xa, NodeIndex node, const NodeRooms& r, const ClusterState& c) {
    AdmitEntry& e = EntryOf(admit_bounds, xa, node, c);
    const uint64_t version = c.node(node).version;
    if (e.node_version == version) return e.most;
    double most = -std::numeric_limits<double>::infinity();
    for (const NodeRooms::Occupied& o : r.occupied) {
      const Assessed& a = Assessment(xa, o.partition, c);
      if (a.pushes) continue;
      const PredictionView::Bounds& b = ShareRowOf(xa, o.model, o.profile).bounds;
      const double alone = AloneBound(b);
      const double shared = Lower(b.max_isolated, b.min_sigma, a.x_lost, a.members);
      if (std::isnan(alone) || std::isnan(shared)) continue;
      most = std::max(most, std::min(alone, shared));
    }
    e = {version, most};
    return most;
  }

  // Under admission, the highest target at which a workload of application xa could be
  // admitted anywhere on a node — AdmitBound over its occupied partitions, and the best bound
  // alone (SharesOf's and ScoreReshape's first tests, no loss, no co-runner) of each empty
  // partition's (model, profile) and of every profile an idle GPU could be cut to — kept per
  // (application, node) like AdmitBound. Above it NodeCeiling is −∞: every one of its options
  // fails its first test. Memory and allowed models are left out (they only refuse more).
  std::vector<std::vector<AdmitEntry>> any_bounds;  // [xa + 1][node]; dropped with `assessed`
  double AnyBound(AppId xa, NodeIndex node, const ClusterState& c) {
    AdmitEntry& e = EntryOf(any_bounds, xa, node, c);
    const uint64_t version = c.node(node).version;
    if (e.node_version == version) return e.most;
    const NodeRooms& shape = rooms.ShapeOf(node, c, view, percents);
    double most = shape.occupied.empty() ? -std::numeric_limits<double>::infinity()
                                         : AdmitBound(xa, node, shape, c);
    const auto consider = [&most](double bound) {
      if (bound > most) most = bound;  // NaN: no prediction, no option
    };
    for (const NodeRooms::Empty& empty : shape.empties) {
      consider(AloneBound(ShareRowOf(xa, empty.model, empty.profile).bounds));
    }
    if (options.reshape) {
      for (const NodeRooms::Idle& idle : shape.idle) {
        if (!model::GetGpuModel(idle.model).mig_capable()) continue;
        consider(AloneBound(view.SharesBounds(xa, idle.model, -1)));
        const auto& choices = PredictionView::Layouts()[idle.model];
        for (int prof = 0; prof < static_cast<int>(choices.size()); ++prof) {
          if (choices[prof]) consider(AloneBound(view.SharesBounds(xa, idle.model, prof)));
        }
      }
    }
    e = {version, most};
    return most;
  }

  // Under admission, the pick the node's walk would take from its occupied partitions — the
  // first best, partitions in index order — visited lowest util first (the node's rooms): a
  // partition scores at most 100 · (1 − util) (UtilAtMost), so the visit ends where that cannot
  // pass `floor` (the best admissible score the node offers elsewhere) or the best found, and
  // WithXAtMost skips the partitions in between that cannot. A skipped one scores strictly
  // below, so the answer is the walk's.
  Pick BestOccupied(const Workload& x, AppId xa, double x_target, const NodeRooms& kept,
                    const ClusterState& c, uint32_t epoch, double floor) {
    Pick out;
    for (const NodeRooms::Occupied& o : kept.occupied) {
      const double beat = std::max(floor, out.admissible ? out.score : -1.0);
      if (beat >= 0 && UtilAtMost(o.util) <= beat) break;
      if (o.partition == skip || x.gpu.memory_mib > o.memory_mib || !x.gpu.AllowsModel(o.model)) {
        continue;
      }
      const Assessed& a = AssessedOf(xa, o.partition, c, epoch);
      if (a.pushes || (beat >= 0 && WithXAtMost(a) <= beat)) continue;
      Pick pick;
      SharesOf(x, x_target, o.partition, c.partition(o.partition), a,
               ShareRowOf(xa, o.model, o.profile), pick);
      if (FirstBest(pick, out)) out.TakePlain(pick);
    }
    return out;
  }
  // Whether `a` replaces `b` as the walk's first best pick: it beats `b`, or ties it earlier.
  static bool FirstBest(const Pick& a, const Pick& b) {
    if (a.score < 0) return false;
    return a.Beats(b) || (!b.Beats(a) && a.partition < b.partition);
  }

  std::optional<Candidate> Offer(const Workload& x, NodeIndex node, const ClusterState& c,
                                 std::vector<SloOption>* explain, bool admissible_only = false) {
    const model::Node& n = c.node(node);
    view.BeginNode();
    const AppId xa = view.AppOf(x.app);
    PrepareAssessed(c, xa);
    const double x_target = std::min(x.slo_qps, XCeiling(x, c));
    const uint32_t epoch = UtilEpoch();
    // Under admission (not explaining) the occupied partitions are scored apart, best first,
    // from the node's rooms where they pay (kept, or the node unchanged since the last look;
    // read after BeginNode above):
    // filling them for a node that changes at every decision costs more than the walk.
    const NodeRooms* kept = options.admission && explain == nullptr
                                ? rooms.OfSeenTwice(node, c, view, percents)
                                : nullptr;
    const bool apart = kept != nullptr;
    Pick best;
    for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
      const model::Gpu& gpu = c.gpu(g);
      if (!gpu.available || !x.gpu.AllowsModel(gpu.model)) continue;
      Pick here;
      for (int slot = 0; slot < gpu.partition_count; ++slot) {
        const model::PartitionIndex p = ClusterState::PartitionOf(g, slot);
        if (p == skip || (apart && !c.partition(p).empty())) continue;
        const double floor =
            std::max(best.admissible ? best.score : -1.0, here.admissible ? here.score : -1.0);
        ScorePartition(x, xa, x_target, node, p, c, here, floor, epoch, explain);
      }
      if (options.reshape && gpu.idle() && model::GetGpuModel(gpu.model).mig_capable() &&
          c.MayReshapeTo(g, true)) {
        // A reshape only where it beats what the GPU offers as it is.
        Pick reshaped = BestReshape(x, node, g, c, explain);
        if (reshaped.score >= 0 && reshaped.Beats(here)) here = std::move(reshaped);
      }
      if (here.score >= 0 && here.Beats(best)) best = std::move(here);
    }
    // AdmitBound: no occupied partition can admit a target above it (kept per node version).
    if (apart && AdmitBound(xa, node, *kept, c) >= x_target) {
      const Pick occupied =
          BestOccupied(x, xa, x_target, *kept, c, epoch, best.admissible ? best.score : -1.0);
      if (FirstBest(occupied, best)) best.TakePlain(occupied);
    }
    if (best.score < 0 || ((options.admission || admissible_only) && !best.admissible)) {
      return std::nullopt;
    }
    return Candidate{best.score,
                     {x.id, node, {{best.partition, best.percent * 10, best.memory_mib}}},
                     std::move(best.reshape),
                     {}};
  }

  bool Learns() const {
    return options.observe && learner != nullptr && view.telemetry() != nullptr;
  }
  bool Replaces() const { return options.replace && can_move && view.telemetry() != nullptr; }

  std::vector<Eviction> AfterCycle(const ClusterState& c) {
    if (!Learns() && !Replaces()) return {};
    const uint64_t generation = view.predictor().generation();
    changes.Update(c, view.telemetry(),
                   generation != loop_generation || c.gpu_count() != loop_gpus);
    for (WorkloadId id : changes.gone()) {
      watch.erase(id);
      tracks.erase(id);
      unsettled.erase(id);
    }
    Learn(c, changes.visit());
    // An observation refits the predictor: every judgement of a target may move, now and (a
    // workload of an application new to it is now predictable) at the next pass.
    if (view.predictor().generation() != generation) changes.VisitAll(c);
    loop_generation = generation;
    loop_gpus = c.gpu_count();
    return Moves(c, changes.visit());
  }

  void Learn(const ClusterState& c, const std::vector<WorkloadId>& visit) {
    const telemetry::Telemetry* telemetry = view.telemetry();
    if (!Learns()) return;
    for (WorkloadId id : visit) {
      const model::PlacedWorkload* placed = c.Find(id);
      if (placed == nullptr) continue;
      const model::PlacedWorkload& pw = *placed;
      // Decided already (observed, or not alone): one integer lookup, before any by name.
      if (auto known = watch.find(id); known != watch.end() && !known->second) continue;
      const Workload& w = pw.workload;
      if (!Predictable(w) || pw.placement.slices.size() != 1) continue;
      const model::Partition& part = c.partition(pw.placement.slices[0].partition);
      const bool alone = part.clients.size() == 1;
      auto [it, fresh] = watch.try_emplace(id, alone);
      if (!it->second) continue;
      if (!alone) {
        it->second = false;
        continue;
      }
      const std::optional<double> qps = telemetry->WorkloadQps(w.name);
      if (!qps || !(*qps > 0)) continue;
      const model::GpuModel& m = model::GetGpuModel(c.gpu(part.gpu).model);
      const std::string config =
          predict::ConfigKey(m.name,
                             part.profile < 0 ? predict::kWholeGpu
                                              : std::string_view(m.mig_profiles[part.profile].name),
                             pw.placement.slices[0].milli / 10);
      // Only where the profile has a column (a new column would be completed for every other
      // application from this one cell), and only while the cell has fewer runs than the
      // thesis's characterisation gave (each observation re-completes the matrix).
      const std::optional<predict::ConfigId> column = learner->FindConfig(config);
      it->second = false;
      if (!column) continue;
      const std::optional<predict::AppId> row = learner->FindApp(w.app);
      if (row && learner->profile().Count(*row, *column) >= kObserveUntil) continue;
      if (learner->Observe(w.app, config, *qps)) ++observed;
    }
  }

  std::vector<Eviction> Moves(const ClusterState& c, const std::vector<WorkloadId>& visit) {
    std::vector<Eviction> out;
    if (!Replaces()) return out;
    std::vector<WorkloadId> ids = visit;
    if (!unsettled.empty()) {
      ids.insert(ids.end(), unsettled.begin(), unsettled.end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    for (WorkloadId id : ids) {
      const model::PlacedWorkload* placed = c.Find(id);
      if (placed == nullptr) continue;
      Judge(id, *placed, c, out);
      auto t = tracks.find(id);
      if (t != tracks.end() && !t->second.fine && t->second.moves < options.max_moves) {
        unsettled.insert(id);
      } else {
        unsettled.erase(id);
      }
    }
    return out;
  }

  // Whether the running workload `id` should move (an eviction in `out`).
  void Judge(WorkloadId id, const model::PlacedWorkload& pw, const ClusterState& c,
             std::vector<Eviction>& out) {
    const telemetry::Telemetry* telemetry = view.telemetry();
    const std::optional<uint64_t> sample = telemetry->Version();
    const uint64_t generation = view.predictor().generation();
    const Workload& w = pw.workload;
    if (pw.placement.slices.size() != 1) return;
    const uint64_t node_version = c.node(pw.placement.node).version;
    if (auto known = tracks.find(id); known != tracks.end()) {
      const Track& t = known->second;
      if (t.moves >= options.max_moves) return;
      // Judged fine on its QPS and target: it stays fine while neither moved (its node moving
      // does not, until the telemetry says so).
      if (t.fine && !changes.QpsMayHaveMoved(id) && t.fine_generation == generation &&
          t.fine_gpus == c.gpu_count()) {
        return;
      }
    }
    if (!Predictable(w)) return;
    Track& t = tracks[id];
    if (t.moves >= options.max_moves) return;
    const std::optional<double> qps = telemetry->WorkloadQps(w.name);
    // At or above its SLO it is at or above its target: no ceiling to work out.
    const double target = qps && *qps < w.slo_qps ? std::min(w.slo_qps, XCeiling(w, c)) : w.slo_qps;
    t.fine = !qps || *qps >= target || !sample;
    if (t.fine) {
      t.below.reset();
      t.fine_generation = generation;
      t.fine_gpus = c.gpu_count();
      return;
    }
    // Below target on a sample taken after its node last changed: the first sighting since
    // the change notes the versions; a newer sample, the node unchanged, decides.
    const double at = clock != nullptr ? clock->Now() : 0;
    const std::pair<uint64_t, uint64_t> now{node_version, *sample};
    if (!t.below || t.below->first != now.first) {
      t.below = now;
      t.below_at = at;
      return;
    }
    if (t.below->second == now.second) return;
    // A rate over a window still reaches back before the sighting (and the change before
    // it) until a whole window has passed.
    if (at - t.below_at < qps_window_s) return;
    if (t.nowhere == c.version()) return;
    const std::optional<Candidate> best = Elsewhere(w, pw, c);
    if (!best) {
      t.nowhere = c.version();
      return;
    }
    ++t.moves;
    ++moved;
    out.push_back({id, true,
                   fmt::format("runs at {:.2f} QPS, below its target {:.2f}; node {} is "
                               "predicted to keep it",
                               *qps, target, c.node(best->placement.node).name)});
  }

  // The first node, in cluster order, predicted to admit `w` at its target away from the
  // partition it runs on.
  std::optional<Candidate> Elsewhere(const Workload& w, const model::PlacedWorkload& pw,
                                     const ClusterState& c) {
    skip = pw.placement.slices[0].partition;
    std::optional<Candidate> best;
    for (NodeIndex n = 0; n < c.node_count() && !best; ++n) {
      if (!PredictingFilter(w, n, c, true, percents, options.reshape).ok()) continue;
      // No option at all (under admission: none admissible) where the ceiling is below 0.
      if (NodeCeiling(w, n, c) < 0) continue;
      best = Offer(w, n, c, nullptr, /*admissible_only=*/true);
    }
    skip.reset();
    return best;
  }
};

SloAware::SloAware(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
                   SloAwareOptions options, predict::Predictor* learner, bool can_move,
                   const Clock* clock, double qps_window_s)
    : impl_(std::make_unique<Impl>(predictor, telemetry, std::move(options), learner, can_move,
                                   clock, qps_window_s)) {}

CycleActions SloAware::AfterCycle(const ClusterState& c) {
  return {.evictions = impl_->AfterCycle(c)};
}

int SloAware::observations() const { return impl_->observed; }
int SloAware::moves() const { return impl_->moved; }

SloAware::~SloAware() = default;

Policy::OfferInputs SloAware::OffersDependOn() const {
  return {.slo_value = impl_->options.admission,
          .node_local_filter = true,
          .filter_epoch = impl_->view.predictor().generation(),
          .score_ceilings = true,
          .slo_monotone = impl_->options.admission};
}

std::optional<double> SloAware::ScoreCeiling(const Workload& w, NodeIndex node,
                                             const ClusterState& c) {
  if (!impl_->Predictable(w)) return std::nullopt;
  return impl_->NodeCeiling(w, node, c);
}

Feasibility SloAware::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return PredictingFilter(w, node, c, impl_->Predictable(w), impl_->percents,
                          impl_->options.reshape);
}

std::optional<Candidate> SloAware::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  if (!impl_->Predictable(w)) return impl_->view.FirstFitOffer(w, node, c);
  return impl_->Offer(w, node, c, nullptr);
}

double SloAware::Ceiling(const Workload& w, const ClusterState& c) {
  return impl_->Predictable(w) ? impl_->XCeiling(w, c) : 0;
}

std::vector<SloOption> SloAware::Options(const Workload& w, NodeIndex node, const ClusterState& c) {
  std::vector<SloOption> out;
  if (impl_->Predictable(w)) impl_->Offer(w, node, c, &out);
  std::stable_sort(out.begin(), out.end(), [](const SloOption& a, const SloOption& b) {
    return a.admissible != b.admissible ? a.admissible : a.score > b.score;
  });
  return out;
}

std::string SloAware::Explain(const Workload& w, const ClusterState& c) {
  if (!impl_->Predictable(w)) {
    return fmt::format("slo-aware: workload {} ({}) is outside the model; placed first-fit\n", w.id,
                       w.name) +
           Policy::Explain(w, c);
  }
  std::vector<std::string> filtered;
  std::vector<SloOption> all = AllOptions(
      *this, w, c, [&](NodeIndex n) { return Options(w, n, c); }, filtered);
  std::stable_sort(all.begin(), all.end(), [](const SloOption& a, const SloOption& b) {
    return a.admissible != b.admissible ? a.admissible : a.score > b.score;
  });
  const double ceiling = Ceiling(w, c);
  const double target = std::min(w.slo_qps, ceiling);
  const SloAwareOptions& o = impl_->options;
  std::string out = fmt::format(
      "slo-aware: workload {} ({}), app {}, SLO {:.2f} QPS, GPU memory {} MiB\n"
      "  ceiling {:.2f} QPS (best lower bound alone on the cluster's GPU models) -> target "
      "{:.2f}{}\n"
      "  margin: lower = iso x (1 - interference) - {:.2f} x iso x sqrt(sigma^2 + co-runners x "
      "{:.3f}^2)\n",
      w.id, w.name, w.app, w.slo_qps, w.gpu.memory_mib, ceiling, target,
      ceiling < w.slo_qps ? " (no configuration is predicted to meet the SLO: aims at its best)"
                          : "",
      o.margin_z, o.co_runner_sigma);
  const bool any = !all.empty() && all.front().admissible;
  if (!any) {
    out += o.admission ? fmt::format(
                             "  WAITS: no free configuration is predicted to reach {:.2f} QPS "
                             "without pushing a co-runner below its target\n",
                             target)
                       : "  no admissible option; admission is off, so the best is bound anyway\n";
  }
  out += fmt::format("{} options, admissible first, best first (x = the workload being placed):\n",
                     all.size());
  // The best 10 admissible options and the best 10 others.
  constexpr int kShown = 10;
  int shown[2] = {0, 0}, hidden[2] = {0, 0};
  for (const SloOption& opt : all) {
    if (shown[opt.admissible]++ >= kShown) {
      ++hidden[opt.admissible];
      continue;
    }
    out += fmt::format(
        "\n  score {:6.2f}  {}  node {}  gpu {}  partition {}  MPS {}%  util {:.2f}\n", opt.score,
        opt.admissible ? "admissible" : "not: " + opt.why_not, c.node(opt.node).name,
        c.gpu(opt.gpu).index, opt.partition, opt.mps_percent, opt.util);
    out += fmt::format("    {:<3} {:<10} {:>9} {:>9} {:>7} {:>8} {:>4} {:>9}\n", "", "workload",
                       "target", "isolated", "sigma", "interf", "n", "lower");
    for (size_t i = 0; i < opt.members.size(); ++i) {
      const SloMember& m = opt.members[i];
      out += fmt::format("    {:<3} {:<10} {:9.2f} {:9.2f} {:7.3f} {:8.3f} {:4} {:9.2f}\n",
                         i == 0 ? "x" : "", m.workload, m.target, m.isolated, m.sigma,
                         m.interference, m.co_runners, m.lower);
    }
  }
  if (hidden[1] + hidden[0] > 0) {
    out += fmt::format("\n  ... and {} more admissible, {} more not\n", hidden[1], hidden[0]);
  }
  if (!filtered.empty()) {
    out += "\nfiltered nodes:\n";
    for (const std::string& f : filtered) out += f + "\n";
  }
  return out;
}

}  // namespace tessera::policy
