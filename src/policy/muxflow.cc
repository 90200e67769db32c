#include "policy/muxflow.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "model/gpu_model.h"
#include "policy/flow/flow.h"
#include "policy/prediction_view.h"
#include "predict/predictor.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

namespace {

constexpr std::string_view kName = "muxflow";
constexpr double kWeightScale = 1e6;  // normalised throughput → integer matching weight

Expected<void> ReadThresholds(const nlohmann::json& options, const char* key, Thresholds& t) {
  if (!options.is_object() || !options.contains(key) || options.at(key).is_null()) return {};
  const nlohmann::json& v = options.at(key);
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() ||
      !v[2].is_number()) {
    return Fail("policy muxflow: option '{}' must be [healthy, unhealthy, overlimit]", key);
  }
  t = {v[0].get<double>(), v[1].get<double>(), v[2].get<double>()};
  if (!(t.healthy >= 0 && t.healthy <= t.unhealthy && t.unhealthy <= t.overlimit)) {
    return Fail(
        "policy muxflow: option '{}': thresholds must be 0 ≤ healthy ≤ unhealthy ≤ "
        "overlimit, got [{}, {}, {}]",
        key, t.healthy, t.unhealthy, t.overlimit);
  }
  return {};
}

// SysMonitor's thresholds and holds, as top-level options.
Expected<void> ReadMonitor(const nlohmann::json& options, SysMonitorOptions& m) {
  for (const auto& [key, t] :
       {std::pair<const char*, Thresholds*>{"gpu_util_thresholds", &m.gpu_util},
        {"sm_activity_thresholds", &m.sm_activity},
        {"memory_thresholds", &m.memory},
        {"clock_drop_thresholds", &m.clock_drop}}) {
    if (auto ok = ReadThresholds(options, key, *t); !ok) return ok;
  }
  for (const auto& [key, v] : {std::pair<const char*, double*>{"base_hold_s", &m.base_hold_s},
                               {"max_hold_s", &m.max_hold_s},
                               {"history_s", &m.history_s}}) {
    if (auto ok = ReadOption(kName, options, key, *v); !ok) return ok;
    if (!(*v > 0 && *v <= 86400)) {
      return Fail("policy muxflow: option '{}': {} is outside (0, 86400] s", key, *v);
    }
  }
  if (m.max_hold_s < m.base_hold_s) {
    return Fail("policy muxflow: option 'max_hold_s': {} is below base_hold_s {}", m.max_hold_s,
                m.base_hold_s);
  }
  return {};
}

bool SingleGpu(const Workload& w) { return w.gpu.count == 1 && w.gpu.mig_profile.empty(); }
bool Offline(const Workload& w) { return w.klass == model::WorkloadClass::kOffline; }

bool NodeHasRoom(const Workload& w, const model::Node& n) {
  return n.ready && w.cpu_milli <= n.free_cpu_milli() && w.memory_mib <= n.free_memory_mib();
}

}  // namespace

int DynamicSmPercent(double online_activity) {
  const double a = std::clamp(online_activity, 0.0, 1.0);
  // The small epsilon keeps 0.35 (stored as 0.35000000000000003) at 35, not 36.
  return std::clamp(100 - static_cast<int>(std::ceil(a * 100 - 1e-9)), 0, 100);
}

int64_t OfflineMemoryCap(int64_t memory_mib, double quota) {
  return static_cast<int64_t>(std::floor(static_cast<double>(memory_mib) * quota));
}

