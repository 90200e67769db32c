#include "agent/fake_backend.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string_view>

#include "model/cluster.h"
#include "model/gpu_model.h"
#include "model/mig.h"

namespace tessera::agent {
namespace {

// The (t, value) steps of one field: the points that set it.
std::vector<std::pair<double, double>> Steps(const Script& s,
                                             std::optional<double> Script::Point::*field) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : s.points) {
    if (p.*field) out.emplace_back(p.t, *(p.*field));
  }
  return out;
}

// ∫ from steps[0].t to x of the held step function (negative below the first step).
double HoldIntegral(const std::vector<std::pair<double, double>>& steps, double x) {
  if (x <= steps[0].first) return (x - steps[0].first) * steps[0].second;
  double sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const double a = steps[i].first;
    const double b = i + 1 < steps.size() ? steps[i + 1].first : INFINITY;
    if (x <= a) break;
    sum += (std::min(x, b) - a) * steps[i].second;
  }
  return sum;
}

// Internal to parsing: thrown with the YAML mark, caught at the edge of ParseFakeNode.
struct BadFile {
  int line;  // 0-based, from yaml-cpp
  std::string what;
};

YAML::Node Need(const YAML::Node& map, const char* key, const YAML::Node& where) {
  if (!map[key]) throw BadFile{where.Mark().line, std::string("missing '") + key + "'"};
  return map[key];
}

template <typename T>
T As(const YAML::Node& n, const char* what) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw BadFile{n.Mark().line, std::string("'") + what + "' has the wrong type"};
  }
}

// A typo in a key ("utl", "cpu_mili") would otherwise be ignored and its value with it.
void OnlyKeys(const YAML::Node& map, std::initializer_list<std::string_view> known) {
  if (!map.IsMap()) return;
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>("");
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw BadFile{entry.first.Mark().line, "unknown key '" + key + "' (known: " + list + ")"};
  }
}

// A number that is one: .nan and .inf parse as doubles but no reading or time is either.
double Finite(const YAML::Node& n, const char* key) {
  const double v = As<double>(n, key);
  if (!std::isfinite(v))
    throw BadFile{n.Mark().line, std::string(key) + " must be a finite number"};
  return v;
}

template <typename T>
T NonNegative(const YAML::Node& n, const char* key) {
  const T v = As<T>(n, key);
  if (v < 0) {
    throw BadFile{n.Mark().line,
                  std::string(key) + " " + std::to_string(v) + " must not be negative"};
  }
  return v;
}

std::optional<double> OptionalNumber(const YAML::Node& point, const char* key) {
  if (!point[key]) return std::nullopt;
  return Finite(point[key], key);
}

// Whose script it is: which point keys it takes.
enum class ScriptOf { kGpu, kInstance, kProcess };

// A share of time, 0..1; NaN fails every comparison: it is tested for, not left to a range check.
std::optional<double> Share(const YAML::Node& point, const char* key) {
  if (!point[key]) return std::nullopt;
  const double v = As<double>(point[key], key);
  if (!(v >= 0 && v <= 1)) throw BadFile{point.Mark().line, std::string(key) + " must lie in 0..1"};
  return v;
}

