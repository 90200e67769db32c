#include "policy/predictive.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "model/mig.h"
#include "policy/fit.h"
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

namespace {

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
  SetScore Finish(double util) const {
    SetScore s{0, 0, neg, pos};
    const int n = neg + pos;
    if (n == 0) return s;
    s.k = static_cast<double>(neg) / n;
    double inner = 0;
    if (neg > 0) inner += s.k * sum1 / neg;
    if (pos > 0) inner += (1 - s.k) * sum2 / pos;
    s.score = 100.0 * (1.0 - util) * inner;
    return s;
  }
};

}  // namespace

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

  // The best MPS share for x on an existing partition: its score, share and memory; or nullopt
  // when no share fits. `explain` (may be null) receives every option weighed.
  struct Best {
    double score = -1;
    int percent = 0;
    int64_t memory_mib = 0;
  };
  std::optional<Best> ScorePartition(const Workload& x, NodeIndex node, model::PartitionIndex p,
                                     const ClusterState& c, std::vector<PartitionOption>* explain);

  static MemberScore Breakdown(WorkloadId id, const std::string& app, double slo, double iso,
                               double lost);

  // x alone on an instance of `profile` (-1: MIG off) of an empty GPU of `gpu_model`.
  struct Alone {
    double score = -1;
    int profile = -1;
    int percent = 100;
  };
  Alone BestAlone(const Workload& x, model::GpuModelId gpu_model, int profile);

  // The node's best offer (and, for Explain, every option). The hot loop keeps the best as
  // plain numbers and builds one Candidate at the end.
  std::optional<Candidate> Offer(const Workload& x, NodeIndex node, const ClusterState& c,
                                 std::vector<PartitionOption>* explain);
};

std::optional<Predictive::Impl::Best> Predictive::Impl::ScorePartition(
    const Workload& x, NodeIndex node, model::PartitionIndex p, const ClusterState& c,
    std::vector<PartitionOption>* explain) {
  const model::Partition& part = c.partition(p);
  // Most partitions of a busy cluster have no room: say so before any prediction is read.
  if (std::none_of(options.mps_percents.begin(), options.mps_percents.end(),
                   [&](int pct) { return ShareFits(part, pct, x.gpu.memory_mib); })) {
    return std::nullopt;
  }
  const model::Gpu& gpu = c.gpu(part.gpu);
  const AppId xa = AppOf(x.app);
  const std::vector<Member>& members = view.Members(p, c);
  // Everything but x's own isolated rate is the same for every share x could get.
  SetSum others;
  double x_lost = 0;
  for (const Member& y : members) {
    x_lost += Lost(xa, y.app);
    if (y.slo > 0 && !std::isnan(y.isolated)) {
      others.Add(Target(y.slo), std::max(0.0, y.isolated * (1 - y.lost_base - Lost(y.app, xa))));
    }
  }
  const double util = view.CachedUtil(p, c);
  std::optional<Best> best;
  for (int pct : options.mps_percents) {
    if (!ShareFits(part, pct, x.gpu.memory_mib)) continue;
    const int32_t milli = pct * 10;
    const int64_t memory = part.memory_mib * pct / 100;
    const double iso = Isolated(xa, gpu.model, part.profile, pct);
    if (std::isnan(iso)) continue;
    SetSum sum = others;
    const double expected = std::max(0.0, iso * (1 - x_lost));
    sum.Add(Target(x.slo_qps), expected);
    const SetScore s = sum.Finish(util);
    if (!best || s.score > best->score) best = Best{s.score, pct, memory};
    if (explain) {
      PartitionOption o;
      o.node = node;
      o.gpu = part.gpu;
      o.partition = part.uuid;
      o.mps_percent = pct;
      o.util = util;
      o.set = s;
      o.members.push_back(Breakdown(x.id, x.app, Target(x.slo_qps), iso, x_lost));
      for (const Member& y : members) {
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

Predictive::Impl::Alone Predictive::Impl::BestAlone(const Workload& x, model::GpuModelId gpu_model,
                                                    int profile) {
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
  struct Pick {
    double score = -1;
    model::PartitionIndex partition = 0;
    int percent = 0;
    int64_t memory_mib = 0;
    std::optional<ReshapeTo> reshape;
  } best;
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available || !x.gpu.AllowsModel(gpu.model)) continue;
    double current_best = -1;
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const model::PartitionIndex p = ClusterState::PartitionOf(g, slot);
      if (std::optional<Best> b = ScorePartition(x, node, p, c, explain)) {
        current_best = std::max(current_best, b->score);
        if (b->score > best.score) best = {b->score, p, b->percent, b->memory_mib, std::nullopt};
      }
    }
    const model::GpuModel& m = model::GetGpuModel(gpu.model);
    if (!options.reshape || !m.mig_capable() || !gpu.idle() || !c.MayReshapeTo(g, true)) {
      continue;
    }
    // Reshaping an empty GPU: the layout whose best partition beats what the GPU has now.
    Alone alone;
    if (gpu.mig && c.MayReshapeTo(g, false)) alone = BestAlone(x, gpu.model, -1);
    const auto& choices = PredictionView::Layouts()[gpu.model];
    for (int prof = 0; prof < static_cast<int>(choices.size()); ++prof) {
      if (!choices[prof]) continue;
      const Alone a = BestAlone(x, gpu.model, prof);
      if (a.score > alone.score) alone = a;
    }
    if (alone.score < 0 || alone.score <= current_best) continue;
    Pick pick;
    pick.score = alone.score;
    pick.percent = alone.percent;
    if (alone.profile < 0) {
      pick.reshape = ReshapeTo{g, std::nullopt};
      pick.partition = ClusterState::PartitionOf(g, 0);
      pick.memory_mib = m.memory_mib * alone.percent / 100;
    } else {
      const PredictionView::LayoutChoice& lc = *choices[alone.profile];
      pick.reshape = ReshapeTo{g, lc.layout};
      pick.partition = ClusterState::PartitionOf(g, lc.slot);
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
      o.reshape = pick.reshape;
      o.placement = {x.id, node, {{pick.partition, pick.percent * 10, pick.memory_mib}}};
      explain->push_back(std::move(o));
    }
    if (pick.score > best.score) best = std::move(pick);
  }
  if (best.score < 0) return std::nullopt;
  return Candidate{best.score,
                   {x.id, node, {{best.partition, best.percent * 10, best.memory_mib}}},
                   std::move(best.reshape),
                   {}};
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
