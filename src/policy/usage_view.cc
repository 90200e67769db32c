#include "policy/usage_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "policy/fit.h"

namespace tessera::policy {
namespace {

bool Flat(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [&v](double x) { return x == v.front(); });
}

double NewestTime(const telemetry::Telemetry* t, const model::Gpu& gpu) {
  const telemetry::Series s = GpuMemorySeries(t, gpu, 0);
  return s.empty() ? -std::numeric_limits<double>::infinity() : s.back().t;
}

}  // namespace

bool SharesByMemory(const Workload& w) {
  return w.gpu.count == 1 && w.gpu.mig_profile.empty() &&
         (w.gpu.memory_mib > 0 || w.gpu.milli < 1000);
}

bool MemoryShareable(const Workload& w, GpuIndex g, const ClusterState& c) {
  const model::Gpu& gpu = c.gpu(g);
  if (!gpu.available || gpu.mig || !w.gpu.AllowsModel(gpu.model)) return false;
  for (const model::Client& cl : c.partition(ClusterState::PartitionOf(g, 0)).clients) {
    if (!cl.best_effort) return false;
  }
  return true;
}

int64_t RequestedMib(GpuIndex g, const ClusterState& c) {
  int64_t sum = 0;
  for (const model::Client& cl : c.partition(ClusterState::PartitionOf(g, 0)).clients) {
    if (const model::PlacedWorkload* pw = c.Find(cl.workload)) sum += pw->workload.gpu.memory_mib;
  }
  return sum;
}

int64_t CapacityMib(GpuIndex g, const ClusterState& c) {
  return c.partition(ClusterState::PartitionOf(g, 0)).memory_mib;
}

Placement MemorySharePlacement(const Workload& w, GpuIndex g, int64_t reserve_mib,
                               const ClusterState& c) {
  model::Slice s{ClusterState::PartitionOf(g, 0), w.gpu.milli, reserve_mib};
  s.best_effort = true;
  return Placement{w.id, c.gpu(g).node, {s}};
}

Feasibility MemoryShareNodeFits(const Workload& w, NodeIndex n, const ClusterState& c) {
  if (!SharesByMemory(w)) return NodeFits(w, n, c);
  const model::Node& node = c.node(n);
  if (!node.ready) return Feasibility::No("node not ready");
  if (w.cpu_milli > node.free_cpu_milli()) return Feasibility::No("not enough CPU");
  if (w.memory_mib > node.free_memory_mib()) return Feasibility::No("not enough memory");
  for (GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    if (MemoryShareable(w, g, c)) return Feasibility::Yes();
  }
  return Feasibility::No(
      "no GPU of an allowed model shared by memory alone (MIG off, no reserved compute)");
}

std::string_view ToString(UsageCheck check) {
  switch (check) {
    case UsageCheck::kAgnostic:
      return "resource-agnostic fit";
    case UsageCheck::kCbp:
      return "CBP";
    case UsageCheck::kPeakPrediction:
      return "peak prediction";
    case UsageCheck::kNone:
      break;
  }
  return "no check";
}

std::optional<Candidate> MemoryShareOffer(
    const Workload& w, NodeIndex node, const ClusterState& c, int64_t reserve_mib,
    const std::function<std::optional<double>(GpuIndex)>& score) {
  if (!SharesByMemory(w)) {
    std::optional<Placement> p = FirstFitPlacement(w, node, c);
    if (!p) return std::nullopt;
    return Candidate{100, std::move(*p), std::nullopt};
  }
  const model::Node& n = c.node(node);
  std::optional<Candidate> best;
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    if (!MemoryShareable(w, g, c)) continue;
    const std::optional<double> s = score(g);
    if (s && (!best || *s > best->score)) {
      best = Candidate{*s, MemorySharePlacement(w, g, reserve_mib, c), std::nullopt};
    }
  }
  return best;
}