// `memory_mib` and `what` ("the GPU", "MIG instance 1g.5gb"): the most fb_used_mib may be.
Script ParseScript(const YAML::Node& n, int64_t memory_mib, const std::string& what,
                   ScriptOf of = ScriptOf::kGpu) {
  Script s;
  if (!n) return s;
  if (!n.IsMap()) throw BadFile{n.Mark().line, "a script is a map with 'points'"};
  OnlyKeys(n, {"repeat", "period_s", "points"});
  const std::string repeat = n["repeat"] ? As<std::string>(n["repeat"], "repeat") : "hold";
  if (repeat != "hold" && repeat != "loop") {
    throw BadFile{n["repeat"].Mark().line, "repeat must be 'hold' or 'loop'"};
  }
  s.loop = repeat == "loop";
  const YAML::Node points = Need(n, "points", n);
  if (!points.IsSequence() || points.size() == 0) {
    throw BadFile{points.Mark().line, "'points' must be a non-empty list"};
  }
  for (const auto& p : points) {
    switch (of) {
      case ScriptOf::kGpu:
        OnlyKeys(
            p, {"t", "util", "fb_used_mib", "power_w", "sm_active", "dram_active", "sm_clock_mhz"});
        break;
      case ScriptOf::kInstance:  // the clock is the GPU's
        OnlyKeys(p, {"t", "util", "fb_used_mib", "power_w", "sm_active", "dram_active"});
        break;
      case ScriptOf::kProcess:
        OnlyKeys(p, {"t", "fb_used_mib", "sm_active", "dram_active"});
        break;
    }
    Script::Point pt;
    pt.t = Finite(Need(p, "t", p), "t");
    pt.util = Share(p, "util");
    pt.sm_active = Share(p, "sm_active");
    pt.dram_active = Share(p, "dram_active");
    pt.fb_used_mib = OptionalNumber(p, "fb_used_mib");
    pt.power_w = OptionalNumber(p, "power_w");
    pt.sm_clock_mhz = OptionalNumber(p, "sm_clock_mhz");
    if (pt.sm_clock_mhz && *pt.sm_clock_mhz < 0) {
      throw BadFile{p.Mark().line, "sm_clock_mhz must not be negative"};
    }
    if (pt.fb_used_mib && *pt.fb_used_mib < 0) {
      throw BadFile{p.Mark().line, "fb_used_mib must not be negative"};
    }
    if (pt.fb_used_mib && *pt.fb_used_mib > static_cast<double>(memory_mib)) {
      throw BadFile{p.Mark().line, fmt::format("fb_used_mib {} exceeds the {} MiB of {}",
                                               *pt.fb_used_mib, memory_mib, what)};
    }
    if (pt.power_w && *pt.power_w < 0) throw BadFile{p.Mark().line, "power_w must not be negative"};
    if (!s.points.empty() && pt.t <= s.points.back().t) {
      throw BadFile{p.Mark().line, "point times must increase"};
    }
    s.points.push_back(pt);
  }
  if (s.loop) {
    s.period_s = Finite(Need(n, "period_s", n), "period_s");
    if (s.period_s <= s.points.back().t - s.points.front().t) {
      throw BadFile{n["period_s"].Mark().line, "period_s must exceed the span of the points"};
    }
  }
  return s;
}

// One MPS state: `server` (running | hung | absent) and `clients` (default 0).
MpsSample ParseMpsState(const YAML::Node& n) {
  const YAML::Node server = Need(n, "server", n);
  const std::string text = As<std::string>(server, "server");
  MpsSample s;
  if (text == "running" || text == "hung") {
    s.server = true;
    s.responsive = text == "running";
  } else if (text == "absent") {
    s.server = false;
  } else {
    throw BadFile{server.Mark().line, "server '" + text + "' is not one of running, hung, absent"};
  }
  if (n["clients"]) s.clients = NonNegative<int>(n["clients"], "clients");
  if (!*s.server && s.clients > 0) {
    throw BadFile{n["clients"].Mark().line,
                  fmt::format("{} clients need a server (server: absent)", s.clients)};
  }
  return s;
}

