#include "k8s/objects.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <type_traits>

#include "model/gpu_model.h"
#include "predict/features.h"

namespace tessera::k8s {

std::string StringMember(const nlohmann::json& object, std::string_view key, std::string fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}
namespace {

static_assert(std::is_same_v<model::AppFeatures, predict::AppFeatures>,
              "a pod's features go to the predictor as they are");

using nlohmann::json;

std::string StringAt(const json& o, std::string_view key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& ObjectAt(const json& o, std::string_view key) {
  static const json kEmpty = json::object();
  if (!o.is_object()) return kEmpty;
  auto it = o.find(key);
  return it != o.end() && it->is_object() ? *it : kEmpty;
}

// "an object", "a string": what a JSON value is, for an error naming a field of the wrong kind.
std::string_view KindOf(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

// o[key] when it is an object; kEmpty when it is absent or null (what the API server leaves
// out); an Error naming `path` when it is anything else (a pod whose resources are a string
// must not read as a pod that asks for nothing).
Expected<const json*> ObjectField(const json& o, std::string_view key, const std::string& path) {
  static const json kEmpty = json::object();
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return &kEmpty;
  if (!it->is_object()) return Fail("{} is {}, not an object", path, KindOf(*it));
  return &*it;
}

// The same for a list: nullptr when absent or null.
Expected<const json*> ArrayField(const json& o, std::string_view key, const std::string& path) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  if (!it->is_array()) return Fail("{} is {}, not an array", path, KindOf(*it));
  return &*it;
}

// Quantities may arrive as JSON strings ("500m") or, from hand-written objects, numbers.
std::optional<std::string> QuantityText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return std::nullopt;
}

std::optional<double> ParseNumber(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> SplitComma(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    std::string item(s.substr(start, end - start));
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

}  // namespace

Expected<int64_t> ParseQuantity(std::string_view text, int64_t scale) {
  static const std::pair<std::string_view, long double> kSuffixes[] = {
      {"Ki", 1024.0L},
      {"Mi", 1048576.0L},
      {"Gi", 1073741824.0L},
      {"Ti", 1099511627776.0L},
      {"Pi", 1125899906842624.0L},
      {"Ei", 1152921504606846976.0L},
      {"m", 1e-3L},
      {"k", 1e3L},
      {"M", 1e6L},
      {"G", 1e9L},
      {"T", 1e12L},
      {"P", 1e15L},
      {"E", 1e18L}};
  std::string_view number = text;
  long double multiplier = 1;
  for (const auto& [suffix, mult] : kSuffixes) {
    if (number.size() > suffix.size() && number.ends_with(suffix)) {
      number.remove_suffix(suffix.size());
      multiplier = mult;
      break;
    }
  }
  std::optional<double> v =
      number.empty() || number.front() == '+' ? std::nullopt : ParseNumber(number);
  if (!v) return Fail("'{}' is not a Kubernetes quantity", text);
  if (*v < 0) return Fail("'{}' is negative", text);
  const long double scaled = static_cast<long double>(*v) * multiplier * scale;
  if (scaled > 9.2e18L) return Fail("'{}' is too large", text);
  // Kubernetes rounds a quantity up to the unit asked for (500.5m CPU is 501 milli).
  return static_cast<int64_t>(std::ceil(scaled - 1e-9L));
}

namespace {

// A pod's requests summed: requests, with limits standing in for absent requests (the API
// server defaults extended-resource requests to their limits).
struct PodRequests {
  int64_t cpu = 0, mem = 0;
  std::map<std::string, int64_t> ext;  // in milli-units, to add fractional values exactly
};

// Adds the requests of container `c` of pod `pod_key` to `t`; `where`: "spec.containers[0]",
// for errors.
Expected<void> AddContainerRequests(const std::string& pod_key, const json& c,
                                    const std::string& where, PodRequests& t) {
  auto fail = [&](const Error& e) { return Fail("pod {}: {}", pod_key, e.message); };
  if (!c.is_object()) return Fail("pod {}: {} is {}, not an object", pod_key, where, KindOf(c));
  auto res = ObjectField(c, "resources", where + ".resources");
  if (!res) return fail(res.error());
  auto limits = ObjectField(**res, "limits", where + ".resources.limits");
  if (!limits) return fail(limits.error());
  auto requests = ObjectField(**res, "requests", where + ".resources.requests");
  if (!requests) return fail(requests.error());
  json merged = **limits;
  for (const auto& [k, v] : (*requests)->items()) merged[k] = v;
  for (const auto& [k, v] : merged.items()) {
    std::optional<std::string> text = QuantityText(v);
    if (!text) return Fail("pod {}: resource {} is not a quantity", pod_key, k);
    if (k == "cpu") {
      auto q = ParseQuantity(*text, 1000);
      if (!q) return Fail("pod {}: resource cpu: {}", pod_key, q.error().message);
      t.cpu += *q;
    } else if (k == "memory") {
      auto q = ParseQuantity(*text, 1);
      if (!q) return Fail("pod {}: resource memory: {}", pod_key, q.error().message);
      t.mem += (*q + (1 << 20) - 1) >> 20;
    } else if (k == kResourceGpuMemory) {
      // MiB when plain, bytes with a suffix ("4Gi"): summed in MiB (x1000, as the others).
      auto q = ParseQuantity(*text, 1);
      if (!q) return Fail("pod {}: resource {}: {}", pod_key, k, q.error().message);
      const bool plain = std::isdigit(static_cast<unsigned char>(text->back()));
      t.ext[k] += 1000 * (plain ? *q : (*q + (1 << 20) - 1) >> 20);
    } else {
      auto q = ParseQuantity(*text, 1000);
      if (!q) return Fail("pod {}: resource {}: {}", pod_key, k, q.error().message);
      t.ext[k] += *q;
    }
  }
  return {};
}

// The pod's requests: its containers' summed, raised to any one init container's (they run
// one at a time, before the others).
Expected<PodRequests> SumPodRequests(const std::string& pod_key, const json& spec) {
  auto fail = [&](const Error& e) { return Fail("pod {}: {}", pod_key, e.message); };
  PodRequests sum;
  auto containers = ArrayField(spec, "containers", "spec.containers");
  if (!containers) return fail(containers.error());
  auto init_containers = ArrayField(spec, "initContainers", "spec.initContainers");
  if (!init_containers) return fail(init_containers.error());
  if (*containers) {
    for (size_t i = 0; i < (*containers)->size(); ++i) {
      const std::string where = fmt::format("spec.containers[{}]", i);
      if (auto ok = AddContainerRequests(pod_key, (**containers)[i], where, sum); !ok) {
        return std::unexpected(ok.error());
      }
    }
  }
  if (*init_containers) {
    for (size_t i = 0; i < (*init_containers)->size(); ++i) {
      const std::string where = fmt::format("spec.initContainers[{}]", i);
      PodRequests init;
      if (auto ok = AddContainerRequests(pod_key, (**init_containers)[i], where, init); !ok) {
        return std::unexpected(ok.error());
      }
      sum.cpu = std::max(sum.cpu, init.cpu);
      sum.mem = std::max(sum.mem, init.mem);
      for (const auto& [k, v] : init.ext) sum.ext[k] = std::max(sum.ext[k], v);
    }
  }
  return sum;
}

// The pod's metadata: its name (namespace "default" when none), uid, version, deletion and
// annotations (strings only).
Expected<void> ReadPodMetadata(const json& meta, Pod& pod) {
  pod.namespace_ = StringAt(meta, "namespace");
  pod.name = StringAt(meta, "name");
  if (pod.namespace_.empty()) pod.namespace_ = "default";
  if (pod.name.empty()) return Fail("pod: metadata.name is missing");
  pod.uid = StringAt(meta, "uid");
  pod.resource_version = StringAt(meta, "resourceVersion");
  pod.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  auto annotations = ObjectField(meta, "annotations", "metadata.annotations");
  if (!annotations) return Fail("pod {}: {}", pod.Key(), annotations.error().message);
  for (const auto& [k, v] : (*annotations)->items()) {
    if (!v.is_string()) return Fail("pod {}: annotation {} is not a string", pod.Key(), k);
    pod.annotations[k] = v.get<std::string>();
  }
  // The owner that recreates it when it is evicted (a ReplicaSet, a StatefulSet, a Job):
  // metadata.ownerReferences' entry with controller: true.
  const json& owners = meta.contains("ownerReferences") ? meta["ownerReferences"] : json();
  if (owners.is_array()) {
    for (const json& o : owners) {
      if (o.is_object() && o.contains("controller") && o["controller"] == true) {
        pod.controller = StringAt(o, "kind") + "/" + StringAt(o, "name");
      }
    }
  }
  return {};
}

}  // namespace

namespace {

// A status's Ready condition: true when "True", false otherwise; none without one.
std::optional<bool> ReadyCondition(const json& status) {
  std::optional<bool> ready;
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& c : status["conditions"]) {
      if (StringAt(c, "type") == "Ready") ready = StringAt(c, "status") == "True";
    }
  }
  return ready;
}

}  // namespace

Expected<Pod> PodFromJson(const json& object) {
  if (!object.is_object()) return Fail("pod: not a JSON object");
  Pod pod;
  if (auto ok = ReadPodMetadata(ObjectAt(object, "metadata"), pod); !ok) {
    return std::unexpected(ok.error());
  }
  auto spec_field = ObjectField(object, "spec", "spec");
  if (!spec_field) return Fail("pod {}: {}", pod.Key(), spec_field.error().message);
  const json& spec = **spec_field;
  pod.scheduler_name = StringAt(spec, "schedulerName");
  if (pod.scheduler_name.empty()) pod.scheduler_name = "default-scheduler";
  pod.node_name = StringAt(spec, "nodeName");
  if (spec.contains("priority") && !spec["priority"].is_null()) {
    const json& p = spec["priority"];
    if (!p.is_number_integer() || p.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        p.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return Fail("pod {}: spec.priority: {} is not a 32-bit integer", pod.Key(), p.dump());
    }
    pod.priority = p.get<int>();
  }
  if (spec.contains("preemptionPolicy") && !spec["preemptionPolicy"].is_null()) {
    const json& pp = spec["preemptionPolicy"];
    if (!pp.is_string() || (pp != "PreemptLowerPriority" && pp != "Never")) {
      return Fail("pod {}: spec.preemptionPolicy: {} is not PreemptLowerPriority or Never",
                  pod.Key(), pp.dump());
    }
    pod.preempts = pp == "PreemptLowerPriority";
  }
  if (auto rules = NodeRulesFromPodSpec(spec, "pod " + pod.Key())) {
    pod.node_rules = std::move(*rules);
  } else {
    pod.rules_error = rules.error().message;
  }
  const json& status = ObjectAt(object, "status");
  pod.phase = StringAt(status, "phase");
  pod.ready = ReadyCondition(status);
  Expected<PodRequests> sum = SumPodRequests(pod.Key(), spec);
  if (!sum) return std::unexpected(sum.error());
  pod.cpu_milli = sum->cpu;
  pod.memory_mib = sum->mem;
  for (const auto& [k, milli] : sum->ext) {
    pod.extended[k] = milli % 1000 == 0 ? std::to_string(milli / 1000) : fmt::format("{}m", milli);
  }
  return pod;
}

Expected<Node> NodeFromJson(const json& object) {
  if (!object.is_object()) return Fail("node: not a JSON object");
  const json& meta = ObjectAt(object, "metadata");
  Node node;
  node.name = StringAt(meta, "name");
  if (node.name.empty()) return Fail("node: metadata.name is missing");
  node.resource_version = StringAt(meta, "resourceVersion");
  for (const auto& [k, v] : ObjectAt(meta, "labels").items()) {
    if (v.is_string()) node.labels[k] = v.get<std::string>();
  }
  const json& spec = ObjectAt(object, "spec");
  node.taints = TaintsFromNodeSpec(spec, node.taints_skipped);
  node.unschedulable = spec.contains("unschedulable") && spec["unschedulable"].is_boolean() &&
                       spec["unschedulable"].get<bool>();
  const json& status = ObjectAt(object, "status");
  node.ready = ReadyCondition(status).value_or(false);
  const json& alloc = ObjectAt(status, "allocatable");
  if (alloc.contains("cpu")) {
    auto text = QuantityText(alloc["cpu"]);
    auto q = text ? ParseQuantity(*text, 1000) : Fail("not a quantity");
    if (!q) return Fail("node {}: allocatable cpu: {}", node.name, q.error().message);
    node.cpu_milli = *q;
  }
  if (alloc.contains("memory")) {
    auto text = QuantityText(alloc["memory"]);
    auto q = text ? ParseQuantity(*text, 1) : Fail("not a quantity");
    if (!q) return Fail("node {}: allocatable memory: {}", node.name, q.error().message);
    node.memory_mib = *q >> 20;
  }
  return node;
}

namespace {

// What the GPU annotations ask for: checked against the same request made through resources.
struct AnnotatedGpu {
  std::optional<int64_t> milli, memory_mib;
};

// An annotation's parser applies its value, or fails with what the value should be (the caller
// names the pod, the annotation and the value).
using AnnotationParser = Expected<void> (*)(const std::string& value, model::Workload& w,
                                            AnnotatedGpu& gpu);

Expected<void> ParseApp(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  if (value.empty() || value.find_first_of(" \t\n") != std::string::npos) {
    return Fail("is not an application key (non-empty, no spaces)");
  }
  w.app = value;
  return {};
}

Expected<double> NonNegative(const std::string& value) {
  std::optional<double> v = ParseNumber(value);
  if (!v || *v < 0) return Fail("is not a non-negative number");
  return *v;
}

Expected<void> ParseSloQps(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  auto v = NonNegative(value);
  if (!v) return std::unexpected(v.error());
  w.slo_qps = *v;
  return {};
}

Expected<void> ParseSloLatency(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  auto v = NonNegative(value);
  if (!v) return std::unexpected(v.error());
  w.slo_latency_ms = *v;
  return {};
}

Expected<void> ParseClass(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  if (value == "online") {
    w.klass = model::WorkloadClass::kOnline;
  } else if (value == "offline") {
    w.klass = model::WorkloadClass::kOffline;
  } else {
    return Fail("is not online or offline");
  }
  return {};
}

Expected<void> ParsePriority(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  int p = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
  if (ec != std::errc() || ptr != value.data() + value.size()) return Fail("is not an integer");
  w.priority = p;
  return {};
}

Expected<void> ParseGoal(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  auto v = NonNegative(value);
  if (!v) return std::unexpected(v.error());
  w.goal_s = *v;
  return {};
}

Expected<void> ParseGoalZ(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  int z = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), z);
  if (ec != std::errc() || ptr != value.data() + value.size() || z < 1 || z > 10) {
    return Fail("is not an integer 1..10");
  }
  w.goal_z = z;
  return {};
}