std::vector<OptionInfo> MuxflowOptionList() {
  return {
      {"dynamic_sm", "true", "offline MPS share = 100 % − the online service's SM activity"},
      {"fixed_sm_percent", "100",
       "offline MPS share without dynamic SM (100: MPS's default; 001 Fig. 8's example: 40)"},
      {"matching", "true", "max-weight matching of offline jobs to online GPUs each period"},
      {"period_s", "900", "rescheduling period of the matching (001: 15 min)"},
      {"offline_period", "false",
       "without matching: place offline jobs greedily at the rounds, not as they come"},
      {"memory_quota", "0.4", "offline share of a GPU's memory (001 §6: 40 %)"},
      {"min_offline_percent", "10", "least MPS share worth giving an offline job"},
      {"resize_step", "5", "percentage points the offline share must move by to be resized"},
      {"gpu_util_thresholds", "[0.97,0.995,2]",
       "SysMonitor [healthy, unhealthy, overlimit] for GPU utilisation (> 1: never)"},
      {"sm_activity_thresholds", "[0.8,0.9,0.97]", "SysMonitor thresholds for SM activity"},
      {"memory_thresholds", "[0.8,0.9,0.95]", "SysMonitor thresholds for memory used / total"},
      {"clock_drop_thresholds", "[0.05,0.1,0.2]",
       "SysMonitor thresholds for 1 − SM clock / highest clock seen"},
      {"base_hold_s", "60", "Overlimit hold of the first entry in the history window"},
      {"max_hold_s", "7200", "longest Overlimit hold"},
      {"history_s", "7200", "window counting Overlimit entries (001: 2 h)"},
      {"interference_kind", "\"mps\"", "interference matrix the matching weights read"},
      {"reference_gpu", "\"\"",
       "GPU model whose exclusive throughput the weights divide by (\"\": the edge's own)"},
  };
}

Expected<MuxflowOptions> ParseMuxflowOptions(const nlohmann::json& options) {
  MuxflowOptions o;
  for (const Expected<void>& read :
       {ReadOption(kName, options, "dynamic_sm", o.dynamic_sm),
        ReadOption(kName, options, "fixed_sm_percent", o.fixed_sm_percent),
        ReadOption(kName, options, "matching", o.matching),
        ReadOption(kName, options, "offline_period", o.offline_period),
        ReadOption(kName, options, "period_s", o.period_s),
        ReadOption(kName, options, "memory_quota", o.memory_quota),
        ReadOption(kName, options, "min_offline_percent", o.min_offline_percent),
        ReadOption(kName, options, "resize_step", o.resize_step),
        ReadOption(kName, options, "interference_kind", o.interference_kind),
        ReadOption(kName, options, "reference_gpu", o.reference_gpu),
        ReadMonitor(options, o.monitor)}) {
    if (!read) return std::unexpected(read.error());
  }
  if (!o.reference_gpu.empty() && !model::FindGpuModel(o.reference_gpu)) {
    return Fail("policy {}: option 'reference_gpu': unknown GPU model '{}'", kName,
                o.reference_gpu);
  }
  auto within = [&](const char* key, double v, double lo, double hi) -> Expected<void> {
    if (v >= lo && v <= hi) return {};
    return Fail("policy {}: option '{}': {} is outside {}..{}", kName, key, v, lo, hi);
  };
  for (const Expected<void>& check :
       {within("period_s", o.period_s, 1, 86400), within("memory_quota", o.memory_quota, 0.01, 1),
        within("min_offline_percent", o.min_offline_percent, 1, 100),
        within("fixed_sm_percent", o.fixed_sm_percent, 1, 100),
        within("resize_step", o.resize_step, 1, 100)}) {
    if (!check) return std::unexpected(check.error());
  }
  return o;
}

Expected<std::unique_ptr<Policy>> MakeMuxflow(const PolicyContext& context,
                                              const nlohmann::json& options) {
  auto o = ParseMuxflowOptions(options);
  if (!o) return std::unexpected(o.error());
  if (context.options_only) return std::unique_ptr<Policy>{};
  if (context.predictor == nullptr) {
    return Fail("policy muxflow: needs a predictor (its speed predictor for the matching)");
  }
  if (context.clock == nullptr) return Fail("policy muxflow: needs a clock (its period)");
  if (auto ok = CheckInterferenceKind(kName, *context.predictor, options); !ok) {
    return std::unexpected(ok.error());
  }
  return std::make_unique<Muxflow>(*context.predictor, context.telemetry, *context.clock,
                                   std::move(*o), context.can_move);
}

