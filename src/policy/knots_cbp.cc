#include "policy/knots_cbp.h"

#include <fmt/core.h>

#include <algorithm>

#include "predict/forecast.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

std::vector<OptionInfo> KnotsCbpOptionList() {
  return {
      {"correlation_threshold", "0.5",
       "co-locate only below this correlation of memory, SM and bandwidth use (004: 0.5)"},
      {"percentile", "90", "pods are sized at this percentile of their memory use (004: 90)"},
      {"window_s", "5", "seconds of samples correlated and forecast (004: the past 5 s)"},
      {"history_s", "600", "seconds of an application's use kept to size its pods"},
      {"min_samples", "3", "fewest samples to size, correlate or forecast"},
  };
}

Expected<KnotsCbpOptions> ParseKnotsCbpOptions(std::string_view policy,
                                               const nlohmann::json& options) {
  KnotsCbpOptions o;
  for (const Expected<void>& read :
       {ReadOption(policy, options, "correlation_threshold", o.correlation_threshold),
        ReadOption(policy, options, "percentile", o.percentile),
        ReadOption(policy, options, "window_s", o.window_s),
        ReadOption(policy, options, "history_s", o.history_s),
        ReadOption(policy, options, "min_samples", o.min_samples)}) {
    if (!read) return std::unexpected(read.error());
  }
  for (const Expected<void>& check :
       {OptionWithin(policy, "correlation_threshold", o.correlation_threshold, -1, 1),
        OptionWithin(policy, "percentile", o.percentile, 0, 100),
        OptionWithin(policy, "window_s", o.window_s, 1, 86400),
        OptionWithin(policy, "history_s", o.history_s, o.window_s, 86400),
        OptionWithin(policy, "min_samples", o.min_samples, 3, 100000)}) {
    if (!check) return std::unexpected(check.error());
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakeKnotsCbp(const PolicyContext& context,
                                               const nlohmann::json& options) {
  auto o = ParseKnotsCbpOptions("knots-cbp", options);
  if (!o) return std::unexpected(o.error());
  return std::make_unique<KnotsCbp>(context.telemetry, *o);
}

KnotsCbp::KnotsCbp(const telemetry::Telemetry* telemetry, KnotsCbpOptions options)
    : telemetry_(telemetry), options_(options) {}

void KnotsCbp::Order(std::vector<const Workload*>& pending) const {
  OrderByRequestedMemory(pending);
}

Feasibility KnotsCbp::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return MemoryShareNodeFits(w, node, c);
}

void KnotsCbp::Observe(const ClusterState& c) {
  if (observed_version_ != c.version()) {
    fresh_.Observe(c, telemetry_);
    observed_version_ = c.version();
  }
  history_.Observe(c, telemetry_, options_.history_s);
}

CycleActions KnotsCbp::AfterCycle(const ClusterState& c) {
  Observe(c);
  return {};
}

double KnotsCbp::SizeOf(const Workload& w, std::string* how) const {
  const UsageHistory* h = w.app.empty() ? nullptr : history_.Find(w.app);
  if (h == nullptr || static_cast<int>(h->memory.size()) < options_.min_samples) {
    if (how) *how = fmt::format("size {} MiB (its request: no history)", w.gpu.memory_mib);
    return static_cast<double>(w.gpu.memory_mib);
  }
  const double size = *history_.MemoryPercentile(w.app, options_.percentile);
  if (how) {
    *how = fmt::format("size {:.0f} MiB (p{:g} of {} samples of {})", size, options_.percentile,
                       h->memory.size(), w.app);
  }
  return size;
}

double KnotsCbp::UnseenMib(GpuIndex g, double newest_t, const ClusterState& c) const {
  double sum = 0;
  for (const model::Client& cl : c.partition(ClusterState::PartitionOf(g, 0)).clients) {
    const model::PlacedWorkload* pw = c.Find(cl.workload);
    if (pw == nullptr) continue;
    if (fresh_.Unseen(g, cl.workload, newest_t, 0) || HoldsNothingNow(pw->workload, telemetry_)) {
      sum += SizeOf(pw->workload);
    }
  }
  return sum;
}

void KnotsCbp::Overrule(const Workload&, GpuIndex, const ClusterState&, Verdict&) {}
void KnotsCbp::Confirm(const Workload&, GpuIndex, const ClusterState&, Verdict&) {}

KnotsCbp::Verdict KnotsCbp::Judge(const Workload& w, GpuIndex g, const ClusterState& c,
                                  bool explain) {
  Observe(c);
  Verdict v{{"", explain}, g, Check::kNone, 0};
  const model::Gpu& gpu = c.gpu(g);
  const model::Partition& part = c.partition(ClusterState::PartitionOf(g, 0));
  const double capacity = static_cast<double>(part.memory_mib);
  const double size = SizeOf(w, explain ? &v.detail : nullptr);

  // Free memory: the newest reading, or the sizes of its pods without one.
  const telemetry::Series memory = GpuMemorySeries(telemetry_, gpu, options_.window_s);
  if (!memory.empty()) {
    const double unseen = UnseenMib(g, memory.back().t, c);
    v.free_mib = capacity - memory.back().value - unseen;
    v.Note("; free {:.0f} − {:.0f} used − {:.0f} not yet seen = {:.0f} MiB", capacity,
           memory.back().value, unseen, v.free_mib);
  } else {
    double sized = 0;
    for (const model::Client& cl : part.clients) {
      if (const model::PlacedWorkload* pw = c.Find(cl.workload)) sized += SizeOf(pw->workload);
    }
    v.free_mib = capacity - sized;
    v.Note("; no memory telemetry: free {:.0f} − {:.0f} sized = {:.0f} MiB", capacity, sized,
           v.free_mib);
  }

  // Correlation with what runs there, per metric, over the last window.
  bool correlated = false;
  if (!part.clients.empty()) {
    const UsageHistory* h = w.app.empty() ? nullptr : history_.Find(w.app);
    auto gpu_series = [&](auto read) {
      std::optional<telemetry::Series> s =
          telemetry_ ? (telemetry_->*read)(gpu.uuid, options_.window_s) : std::nullopt;
      return s ? Values(*s) : std::vector<double>{};
    };
    auto pod_series = [&](telemetry::Series UsageHistory::*member) {
      return h ? Values(telemetry::Tail(h->*member, options_.window_s)) : std::vector<double>{};
    };
    const struct {
      const char* name;
      std::vector<double> pod, gpu;
      bool required;
    } metrics[] = {
        {"memory", pod_series(&UsageHistory::memory), Values(memory), true},
        {"SM", pod_series(&UsageHistory::sm), gpu_series(&telemetry::Telemetry::SmActivitySeries),
         false},
        {"bandwidth", pod_series(&UsageHistory::bandwidth),
         gpu_series(&telemetry::Telemetry::BandwidthSeries), false},
    };
    for (const auto& m : metrics) {
      const std::optional<double> r = TailCorrelation(m.pod, m.gpu, options_.min_samples);
      if (!r) {
        v.Note("; {}: too little data to correlate", m.name);
        correlated |= m.required;
        continue;
      }
      const bool high = *r >= options_.correlation_threshold;
      v.Note("; {} r {:.3f} {} {}", m.name, *r, high ? "≥" : "<", options_.correlation_threshold);
      correlated |= high;
    }
  }
  const bool fits = size <= v.free_mib;
  if (!correlated && fits) {
    v.by = Check::kCbp;
    v.Note(": in by CBP");
    Confirm(w, g, c, v);
    return v;
  }
  v.Note("{}", correlated ? ": CBP refuses (correlated)" : ": CBP refuses (size does not fit)");
  Overrule(w, g, c, v);
  return v;
}

std::optional<Candidate> KnotsCbp::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  return MemoryShareOffer(w, node, c, 0, [&](GpuIndex g) -> std::optional<double> {
    const Verdict v = Judge(w, g, c, /*explain=*/false);
    if (v.by == Check::kNone) return std::nullopt;
    return MemoryScore(v.free_mib);  // the most free memory first
  });
}

std::string KnotsCbp::Explain(const Workload& w, const ClusterState& c) {
  return ExplainMemoryShare(*this, w, c, [&](GpuIndex g) {
    const Verdict v = Judge(w, g, c);
    const std::string head =
        v.by == Check::kNone
            ? std::string("not admitted")
            : fmt::format("in by {}, score {:.2f}", ToString(v.by), MemoryScore(v.free_mib));
    return head + ": " + v.detail;
  });
}

}  // namespace tessera::policy
