#include "policy/resource_aware.h"

#include <fmt/core.h>

#include <algorithm>

#include "predict/forecast.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

constexpr std::string_view kName = "resource-aware";

}  // namespace

std::vector<OptionInfo> ResourceAwareOptionList() {
  return {
      {"cbp", "true", "check 2, correlation-based prediction: size the GPU's use by a percentile"},
      {"peak_prediction", "true", "check 3: forecast the GPU's use with AR(1) when r_k is high"},
      {"cv_threshold", "0.2", "CBP runs while the memory series' σ/μ is below this"},
      {"percentile", "80", "CBP's estimate of the GPU's memory use (003: the 80th percentile)"},
      {"cbp_window_s", "30", "seconds of memory samples CBP reads"},
      {"lag", "1", "lag k of the autocorrelation r_k peak prediction tests"},
      {"autocorrelation_threshold", "0.5", "peak prediction forecasts when r_k is above this"},
      {"pp_window_s", "30", "seconds of memory samples peak prediction reads"},
      {"min_samples", "5", "fewest samples in a window for CBP or peak prediction to judge"},
      {"resize", "true",
       "CBP and peak prediction size a pod by its application's seen peak, not its request"},
      {"unseen_by_ratio", "true",
       "with resize, a pod of an unseen application: its request × the largest use ÷ request "
       "seen (ours)"},
      {"cover_growth", "false",
       "CBP and peak prediction add each pod's growth to come (size − own reading; ours)"},
  };
}

