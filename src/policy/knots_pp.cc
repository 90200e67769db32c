#include "policy/knots_pp.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

constexpr std::string_view kKnotsPp = "knots-pp";

}  // namespace

std::vector<OptionInfo> KnotsPpOptionList() {
  std::vector<OptionInfo> list = KnotsCbpOptionList();
  list.push_back({"lag", "1", "lag k of the autocorrelation r_k that must be positive"});
  list.push_back({"horizon_s", "1", "how far ahead AR(1) forecasts the GPU's memory (004: 1 s)"});
  list.push_back({"steer", "true",
                  "also steer a pod CBP admits away from a GPU whose forecast memory peak "
                  "leaves no room for its request (false: Algorithm 1's else-branch only)"});
  list.push_back({"peak_window_s", "120",
                  "seconds of a GPU's memory in which r_k finds the interval to its next peak "
                  "(ours; 0: the 1-s forecast alone)"});
  return list;
}

Expected<KnotsPpOptions> ParseKnotsPpOptions(const nlohmann::json& options) {
  KnotsPpOptions o;
  auto cbp = ParseKnotsCbpOptions(kKnotsPp, options);
  if (!cbp) return std::unexpected(cbp.error());
  o.cbp = *cbp;
  for (const Expected<void>& read :
       {ReadOption(kKnotsPp, options, "lag", o.lag),
        ReadOption(kKnotsPp, options, "horizon_s", o.horizon_s),
        ReadOption(kKnotsPp, options, "steer", o.steer),
        ReadOption(kKnotsPp, options, "peak_window_s", o.peak_window_s)}) {
    if (!read) return std::unexpected(read.error());
  }
  if (!(o.lag >= 1 && o.lag < o.cbp.min_samples)) {
    return Fail("policy {}: option 'lag': {} is outside 1..min_samples − 1 ({})", kKnotsPp, o.lag,
                o.cbp.min_samples - 1);
  }
  if (auto ok = OptionWithin(kKnotsPp, "horizon_s", o.horizon_s, 0.001, 3600); !ok) {
    return std::unexpected(ok.error());
  }
  if (o.peak_window_s != 0) {
    if (auto ok = OptionWithin(kKnotsPp, "peak_window_s", o.peak_window_s, 4, 86400); !ok) {
      return std::unexpected(ok.error());
    }
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakeKnotsPp(const PolicyContext& context,
                                              const nlohmann::json& options) {
  auto o = ParseKnotsPpOptions(options);
  if (!o) return std::unexpected(o.error());
  return std::make_unique<KnotsPp>(context.telemetry, *o);
}

KnotsPp::KnotsPp(const telemetry::Telemetry* telemetry, KnotsPpOptions options)
    : KnotsCbp(telemetry, options.cbp),
      lag_(options.lag),
      horizon_s_(options.horizon_s),
      steer_(options.steer),
      peak_window_s_(options.peak_window_s) {}

const KnotsPp::PeakCache* KnotsPp::PeakOf(std::vector<PeakCache>& caches,
                                          const telemetry::Series& newest, GpuIndex g,
                                          const std::function<telemetry::Series(double)>& read) {
  if (newest.empty()) return nullptr;
  if (caches.size() <= static_cast<size_t>(g)) caches.resize(static_cast<size_t>(g) + 1);
  PeakCache& cache = caches[static_cast<size_t>(g)];
  if (cache.newest_t != newest.back().t) {
    cache = {newest.back().t, RecurringPeakOf(Values(read(peak_window_s_))), newest.back().value};
  }
  return &cache;
}

std::optional<double> KnotsPp::PeakFree(GpuIndex g, const ClusterState& c, Verdict& v) {
  if (peak_window_s_ <= 0) return std::nullopt;
  const model::Gpu& gpu = c.gpu(g);
  const PeakCache* cache = PeakOf(peaks_, GpuMemorySeries(telemetry(), gpu, 1), g,
                                  [&](double w) { return GpuMemorySeries(telemetry(), gpu, w); });
  if (cache == nullptr) return std::nullopt;
  if (!cache->peak) return std::nullopt;  // silent: the 1-s forecast's note stands
  const RecurringPeak& p = *cache->peak;
  const double unseen = UnseenMib(g, cache->newest_t, c);
  const double at_peak = cache->newest + p.excess;
  const double free = static_cast<double>(CapacityMib(g, c)) - at_peak - unseen;
  v.Note(
      "; PP: a memory peak recurs every {} samples (r {:.3f}): {:.0f} + {:.0f} → {:.0f} MiB + "
      "{:.0f} not yet seen → {:.0f} MiB free at the next peak",
      p.interval, p.r, cache->newest, p.excess, at_peak, unseen, free);
  return free;
}

// The GPU's free memory `horizon_s` ahead by 004's AR(1), when its memory series has a trend
// (r_k > 0); nullopt, with the reason noted, when PP makes no forecast there.
std::optional<double> KnotsPp::ForecastFree(GpuIndex g, const ClusterState& c, Verdict& v) {
  const KnotsCbpOptions& o = cbp_options();
  const telemetry::Series s = GpuMemorySeries(telemetry(), c.gpu(g), o.window_s);
  if (static_cast<int>(s.size()) < o.min_samples) {
    v.Note("; PP: {} memory samples < {}: no forecast", s.size(), o.min_samples);
    return std::nullopt;
  }
  const std::vector<double> values = Values(s);
  const std::optional<double> r = AutocorrelationOf(values, lag_);
  if (!r || *r <= 0) {
    if (r) {
      v.Note("; PP: r_{} {:.3f} ≤ 0: no trend to forecast", lag_, *r);
    } else {
      v.Note("; PP: a flat window has no r_k: no forecast");
    }
    return std::nullopt;
  }
  // Steps of the series' own sampling interval in the horizon (one at DCGM's 1 s).
  const double interval = (s.back().t - s.front().t) / static_cast<double>(s.size() - 1);
  const int steps =
      interval > 0 ? std::max(1, static_cast<int>(std::lround(horizon_s_ / interval))) : 1;
  const std::optional<Ar1Forecast> f = ForecastAhead(values, steps);
  if (!f) {
    v.Note("; PP: r_{} {:.3f} > 0 but no AR(1) fit", lag_, *r);
    return std::nullopt;
  }
  const double unseen = UnseenMib(g, s.back().t, c);
  const double free = static_cast<double>(CapacityMib(g, c)) - f->value - unseen;
  v.Note(
      "; PP: r_{} {:.3f} > 0, AR(1) {:.1f} + {:.3f}·Y over {} step{} from {:.0f} → {:.0f} MiB "
      "+ {:.0f} not yet seen → {:.0f} MiB free",
      lag_, *r, f->fit.mu, f->fit.phi, steps, steps == 1 ? "" : "s", values.back(), f->value,
      unseen, free);
  return free;
}

std::optional<bool> KnotsPp::RequestFits(const Workload& w, GpuIndex g, const ClusterState& c,
                                         Verdict& v) {
  std::optional<double> free = ForecastFree(g, c, v);
  if (const std::optional<double> at_peak = PeakFree(g, c, v)) {
    free = free ? std::min(*free, *at_peak) : *at_peak;
  }
  if (!free) return std::nullopt;
  const double request = static_cast<double>(w.gpu.memory_mib);
  const bool fits = request <= *free;
  v.Note(" {} {:.0f} requested", fits ? "≥" : "<", request);
  return fits;
}

void KnotsPp::Overrule(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v) {
  if (RequestFits(w, g, c, v) != true) return;
  v.Note(": in by PP");
  v.by = Check::kPeakPrediction;
}

void KnotsPp::Confirm(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v) {
  if (!steer_) return;
  const std::optional<bool> fits = RequestFits(w, g, c, v);
  if (!fits) return;
  if (*fits) {
    v.Note(": no peak impending");
    return;
  }
  v.Note(": a peak is impending, PP steers it away");
  v.by = Check::kNone;
}

}  // namespace tessera::policy