Expected<void> ParseGpuModels(const std::string& value, model::Workload& w, AnnotatedGpu&) {
  for (const std::string& m : SplitComma(value)) {
    std::optional<model::GpuModelId> id = model::FindGpuModel(m);
    if (!id) return Fail("names '{}', not a catalog GPU model", m);
    w.gpu.models.push_back(*id);
  }
  return {};
}

Expected<void> ParseGpuMilli(const std::string& value, model::Workload&, AnnotatedGpu& gpu) {
  std::optional<double> v = ParseNumber(value);
  if (!v || *v < 1 || *v > 1000 || *v != std::floor(*v)) {
    return Fail("is not an integer share 1..1000");
  }
  gpu.milli = static_cast<int64_t>(*v);
  return {};
}

Expected<void> ParseGpuMemory(const std::string& value, model::Workload&, AnnotatedGpu& gpu) {
  auto q = ParseQuantity(value, 1);
  if (!q) return Fail("is not a quantity (MiB, or bytes with a suffix)");
  const bool plain = !value.empty() && std::isdigit(static_cast<unsigned char>(value.back()));
  gpu.memory_mib = plain ? *q : (*q + (1 << 20) - 1) >> 20;
  return {};
}

// `tessera.io/feature.<name>`: one feature the pod declares (predict/features.h). The errors
// quote the name or the value; the caller names the pod and the annotation.
Expected<void> ParseFeature(std::string_view name, const std::string& value, model::Workload& w) {
  if (auto ok = predict::CheckFeatureName(name); !ok) return ok;
  if (!value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                         std::isspace(static_cast<unsigned char>(value.back())))) {
    return Fail("feature value '{}' has leading or trailing spaces", value);
  }
  auto v = predict::ParseFeatureValue(value);
  if (!v) return std::unexpected(v.error());
  w.features.emplace(name, std::move(*v));
  return {};
}

