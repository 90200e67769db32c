#include "agent/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace tessera::agent {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::string body;
};

enum Metric {
  kFbUsed,
  kFbFree,
  kGrActive,
  kSmActive,
  kDramActive,
  kGpuUtil,
  kSmClock,
  kPower,
  kEnergy,
  kCount
};

std::string LabelText(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += fmt::format("{}=\"{}\"", labels[i].first, EscapeLabel(labels[i].second));
  }
  return out + "}";
}

void Emit(Family& f, const std::vector<std::pair<std::string, std::string>>& labels,
          const std::vector<PodRef>& pods, std::optional<double> value) {
  if (!value) return;  // unknown: no series, never a zero
  if (pods.empty()) {
    f.body += fmt::format("{}{} {}\n", f.name, LabelText(labels), *value);
    return;
  }
  for (const PodRef& p : pods) {
    auto with = labels;
    with.emplace_back("pod", p.pod);
    with.emplace_back("namespace", p.ns);
    f.body += fmt::format("{}{} {}\n", f.name, LabelText(with), *value);
  }
}

// One pod's processes summed on one partition; unknown for every process stays unknown.
struct PodUsage {
  std::optional<double> fb, sm, dram;
};

// (partition index, pod uid) → the pod's processes summed there; ordered for stable output.
using PodUsageSums = std::map<std::pair<size_t, std::string>, PodUsage>;

// A pod's usage of one partition: (partition index, pod, usage).
using PodUsageRow = std::tuple<size_t, PodRef, PodUsage>;

// Sums GPU g's processes per partition and pod; counts those with no known pod, or on a
// partition the inventory does not have, into `unattributed`.
PodUsageSums SumPodUsage(const store::GpuInventory& g, const GpuSample& sample,
                         const PodsByUid& pods, int& unattributed) {
  auto add = [](std::optional<double>& to, std::optional<double> v) {
    if (v) to = to.value_or(0) + *v;  // unknown for every process: stays unknown
  };
  PodUsageSums sums;
  for (const ProcessSample& proc : sample.processes) {
    auto part = std::find_if(g.partitions.begin(), g.partitions.end(),
                             [&](const auto& p) { return p.uuid == proc.partition_uuid; });
    if (proc.pod_uid.empty() || !pods.contains(proc.pod_uid) || part == g.partitions.end()) {
      ++unattributed;
      continue;
    }
    PodUsage& s = sums[{static_cast<size_t>(part - g.partitions.begin()), proc.pod_uid}];
    add(s.fb, proc.fb_used_mib);
    add(s.sm, proc.sm);
    add(s.dram, proc.dram);
  }
  return sums;
}

// The rows of GPU g: its pods' sums, then a zero row for each pod placed on one of its
// partitions that runs nothing there.
std::vector<PodUsageRow> PodUsageRows(const store::GpuInventory& g, const GpuSample& sample,
                                      const PodUsageSums& sums, const PodsByUid& pods,
                                      const Attribution& placed) {
  std::vector<PodUsageRow> rows;
  std::set<std::pair<size_t, PodRef>> running;
  for (const auto& [key, s] : sums) {
    rows.emplace_back(key.first, pods.at(key.second), s);
    running.emplace(key.first, pods.at(key.second));
  }
  // A pod placed on a partition of a GPU whose processes were all listed, with none of its
  // own there, runs nothing on it now (starting, or restarting after a crash): 0 for each.
  for (size_t k = 0; sample.processes_listed && k < g.partitions.size(); ++k) {
    auto it = placed.find(g.partitions[k].uuid);
    if (it == placed.end()) continue;
    for (const PodRef& ref : it->second) {
      if (running.emplace(k, ref).second) rows.emplace_back(k, ref, PodUsage{0.0, 0.0, 0.0});
    }
  }
  return rows;
}