// `mps:` either one state ({server, clients}) or a timeline ({repeat, period_s, points}).
MpsScript ParseMps(const YAML::Node& n) {
  MpsScript m;
  if (!n.IsMap()) throw BadFile{n.Mark().line, "'mps' is a map: {server, clients} or {points}"};
  if (!n["points"]) {
    OnlyKeys(n, {"server", "clients"});
    m.points.push_back({0, ParseMpsState(n)});
    return m;
  }
  OnlyKeys(n, {"repeat", "period_s", "points"});
  const std::string repeat = n["repeat"] ? As<std::string>(n["repeat"], "repeat") : "hold";
  if (repeat != "hold" && repeat != "loop") {
    throw BadFile{n["repeat"].Mark().line, "repeat must be 'hold' or 'loop'"};
  }
  m.loop = repeat == "loop";
  const YAML::Node points = n["points"];
  if (!points.IsSequence() || points.size() == 0) {
    throw BadFile{points.Mark().line, "'points' must be a non-empty list"};
  }
  for (const auto& p : points) {
    OnlyKeys(p, {"t", "server", "clients"});
    MpsScript::Point pt;
    pt.t = Finite(Need(p, "t", p), "t");
    pt.state = ParseMpsState(p);
    if (!m.points.empty() && pt.t <= m.points.back().t) {
      throw BadFile{p.Mark().line, "point times must increase"};
    }
    m.points.push_back(pt);
  }
  if (m.loop) {
    m.period_s = Finite(Need(n, "period_s", n), "period_s");
    if (m.period_s <= m.points.back().t - m.points.front().t) {
      throw BadFile{n["period_s"].Mark().line, "period_s must exceed the span of the points"};
    }
  }
  return m;
}

// `processes:` of a GPU whose partitions are known: each on one of them, within its memory.
std::vector<FakeProcess> ParseProcesses(const YAML::Node& n, const store::GpuInventory& inv) {
  std::vector<FakeProcess> out;
  if (!n) return out;
  if (!n.IsSequence()) throw BadFile{n.Mark().line, "'processes' must be a list"};
  for (const auto& e : n) {
    if (!e.IsMap()) throw BadFile{e.Mark().line, "a process is a map with 'pid'"};
    OnlyKeys(e, {"pid", "pod_uid", "partition", "script"});
    FakeProcess proc;
    const YAML::Node pid = Need(e, "pid", e);
    const int64_t value = NonNegative<int64_t>(pid, "pid");
    if (value == 0 || value > UINT32_MAX) {
      throw BadFile{pid.Mark().line, fmt::format("pid {} is not a process id", value)};
    }
    proc.pid = static_cast<uint32_t>(value);
    if (e["pod_uid"]) proc.pod_uid = As<std::string>(e["pod_uid"], "pod_uid");
    const store::PartitionInventory* part = nullptr;
    if (e["partition"]) {
      proc.partition_uuid = As<std::string>(e["partition"], "partition");
      for (const auto& p : inv.partitions) {
        if (p.uuid == proc.partition_uuid) part = &p;
      }
      if (part == nullptr) {
        std::string known;
        for (const auto& p : inv.partitions) known += (known.empty() ? "" : ", ") + p.uuid;
        throw BadFile{e["partition"].Mark().line, "partition '" + proc.partition_uuid +
                                                      "' is not one of this GPU's (" + known + ")"};
      }
    } else if (inv.mig_enabled) {
      throw BadFile{e.Mark().line,
                    "a process on a MIG GPU needs 'partition': one of its instances"};
    } else {
      part = &inv.partitions[0];
      proc.partition_uuid = part->uuid;
    }
    const std::string what = inv.mig_enabled ? "MIG instance " + part->profile : "the GPU";
    proc.script = ParseScript(e["script"], part->memory_mib, what, ScriptOf::kProcess);
    out.push_back(std::move(proc));
  }
  return out;
}