// Every Tessera annotation (docs/kubernetes.md "Annotations"); any other under tessera.io/ is
// refused as a typo. The scheduler's outputs have no parser: a bound pod carries them.
constexpr std::pair<std::string_view, AnnotationParser> kAnnotations[] = {
    {kAnnotationApp, ParseApp},
    {kAnnotationSloQps, ParseSloQps},
    {kAnnotationSloLatency, ParseSloLatency},
    {kAnnotationClass, ParseClass},
    {kAnnotationPriority, ParsePriority},
    {kAnnotationGpuModels, ParseGpuModels},
    {kAnnotationGpuMilli, ParseGpuMilli},
    {kAnnotationGpuMemory, ParseGpuMemory},
    {kAnnotationGoal, ParseGoal},
    {kAnnotationGoalZ, ParseGoalZ},
    {kAnnotationQpsQuery, nullptr},  // read by the scheduler, not the workload
    {kAnnotationPlacement, nullptr},
    {kAnnotationVisibleDevices, nullptr},
    {kAnnotationThreadPercentage, nullptr},
    {kAnnotationPinnedMemLimit, nullptr},
    {kAnnotationRemoteGpus, nullptr},
};

// Applies the pod's Tessera annotations to `w`; returns the GPU share they ask for. Refuses an
// unknown annotation under tessera.io/ and a value its parser refuses.
Expected<AnnotatedGpu> ApplyAnnotations(const Pod& pod, model::Workload& w) {
  AnnotatedGpu annotated;
  for (const auto& [key, value] : pod.annotations) {
    if (!key.starts_with(kPrefix)) continue;
    if (key.starts_with(kAnnotationFeaturePrefix)) {
      const std::string_view name = std::string_view(key).substr(kAnnotationFeaturePrefix.size());
      if (auto ok = ParseFeature(name, value, w); !ok) {
        return Fail("pod {}: annotation {}: {}", pod.Key(), key, ok.error().message);
      }
      continue;
    }
    const auto* rule = std::find_if(std::begin(kAnnotations), std::end(kAnnotations),
                                    [&key](const auto& a) { return a.first == key; });
    if (rule == std::end(kAnnotations)) {
      return Fail("pod {}: annotation {}: unknown Tessera annotation (see docs/kubernetes.md)",
                  pod.Key(), key);
    }
    if (!rule->second) continue;
    if (auto ok = rule->second(value, w, annotated); !ok) {
      return Fail("pod {}: annotation {}: '{}' {}", pod.Key(), key, value, ok.error().message);
    }
  }
  return annotated;
}