// Emits GPU g's rows as series of the fb, sm and dram families.
void EmitPodUsageRows(std::string_view hostname, const store::GpuInventory& g,
                      const std::vector<PodUsageRow>& rows, Family& fb, Family& sm, Family& dram) {
  for (const auto& [part_index, ref, s] : rows) {
    const store::PartitionInventory& p = g.partitions[part_index];
    std::vector<std::pair<std::string, std::string>> labels = {{"gpu", std::to_string(g.index)},
                                                               {"UUID", g.uuid},
                                                               {"modelName", g.product_name},
                                                               {"Hostname", std::string(hostname)}};
    if (g.mig_enabled) {
      labels.emplace_back("GPU_I_PROFILE", p.profile);
      labels.emplace_back("GPU_I_ID", std::to_string(p.gi_id));
    }
    labels.emplace_back("partition_uuid", p.uuid);
    const std::vector<PodRef> who = {ref};
    // Per-process samples taken at slightly different instants can add up past the whole.
    auto share = [](std::optional<double> v) {
      return v ? std::optional<double>(std::clamp(*v, 0.0, 1.0)) : std::nullopt;
    };
    Emit(fb, labels, who, s.fb);
    Emit(sm, labels, who, share(s.sm));
    Emit(dram, labels, who, share(s.dram));
  }
}

}  // namespace