Expected<ResourceAwareOptions> ParseResourceAwareOptions(const nlohmann::json& options) {
  ResourceAwareOptions o;
  for (const Expected<void>& read :
       {ReadOption(kName, options, "cbp", o.cbp),
        ReadOption(kName, options, "peak_prediction", o.peak_prediction),
        ReadOption(kName, options, "cv_threshold", o.cv_threshold),
        ReadOption(kName, options, "percentile", o.percentile),
        ReadOption(kName, options, "cbp_window_s", o.cbp_window_s),
        ReadOption(kName, options, "lag", o.lag),
        ReadOption(kName, options, "autocorrelation_threshold", o.autocorrelation_threshold),
        ReadOption(kName, options, "pp_window_s", o.pp_window_s),
        ReadOption(kName, options, "min_samples", o.min_samples),
        ReadOption(kName, options, "resize", o.resize),
        ReadOption(kName, options, "unseen_by_ratio", o.unseen_by_ratio),
        ReadOption(kName, options, "cover_growth", o.cover_growth)}) {
    if (!read) return std::unexpected(read.error());
  }
  for (const Expected<void>& check :
       {OptionWithin(kName, "cv_threshold", o.cv_threshold, 0, 10),
        OptionWithin(kName, "percentile", o.percentile, 0, 100),
        OptionWithin(kName, "cbp_window_s", o.cbp_window_s, 1, 86400),
        OptionWithin(kName, "lag", o.lag, 1, 1000),
        OptionWithin(kName, "autocorrelation_threshold", o.autocorrelation_threshold, -1, 1),
        OptionWithin(kName, "pp_window_s", o.pp_window_s, 1, 86400),
        OptionWithin(kName, "min_samples", o.min_samples, 3, 100000)}) {
    if (!check) return std::unexpected(check.error());
  }
  if (o.lag >= o.min_samples) {
    return Fail("policy {}: option 'lag': {} needs min_samples above it (min_samples {})", kName,
                o.lag, o.min_samples);
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakeResourceAware(const PolicyContext& context,
                                                    const nlohmann::json& options) {
  auto o = ParseResourceAwareOptions(options);
  if (!o) return std::unexpected(o.error());
  return std::make_unique<ResourceAware>(context.telemetry, *o);
}

ResourceAware::ResourceAware(const telemetry::Telemetry* telemetry, ResourceAwareOptions options)
    : telemetry_(telemetry), options_(options) {}

void ResourceAware::Order(std::vector<const Workload*>& pending) const {
  OrderByRequestedMemory(pending);
}

Feasibility ResourceAware::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return MemoryShareNodeFits(w, node, c);
}

void ResourceAware::Observe(const ClusterState& c) {
  if (observed_version_ != c.version()) {
    fresh_.Observe(c, telemetry_);
    observed_version_ = c.version();
  }
  if (telemetry_ == nullptr || !(options_.resize || options_.cover_growth)) return;
  const std::optional<uint64_t> version = telemetry_->Version();
  if (peaks_seen_ && version && version == peaks_version_) return;
  peaks_seen_ = true;
  peaks_version_ = version;
  for (const auto& [id, pw] : c.placed()) {
    const Workload& w = pw.workload;
    if (w.app.empty() || !SharesByMemory(w)) continue;
    // The samples since the last look: a short window, read every cycle (a pod holds its
    // working set to its end, so a later look still shows what an earlier one missed).
    const std::optional<telemetry::Series> s = telemetry_->MemoryUsed(w.name, 5);
    if (!s) continue;
    double& peak = app_peak_mib_[w.app];
    double own = 0;  // this pod's most in the window, against its own request
    for (const telemetry::Sample& x : *s) own = std::max(own, x.value);
    peak = std::max(peak, own);
    if (w.gpu.memory_mib > 0) {
      seen_ratio_ =
          std::max(seen_ratio_, std::min(1.0, own / static_cast<double>(w.gpu.memory_mib)));
    }
  }
}

CycleActions ResourceAware::AfterCycle(const ClusterState& c) {
  Observe(c);
  return {};
}

double ResourceAware::SizeMib(const Workload& w) const {
  const auto request = static_cast<double>(w.gpu.memory_mib);
  if (!options_.resize) return request;
  const auto it = app_peak_mib_.find(w.app);
  if (it != app_peak_mib_.end() && it->second > 0) return it->second;
  return options_.unseen_by_ratio && seen_ratio_ > 0 ? request * seen_ratio_ : request;
}

double ResourceAware::UnseenMib(GpuIndex g, double newest_t, double settle_s,
                                const ClusterState& c) const {
  double sum = 0;
  for (const model::Client& cl : c.partition(ClusterState::PartitionOf(g, 0)).clients) {
    const model::PlacedWorkload* pw = c.Find(cl.workload);
    if (pw == nullptr) continue;
    const double size = SizeMib(pw->workload);
    if (options_.cover_growth) {
      const std::optional<telemetry::Series> own = telemetry_->MemoryUsed(pw->workload.name, 5);
      const double now = own && !own->empty() ? own->back().value : 0;
      sum += std::max(0.0, size - now);
    } else if (fresh_.Unseen(g, cl.workload, newest_t, settle_s) ||
               HoldsNothingNow(pw->workload, telemetry_)) {
      sum += size;
    }
  }
  return sum;
}

bool ResourceAware::Enough(const telemetry::Series& s, std::string_view check, Verdict& v) const {
  if (static_cast<int>(s.size()) >= options_.min_samples) return true;
  v.Note("; {}: {} memory samples < {}", check, s.size(), options_.min_samples);
  return false;
}

std::optional<double> ResourceAware::CbpTakenMib(GpuIndex g, const ClusterState& c,
                                                 Verdict& v) const {
  // A steady series is sized by its percentile.
  const telemetry::Series s = GpuMemorySeries(telemetry_, c.gpu(g), options_.cbp_window_s);
  if (!Enough(s, "CBP", v)) return std::nullopt;
  const std::vector<double> values = Values(s);
  const std::optional<double> cv = VariationOf(values);
  if (!cv || *cv >= options_.cv_threshold) {
    v.Note("; CBP: CV {:.3f} ≥ {}", cv.value_or(0), options_.cv_threshold);
    return std::nullopt;
  }
  const double used = *predict::Percentile(values, options_.percentile);
  const double settle = (1 - options_.percentile / 100) * options_.cbp_window_s;
  const double unseen = UnseenMib(g, s.back().t, settle, c);
  v.Note("; CBP: CV {:.3f} < {}, p{:g} {:.0f} MiB + {:.0f} MiB not yet seen", *cv,
         options_.cv_threshold, options_.percentile, used, unseen);
  return used + unseen;
}

std::optional<double> ResourceAware::PeakTakenMib(GpuIndex g, const ClusterState& c,
                                                  Verdict& v) const {
  // A persistent series is extrapolated one sample ahead.
  const telemetry::Series s = GpuMemorySeries(telemetry_, c.gpu(g), options_.pp_window_s);
  if (!Enough(s, "peak prediction", v)) return std::nullopt;
  const std::vector<double> values = Values(s);
  const std::optional<double> r = AutocorrelationOf(values, options_.lag);
  const std::optional<Ar1Forecast> f = ForecastAhead(values, 1);
  if (!r || !f) {
    v.Note("; peak prediction: a flat window has no r_k");
    return std::nullopt;
  }
  if (*r <= options_.autocorrelation_threshold) {
    v.Note("; peak prediction: r_{} {:.3f} ≤ {}", options_.lag, *r,
           options_.autocorrelation_threshold);
    return std::nullopt;
  }
  const double unseen = UnseenMib(g, s.back().t, 0, c);
  v.Note(
      "; peak prediction: r_{} {:.3f} > {}, AR(1) {:.1f} + {:.3f}·{:.0f} = {:.0f} MiB + {:.0f} "
      "MiB not yet seen",
      options_.lag, *r, options_.autocorrelation_threshold, f->fit.mu, f->fit.phi, values.back(),
      f->value, unseen);
  return f->value + unseen;
}

ResourceAware::Verdict ResourceAware::Judge(const Workload& w, GpuIndex g, const ClusterState& c,
                                            bool explain) {
  Observe(c);
  Verdict v{{"", explain}, g, Check::kNone, 0};
  const double capacity = static_cast<double>(CapacityMib(g, c));
  double request = static_cast<double>(w.gpu.memory_mib);
  auto admit = [&](Check by, double free) {
    const bool in = request <= free;
    v.Note(" → {:.0f} MiB free {} {:.0f}{}", free, in ? "≥" : "<", request, in ? ": in" : "");
    if (in) {
      v.by = by;
      v.left_mib = free - request;
    }
    return in;
  };

  // 1. Resource-agnostic: 003's indicator, the memory no pod on the GPU has asked for.
  const int64_t requested = RequestedMib(g, c);
  v.Note("agnostic: {} of {:.0f} MiB requested", requested, capacity);
  if (admit(Check::kAgnostic, capacity - static_cast<double>(requested))) return v;
  if (telemetry_ == nullptr) {
    v.Note("; no telemetry");
    return v;
  }
  if (const double size = SizeMib(w); size != request) {
    if (app_peak_mib_.contains(w.app)) {
      v.Note("; resized to its application's seen peak, {:.0f} MiB", size);
    } else {
      v.Note("; resized by the largest use ÷ request seen, {:.3f}, to {:.0f} MiB", seen_ratio_,
             size);
    }
    request = size;
  }
  // 2. CBP, then 3. peak prediction.
  if (options_.cbp) {
    const std::optional<double> taken = CbpTakenMib(g, c, v);
    if (taken && admit(Check::kCbp, capacity - *taken)) return v;
  }
  if (options_.peak_prediction) {
    const std::optional<double> taken = PeakTakenMib(g, c, v);
    if (taken && admit(Check::kPeakPrediction, capacity - *taken)) return v;
  }
  return v;
}

double ResourceAware::ScoreOf(const Verdict& v, double capacity_mib) {
  const double left = std::clamp(v.left_mib / capacity_mib, 0.0, 1.0);
  switch (v.by) {
    case Check::kAgnostic:
      return 67 + 33 * (1 - left);  // tightest first, as gpushare
    case Check::kCbp:
      return 34 + 32 * left;  // most room left first: an estimate may be low
    case Check::kPeakPrediction:
      return 33 * left;
    case Check::kNone:
      break;
  }
  return -1;
}

std::optional<Candidate> ResourceAware::Score(const Workload& w, NodeIndex node,
                                              const ClusterState& c) {
  return MemoryShareOffer(w, node, c, 0, [&](GpuIndex g) -> std::optional<double> {
    const Verdict v = Judge(w, g, c, /*explain=*/false);
    if (v.by == Check::kNone) return std::nullopt;
    return ScoreOf(v, static_cast<double>(CapacityMib(g, c)));
  });
}

std::string ResourceAware::Explain(const Workload& w, const ClusterState& c) {
  return ExplainMemoryShare(*this, w, c, [&](GpuIndex g) {
    const Verdict v = Judge(w, g, c);
    const std::string head = v.by == Check::kNone
                                 ? std::string("not admitted")
                                 : fmt::format("in by {}, score {:.2f}", ToString(v.by),
                                               ScoreOf(v, static_cast<double>(CapacityMib(g, c))));
    return head + ": " + v.detail;
  });
}

}  // namespace tessera::policy