// `milli` of resource `name` in whole units; refuses a fraction.
Expected<int64_t> WholeUnits(const Pod& pod, const std::string& name, int64_t milli) {
  if (milli % 1000 != 0) {
    return Fail("pod {}: resource {}: {} is not a whole number", pod.Key(), name,
                static_cast<double>(milli) / 1000);
  }
  return milli / 1000;
}

// What the GPU resources ask for as a share: milli and memory (MiB), where requested.
struct ResourceGpu {
  std::optional<int64_t> milli, memory_mib;
};

// Applies the pod's GPU resources to `w` (GPU count, MIG profile); returns the share they ask
// for. Refuses a fractional count and more than one MIG instance.
Expected<ResourceGpu> ApplyGpuResources(const Pod& pod, model::Workload& w) {
  ResourceGpu out;
  for (const auto& [name, text] : pod.extended) {
    auto q = ParseQuantity(text, 1000);
    if (!q) return Fail("pod {}: resource {}: {}", pod.Key(), name, q.error().message);
    if (name == kResourceGpu) {
      auto n = WholeUnits(pod, name, *q);
      if (!n) return std::unexpected(n.error());
      w.gpu.count += static_cast<int>(*n);
    } else if (name.starts_with(kResourceMigPrefix)) {
      auto n = WholeUnits(pod, name, *q);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) continue;
      if (*n != 1 || !w.gpu.mig_profile.empty()) {
        return Fail("pod {}: resource {}: Tessera places one MIG instance per pod", pod.Key(),
                    name);
      }
      w.gpu.mig_profile = name.substr(kResourceMigPrefix.size());
    } else if (name == kResourceGpuMilli) {
      auto n = WholeUnits(pod, name, *q);
      if (!n) return std::unexpected(n.error());
      out.milli = *n;
    } else if (name == kResourceGpuMemory) {
      out.memory_mib = (*q + 999) / 1000;  // PodFromJson summed it in MiB
    }
  }
  return out;
}