struct Muxflow::Impl {
  Impl(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
       const Clock& clock, MuxflowOptions o, bool can_move)
      : options(std::move(o)),
        view(predictor, telemetry,
             {.interference_kind = options.interference_kind, .interpolate = true}),
        telemetry(telemetry),
        clock(clock),
        can_move(can_move) {
    if (!options.reference_gpu.empty()) reference = model::FindGpuModel(options.reference_gpu);
  }

  MuxflowOptions options;
  std::optional<model::GpuModelId> reference;  // options.reference_gpu's model
  PredictionView view;
  const telemetry::Telemetry* telemetry;
  const Clock& clock;
  bool can_move;
  std::vector<std::optional<SysMonitor>> monitors;  // by GpuIndex
  std::vector<double> max_clock;                    // highest SM clock seen, by GpuIndex
  // Telemetry version the monitors last read, and the one the resizes last read.
  std::optional<uint64_t> monitored, resized, evicted;
  bool monitored_once = false, resized_once = false, evicted_once = false;
  std::optional<double> next_round;  // next matching round (nullopt: at the first call)
  std::unordered_map<WorkloadId, MuxflowMatch> matches;

  // A GPU that hosts an online service, as muxflow shares it.
  struct OnlineGpu {
    GpuIndex gpu = 0;
    model::PartitionIndex partition = 0;
    const model::PlacedWorkload* service = nullptr;
    std::vector<WorkloadId> offline;  // best-effort clients
  };
  // `gone`: workloads to see as removed already (the evictions AfterCycle's resizes follow).
  static std::optional<OnlineGpu> Online(GpuIndex g, const ClusterState& c,
                                         const std::unordered_set<WorkloadId>* gone = nullptr) {
    const model::Gpu& gpu = c.gpu(g);
    if (gpu.mig) return std::nullopt;
    OnlineGpu o{g, ClusterState::PartitionOf(g, 0), nullptr, {}};
    for (const model::Client& cl : c.partition(o.partition).clients) {
      const model::PlacedWorkload* pw = c.Find(cl.workload);
      if (pw == nullptr || (gone != nullptr && gone->contains(cl.workload))) continue;
      if (cl.best_effort) {
        o.offline.push_back(cl.workload);
      } else if (pw->workload.klass == model::WorkloadClass::kOnline && o.service == nullptr) {
        o.service = pw;
      }
    }
    if (o.service == nullptr) return std::nullopt;
    return o;
  }

  // The service's own SM activity, or nullopt when it cannot be told apart.
  std::optional<double> ServiceActivity(const OnlineGpu& o, const ClusterState& c) const {
    if (telemetry == nullptr) return std::nullopt;
    if (auto a = telemetry->SmActivity(o.service->workload.name)) return *a;
    if (o.offline.empty()) return telemetry->SmActivity(c.gpu(o.gpu).uuid);
    return std::nullopt;
  }

  // The offline share a job would get on `o` now (nullopt: none worth giving).
  std::optional<int> OfflinePercent(const OnlineGpu& o, const ClusterState& c) const {
    if (!options.dynamic_sm) return options.fixed_sm_percent;
    const std::optional<double> a = ServiceActivity(o, c);
    if (!a) return std::nullopt;
    const int p = DynamicSmPercent(*a);
    if (p < options.min_offline_percent) return std::nullopt;
    return p;
  }