FakeGpu ParseGpu(const YAML::Node& g, int index, const std::string& node) {
  OnlyKeys(g, {"model", "product_name", "uuid", "lost", "mig", "script", "instances", "mps",
               "processes"});
  FakeGpu out;
  store::GpuInventory& inv = out.inventory;
  inv.index = index;
  const YAML::Node model_node = Need(g, "model", g);
  const std::string model_name = As<std::string>(model_node, "model");
  const auto id = model::FindGpuModel(model_name);
  if (!id) throw BadFile{model_node.Mark().line, "unknown GPU model '" + model_name + "'"};
  const model::GpuModel& m = model::GetGpuModel(*id);
  inv.model = m.name;
  inv.product_name = g["product_name"] ? As<std::string>(g["product_name"], "product_name")
                     : model_name.starts_with("NVIDIA ") ? model_name
                                                         : "NVIDIA " + model_name;
  inv.uuid = g["uuid"] ? As<std::string>(g["uuid"], "uuid")
                       : model::MakeUuid("GPU", node + "/" + std::to_string(index));
  inv.memory_mib = m.memory_mib;
  inv.lost = g["lost"] ? As<bool>(g["lost"], "lost") : false;
  out.script = ParseScript(g["script"], inv.memory_mib, "the GPU");
  if (g["mps"]) {
    // MPS inside MIG instances runs one server per instance, which the fake does not model.
    if (g["mig"]) {
      throw BadFile{g["mps"].Mark().line,
                    "'mps' describes a whole GPU's MPS server; this GPU has MIG on"};
    }
    out.mps = ParseMps(g["mps"]);
  }
  if (!g["mig"]) {
    inv.partitions = {{inv.uuid, "", -1, 0, inv.memory_mib}};
    out.processes = ParseProcesses(g["processes"], inv);
    out.processes_listed = static_cast<bool>(g["processes"]);
    return out;
  }
  const std::string text = As<std::string>(g["mig"], "mig");
  auto layout = model::ParseLayout(m, text);
  if (!layout) throw BadFile{g["mig"].Mark().line, layout.error().message};
  model::Normalize(*layout);
  if (auto ok = model::ValidateLayout(m, *layout); !ok) {
    throw BadFile{g["mig"].Mark().line, ok.error().message};
  }
  inv.mig_enabled = true;
  const YAML::Node instances = g["instances"];
  if (instances && (!instances.IsSequence() || instances.size() != layout->instances.size())) {
    throw BadFile{instances.Mark().line,
                  "'instances' must list one entry per MIG instance, in start order (" +
                      std::to_string(layout->instances.size()) + ")"};
  }
  for (size_t i = 0; i < layout->instances.size(); ++i) {
    const model::MigProfile& prof = m.mig_profiles[layout->instances[i].profile];
    store::PartitionInventory p;
    p.profile = prof.name;
    p.start = layout->instances[i].start;
    p.memory_mib = prof.memory_mib;
    p.gi_id = static_cast<int>(i) + 1;
    p.uuid = model::MakeUuid("MIG", inv.uuid + "/" + prof.name + "@" + std::to_string(p.start));
    Script script;
    if (instances) {
      const YAML::Node& e = instances[i];
      OnlyKeys(e, {"uuid", "gi_id", "script"});
      if (e["uuid"]) p.uuid = As<std::string>(e["uuid"], "uuid");
      if (e["gi_id"]) p.gi_id = NonNegative<int>(e["gi_id"], "gi_id");
      script =
          ParseScript(e["script"], p.memory_mib, "MIG instance " + prof.name, ScriptOf::kInstance);
    }
    inv.partitions.push_back(std::move(p));
    out.instances.push_back(std::move(script));
  }
  out.processes = ParseProcesses(g["processes"], inv);
  out.processes_listed = static_cast<bool>(g["processes"]);
  return out;
}

// t folded into the first period of a script that loops from t0.
double Fold(double t, double t0, double period_s) {
  return t0 + std::fmod(std::fmod(t - t0, period_s) + period_s, period_s);
}

}  // namespace

std::optional<double> Script::At(double t, std::optional<double> Point::*field) const {
  const auto steps = Steps(*this, field);
  if (steps.empty()) return std::nullopt;
  if (loop) t = Fold(t, points.front().t, period_s);
  double v = steps[0].second;
  for (const auto& [at, value] : steps) {
    if (at > t) break;
    v = value;
  }
  return v;
}

std::optional<MpsSample> MpsScript::At(double t) const {
  if (points.empty()) return std::nullopt;
  if (loop) t = Fold(t, points.front().t, period_s);
  MpsSample s = points.front().state;  // before the first point, the first holds
  for (const Point& p : points) {
    if (p.t > t) break;
    s = p.state;
  }
  return s;
}

