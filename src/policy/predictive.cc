#include "policy/predictive.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "model/mig.h"
#include "policy/fit.h"
#include "policy/node_rooms.h"
#include "policy/prediction_view.h"
#include "predict/config_key.h"

namespace tessera::policy {

using predict::AppId;
using predict::ConfigId;

std::vector<OptionInfo> PredictiveOptionList() {
  const PredictiveOptions d;
  return {
      {"mps_percents", nlohmann::json(d.mps_percents).dump(),
       "MPS active-thread percentages a workload is tried at, each 1..100 (Ch. 8.4)"},
      {"reshape", nlohmann::json(d.reshape).dump(),
       "reshape an idle MIG-capable GPU to the layout that scores best (Ch. 8.3)"},
      {"interference_kind", nlohmann::json(d.interference_kind).dump(),
       "the predictor's interference kind for co-runners on one partition"},
      {"slo_headroom", nlohmann::json(d.slo_headroom).dump(),
       "score against SLO x (1 + headroom), 0..1; 0 is the thesis (docs/policies.md)"},
  };
}

Expected<PredictiveOptions> ParsePredictiveOptions(const nlohmann::json& options) {
  constexpr std::string_view kName = "predictive";
  PredictiveOptions o;
  // Every key is read; the first error is the one reported.
  for (const Expected<void>& read :
       {ReadOption(kName, options, "mps_percents", o.mps_percents),
        ReadOption(kName, options, "reshape", o.reshape),
        ReadOption(kName, options, "slo_headroom", o.slo_headroom),
        ReadOption(kName, options, "interference_kind", o.interference_kind)}) {
    if (!read) return std::unexpected(read.error());
  }
  if (!(o.slo_headroom >= 0 && o.slo_headroom <= 1)) {
    return Fail("policy predictive: option 'slo_headroom': {} is outside 0..1", o.slo_headroom);
  }
  if (o.mps_percents.empty()) return Fail("policy predictive: option 'mps_percents' is empty");
  for (int pct : o.mps_percents) {
    if (pct < 1 || pct > 100) {
      return Fail("policy predictive: option 'mps_percents': {} is outside 1..100", pct);
    }
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakePredictive(const PolicyContext& context,
                                                 const nlohmann::json& options) {
  auto o = ParsePredictiveOptions(options);
  if (!o) return std::unexpected(o.error());
  if (context.options_only) return std::unique_ptr<Policy>{};
  if (context.predictor == nullptr) {
    return Fail("policy predictive: needs a predictor (a profile matrix to predict from)");
  }
  if (auto ok = CheckInterferenceKind("predictive", *context.predictor, options); !ok) {
    return std::unexpected(ok.error());
  }
  return std::make_unique<Predictive>(*context.predictor, context.telemetry, std::move(*o));
}

double Err(double slo, double expected) { return std::abs(slo - expected) / slo; }
double Score1(double err) { return 1.0 / (1.0 + (err + 1.0) * (err + 1.0)); }
double Score2(double err) { return 1.0 / (1.0 + err); }

namespace predictive_detail {

// Running form of ScoreSet, so the hot path adds members without building vectors.
struct SetSum {
  double sum1 = 0, sum2 = 0;
  int neg = 0, pos = 0;
  void Add(double slo, double expected) {
    const double err = Err(slo, expected);
    if (expected < slo) {
      sum1 += Score1(err);
      ++neg;
    } else {
      sum2 += Score2(err);
      ++pos;
    }
  }
  // The set's score before the utilisation factor, and its k; 0 for an empty set.
  double Inner(double* k_out = nullptr) const {
    const int n = neg + pos;
    if (n == 0) return 0;
    const double k = static_cast<double>(neg) / n;
    if (k_out) *k_out = k;
    double inner = 0;
    if (neg > 0) inner += k * sum1 / neg;
    if (pos > 0) inner += (1 - k) * sum2 / pos;
    return inner;
  }
  SetScore Finish(double util) const {
    SetScore s{0, 0, neg, pos};
    if (neg + pos == 0) return s;
    s.score = Scaled(util, Inner(&s.k));
    return s;
  }
  static double Scaled(double util, double inner) { return 100.0 * (1.0 - util) * inner; }
  // The most the set can score with x beside these members on a partition at `util`: x's own
  // term is ≤ 1, so the mean of terms is at most (Σ members' terms + 1) / (members + 1); with
  // the ceilings' margin for rounding.
  double WithXAtMost(double util) const {
    return Scaled(util, (sum1 + sum2 + 1) / (neg + pos + 1)) * kCeilingMargin;
  }
};

// The best MPS share for x on an existing partition: its score, share and memory; score −1
// when no share fits (scores are ≥ 0). `explain` (may be null) receives every option weighed.
struct Best {  // score −1 when no share fits (scores are ≥ 0)
  double score = -1;
  int percent = 0;
  int64_t memory_mib = 0;
};
// What a partition's members contribute to x's score whatever share x gets: their part of
// the set score with x beside them, and the fraction x loses to them. It depends on x only
// through its application, so it is kept per (application, partition): a stream of mixed
// applications reads it once per partition state and application, not once per decision.
// The partition's util is kept beside them: one cache line read per partition scored. An
// entry holds while the partition's version does (0: never filled) and, for all entries,
// the predictor's generation (Impl::terms_generation).
struct alignas(64) Terms {
  uint64_t partition_version = 0;
  SetSum others;
  double x_lost = 0;
  AppId app = -1;
  bool util_valid = false;
  bool util_has_telemetry = false;  // `util_telemetry` is a version (else: no telemetry)
  uint64_t util_telemetry = 0;      // the telemetry version `util` was read under
  double util = 0;
};
static_assert(sizeof(Terms) == 64);
// x's isolated rate at each of options.mps_percents on a (GPU model, profile), kept per
// (model, profile) for the last application asked (dropped with the generation, as terms).
struct IsoRow {
  AppId app = -1;
  std::vector<double> iso;
};
// x's set score before the utilisation factor alone on a partition of (model, profile) at
// each share (NaN: no prediction), kept per (model, profile) for the last (application,
// target) asked, dropped with the generation: an empty partition's offer is then one
// multiplication a share, and the same numbers as the general path.
struct AloneRow {
  AppId app = -1;
  double target = 0;
  std::vector<double> inner;
  double best = -1;  // the largest of `inner` (−1: all NaN)
};
// x alone on an instance of `profile` (-1: MIG off) of an empty GPU of `gpu_model`.
struct Alone {
  double score = -1;
  int profile = -1;
  int percent = 100;
};
// BestAlone per (model, profile) for one workload (its app, SLO and GPU memory) under the
// predictor's generation: the same for every idle GPU of that model the nodes offer.
struct AloneMemo {
  AppId app = -1;
  double slo = 0;
  int64_t memory_mib = 0;
  uint64_t generation = 0;
  bool valid = false;
  std::vector<std::optional<Alone>> by_config;
  // BestReshape by (model, whole GPU allowed).
  std::vector<std::optional<Alone>> by_model;
  // Predictive::Impl::IdleCeiling by model.
  std::vector<std::optional<double>> idle_ceiling;
};

// The slot of (GPU model, profile) in the per-configuration tables, or -1 for a pair past them
// (none in the catalogue): the tables hold one more row, never kept, for those.
constexpr int kProfileSlots = 16;  // profile + 1 < this (PredictionView's bound)
int ConfigSlot(model::GpuModelId gpu_model, int profile) {
  if (gpu_model < 0 || static_cast<size_t>(gpu_model) >= model::AllGpuModels().size() ||
      profile + 1 < 0 || profile + 1 >= kProfileSlots) {
    return -1;
  }
  return gpu_model * kProfileSlots + (profile + 1);
}

}  // namespace predictive_detail

using predictive_detail::Alone;
using predictive_detail::AloneMemo;
using predictive_detail::AloneRow;
using predictive_detail::Best;
using predictive_detail::ConfigSlot;
using predictive_detail::IsoRow;
using predictive_detail::kProfileSlots;
using predictive_detail::SetSum;
using predictive_detail::Terms;

SetScore ScoreSet(const std::vector<MemberScore>& members, double util) {
  SetSum sum;
  for (const MemberScore& m : members) sum.Add(m.slo, m.expected);
  return sum.Finish(util);
}

struct Predictive::Impl {
  PredictiveOptions options;
  PredictionView view;
  using Member = PredictionView::Member;

  Impl(const predict::Predictor& p, const telemetry::Telemetry* t, PredictiveOptions o)
      : options(std::move(o)), view(p, t, {.interference_kind = options.interference_kind}) {
    std::sort(options.mps_percents.begin(), options.mps_percents.end(), std::greater<>());
  }

  AppId AppOf(const std::string& app) { return view.AppOf(app); }
  double Isolated(AppId app, model::GpuModelId gpu_model, int profile, int percent) {
    return view.Isolated(app, gpu_model, profile, percent);
  }
  double Lost(AppId victim, AppId aggressor) const { return view.Lost(victim, aggressor); }

  // The throughput the score aims at: the SLO, raised by the headroom option.
  double Target(double slo) const { return slo * (1 + options.slo_headroom); }

  bool Predictable(const Workload& w) {
    return w.gpu.count == 1 && w.gpu.mig_profile.empty() && w.slo_qps > 0 && AppOf(w.app) >= 0;
  }

  // The best MPS share for x on an existing partition (Best); `explain` (may be null) receives
  // every option weighed. An occupied partition whose ceiling is at most `floor` (the node's
  // best score so far; −1: none) is not scored (score −1): it could only score strictly below.
  Best ScorePartition(const Workload& x, AppId xa, NodeIndex node, model::PartitionIndex p,
                      const ClusterState& c, std::vector<PartitionOption>* explain, double floor);

  // [xa + 1][partition index]: one table per application scored (slot 0: an unknown one), so a
  // decision reads its application's entries in partition order.
  std::vector<std::vector<Terms>> terms;
  std::optional<uint64_t> terms_generation;
  // Sizes xa's per-partition table and the per-configuration rows for `c` and drops them all
  // when the predictor's generation moved: once per node scored, so TermsOf and IsoRowOf only
  // look up.
  void PrepareTables(const ClusterState& c, AppId xa);
  Terms& TermsOf(AppId xa, model::PartitionIndex p, const ClusterState& c) {
    Terms& t = terms[static_cast<size_t>(xa + 1)][p];
    if (t.app == xa && t.partition_version == c.partition(p).version) return t;
    return FillTerms(t, xa, p, c);
  }
  Terms& FillTerms(Terms& t, AppId xa, model::PartitionIndex p, const ClusterState& c);

  std::vector<IsoRow> iso_rows;  // [ConfigSlot], then one row never kept
  const std::vector<double>& IsoRowOf(AppId xa, model::GpuModelId gpu_model, int profile);
  std::vector<AloneRow> alone_rows;
  const AloneRow& AloneRowOf(AppId xa, double target, model::GpuModelId gpu_model, int profile);

  static MemberScore Breakdown(WorkloadId id, const std::string& app, double slo, double iso,
                               double lost);

  Alone BestAlone(const Workload& x, model::GpuModelId gpu_model, int profile);
  AloneMemo alone_memo;
  Alone BestAloneMemo(const Workload& x, model::GpuModelId gpu_model, int profile);
  // The best of BestAloneMemo over the whole GPU (when `whole`) and every profile a layout
  // holds: what reshaping an idle GPU of `gpu_model` offers x.
  Alone BestReshape(const Workload& x, model::GpuModelId gpu_model, bool whole);

  // Predictive::ScoreCeiling.
  double Ceiling(const Workload& x, NodeIndex node, const ClusterState& c);
  NodeRoomsCache rooms;
  // The most x scores on an idle GPU of `gpu_model`: alone on any partition or reshape.
  double IdleCeiling(const Workload& x, AppId xa, model::GpuModelId gpu_model);

  // Reshape GPU g to MIG off (profile −1) or to the layout Layouts() names for `profile`.
  static ReshapeTo ReshapeOf(GpuIndex g, int profile, const ClusterState& c);
  // The node's best offer (and, for Explain, every option). The hot loop keeps the best as
  // plain numbers and builds one Candidate at the end.
  std::optional<Candidate> Offer(const Workload& x, NodeIndex node, const ClusterState& c,
                                 std::vector<PartitionOption>* explain);
};

Best Predictive::Impl::ScorePartition(const Workload& x, AppId xa, NodeIndex node,
                                      model::PartitionIndex p, const ClusterState& c,
                                      std::vector<PartitionOption>* explain, double floor) {
  const model::Partition& part = c.partition(p);
  // Most partitions of a busy cluster have no room: say so before any prediction is read.
  const std::vector<int>& pcts = options.mps_percents;
  const size_t first_fit = static_cast<size_t>(
      std::find_if(pcts.begin(), pcts.end(),
                   [&](int pct) { return ShareFits(part, pct, x.gpu.memory_mib); }) -
      pcts.begin());
  if (first_fit == pcts.size()) return {};
  const model::Gpu& gpu = c.gpu(part.gpu);
  const double x_target = Target(x.slo_qps);
  Best best;
  if (!explain && part.empty()) {
    // Nobody on the partition scores or slows x: x's score alone (AloneRowOf) times the
    // utilisation factor, the same numbers as the general path below.
    const double util = view.CachedUtil(p, c);
    const std::vector<double>& inner = AloneRowOf(xa, x_target, gpu.model, part.profile).inner;
    for (size_t i = first_fit; i < pcts.size(); ++i) {
      if (std::isnan(inner[i]) || (i > first_fit && !ShareFits(part, pcts[i], x.gpu.memory_mib))) {
        continue;
      }
      const double score = SetSum::Scaled(util, inner[i]);
      if (score > best.score) best = Best{score, pcts[i], part.memory_mib * pcts[i] / 100};
    }
    return best;
  }
  // Everything but x's own isolated rate is the same for every share x could get.
  Terms& t = TermsOf(xa, p, c);
  const SetSum& others = t.others;
  const double x_lost = t.x_lost;
  const std::optional<uint64_t> telemetry = view.utilization_version();
  if (!t.util_valid || t.util_has_telemetry != telemetry.has_value() ||
      (telemetry && t.util_telemetry != *telemetry)) {
    t.util = view.CachedUtil(p, c);
    t.util_has_telemetry = telemetry.has_value();
    t.util_telemetry = telemetry.value_or(0);
    t.util_valid = true;
  }
  const double util = t.util;
  if (!explain && floor >= 0 && others.WithXAtMost(util) <= floor) return {};
  const std::vector<double>& isos = IsoRowOf(xa, gpu.model, part.profile);
  for (size_t i = first_fit; i < pcts.size(); ++i) {
    const int pct = pcts[i];
    if (i > first_fit && !ShareFits(part, pct, x.gpu.memory_mib)) continue;
    const int32_t milli = pct * 10;
    const int64_t memory = part.memory_mib * pct / 100;
    const double iso = isos[i];
    if (std::isnan(iso)) continue;
    SetSum sum = others;
    const double expected = std::max(0.0, iso * (1 - x_lost));
    sum.Add(x_target, expected);
    const SetScore s = sum.Finish(util);
    if (s.score > best.score) best = Best{s.score, pct, memory};
    if (explain) {
      PartitionOption o;
      o.node = node;
      o.gpu = part.gpu;
      o.partition = part.uuid;
      o.mps_percent = pct;
      o.util = util;
      o.set = s;
      o.members.push_back(Breakdown(x.id, x.app, Target(x.slo_qps), iso, x_lost));
      for (const Member& y : view.Members(p, c)) {
        const model::PlacedWorkload* pw = c.Find(y.id);
        o.members.push_back(Breakdown(y.id, pw->workload.app, Target(y.slo), y.isolated,
                                      y.lost_base + Lost(y.app, xa)));
      }
      o.placement = {x.id, node, {{p, milli, memory}}};
      explain->push_back(std::move(o));
    }
  }
  return best;
}

void Predictive::Impl::PrepareTables(const ClusterState& c, AppId xa) {
  const uint64_t generation = view.predictor().generation();
  if (terms_generation != generation) {
    for (std::vector<Terms>& table : terms) table.assign(table.size(), Terms{});
    iso_rows.assign(iso_rows.size(), IsoRow{});
    alone_rows.assign(alone_rows.size(), AloneRow{});
    terms_generation = generation;
  }
  const size_t slot = static_cast<size_t>(xa + 1);
  if (terms.size() <= slot) terms.resize(slot + 1);
  const size_t partitions = static_cast<size_t>(c.gpu_count()) * model::kMaxPartitions;
  if (terms[slot].size() < partitions) terms[slot].resize(partitions);
  if (iso_rows.empty()) iso_rows.resize(model::AllGpuModels().size() * kProfileSlots + 1);
  if (alone_rows.empty()) alone_rows.resize(iso_rows.size());
}

Terms& Predictive::Impl::FillTerms(Terms& t, AppId xa, model::PartitionIndex p,
                                   const ClusterState& c) {
  t.app = xa;
  t.others = {};
  t.x_lost = 0;
  t.util_valid = false;
  for (const Member& y : view.Members(p, c)) {
    t.x_lost += Lost(xa, y.app);
    if (y.slo > 0 && !std::isnan(y.isolated)) {
      t.others.Add(Target(y.slo), std::max(0.0, y.isolated * (1 - y.lost_base - Lost(y.app, xa))));
    }
  }
  t.partition_version = c.partition(p).version;
  return t;
}

const std::vector<double>& Predictive::Impl::IsoRowOf(AppId xa, model::GpuModelId gpu_model,
                                                      int profile) {
  const int slot = ConfigSlot(gpu_model, profile);
  IsoRow& r = slot >= 0 ? iso_rows[static_cast<size_t>(slot)] : iso_rows.back();
  if (slot >= 0 && r.app == xa && r.iso.size() == options.mps_percents.size()) return r.iso;
  r.app = xa;
  r.iso.clear();
  for (int pct : options.mps_percents) r.iso.push_back(Isolated(xa, gpu_model, profile, pct));
  return r.iso;
}

const AloneRow& Predictive::Impl::AloneRowOf(AppId xa, double target, model::GpuModelId gpu_model,
                                             int profile) {
  const std::vector<double>& isos = IsoRowOf(xa, gpu_model, profile);
  const int slot = ConfigSlot(gpu_model, profile);
  AloneRow& r = slot >= 0 ? alone_rows[static_cast<size_t>(slot)] : alone_rows.back();
  if (slot >= 0 && r.app == xa && r.target == target && r.inner.size() == isos.size()) return r;
  r.app = xa;
  r.target = target;
  r.inner.clear();
  r.best = -1;
  for (double iso : isos) {
    SetSum sum;
    sum.Add(target, std::max(0.0, iso * (1 - 0.0)));
    r.inner.push_back(std::isnan(iso) ? iso : sum.Inner());
    if (!std::isnan(iso)) r.best = std::max(r.best, r.inner.back());
  }
  return r;
}

MemberScore Predictive::Impl::Breakdown(WorkloadId id, const std::string& app, double slo,
                                        double iso, double lost) {
  MemberScore m;
  m.workload = id;
  m.app = app;
  m.slo = slo;
  m.isolated = iso;
  m.interference = lost;
  m.expected = std::isnan(iso) ? iso : std::max(0.0, iso * (1 - lost));
  if (slo > 0 && !std::isnan(iso)) {
    m.err = Err(slo, m.expected);
    m.score1 = Score1(m.err);
    m.score2 = Score2(m.err);
    m.negative = m.expected < slo;
  }
  return m;
}

Alone Predictive::Impl::BestAloneMemo(const Workload& x, model::GpuModelId gpu_model, int profile) {
  AloneMemo& m = alone_memo;
  const uint64_t generation = view.predictor().generation();
  // BestAlone reads x only through its application's handle, its SLO and its memory.
  const AppId xa = AppOf(x.app);
  if (!m.valid || m.app != xa || m.slo != x.slo_qps || m.memory_mib != x.gpu.memory_mib ||
      m.generation != generation) {
    m.app = xa;
    m.slo = x.slo_qps;
    m.memory_mib = x.gpu.memory_mib;
    m.generation = generation;
    m.valid = true;
    m.by_config.assign(model::AllGpuModels().size() * kProfileSlots, std::nullopt);
    m.by_model.assign(model::AllGpuModels().size() * 2, std::nullopt);
    m.idle_ceiling.assign(model::AllGpuModels().size(), std::nullopt);
  }
  const int slot = ConfigSlot(gpu_model, profile);
  if (slot < 0) return BestAlone(x, gpu_model, profile);
  std::optional<Alone>& kept = m.by_config[static_cast<size_t>(slot)];
  if (!kept) kept = BestAlone(x, gpu_model, profile);
  return *kept;
}

Alone Predictive::Impl::BestReshape(const Workload& x, model::GpuModelId gpu_model, bool whole) {
  std::optional<Alone>* kept = nullptr;
  if (gpu_model >= 0 && static_cast<size_t>(gpu_model) < model::AllGpuModels().size()) {
    BestAloneMemo(x, gpu_model, -1);  // validates the memo for x
    kept = &alone_memo.by_model[static_cast<size_t>(gpu_model) * 2 + (whole ? 1 : 0)];
    if (*kept) return **kept;
  }
  Alone alone;
  if (whole) alone = BestAloneMemo(x, gpu_model, -1);
  const auto& choices = PredictionView::Layouts()[gpu_model];
  for (int prof = 0; prof < static_cast<int>(choices.size()); ++prof) {
    if (!choices[prof]) continue;
    const Alone a = BestAloneMemo(x, gpu_model, prof);
    if (a.score > alone.score) alone = a;
  }
  if (kept) *kept = alone;
  return alone;
}

Alone Predictive::Impl::BestAlone(const Workload& x, model::GpuModelId gpu_model, int profile) {
  const AppId xa = AppOf(x.app);
  const model::GpuModel& m = model::GetGpuModel(gpu_model);
  const int64_t partition_memory = profile < 0 ? m.memory_mib : m.mig_profiles[profile].memory_mib;
  Alone best;
  for (int pct : options.mps_percents) {
    if (x.gpu.memory_mib > partition_memory * pct / 100) continue;
    const double iso = Isolated(xa, gpu_model, profile, pct);
    if (std::isnan(iso)) continue;
    SetSum sum;
    sum.Add(Target(x.slo_qps), iso);
    const double s = sum.Finish(0).score;
    if (s > best.score) best = {s, profile, pct};
  }
  return best;
}

std::optional<Candidate> Predictive::Impl::Offer(const Workload& x, NodeIndex node,
                                                 const ClusterState& c,
                                                 std::vector<PartitionOption>* explain) {
  const model::Node& n = c.node(node);
  view.BeginNode();
  const AppId xa = AppOf(x.app);
  PrepareTables(c, xa);
  struct Pick {
    double score = -1;
    model::PartitionIndex partition = 0;
    int percent = 0;
    int64_t memory_mib = 0;
    // Reshape GPU reshape_gpu first (−1: no), to MIG off (reshape_profile −1) or to the
    // layout Layouts() names for reshape_profile; built into a ReshapeTo once, at the end.
    GpuIndex reshape_gpu = -1;
    int reshape_profile = -1;
  } best;
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available || !x.gpu.AllowsModel(gpu.model)) continue;
    double current_best = -1;
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const model::PartitionIndex p = ClusterState::PartitionOf(g, slot);
      const Best b = ScorePartition(x, xa, node, p, c, explain, best.score);
      current_best = std::max(current_best, b.score);
      if (b.score > best.score) best = {b.score, p, b.percent, b.memory_mib, -1, -1};
    }
    if (!options.reshape || !gpu.idle()) continue;
    const model::GpuModel& m = model::GetGpuModel(gpu.model);
    if (!m.mig_capable() || !c.MayReshapeTo(g, true)) continue;
    // Reshaping an empty GPU: the layout whose best partition beats what the GPU has now.
    const Alone alone = BestReshape(x, gpu.model, gpu.mig && c.MayReshapeTo(g, false));
    if (alone.score < 0 || alone.score <= current_best) continue;
    const auto& choices = PredictionView::Layouts()[gpu.model];
    Pick pick;
    pick.score = alone.score;
    pick.percent = alone.percent;
    pick.reshape_gpu = g;
    pick.reshape_profile = alone.profile;
    if (alone.profile < 0) {
      pick.partition = ClusterState::PartitionOf(g, 0);
      pick.memory_mib = m.memory_mib * alone.percent / 100;
    } else {
      pick.partition = ClusterState::PartitionOf(g, choices[alone.profile]->slot);
      pick.memory_mib = m.mig_profiles[alone.profile].memory_mib * alone.percent / 100;
    }
    if (explain) {
      PartitionOption o;
      o.node = node;
      o.gpu = g;
      o.partition = fmt::format(
          "{} (reshape: {})",
          alone.profile < 0 ? std::string(predict::kWholeGpu) : m.mig_profiles[alone.profile].name,
          alone.profile < 0 ? std::string("MIG off")
                            : model::LayoutToString(m, choices[alone.profile]->layout));
      o.mps_percent = alone.percent;
      o.members.push_back(Breakdown(x.id, x.app, Target(x.slo_qps),
                                    Isolated(AppOf(x.app), gpu.model, alone.profile, alone.percent),
                                    0));
      o.set = ScoreSet(o.members, 0);
      o.reshape = ReshapeOf(g, alone.profile, c);
      o.placement = {x.id, node, {{pick.partition, pick.percent * 10, pick.memory_mib}}};
      explain->push_back(std::move(o));
    }
    if (pick.score > best.score) best = pick;
  }
  if (best.score < 0) return std::nullopt;
  std::optional<ReshapeTo> reshape;
  if (best.reshape_gpu >= 0) reshape = ReshapeOf(best.reshape_gpu, best.reshape_profile, c);
  return Candidate{best.score,
                   {x.id, node, {{best.partition, best.percent * 10, best.memory_mib}}},
                   std::move(reshape),
                   {}};
}