// Sets `w`'s GPU share from the resources or the annotations (never both), a MIG instance
// counting as one GPU and a share implying one GPU.
Expected<void> ApplyGpuShare(const Pod& pod, const AnnotatedGpu& annotated,
                             const ResourceGpu& resources, model::Workload& w) {
  if (resources.milli && annotated.milli) {
    return Fail("pod {}: annotation {}: the share is also requested as a resource", pod.Key(),
                kAnnotationGpuMilli);
  }
  if (resources.memory_mib && annotated.memory_mib) {
    return Fail("pod {}: annotation {}: GPU memory is also requested as a resource", pod.Key(),
                kAnnotationGpuMemory);
  }
  if (!w.gpu.mig_profile.empty()) {
    if (w.gpu.count > 0) {
      return Fail("pod {}: resource {}{}: cannot be combined with {}", pod.Key(),
                  kResourceMigPrefix, w.gpu.mig_profile, kResourceGpu);
    }
    w.gpu.count = 1;
  }
  const std::optional<int64_t> milli = resources.milli ? resources.milli : annotated.milli;
  const std::optional<int64_t> memory =
      resources.memory_mib ? resources.memory_mib : annotated.memory_mib;
  if (milli) {
    if (*milli < 1 || *milli > 1000) {
      return Fail("pod {}: {}: {} is outside 1..1000", pod.Key(), kResourceGpuMilli, *milli);
    }
    if (w.gpu.count == 0) w.gpu.count = 1;
    w.gpu.milli = static_cast<int>(*milli);
  }
  if (memory) {
    if (w.gpu.count == 0) w.gpu.count = 1;
    w.gpu.memory_mib = *memory;
  }
  return {};
}

}  // namespace

Expected<model::Workload> WorkloadFromPod(const Pod& pod, model::WorkloadId id) {
  model::Workload w;
  w.id = id;
  w.name = pod.Key();
  w.cpu_milli = pod.cpu_milli;
  w.memory_mib = pod.memory_mib;
  w.priority = pod.priority;  // the tessera.io/priority annotation, when set, overrides it
  Expected<AnnotatedGpu> annotated = ApplyAnnotations(pod, w);
  if (!annotated) return std::unexpected(annotated.error());
  Expected<ResourceGpu> resources = ApplyGpuResources(pod, w);
  if (!resources) return std::unexpected(resources.error());
  if (auto ok = ApplyGpuShare(pod, *annotated, *resources, w); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = w.Validate(); !ok) {
    return Fail("pod {}: {}", pod.Key(), ok.error().message);
  }
  return w;
}

}  // namespace tessera::k8s