std::string ExplainMemoryShare(Policy& p, const Workload& w, const ClusterState& c,
                               const std::function<std::string(GpuIndex)>& line) {
  if (!SharesByMemory(w)) return p.Policy::Explain(w, c);
  std::string out = fmt::format("policy {} for workload {} ({}): {} MiB of GPU memory requested\n",
                                p.name(), w.id, w.name, w.gpu.memory_mib);
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    const model::Node& node = c.node(n);
    const Feasibility f = p.Filter(w, n, c);
    if (!f.ok()) {
      out += fmt::format("  {:<24} filtered: {}\n", node.name, f.reason);
      continue;
    }
    for (GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
      if (MemoryShareable(w, g, c)) {
        out += fmt::format("  {:<24} {} {}\n", node.name, c.gpu(g).uuid, line(g));
      }
    }
  }
  return out;
}

void OrderByRequestedMemory(std::vector<const Workload*>& pending) {
  std::stable_sort(pending.begin(), pending.end(), [](const Workload* a, const Workload* b) {
    if (a->gpu.memory_mib != b->gpu.memory_mib) return a->gpu.memory_mib > b->gpu.memory_mib;
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
  });
}

double MemoryScore(double mib) {
  static const double largest = [] {
    int64_t m = 1;
    for (const model::GpuModel& g : model::AllGpuModels()) m = std::max(m, g.memory_mib);
    return static_cast<double>(m);
  }();
  return std::clamp(100.0 * mib / largest, 0.0, 100.0);
}

std::vector<double> Values(const telemetry::Series& s) {
  std::vector<double> v;
  v.reserve(s.size());
  for (const telemetry::Sample& x : s) v.push_back(x.value);
  return v;
}

std::optional<double> VariationOf(std::span<const double> v) {
  if (v.empty()) return std::nullopt;
  if (Flat(v)) return 0.0;
  Expected<double> cv = predict::CoefficientOfVariation(v);
  if (!cv) return std::nullopt;
  return *cv;
}