  // Feeds every online GPU's SysMonitor when the telemetry changed since the last feed.
  void UpdateMonitors(const ClusterState& c) {
    if (telemetry == nullptr) return;
    const std::optional<uint64_t> v = telemetry->Version();
    if (monitored_once && v && v == monitored) return;
    monitored_once = true;
    monitored = v;
    const double now = clock.Now();
    if (monitors.size() < static_cast<size_t>(c.gpu_count())) {
      monitors.resize(c.gpu_count());
      max_clock.resize(c.gpu_count(), 0);
    }
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      const std::optional<OnlineGpu> o = Online(g, c);
      if (!o) continue;
      const model::Gpu& gpu = c.gpu(g);
      const std::optional<double> util = telemetry->Utilization(gpu.uuid);
      // The service's own activity: with dynamic SM the GPU's total is near 100 % by design,
      // so only the service's share says whether it is at risk.
      const std::optional<double> sm = ServiceActivity(*o, c);
      if (!util && !sm && gpu.available) continue;  // nothing known: stays as it was (Init)
      GpuPressure p;
      p.gpu_util = util.value_or(0);
      p.sm_activity = sm.value_or(0);
      const model::Partition& part = c.partition(ClusterState::PartitionOf(g, 0));
      if (auto mem = telemetry->MemoryUsedMib(gpu.uuid); mem && part.memory_mib > 0) {
        p.memory = *mem / static_cast<double>(part.memory_mib);
      }
      if (auto clk = telemetry->SmClockMhz(gpu.uuid); clk && *clk > 0) {
        max_clock[g] = std::max(max_clock[g], *clk);
        p.clock_drop = 1.0 - *clk / max_clock[g];
      }
      if (!monitors[g]) monitors[g].emplace(options.monitor);
      monitors[g]->Update(now, p, gpu.available);
    }
  }

  bool Accepts(GpuIndex g) const {
    return static_cast<size_t>(g) < monitors.size() && monitors[g] &&
           monitors[g]->accepts_offline();
  }

  // Memory an offline job takes on `part`, or nullopt when it cannot.
  std::optional<int64_t> OfflineMemory(const Workload& w, const model::Partition& part) const {
    const int64_t cap = OfflineMemoryCap(part.memory_mib, options.memory_quota);
    const int64_t need = w.gpu.memory_mib > 0 ? w.gpu.memory_mib : cap;
    if (need > cap || need > part.free_memory_mib()) return std::nullopt;
    if (telemetry == nullptr) return need;
    // What the GPU holds now, beyond what is reserved: a service's cache may have grown. The
    // job must leave the GPU below SysMonitor's `unhealthy` memory: placed into a burst that
    // is still growing (the sample is up to one interval old), it would be evicted at the next
    // samples, or run the service out of memory before SysMonitor reads it.
    const std::optional<double> used = telemetry->MemoryUsedMib(part.uuid);
    const double room =
        std::min(1.0, options.monitor.memory.unhealthy) * static_cast<double>(part.memory_mib) -
        used.value_or(0);
    if (used && static_cast<double>(need) > room) return std::nullopt;
    return need;
  }

  // Predicted normalised throughput of `w` beside `o`'s service at `percent`.
  double Weight(const Workload& w, const OnlineGpu& o, int percent, const ClusterState& c) {
    const model::GpuModelId m = c.gpu(o.gpu).model;
    const predict::AppId service = view.AppOf(o.service->workload.app);
    const predict::AppId app = view.AppOf(w.app);
    double norm = percent / 100.0;
    if (app >= 0) {
      const double at = view.Isolated(app, m, -1, percent);
      const double full = view.Isolated(app, reference ? *reference : m, -1, 100);
      if (std::isfinite(at) && std::isfinite(full) && full > 0) {
        norm = reference ? at / full : std::min(1.0, at / full);
      }
    }
    return std::max(0.0, norm * (1.0 - view.Lost(app, service)));
  }

  // Why `w` (offline, one GPU) cannot go to node `n` now; empty when some GPU there can take it.
  std::string_view OfflineReason(const Workload& w, NodeIndex n, const ClusterState& c) const {
    if (!NodeHasRoom(w, c.node(n))) return "not enough CPU or memory on the node";
    std::string_view why = "no GPU hosting an online service";
    for (GpuIndex g = c.node(n).first_gpu; g < c.node(n).first_gpu + c.node(n).gpu_count; ++g) {
      const std::optional<OnlineGpu> o = Online(g, c);
      if (!o || !w.gpu.AllowsModel(c.gpu(g).model)) continue;
      if (!o->offline.empty()) {
        why = "every online GPU already shares with an offline job";
        continue;
      }
      if (!Accepts(g)) {
        why = "no online GPU is Healthy (SysMonitor)";
        continue;
      }
      if (!OfflineMemory(w, c.partition(o->partition))) {
        why = "the offline memory quota, or what the GPU's memory in use leaves, is too small";
        continue;
      }
      if (!OfflinePercent(*o, c)) {
        why = "the online services leave too little SM";
        continue;
      }
      return {};
    }
    return why;
  }

  std::optional<Candidate> OfflineOffer(const Workload& w, NodeIndex n, const ClusterState& c) {
    if (!OfflineReason(w, n, c).empty()) return std::nullopt;
    for (GpuIndex g = c.node(n).first_gpu; g < c.node(n).first_gpu + c.node(n).gpu_count; ++g) {
      const std::optional<OnlineGpu> o = Online(g, c);
      if (!o || !o->offline.empty() || !Accepts(g) || !w.gpu.AllowsModel(c.gpu(g).model)) continue;
      const std::optional<int64_t> mem = OfflineMemory(w, c.partition(o->partition));
      const std::optional<int> pct = OfflinePercent(*o, c);
      if (!mem || !pct) continue;
      const double weight = Weight(w, *o, *pct, c);
      return Candidate{100.0 * weight,
                       {w.id, n, {{o->partition, *pct * 10, *mem, /*best_effort=*/true}}},
                       {},
                       {}};
    }
    return std::nullopt;
  }

  // An online service on one whole GPU with no other service: the first, preferring a GPU
  // without offline work (score 100, else 50).
  std::optional<Candidate> OnlineOffer(const Workload& w, NodeIndex n, const ClusterState& c) {
    if (!NodeHasRoom(w, c.node(n))) return std::nullopt;
    std::optional<Candidate> best;
    for (GpuIndex g = c.node(n).first_gpu; g < c.node(n).first_gpu + c.node(n).gpu_count; ++g) {
      const model::Gpu& gpu = c.gpu(g);
      if (gpu.mig || !gpu.available || !w.gpu.AllowsModel(gpu.model)) continue;
      const model::PartitionIndex p = ClusterState::PartitionOf(g, 0);
      const model::Partition& part = c.partition(p);
      if (part.used_milli > 0) continue;  // a guaranteed client: another service or a job
      const int64_t mem =
          w.gpu.memory_mib > 0
              ? w.gpu.memory_mib
              : part.memory_mib - OfflineMemoryCap(part.memory_mib, options.memory_quota);
      if (mem > part.free_memory_mib()) continue;
      const double score = part.empty() ? 100 : 50;
      if (!best || score > best->score)
        best = Candidate{score, {w.id, n, {{p, 1000, mem}}}, {}, {}};
      if (score == 100) break;
    }
    return best;
  }

  // A free Healthy online GPU of a matching round, with the offline share it offers.
  struct Free {
    OnlineGpu gpu;
    int percent;
  };
  std::vector<Free> FreeGpus(const ClusterState& c) const {
    std::vector<Free> gpus;
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      std::optional<OnlineGpu> o = Online(g, c);
      if (!o || !o->offline.empty() || !Accepts(g)) continue;
      if (std::optional<int> pct = OfflinePercent(*o, c)) gpus.push_back({std::move(*o), *pct});
    }
    return gpus;
  }

  // A round's bipartite graph: an edge for each (job, free GPU) that can take it, weighted by
  // the job's predicted normalised throughput there (scaled to an integer), and each job's
  // choices (GPU, weight) in cluster order.
  struct Weighed {
    std::vector<flow::Edge> edges;
    std::vector<std::vector<std::pair<int, double>>> choices;
  };
  Weighed Weigh(const std::vector<const Workload*>& jobs, const std::vector<Free>& gpus,
                const ClusterState& c) {
    Weighed out{{}, std::vector<std::vector<std::pair<int, double>>>(jobs.size())};
    for (size_t j = 0; j < jobs.size(); ++j) {
      const Workload& w = *jobs[j];
      for (size_t i = 0; i < gpus.size(); ++i) {
        const model::Gpu& gpu = c.gpu(gpus[i].gpu.gpu);
        if (!w.gpu.AllowsModel(gpu.model) || !NodeHasRoom(w, c.node(gpu.node)) ||
            !OfflineMemory(w, c.partition(gpus[i].gpu.partition))) {
          continue;
        }
        const double weight = Weight(w, gpus[i].gpu, gpus[i].percent, c);
        const auto scaled = static_cast<int64_t>(std::llround(weight * kWeightScale));
        if (scaled <= 0) continue;
        out.edges.push_back({static_cast<int>(j), static_cast<int>(i), scaled});
        out.choices[j].emplace_back(static_cast<int>(i), weight);
      }
    }
    return out;
  }

  // Maximum-weight matching; without `matching`, greedy rounds: each job, in arrival order,
  // takes the first free GPU in cluster order.
  flow::MatchingResult Match(size_t jobs, size_t gpus, const Weighed& weighed) const {
    flow::MatchingResult r;
    if (options.matching) {
      r = flow::MaxWeightBipartiteMatching(static_cast<int>(jobs), static_cast<int>(gpus),
                                           weighed.edges);
      TESSERA_CHECK(r.status == flow::Status::kOptimal);  // the edges are valid by construction
      return r;
    }
    r.match.assign(jobs, -1);
    std::vector<char> taken(gpus, 0);
    for (size_t j = 0; j < jobs; ++j) {
      for (const auto& [i, weight] : weighed.choices[j]) {
        if (taken[static_cast<size_t>(i)]) continue;
        taken[static_cast<size_t>(i)] = 1;
        r.match[j] = i;
        break;
      }
    }
    return r;
  }

  // The matched jobs' placements, each recorded for Explain. Jobs matched on one node must fit
  // its CPU and memory together: heaviest first; one that does not waits for the next round.
  std::vector<Candidate> Matched(const std::vector<const Workload*>& jobs,
                                 const std::vector<Free>& gpus, const Weighed& weighed,
                                 const flow::MatchingResult& r, double now, const ClusterState& c) {
    std::vector<size_t> order;
    std::vector<double> matched(jobs.size(), 0), next(jobs.size(), 0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (r.match[j] < 0) continue;
      order.push_back(j);
      for (const auto& [i, weight] : weighed.choices[j]) {
        if (i == r.match[j]) {
          matched[j] = weight;
        } else {
          next[j] = std::max(next[j], weight);
        }
      }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return matched[a] > matched[b]; });
    std::unordered_map<NodeIndex, std::pair<int64_t, int64_t>> used;  // CPU, memory
    std::vector<Candidate> out;
    for (size_t j : order) {
      const Workload& w = *jobs[j];
      const Free& f = gpus[static_cast<size_t>(r.match[j])];
      const NodeIndex n = c.gpu(f.gpu.gpu).node;
      auto& [cpu, mem] = used[n];
      if (cpu + w.cpu_milli > c.node(n).free_cpu_milli() ||
          mem + w.memory_mib > c.node(n).free_memory_mib()) {
        continue;  // waits for the next round
      }
      cpu += w.cpu_milli;
      mem += w.memory_mib;
      const int64_t gpu_mem = *OfflineMemory(w, c.partition(f.gpu.partition));
      const int candidates = static_cast<int>(weighed.choices[j].size());
      matches[w.id] = {f.gpu.gpu, f.percent, matched[j], next[j], candidates, now};
      out.push_back({100.0 * matched[j],
                     {w.id, n, {{f.gpu.partition, f.percent * 10, gpu_mem, /*best_effort=*/true}}},
                     {},
                     {}});
    }
    return out;
  }

  // SysMonitor's evictions: every offline job of a GPU in Overlimit, once per telemetry sample
  // (the monitors may have read the sample already while this cycle placed work: the last
  // eviction pass's version, not theirs, says whether this sample was acted on).
  std::vector<Eviction> Evictions(const ClusterState& c) {
    UpdateMonitors(c);
    if (evicted_once && monitored && evicted == monitored) return {};  // acted on already
    evicted_once = true;
    evicted = monitored;
    std::vector<Eviction> out;
    for (GpuIndex g = 0; g < static_cast<GpuIndex>(monitors.size()); ++g) {
      if (!monitors[g] || !monitors[g]->evicts_offline()) continue;
      const std::optional<OnlineGpu> o = Online(g, c);
      if (!o) continue;
      for (WorkloadId id : o->offline) {
        out.push_back(
            {id, can_move,
             fmt::format("SysMonitor Overlimit on {}: {}", c.gpu(g).uuid, monitors[g]->reason())});
      }
    }
    return out;
  }

  // Dynamic SM: each offline job's share set to 100 % − its service's SM activity when that
  // moved by resize_step or more, once per telemetry version. Judged on the cluster as it will
  // be once the core has applied `evictions`: those jobs are left out, so a GPU they leave
  // without offline work is not resized. The version is read before the driver hears of the
  // evictions (the simulator then drops their telemetry: a new version), so whether a cycle
  // judges differs from reading it after them only when no reading changed since the last
  // judgement, and then there is nothing to resize: every share is at its target already
  // (placed there, or resized there: neither the cluster nor the simulator refuses these).
  std::vector<ResizeTo> Resizes(const ClusterState& c, const std::vector<Eviction>& evictions) {
    if (!options.dynamic_sm || telemetry == nullptr) return {};
    const std::optional<uint64_t> v = telemetry->Version();
    if (resized_once && v && v == resized) return {};
    resized_once = true;
    resized = v;
    std::unordered_set<WorkloadId> gone;
    for (const Eviction& e : evictions) gone.insert(e.workload);
    std::vector<ResizeTo> out;
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      const std::optional<OnlineGpu> o = Online(g, c, &gone);
      if (!o || o->offline.empty()) continue;
      const std::optional<double> a = ServiceActivity(*o, c);
      if (!a) continue;
      const int target = std::max(options.min_offline_percent, DynamicSmPercent(*a)) * 10;
      for (WorkloadId id : o->offline) {
        const model::PlacedWorkload* pw = c.Find(id);
        if (pw->placement.slices.size() != 1) continue;
        model::Slice s = pw->placement.slices[0];
        if (std::abs(s.milli - target) < options.resize_step * 10) continue;
        s.milli = target;
        out.push_back({id, {s}});
      }
    }
    return out;
  }
};

