#include "e2e/box_kubelet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <variant>

#include "model/mig.h"

namespace tessera::e2e {

using nlohmann::json;

namespace {

// Writes `text` to `path` through a temporary file renamed into place: a reader (the agent, the
// exporter) sees the old file or the new one, never half of one.
void WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

// "0=8192M" (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): the limit of device 0 in MiB; nullopt if absent
// or not of that form.
std::optional<int64_t> PinnedLimitMib(const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || v.empty() || v.back() != 'M') return std::nullopt;
  try {
    return std::stoll(v.substr(eq + 1, v.size() - eq - 2));
  } catch (...) {
    return std::nullopt;
  }
}

// The SM clock a GPU reports: its maximum boost clock (NVIDIA's datasheets), held. The ground
// truth has no clock model, so SysMonitor's clock drop reads 0 on the box as in the simulator.
int BoostClockMhz(const std::string& model) {
  static const std::map<std::string, int> kBoost = {
      {"T4", 1590}, {"A10", 1695}, {"V100-32GB", 1530}, {"A30-24GB", 1440}};
  const auto it = kBoost.find(model);
  return it == kBoost.end() ? 1500 : it->second;
}

std::string FeatureText(const std::variant<double, std::string>& v) {
  if (const double* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return std::get<std::string>(v);
}

}  // namespace

std::string PodName(const model::Workload& w) {
  std::string app = w.app;
  std::replace(app.begin(), app.end(), '/', '-');
  std::replace(app.begin(), app.end(), '_', '-');
  return fmt::format("p{:02}-{}", w.id, app);
}

std::string ApiNodeName(const model::ClusterState& cluster, model::NodeIndex n) {
  return fmt::format("n{}-{}", n, cluster.node(n).name);
}

EmulatedKubelet::EmulatedKubelet(k8s::testing_support::FakeApiServer& api, sim::Physics& physics,
                                 model::ClusterState& mirror, std::vector<model::Workload> pods,
                                 KubeletOptions options)
    : api_(api), physics_(physics), mirror_(mirror), options_(std::move(options)) {
  for (model::Workload& w : pods) {
    BoxPod p;
    p.name = PodName(w);
    p.api_name = p.name;
    p.workload = std::move(w);
    pods_.push_back(std::move(p));
  }
  for (size_t i = 0; i < pods_.size(); ++i) by_arrival_.push_back(i);
  std::stable_sort(by_arrival_.begin(), by_arrival_.end(), [this](size_t a, size_t b) {
    return pods_[a].workload.arrival_s < pods_[b].workload.arrival_s;
  });
}

void EmulatedKubelet::WriteFiles() {
  for (model::NodeIndex n = 0; n < mirror_.node_count(); ++n) WriteNodeFile(n, 0);
  WriteExporterFile();
}

void EmulatedKubelet::Tick(double now) {
  Advance(now);
  ReplaceEvicted(now);
  CreateArrived(now);
  StartBound(now);
  if (now - last_sample_ >= 1.0 && TimeVarying()) {
    changed_ = true;
    last_sample_ = now;
  }
  if (changed_) {
    Rerate(now);
    CheckMemory(now);
    for (model::NodeIndex n = 0; n < mirror_.node_count(); ++n) WriteNodeFile(n, now);
    changed_ = false;
  }
  if (now - last_export_ >= 0.25) {
    WriteExporterFile();
    last_export_ = now;
  }
}

bool EmulatedKubelet::AllDone(const std::set<int64_t>& may_wait) const {
  return std::all_of(pods_.begin(), pods_.end(), [&](const BoxPod& p) {
    return p.end_s.has_value() || (!p.start_s && may_wait.contains(p.workload.id)) ||
           physics_.HasOfferedLoad(p.workload);
  });
}

void EmulatedKubelet::Advance(double now) {
  for (BoxPod& p : pods_) {
    if (!p.running()) continue;
    const double from = std::max(p.last_s, p.resume_at);
    const double left = static_cast<double>(p.workload.queries) - p.served;
    if (now > from && p.qps > 0 && p.qps * (now - from) >= left) {
      // Done between ticks: its end is when the last query was served, not this tick.
      p.end_s = from + left / p.qps;
      p.served = static_cast<double>(p.workload.queries);
      p.placed = false;
      (void)mirror_.Remove(p.workload.id);
      rates_.erase(p.workload.id);
      api_.SetPodDone(options_.ns, p.api_name, true);
      changed_ = true;
    } else if (now > from) {
      p.served += p.qps * (now - from);
    }
    if (!p.ready && !p.end_s && now >= p.resume_at) {
      p.ready = true;
      api_.SetPodRunning(options_.ns, p.api_name, true);
    }
    p.last_s = now;
  }
}

void EmulatedKubelet::ReplaceEvicted(double now) {
  for (BoxPod& p : pods_) {
    if (!p.running() || api_.Get("pods", options_.ns + "/" + p.api_name)) continue;
    p.placed = false;
    p.ready = false;
    (void)mirror_.Remove(p.workload.id);
    rates_.erase(p.workload.id);
    ++p.moves;
    if (const int64_t every = p.workload.checkpoint_queries; every > 0) {
      // Its new container resumes from the last checkpoint: the rest is done again.
      p.served = std::floor(p.served / static_cast<double>(every)) * static_cast<double>(every);
    }
    p.served_before = p.served;
    p.api_name = fmt::format("{}-m{}", p.name, p.moves);
    CreatePod(p);
    p.qps = 0;
    p.last_s = now;
    changed_ = true;
  }
}

void EmulatedKubelet::CreateArrived(double now) {
  // In order of arrival: pods arriving within one tick reach the scheduler in that order.
  for (size_t i : by_arrival_) {
    BoxPod& p = pods_[i];
    if (p.created || p.workload.arrival_s > now) continue;
    CreatePod(p);
    p.created = true;
  }
}

void EmulatedKubelet::CreatePod(const BoxPod& p) {
  const model::Workload& w = p.workload;
  json annotations = {{"tessera.io/app", w.app},
                      {"tessera.io/slo-qps", fmt::format("{}", w.slo_qps)},
                      {"tessera.io/gpu-memory", fmt::format("{}", w.gpu.memory_mib)}};
  for (const auto& [name, value] : w.features) {
    annotations["tessera.io/feature." + name] = FeatureText(value);
  }
  if (w.klass == model::WorkloadClass::kOffline) annotations["tessera.io/class"] = "offline";
  json requests = {{"cpu", fmt::format("{}m", w.cpu_milli)},
                   {"memory", fmt::format("{}Mi", w.memory_mib)},
                   {"nvidia.com/gpu", fmt::format("{}", w.gpu.count)}};
  const json owner = {{"apiVersion", "apps/v1"},
                      {"kind", "ReplicaSet"},
                      {"name", "rs-" + p.name},
                      {"uid", fmt::format("00000000-0000-4000-8000-{:012}", w.id)}};
  api_.AddPodWith(options_.ns, p.api_name, requests, annotations, {{"app", "thesis"}}, owner);
}

void EmulatedKubelet::StartBound(double now) {
  for (BoxPod& p : pods_) {
    if (p.created && !p.placed && !p.end_s && Start(p, now)) changed_ = true;
  }
}

bool EmulatedKubelet::Start(BoxPod& p, double now) {
  const std::string key = options_.ns + "/" + p.api_name;
  const std::optional<json> pod = api_.Get("pods", key);
  if (!pod) return false;
  const std::string node = (*pod)["spec"].value("nodeName", "");
  if (node.empty()) return false;
  // The kubelet waits for the ConfigMap the pod's envFrom names (Tessera writes it first).
  const std::optional<json> cm = api_.Get("configmaps", key);
  if (!cm) return false;
  const json data = (*cm).value("data", json::object());
  const std::string devices = data.value("CUDA_VISIBLE_DEVICES", "");
  const std::string pct = data.value("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "");
  const std::string pinned = data.value("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "");
  if (!p.start_s) p.start_s = now;  // a moved pod's execution runs from its first start
  if (p.moves > 0) p.resume_at = now + options_.restart_s;
  p.last_s = now;
  std::optional<model::NodeIndex> n;
  for (model::NodeIndex k = 0; k < mirror_.node_count(); ++k) {
    if (ApiNodeName(mirror_, k) == node) n = k;
  }
  p.node = n ? mirror_.node(*n).name : node;
  if (!n) {
    Fail(p, now, fmt::format("bound to node {}, which the cluster does not have", node));
    return true;
  }
  model::Placement placement{.workload = p.workload.id, .node = *n};
  if (!devices.empty()) {
    if (devices.find(',') != std::string::npos) {
      Fail(p, now, fmt::format("CUDA_VISIBLE_DEVICES {}: one device expected", devices));
      return true;
    }
    const std::optional<model::PartitionIndex> part = mirror_.FindPartition(devices);
    if (!part) {
      Fail(p, now, fmt::format("CUDA_VISIBLE_DEVICES {}: no such GPU or MIG instance", devices));
      return true;
    }
    const model::Partition& pt = mirror_.partition(*part);
    model::Slice slice{.partition = *part};
    slice.milli = pct.empty() ? 1000 : static_cast<int32_t>(std::lround(std::stod(pct) * 10));
    // An offline pod's MPS share is a cap in what the guaranteed clients leave, not a
    // reservation (seed 001's best-effort device plugin): its class says which it is.
    const json annotations = (*pod)["metadata"].value("annotations", json::object());
    slice.best_effort = annotations.value("tessera.io/class", "") == "offline";
    const std::optional<int64_t> limit = PinnedLimitMib(pinned);
    slice.memory_mib = limit
                           ? *limit
                           : std::min<int64_t>(pt.free_memory_mib(), p.workload.gpu.memory_mib > 0
                                                                         ? p.workload.gpu.memory_mib
                                                                         : pt.memory_mib);
    placement.slices.push_back(slice);
    p.partition = pt.uuid;
    const model::GpuModel& gm = model::GetGpuModel(mirror_.gpu(pt.gpu).model);
    p.profile = pt.whole() ? "whole" : gm.mig_profiles[pt.profile].name;
    p.milli = slice.milli;
  }
  if (auto ok = mirror_.Place(p.workload, placement); !ok) {
    Fail(p, now, "the node cannot run it: " + ok.error().message);
    return true;
  }
  p.placed = true;
  // Running at once; Ready only once its server answers (a moved pod's after its restart), as
  // a readiness probe on the inference server reports it.
  p.ready = now >= p.resume_at;
  api_.SetPodRunning(options_.ns, p.api_name, p.ready);
  return true;
}

void EmulatedKubelet::Fail(BoxPod& p, double now, const std::string& why) {
  p.failed = true;
  p.failure = why;
  p.end_s = now;
  api_.SetPodDone(options_.ns, p.api_name, false);
}

bool EmulatedKubelet::TimeVarying() const {
  return std::any_of(pods_.begin(), pods_.end(), [&](const BoxPod& p) {
    return p.running() &&
           (physics_.HasOfferedLoad(p.workload) || physics_.UsageAt(p.workload, 0).has_value());
  });
}

double EmulatedKubelet::MemoryInUse(const BoxPod& p, const model::Client& c, double now) const {
  if (p.start_s) {
    if (auto use = physics_.UsageAt(p.workload, now - *p.start_s)) return use->memory_mib;
  }
  return static_cast<double>(c.memory_mib);
}

void EmulatedKubelet::CheckMemory(double now) {
  for (model::GpuIndex g = 0; g < mirror_.gpu_count(); ++g) {
    const double memory = static_cast<double>(model::GetGpuModel(mirror_.gpu(g).model).memory_mib);
    double used = 0;
    std::vector<BoxPod*> growing;
    for (const model::Partition& pt : mirror_.partitions_of(g)) {
      for (const model::Client& c : pt.clients) {
        auto bp = std::find_if(pods_.begin(), pods_.end(),
                               [&](const BoxPod& b) { return b.workload.id == c.workload; });
        if (bp == pods_.end()) continue;
        const double use = MemoryInUse(*bp, c, now);
        used += use;
        auto last = last_use_.find(c.workload);
        if (last != last_use_.end() && use > last->second) growing.push_back(&*bp);
        last_use_[c.workload] = use;
      }
    }
    if (used <= memory) {
      over_.erase(g);
    } else if (over_.insert(g).second) {
      for (BoxPod* p : growing) ++p->oom;  // the allocation that fails is a grower's
    }
  }
}

void EmulatedKubelet::Rerate(double now) {
  physics_.SetTime(now);
  for (BoxPod& p : pods_) {
    if (!p.running()) continue;
    const model::PlacedWorkload* pw = mirror_.Find(p.workload.id);
    if (!pw) continue;
    sim::RunRate r = physics_.Rate(*pw, mirror_);
    if (r.fails) {
      (void)mirror_.Remove(p.workload.id);
      Fail(p, p.last_s, r.failure);
      continue;
    }
    p.qps = r.qps;
    rates_[p.workload.id] = r;
  }
}

void EmulatedKubelet::WriteNodeFile(model::NodeIndex n, double now) const {
  const auto it = options_.node_files.find(mirror_.node(n).name);
  if (it == options_.node_files.end()) return;
  const model::Node& node = mirror_.node(n);
  std::string y = fmt::format(
      "# written by the emulated kubelet (tests/e2e): what the pods on {} keep busy now\n"
      "node: {}\ncpu_milli: {}\nmemory_mib: {}\ntime_base: start\ngpus:\n",
      node.name, ApiNodeName(mirror_, n), node.cpu_milli, node.memory_mib);
  for (model::GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    const model::Gpu& gpu = mirror_.gpu(g);
    const model::GpuModel& gm = model::GetGpuModel(gpu.model);
    std::string processes, instances;
    double load = 0, util = 0, fb = 0;
    int clients = 0;
    for (const model::Partition& pt : mirror_.partitions_of(g)) {
      double part_util = 0, part_fb = 0;
      for (const model::Client& c : pt.clients) {
        const auto r = rates_.find(c.workload);
        const double sm = r == rates_.end() ? 0 : r->second.sm_load;
        part_util += r == rates_.end() ? 0 : r->second.gpu_busy;
        load += sm;
        ++clients;
        const auto bp = std::find_if(pods_.begin(), pods_.end(),
                                     [&](const BoxPod& b) { return b.workload.id == c.workload; });
        const double fb_used = bp != pods_.end() ? std::round(MemoryInUse(*bp, c, now))
                                                 : static_cast<double>(c.memory_mib);
        part_fb += fb_used;
        const std::optional<json> pod =
            bp != pods_.end() ? api_.Get("pods", options_.ns + "/" + bp->api_name) : std::nullopt;
        const std::string uid = pod ? (*pod)["metadata"].value("uid", "") : "";
        processes += fmt::format(
            "      - {{pid: {}, pod_uid: \"{}\"{}, script: {{points: [{{t: 0, fb_used_mib: {}, "
            "sm_active: {:.4f}}}]}}}}\n",
            1000 + c.workload, uid, pt.whole() ? "" : fmt::format(", partition: {}", pt.uuid),
            fb_used, std::min(1.0, sm));
      }
      part_util = std::min(1.0, part_util);
      util = std::max(util, part_util);
      fb += part_fb;
      if (!pt.whole()) {
        instances += fmt::format(
            "      - {{uuid: {}, gi_id: {}, script: {{points: [{{t: 0, util: {:.4f}, "
            "fb_used_mib: {}}}]}}}}\n",
            pt.uuid, pt.start + 1, part_util, part_fb);
      }
    }
    load = std::min(1.0, load);
    const double power = physics_.GpuPower(g, load, mirror_);
    y += fmt::format("  - model: {}\n    uuid: {}\n", gm.name, gpu.uuid);
    if (gpu.mig) {
      y += fmt::format("    mig: \"{}\"\n    script: {{points: [{{t: 0, power_w: {:.1f}}}]}}\n",
                       model::LayoutToString(gm, *gpu.mig), power);
      y += "    instances:\n" + instances;
    } else {
      y += fmt::format(
          "    script: {{points: [{{t: 0, util: {:.4f}, fb_used_mib: {}, power_w: {:.1f}, "
          "sm_active: {:.4f}, sm_clock_mhz: {}}}]}}\n",
          util, fb, power, load, BoostClockMhz(gm.name));
      y += clients > 0 ? fmt::format("    mps: {{server: running, clients: {}}}\n", clients)
                       : "    mps: {server: absent}\n";
    }
    y += processes.empty() ? "    processes: []\n" : "    processes:\n" + processes;
  }
  WriteAtomically(it->second, y);
}

void EmulatedKubelet::WriteExporterFile() const {
  if (options_.exporter_file.empty()) return;
  std::string text = "# TYPE nv_inference_request_success counter\n";
  for (const BoxPod& p : pods_) {
    // A container serves its metrics once its server is up: not before it started, nor while a
    // moved pod's new container starts (its counter would read as 0 QPS meanwhile).
    if (!p.start_s || (p.placed && p.last_s < p.resume_at) || (!p.placed && !p.end_s)) continue;
    text += fmt::format("nv_inference_request_success{{namespace=\"{}\",pod=\"{}\"}} {:.3f}\n",
                        options_.ns, p.api_name, p.served - p.served_before);
  }
  WriteAtomically(options_.exporter_file, text);
}

}  // namespace tessera::e2e