// A bound on each of the node's partitions with room, over the node: 100 · (1 − util) on an
// occupied one (its set score is that factor times a mean of terms ≤ 1: in floating point ≤ 1
// + a few ulps, hence the margin), x's best score alone on an empty one (the same numbers its
// offer is made of), and on an idle GPU x's best alone on any partition its model can have.
// The node's side is kept per node (NodeRooms); x's side per workload and configuration
// (AloneRowOf, IdleCeiling), so a node the core skips costs a few loads.
double Predictive::Impl::Ceiling(const Workload& x, NodeIndex node, const ClusterState& c) {
  const NodeRooms& r = rooms.Of(node, c, view, options.mps_percents);
  const AppId xa = AppOf(x.app);
  PrepareTables(c, xa);
  double ceiling = -1;
  for (const NodeRooms::Idle& idle : r.idle) {
    if (x.gpu.AllowsModel(idle.model)) ceiling = std::max(ceiling, IdleCeiling(x, xa, idle.model));
  }
  const double x_target = Target(x.slo_qps);
  for (const NodeRooms::Empty& e : r.empties) {
    if (x.gpu.memory_mib > e.memory_mib || !x.gpu.AllowsModel(e.model)) continue;
    const double best = AloneRowOf(xa, x_target, e.model, e.profile).best;
    ceiling = std::max(ceiling, SetSum::Scaled(e.util, best) * kCeilingMargin);
  }
  // On an occupied partition the set score's mean of terms is at most (Σ members' terms + 1) /
  // (members + 1), x's own term being ≤ 1: read from the partition's kept terms while 100 ·
  // (1 − util), the bound without them, can still beat the best so far.
  for (const NodeRooms::Occupied& o : r.occupied) {  // lowest util first
    if (SetSum::Scaled(o.util, 1) * kCeilingMargin <= ceiling) break;
    if (x.gpu.memory_mib > o.memory_mib || !x.gpu.AllowsModel(o.model)) continue;
    ceiling = std::max(ceiling, TermsOf(xa, o.partition, c).others.WithXAtMost(o.util));
  }
  return ceiling;
}