std::optional<double> TailCorrelation(std::span<const double> a, std::span<const double> b,
                                      int min_samples) {
  const size_t n = std::min(a.size(), b.size());
  if (n < static_cast<size_t>(std::max(min_samples, 2))) return std::nullopt;
  a = a.last(n);
  b = b.last(n);
  if (Flat(a) || Flat(b)) return 0.0;
  Expected<double> r = predict::Correlation(a, b);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<double> AutocorrelationOf(std::span<const double> v, int lag) {
  if (v.empty() || Flat(v)) return std::nullopt;
  Expected<double> r = predict::Autocorrelation(v, lag);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<RecurringPeak> RecurringPeakOf(std::span<const double> v) {
  const size_t n = v.size();
  if (n < 4 || Flat(v)) return std::nullopt;
  double mean = 0;
  for (double y : v) mean += y;
  mean /= static_cast<double>(n);
  double den = 0;
  for (double y : v) den += (y - mean) * (y - mean);
  // r_k for k = 1 … n/2 (eq. 1 in one pass per lag); the first lag where r ≤ 0 ends the peak's
  // own width, the best lag after it is the interval to the next peak.
  std::optional<RecurringPeak> best;
  bool fell = false;
  for (size_t k = 1; k <= n / 2; ++k) {
    double num = 0;
    for (size_t i = 0; i + k < n; ++i) num += (v[i] - mean) * (v[i + k] - mean);
    const double r = num / den;
    if (!fell) {
      fell = r <= 0;
      continue;
    }
    if (r > 0 && (!best || r > best->r)) best = RecurringPeak{static_cast<int>(k), r, 0};
  }
  if (!best) return std::nullopt;
  std::vector<double> last(v.end() - best->interval, v.end());
  const double top = *std::max_element(last.begin(), last.end());
  best->excess = top - *predict::Percentile(last, 50);
  return best;
}

std::optional<Ar1Forecast> ForecastAhead(std::span<const double> v, int steps) {
  Expected<predict::Ar1> fit = predict::FitAr1(v);
  if (!fit) return std::nullopt;
  Ar1Forecast f{*fit, v.back()};
  for (int i = 0; i < std::max(steps, 1); ++i) f.value = fit->Forecast(f.value);
  return f;
}

bool HoldsNothingNow(const Workload& w, const telemetry::Telemetry* t) {
  if (t == nullptr || w.name.empty()) return false;
  // The newest sample is all it needs; a short window keeps the read small.
  constexpr double kWindowS = 5;
  const std::optional<telemetry::Series> s = t->MemoryUsed(w.name, kWindowS);
  return s && !s->empty() && s->back().value <= 0;
}

telemetry::Series GpuMemorySeries(const telemetry::Telemetry* t, const model::Gpu& gpu,
                                  double window_s) {
  if (t == nullptr) return {};
  std::optional<telemetry::Series> s = t->MemoryUsed(gpu.uuid, window_s);
  return s ? std::move(*s) : telemetry::Series{};
}

void FreshPods::Observe(const ClusterState& c, const telemetry::Telemetry* t) {
  by_gpu_.resize(static_cast<size_t>(c.gpu_count()));
  node_version_.resize(static_cast<size_t>(c.node_count()), 0);
  constexpr double kBefore = -std::numeric_limits<double>::infinity();
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    if (node_version_[n] == c.node(n).version) continue;
    node_version_[n] = c.node(n).version;
    const model::Node& node = c.node(n);
    for (GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
      const model::Gpu& gpu = c.gpu(g);
      std::vector<std::pair<WorkloadId, double>> now;
      std::optional<double> newest;  // read once per GPU, only when a pod is new
      for (int slot = 0; slot < gpu.partition_count; ++slot) {
        for (const model::Client& cl : c.partition(ClusterState::PartitionOf(g, slot)).clients) {
          auto old = std::find_if(by_gpu_[g].begin(), by_gpu_[g].end(),
                                  [&cl](const auto& e) { return e.first == cl.workload; });
          if (old != by_gpu_[g].end()) {
            now.push_back(*old);
            continue;
          }
          if (!newest) newest = first_ ? kBefore : NewestTime(t, gpu);
          now.emplace_back(cl.workload, *newest);
        }
      }
      by_gpu_[g] = std::move(now);
    }
  }
  first_ = false;
}

bool FreshPods::Unseen(GpuIndex g, WorkloadId id, double newest_t, double settle_s) const {
  if (g < 0 || static_cast<size_t>(g) >= by_gpu_.size()) return true;
  for (const auto& [w, stamp] : by_gpu_[g]) {
    if (w == id) return newest_t <= stamp + settle_s;
  }
  return true;  // not observed yet: bound after the last look
}

void AppHistory::Observe(const ClusterState& c, const telemetry::Telemetry* t, double history_s) {
  if (t == nullptr) return;
  const std::optional<uint64_t> version = t->Version();
  if (seen_once_ && version && version == seen_version_) return;
  seen_once_ = true;
  seen_version_ = version;
  for (const auto& [id, pw] : c.placed()) {
    const Workload& w = pw.workload;
    if (w.app.empty() || !SharesByMemory(w)) continue;
    std::optional<telemetry::Series> memory = t->MemoryUsed(w.name, history_s);
    if (!memory || memory->empty()) continue;
    auto it = by_app_.find(w.app);
    if (it != by_app_.end() && it->second.from != id) {
      const telemetry::Series& kept = it->second.usage.memory;
      const auto mine = std::make_tuple(memory->size(), memory->back().t, id);
      if (mine < std::make_tuple(kept.size(), kept.back().t, it->second.from)) continue;
    }
    Kept k{id, {}};
    k.usage.memory = std::move(*memory);
    if (auto sm = t->SmActivitySeries(w.name, history_s)) k.usage.sm = std::move(*sm);
    if (auto bw = t->BandwidthSeries(w.name, history_s)) k.usage.bandwidth = std::move(*bw);
    by_app_[w.app] = std::move(k);
  }
}

const UsageHistory* AppHistory::Find(std::string_view app) const {
  auto it = by_app_.find(app);
  return it == by_app_.end() ? nullptr : &it->second.usage;
}

std::optional<double> AppHistory::MemoryPercentile(std::string_view app, double p) const {
  auto it = by_app_.find(app);
  if (it == by_app_.end()) return std::nullopt;
  const Kept& k = it->second;
  if (!k.percentile || k.percentile->first != p) {
    const Expected<double> v = predict::Percentile(Values(k.usage.memory), p);
    if (!v) return std::nullopt;
    k.percentile = std::make_pair(p, *v);
  }
  return k.percentile->second;
}

}  // namespace tessera::policy