std::string EscapeLabel(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderDcgmMetrics(std::string_view hostname,
                              const std::vector<store::GpuInventory>& gpus,
                              const std::vector<GpuSample>& samples, const Attribution& pods) {
  Family f[kCount] = {
      {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", ""},
      {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", ""},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
       "Ratio of time the graphics engine is active (0..1).", ""},
      {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
       "The ratio of cycles an SM has at least 1 warp assigned (0..1).", ""},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
       "Ratio of cycles the device memory interface is active sending or receiving data (0..1).",
       ""},
      {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", ""},
      {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", ""},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", ""},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
       "Total energy consumption since boot (in mJ).", ""},
  };
  static const std::vector<PodRef> kNoPods;
  auto pods_of = [&](const std::string& uuid) -> const std::vector<PodRef>& {
    auto it = pods.find(uuid);
    return it == pods.end() ? kNoPods : it->second;
  };
  for (size_t i = 0; i < gpus.size() && i < samples.size(); ++i) {
    const store::GpuInventory& g = gpus[i];
    const GpuSample& s = samples[i];
    if (g.lost) continue;
    const std::vector<std::pair<std::string, std::string>> device = {
        {"gpu", std::to_string(g.index)},
        {"UUID", g.uuid},
        {"modelName", g.product_name},
        {"Hostname", std::string(hostname)}};
    auto whole = device;
    if (!g.mig_enabled) whole.emplace_back("partition_uuid", g.uuid);
    const std::vector<PodRef>& device_pods = g.mig_enabled ? kNoPods : pods_of(g.uuid);
    Emit(f[kGpuUtil], whole, device_pods, s.gpu_util_pct);
    Emit(f[kSmClock], whole, device_pods, s.sm_clock_mhz);
    Emit(f[kPower], whole, device_pods, s.power_w);
    Emit(f[kEnergy], whole, device_pods, s.energy_mj);
    for (size_t k = 0; k < g.partitions.size() && k < s.partitions.size(); ++k) {
      const store::PartitionInventory& p = g.partitions[k];
      auto labels = device;
      if (g.mig_enabled) {
        labels.emplace_back("GPU_I_PROFILE", p.profile);
        labels.emplace_back("GPU_I_ID", std::to_string(p.gi_id));
      }
      labels.emplace_back("partition_uuid", p.uuid);
      const std::vector<PodRef>& who = pods_of(p.uuid);
      Emit(f[kFbUsed], labels, who, s.partitions[k].fb_used_mib);
      Emit(f[kFbFree], labels, who, s.partitions[k].fb_free_mib);
      Emit(f[kGrActive], labels, who, s.partitions[k].activity);
      Emit(f[kSmActive], labels, who, s.partitions[k].sm_active);
      Emit(f[kDramActive], labels, who, s.partitions[k].dram_active);
    }
  }
  std::string out;
  for (const Family& fam : f) {
    if (fam.body.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", fam.name, fam.help, fam.name, fam.type);
    out += fam.body;
  }
  return out;
}

PodUsageMetrics RenderPodMetrics(std::string_view hostname,
                                 const std::vector<store::GpuInventory>& gpus,
                                 const std::vector<GpuSample>& samples, const PodsByUid& pods,
                                 const Attribution& placed) {
  Family fb{"tessera_pod_fb_used_mib", "gauge",
            "Framebuffer memory the pod's processes use on the partition (in MiB).", ""};
  Family sm{"tessera_pod_sm_active", "gauge",
            "Share of the partition's SM time the pod's processes use (0..1).", ""};
  Family dram{"tessera_pod_dram_active", "gauge",
              "Share of the partition's memory bandwidth time the pod's processes use (0..1).", ""};
  PodUsageMetrics out;
  for (size_t i = 0; i < gpus.size() && i < samples.size(); ++i) {
    const store::GpuInventory& g = gpus[i];
    if (g.lost) continue;
    const PodUsageSums sums = SumPodUsage(g, samples[i], pods, out.unattributed);
    const std::vector<PodUsageRow> rows = PodUsageRows(g, samples[i], sums, pods, placed);
    EmitPodUsageRows(hostname, g, rows, fb, sm, dram);
  }
  for (const Family* fam : {&fb, &sm, &dram}) {
    if (fam->body.empty()) continue;
    out.text +=
        fmt::format("# HELP {} {}\n# TYPE {} {}\n", fam->name, fam->help, fam->name, fam->type);
    out.text += fam->body;
  }
  out.text += fmt::format(
      "# HELP tessera_agent_unattributed_processes GPU processes whose pod the agent could not "
      "tell (no pod cgroup, or no placement on this node with that pod uid).\n"
      "# TYPE tessera_agent_unattributed_processes gauge\n"
      "tessera_agent_unattributed_processes{{Hostname=\"{}\"}} {}\n",
      EscapeLabel(hostname), out.unattributed);
  return out;
}

std::string RenderMpsMetrics(std::string_view hostname,
                             const std::vector<store::GpuInventory>& gpus,
                             const std::map<std::string, MpsStuckDetector>& detectors) {
  Family up{"tessera_mps_server_up", "gauge",
            "Whether an MPS server runs on the GPU (1) or not (0); no series when unknown.", ""};
  Family clients{"tessera_mps_clients", "gauge",
                 "CUDA processes attached through the GPU's MPS server.", ""};
  Family stuck{"tessera_mps_server_stuck", "gauge",
               "1 while the agent judges the GPU's MPS server stuck (docs/runtime.md), else 0.",
               ""};
  for (const store::GpuInventory& g : gpus) {
    auto it = detectors.find(g.uuid);
    if (g.lost || it == detectors.end() || !it->second.last()) continue;
    const MpsSample& m = *it->second.last();
    const std::vector<std::pair<std::string, std::string>> labels = {
        {"gpu", std::to_string(g.index)},
        {"UUID", g.uuid},
        {"modelName", g.product_name},
        {"Hostname", std::string(hostname)}};
    Emit(up, labels, {}, m.server ? std::optional<double>(*m.server ? 1 : 0) : std::nullopt);
    Emit(clients, labels, {}, m.clients);
    Emit(stuck, labels, {}, it->second.stuck() ? 1 : 0);
  }
  std::string out;
  for (const Family* fam : {&up, &clients, &stuck}) {
    if (fam->body.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", fam->name, fam->help, fam->name, fam->type);
    out += fam->body;
  }
  return out;
}

}  // namespace tessera::agent