Muxflow::Muxflow(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
                 const Clock& clock, MuxflowOptions options, bool can_move)
    : impl_(std::make_unique<Impl>(predictor, telemetry, clock, std::move(options), can_move)) {}

Muxflow::~Muxflow() = default;

Feasibility Muxflow::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  if (!SingleGpu(w)) return Policy::Filter(w, node, c);
  if (Offline(w)) {
    if (impl_->options.matching) return Feasibility::No("offline work waits for the matching");
    if (impl_->options.offline_period) {
      return Feasibility::No("offline work waits for the next round");
    }
    const std::string_view why = impl_->OfflineReason(w, node, c);
    return why.empty() ? Feasibility::Yes() : Feasibility::No(why);
  }
  if (!NodeHasRoom(w, c.node(node))) return Feasibility::No("not enough CPU or memory");
  return Feasibility::Yes();
}

std::optional<Candidate> Muxflow::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  if (!SingleGpu(w)) return impl_->view.FirstFitOffer(w, node, c);
  if (Offline(w)) {
    if (impl_->options.matching || impl_->options.offline_period) return std::nullopt;
    impl_->UpdateMonitors(c);
    return impl_->OfflineOffer(w, node, c);
  }
  return impl_->OnlineOffer(w, node, c);
}

std::optional<std::vector<Candidate>> Muxflow::PlaceBatch(std::span<const Workload* const> pending,
                                                          const ClusterState& c) {
  Impl& m = *impl_;
  if (!m.options.matching && !m.options.offline_period) return std::nullopt;
  const double now = m.clock.Now();
  if (m.next_round && now < *m.next_round) return std::nullopt;
  m.next_round = (std::floor(now / m.options.period_s) + 1) * m.options.period_s;
  std::vector<const Workload*> jobs;
  for (const Workload* w : pending) {
    if (Offline(*w) && SingleGpu(*w)) jobs.push_back(w);
  }
  if (jobs.empty()) return std::nullopt;
  m.UpdateMonitors(c);
  const std::vector<Impl::Free> gpus = m.FreeGpus(c);
  const Impl::Weighed weighed = m.Weigh(jobs, gpus, c);
  if (weighed.edges.empty()) return std::nullopt;
  const flow::MatchingResult r = m.Match(jobs.size(), gpus.size(), weighed);
  std::vector<Candidate> out = m.Matched(jobs, gpus, weighed, r, now, c);
  if (out.empty()) return std::nullopt;
  return out;
}