double Predictive::Impl::IdleCeiling(const Workload& x, AppId xa, model::GpuModelId gpu_model) {
  BestAloneMemo(x, gpu_model, -1);  // validates the memo for x
  std::optional<double>& kept = alone_memo.idle_ceiling[static_cast<size_t>(gpu_model)];
  if (kept) return *kept;
  // Its partitions as they are, or reshaped: x alone on the whole GPU or on any profile, at
  // the utilisation factor's best (1). AloneRow and BestAlone read the same predictions; both
  // are taken, so the bound holds whichever the offer comes from.
  const double x_target = Target(x.slo_qps);
  double inner = -1, alone = -1;
  const int profiles = static_cast<int>(model::GetGpuModel(gpu_model).mig_profiles.size());
  for (int profile = -1; profile < profiles; ++profile) {
    inner = std::max(inner, AloneRowOf(xa, x_target, gpu_model, profile).best);
    alone = std::max(alone, BestAloneMemo(x, gpu_model, profile).score);
  }
  kept = std::max(SetSum::Scaled(0, inner), alone) * kCeilingMargin;
  return *kept;
}

ReshapeTo Predictive::Impl::ReshapeOf(GpuIndex g, int profile, const ClusterState& c) {
  if (profile < 0) return ReshapeTo{g, std::nullopt};
  return ReshapeTo{g, PredictionView::Layouts()[c.gpu(g).model][profile]->layout};
}