double Script::Integral(double from, double to, std::optional<double> Point::*field) const {
  const auto steps = Steps(*this, field);
  if (steps.empty()) return 0;
  auto antiderivative = [&](double x) {
    if (!loop) return HoldIntegral(steps, x);
    const double t0 = points.front().t;
    const double cycles = std::floor((x - t0) / period_s);
    const double inside = x - cycles * period_s;
    return cycles * HoldIntegral(steps, t0 + period_s) + HoldIntegral(steps, inside);
  };
  return antiderivative(to) - antiderivative(from);
}

Expected<FakeNode> ParseFakeNode(const std::string& text, const std::string& file) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return FailAt(file, 1, "a fake node file is a YAML map");
    OnlyKeys(root, {"node", "cpu_milli", "memory_mib", "time_base", "gpus"});
    FakeNode node;
    node.node = As<std::string>(Need(root, "node", root), "node");
    // Negative is refused, not read as "absent" (the host's own CPUs and memory stood in).
    node.cpu_milli = root["cpu_milli"] ? NonNegative<int64_t>(root["cpu_milli"], "cpu_milli") : 0;
    node.memory_mib =
        root["memory_mib"] ? NonNegative<int64_t>(root["memory_mib"], "memory_mib") : 0;
    const std::string base =
        root["time_base"] ? As<std::string>(root["time_base"], "time_base") : "start";
    if (base != "start" && base != "epoch") {
      throw BadFile{root["time_base"].Mark().line, "time_base must be 'start' or 'epoch'"};
    }
    node.epoch_time = base == "epoch";
    const YAML::Node gpus = Need(root, "gpus", root);
    if (!gpus.IsSequence()) throw BadFile{gpus.Mark().line, "'gpus' must be a list"};
    for (size_t i = 0; i < gpus.size(); ++i) {
      node.gpus.push_back(ParseGpu(gpus[i], static_cast<int>(i), node.node));
    }
    store::NodeInventory check{.node = node.node};
    for (const auto& g : node.gpus) check.gpus.push_back(g.inventory);
    if (auto ok = store::Validate(check); !ok) return FailAt(file, 1, ok.error().message);
    return node;
  } catch (const BadFile& e) {
    return FailAt(file, e.line + 1, e.what);
  } catch (const YAML::Exception& e) {
    return FailAt(file, e.mark.line + 1, e.msg);
  }
}

Expected<std::unique_ptr<FakeBackend>> FakeBackend::Load(std::string path, const Clock& clock,
                                                         double unix_at_start) {
  std::unique_ptr<FakeBackend> b(new FakeBackend(std::move(path), clock, unix_at_start));
  if (auto ok = b->Reload(); !ok) return std::unexpected(ok.error());
  return b;
}