CycleActions Muxflow::AfterCycle(const ClusterState& c) {
  CycleActions out;
  out.evictions = impl_->Evictions(c);
  out.resizes = impl_->Resizes(c, out.evictions);
  return out;
}

const SysMonitor* Muxflow::Monitor(GpuIndex g) const {
  if (static_cast<size_t>(g) >= impl_->monitors.size() || !impl_->monitors[g]) return nullptr;
  return &*impl_->monitors[g];
}

std::optional<MuxflowMatch> Muxflow::LastMatch(WorkloadId offline) const {
  auto it = impl_->matches.find(offline);
  if (it == impl_->matches.end()) return std::nullopt;
  return it->second;
}

std::string Muxflow::Explain(const Workload& w, const ClusterState& c) {
  if (!SingleGpu(w) || !Offline(w)) return Policy::Explain(w, c);
  Impl& m = *impl_;
  m.UpdateMonitors(c);
  std::string out =
      fmt::format("muxflow: offline {} ({}); matching {}, dynamic SM {}\n", w.name, w.app,
                  m.options.matching         ? "on"
                  : m.options.offline_period ? "off (greedy rounds)"
                                             : "off",
                  m.options.dynamic_sm ? "on" : "off");
  if (const std::optional<MuxflowMatch> match = LastMatch(w.id)) {
    out += fmt::format(
        "  matched at t={:.0f}s to {} at {} % SM: predicted normalised throughput {:.3f} "
        "(next best of {} free GPUs {:.3f})\n",
        match->at_s, c.gpu(match->gpu).uuid, match->percent, match->weight, match->candidates,
        match->next);
  } else if ((m.options.matching || m.options.offline_period) && m.next_round) {
    out += fmt::format("  not matched yet; next round at t={:.0f}s\n", *m.next_round);
  }
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
    const std::optional<Impl::OnlineGpu> o = Impl::Online(g, c);
    if (!o) continue;
    const SysMonitor* mon = Monitor(g);
    out += fmt::format("  {} (service {}): {}", c.gpu(g).uuid, o->service->workload.name,
                       mon ? ToString(mon->state()) : "Init");
    if (mon) out += fmt::format(" — {}", mon->reason());
    if (mon && mon->evicts_offline())
      out += fmt::format(", held until t={:.0f}s", mon->hold_until());
    if (!o->offline.empty()) {
      out += fmt::format("; shares with {} offline job(s)\n", o->offline.size());
      continue;
    }
    const std::optional<int> pct = m.OfflinePercent(*o, c);
    if (!pct) {
      out += "; service SM activity unknown or too high\n";
      continue;
    }
    out += fmt::format("; offline share {} %, predicted normalised throughput {:.3f}\n", *pct,
                       m.Weight(w, *o, *pct, c));
  }
  return out;
}

}  // namespace tessera::policy