Predictive::Predictive(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
                       PredictiveOptions options)
    : impl_(std::make_unique<Impl>(predictor, telemetry, std::move(options))) {}

Predictive::~Predictive() = default;

Feasibility Predictive::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return PredictingFilter(w, node, c, impl_->Predictable(w), impl_->options.mps_percents,
                          impl_->options.reshape);
}

std::optional<Candidate> Predictive::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  if (!impl_->Predictable(w)) return impl_->view.FirstFitOffer(w, node, c);
  return impl_->Offer(w, node, c, nullptr);
}

std::optional<double> Predictive::ScoreCeiling(const Workload& w, NodeIndex node,
                                               const ClusterState& c) {
  if (!impl_->Predictable(w)) return std::nullopt;
  return impl_->Ceiling(w, node, c);
}

std::vector<PartitionOption> Predictive::Options(const Workload& w, NodeIndex node,
                                                 const ClusterState& c) {
  std::vector<PartitionOption> out;
  if (impl_->Predictable(w)) impl_->Offer(w, node, c, &out);
  std::stable_sort(out.begin(), out.end(), [](const PartitionOption& a, const PartitionOption& b) {
    return a.set.score > b.set.score;
  });
  return out;
}

std::string Predictive::Explain(const Workload& w, const ClusterState& c) {
  if (!impl_->Predictable(w)) {
    std::string why = w.gpu.count != 1             ? "it asks for more than one GPU"
                      : !w.gpu.mig_profile.empty() ? "it asks for a named MIG profile"
                      : w.slo_qps <= 0             ? "it has no SLO"
                                                   : "the predictor does not know its application";
    return fmt::format("predictive: workload {} ({}) is placed first-fit because {}\n", w.id,
                       w.name, why) +
           Policy::Explain(w, c);
  }
  std::vector<std::string> filtered;
  std::vector<PartitionOption> all = AllOptions(
      *this, w, c, [&](NodeIndex n) { return Options(w, n, c); }, filtered);
  std::stable_sort(all.begin(), all.end(), [](const PartitionOption& a, const PartitionOption& b) {
    return a.set.score > b.set.score;
  });
  std::string out = fmt::format(
      "predictive: workload {} ({}), app {}, SLO {:.2f} QPS, GPU memory {} MiB\n"
      "{} candidate partition options, best first (x = the workload being placed):\n",
      w.id, w.name, w.app, w.slo_qps, w.gpu.memory_mib, all.size());
  for (const PartitionOption& o : all) {
    out += fmt::format(
        "\n  score {:6.2f}  node {}  gpu {}  partition {}  MPS {}%  util {:.2f}  "
        "k {:.2f} ({} neg, {} pos)\n",
        o.set.score, c.node(o.node).name, c.gpu(o.gpu).index, o.partition, o.mps_percent, o.util,
        o.set.k, o.set.negative, o.set.positive);
    out +=
        fmt::format("    {:<3} {:<28} {:>9} {:>9} {:>8} {:>9} {:>7} {:>7} {:>7}\n", "", "workload",
                    "SLO", "isolated", "interf", "expected", "err", "score1", "score2");
    for (size_t i = 0; i < o.members.size(); ++i) {
      const MemberScore& m = o.members[i];
      if (std::isnan(m.isolated) || m.slo <= 0) {
        out += fmt::format("    {:<3} {:<28} (no prediction: counts only as an aggressor)\n",
                           i == 0 ? "x" : "", fmt::format("{} {}", m.workload, m.app));
        continue;
      }
      out += fmt::format("    {:<3} {:<28} {:9.2f} {:9.2f} {:8.3f} {:9.2f} {:7.3f} {:>7} {:>7}\n",
                         i == 0 ? "x" : "", fmt::format("{} {}", m.workload, m.app), m.slo,
                         m.isolated, m.interference, m.expected, m.err,
                         m.negative ? fmt::format("{:.3f}", m.score1) : "-",
                         m.negative ? "-" : fmt::format("{:.3f}", m.score2));
    }
  }
  if (!filtered.empty()) {
    out += "\nfiltered nodes:\n";
    for (const std::string& f : filtered) out += f + "\n";
  }
  return out;
}

}  // namespace tessera::policy