Expected<void> FakeBackend::Reload() {
  std::ifstream in(path_);
  if (!in) return Fail("{}: cannot read the fake GPU file", path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // An unchanged file is not parsed again; one that is still broken is still an error (the
  // agent logs a message once and "recovered" only after a reload that succeeded).
  if (last_text_ && text == *last_text_) {
    if (last_error_) return std::unexpected(*last_error_);
    return {};
  }
  auto parsed = ParseFakeNode(text, path_);
  last_text_ = std::move(text);
  if (!parsed) {
    last_error_ = parsed.error();
    return std::unexpected(parsed.error());
  }
  last_error_.reset();
  node_ = std::move(*parsed);
  return {};
}

MigResult<FakeGpu*> FakeBackend::MigGpu(const store::GpuInventory& gpu) {
  for (FakeGpu& g : node_.gpus) {
    if (g.inventory.index != gpu.index) continue;
    if (g.inventory.uuid != gpu.uuid) {
      return std::unexpected(
          MigError{MigFault::kOther,
                   fmt::format("GPU {} is now {}, not {}", gpu.index, g.inventory.uuid, gpu.uuid)});
    }
    if (!g.inventory.mig_enabled || !model::FindGpuModel(g.inventory.model)) {
      return std::unexpected(
          MigError{MigFault::kNotSupported,
                   fmt::format("GPU {} has MIG mode off or no catalog model", gpu.uuid)});
    }
    return &g;
  }
  return std::unexpected(
      MigError{MigFault::kGpuLost, fmt::format("GPU {} is not in {}", gpu.uuid, path_)});
}

namespace {

const model::MigProfile* ProfileById(const model::GpuModel& m, int gi_profile_id) {
  for (const model::MigProfile& p : m.mig_profiles) {
    if (p.gi_profile_id == gi_profile_id) return &p;
  }
  return nullptr;
}
// Memory slices of the instance `p` (1 for a profile the catalog lacks: the file's own).
int MemorySlices(const model::GpuModel& m, const store::PartitionInventory& p) {
  const std::optional<int> i = m.FindProfile(p.profile);
  return i ? m.mig_profiles[static_cast<size_t>(*i)].memory_slices : 1;
}

}  // namespace

MigResult<std::vector<MigInstanceState>> FakeBackend::ListInstances(
    const store::GpuInventory& gpu) {
  MigResult<FakeGpu*> g = MigGpu(gpu);
  if (!g) return std::unexpected(g.error());
  const model::GpuModel& m = model::GetGpuModel(*model::FindGpuModel((*g)->inventory.model));
  std::vector<MigInstanceState> out;
  for (const store::PartitionInventory& p : (*g)->inventory.partitions) {
    const std::optional<int> prof = m.FindProfile(p.profile);
    int processes = 0;
    for (const FakeProcess& proc : (*g)->processes) processes += proc.partition_uuid == p.uuid;
    out.push_back(
        {.gi_id = p.gi_id,
         .profile_id = prof ? m.mig_profiles[static_cast<size_t>(*prof)].gi_profile_id : -1,
         .start = p.start,
         .compute_instances = 1,
         .processes = processes});
  }
  return out;
}

MigResult<int> FakeBackend::CreateInstance(const store::GpuInventory& gpu, int profile_id,
                                           int start, int memory_slices, int compute_slices) {
  MigResult<FakeGpu*> found = MigGpu(gpu);
  if (!found) return std::unexpected(found.error());
  FakeGpu& g = **found;
  const model::GpuModel& m = model::GetGpuModel(*model::FindGpuModel(g.inventory.model));
  const model::MigProfile* prof = ProfileById(m, profile_id);
  if (prof == nullptr || prof->memory_slices != memory_slices ||
      prof->compute_slices != compute_slices ||
      std::find(prof->starts.begin(), prof->starts.end(), start) == prof->starts.end()) {
    return std::unexpected(MigError{
        MigFault::kInvalid, fmt::format("GPU {}: no GPU-instance profile {} ({} slices) at {}",
                                        gpu.uuid, profile_id, memory_slices, start)});
  }
  int next_gi = 1;
  auto at = g.inventory.partitions.begin();
  for (auto it = g.inventory.partitions.begin(); it != g.inventory.partitions.end(); ++it) {
    const int end = it->start + MemorySlices(m, *it);
    if (start < end && it->start < start + memory_slices) {
      return std::unexpected(MigError{
          MigFault::kInsufficientResources,
          fmt::format("GPU {}: slices {}..{} overlap instance {} ({} at {})", gpu.uuid, start,
                      start + memory_slices - 1, it->gi_id, it->profile, it->start)});
    }
    next_gi = std::max(next_gi, it->gi_id + 1);
    if (it->start < start) at = it + 1;
  }
  const auto i = at - g.inventory.partitions.begin();
  // A fresh uuid for every instance made, as NVML's are: never one a destroyed instance had.
  g.inventory.partitions.insert(at, {fmt::format("MIG-{}-{}", gpu.uuid, ++created_), prof->name,
                                     next_gi, start, prof->memory_mib});
  g.instances.insert(g.instances.begin() + i, Script{});
  return next_gi;
}

MigResult<void> FakeBackend::DestroyInstance(const store::GpuInventory& gpu, int gi_id) {
  MigResult<FakeGpu*> found = MigGpu(gpu);
  if (!found) return std::unexpected(found.error());
  FakeGpu& g = **found;
  auto& parts = g.inventory.partitions;
  auto it = std::find_if(parts.begin(), parts.end(),
                         [&](const store::PartitionInventory& p) { return p.gi_id == gi_id; });
  if (it == parts.end()) {
    return std::unexpected(MigError{MigFault::kInvalid,
                                    fmt::format("GPU {} has no GPU instance {}", gpu.uuid, gi_id)});
  }
  for (const FakeProcess& proc : g.processes) {
    if (proc.partition_uuid == it->uuid) {
      return std::unexpected(
          MigError{MigFault::kBusy, fmt::format("GPU {}: process {} runs on instance {} ({})",
                                                gpu.uuid, proc.pid, gi_id, it->uuid)});
    }
  }
  g.instances.erase(g.instances.begin() + (it - parts.begin()));
  parts.erase(it);
  return {};
}

double FakeBackend::ScriptTime(double clock_time) const {
  return (clock_time - t0_) + (node_.epoch_time ? unix_at_start_ : 0);
}

Expected<std::vector<store::GpuInventory>> FakeBackend::Discover() {
  if (auto ok = Reload(); !ok) return std::unexpected(ok.error());
  std::vector<store::GpuInventory> out;
  for (const auto& g : node_.gpus) out.push_back(g.inventory);
  return out;
}

Expected<std::vector<GpuSample>> FakeBackend::Sample(const std::vector<store::GpuInventory>& gpus) {
  const double now = ScriptTime(clock_.Now());
  const double start = ScriptTime(t0_);
  std::vector<GpuSample> out;
  for (const auto& inv : gpus) {
    GpuSample s;
    const FakeGpu* g = nullptr;
    for (const auto& f : node_.gpus) {
      if (f.inventory.uuid == inv.uuid && f.inventory.partitions == inv.partitions) g = &f;
    }
    if (g == nullptr || inv.lost) {  // no longer described (or lost): nothing to read
      s.partitions.resize(inv.partitions.size());
      out.push_back(std::move(s));
      continue;
    }
    using P = Script::Point;
    s.mps = g->mps.At(now);
    s.power_w = g->script.At(now, &P::power_w);
    if (s.power_w) s.energy_mj = 1000 * g->script.Integral(start, now, &P::power_w);
    auto partition = [&](const Script& script, int64_t memory_mib) {
      PartitionSample p;
      p.activity = script.At(now, &P::util);
      p.fb_used_mib = script.At(now, &P::fb_used_mib);
      if (p.fb_used_mib) p.fb_free_mib = static_cast<double>(memory_mib) - *p.fb_used_mib;
      p.sm_active = script.At(now, &P::sm_active);
      p.dram_active = script.At(now, &P::dram_active);
      return p;
    };
    s.sm_clock_mhz = g->script.At(now, &P::sm_clock_mhz);
    s.processes_listed = g->processes_listed;
    for (const FakeProcess& f : g->processes) {
      s.processes.push_back({.pid = f.pid,
                             .partition_uuid = f.partition_uuid,
                             .fb_used_mib = f.script.At(now, &P::fb_used_mib),
                             .sm = f.script.At(now, &P::sm_active),
                             .dram = f.script.At(now, &P::dram_active),
                             .pod_uid = f.pod_uid});
    }
    if (!inv.mig_enabled) {
      s.partitions.push_back(partition(g->script, inv.memory_mib));
      if (s.partitions[0].activity) s.gpu_util_pct = 100 * *s.partitions[0].activity;
    } else {
      for (size_t i = 0; i < inv.partitions.size(); ++i) {
        s.partitions.push_back(partition(g->instances[i], inv.partitions[i].memory_mib));
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera::agent
