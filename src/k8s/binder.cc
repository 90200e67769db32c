#include "k8s/binder.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "k8s/leader.h"
#include "k8s/objects.h"

namespace tessera::k8s {

using nlohmann::json;

std::string PodPath(std::string_view ns, std::string_view name) {
  return "/api/v1/namespaces/" + UrlEscape(ns) + "/pods/" + UrlEscape(name);
}

Binder::Binder(ApiClient& api, store::Store& store, std::string component)
    : api_(api), store_(store), component_(std::move(component)) {}

Expected<void> Binder::PutConfigMap(const PodRef& pod, const model::Environment& env) {
  json data = json::object();
  for (const auto& [k, v] : env.Variables()) data[k] = v;
  json cm = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", pod.name},
        {"namespace", pod.namespace_},
        {"labels", {{"app.kubernetes.io/managed-by", "tessera"}}},
        {"ownerReferences",
         json::array(
             {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.name}, {"uid", pod.uid}}})}}},
      {"data", data}};
  const std::string base = "/api/v1/namespaces/" + UrlEscape(pod.namespace_) + "/configmaps";
  auto made = api_.Post(base, cm.dump());
  if (!made) return std::unexpected(made.error());
  if (made->ok()) return {};
  if (made->status != 409) {
    return Fail("ConfigMap {}/{}: create answered {}", pod.namespace_, pod.name, made->status);
  }
  // It exists (an earlier attempt, or a previous pod of that name): update it in place.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto got = api_.Get(base + "/" + UrlEscape(pod.name));
    if (!got) return std::unexpected(got.error());
    if (!got->ok()) {
      return Fail("ConfigMap {}/{}: get answered {}", pod.namespace_, pod.name, got->status);
    }
    json old = json::parse(got->body, nullptr, false);
    if (old.is_discarded() || !old.is_object()) {
      return Fail("ConfigMap {}/{}: not a JSON object", pod.namespace_, pod.name);
    }
    cm["metadata"]["resourceVersion"] = StringMember(old["metadata"], "resourceVersion");
    auto put = api_.Put(base + "/" + UrlEscape(pod.name), cm.dump());
    if (!put) return std::unexpected(put.error());
    if (put->ok()) return {};
    if (put->status != 409) {
      return Fail("ConfigMap {}/{}: update answered {}", pod.namespace_, pod.name, put->status);
    }
  }
  return Fail("ConfigMap {}/{}: update kept conflicting", pod.namespace_, pod.name);
}

void Binder::ClearAnnotations(const PodRef& pod) {
  json patch = {{"metadata",
                 {{"annotations",
                   {{std::string(kAnnotationPlacement), nullptr},
                    {std::string(kAnnotationVisibleDevices), nullptr},
                    {std::string(kAnnotationThreadPercentage), nullptr},
                    {std::string(kAnnotationPinnedMemLimit), nullptr},
                    {std::string(kAnnotationRemoteGpus), nullptr}}}}}};
  auto r = api_.Patch(PodPath(pod.namespace_, pod.name), patch.dump());
  if (!r || (!r->ok() && r->status != 404)) {
    spdlog::warn("pod {}/{}: could not clear the placement annotations", pod.namespace_, pod.name);
  }
}

Expected<void> Binder::Bind(const PodRef& pod, const store::PlacementRecord& record,
                            const model::Environment& env, const std::function<bool()>& may_bind) {
  const std::string who = pod.namespace_ + "/" + pod.name;
  if (may_bind && !may_bind()) return Fail("pod {}: not the leader any more", who);
  if (auto ok = PutConfigMap(pod, env); !ok) return ok;

  auto put = store_.PutPlacement(record);
  if (!put) return Fail("pod {}: store: {}", who, put.error().message);
  if (!put->applied) return Fail("pod {}: the store refused the placement: {}", who, put->refusal);
  auto undo_store = [&] {
    if (auto r = store_.RemovePlacement(record.workload); !r) {
      spdlog::error("pod {}: could not undo its store placement: {}", who, r.error().message);
    }
  };

  json ann = {{std::string(kAnnotationPlacement), store::ToJson(record)},
              {std::string(kAnnotationVisibleDevices), env.cuda_visible_devices}};
  if (env.mps_active_thread_percentage) {
    ann[std::string(kAnnotationThreadPercentage)] =
        std::to_string(*env.mps_active_thread_percentage);
  }
  if (env.mps_pinned_mem_limit)
    ann[std::string(kAnnotationPinnedMemLimit)] = *env.mps_pinned_mem_limit;
  if (!env.remote_gpus.empty()) ann[std::string(kAnnotationRemoteGpus)] = env.RemoteGpusText();
  json patch = {{"metadata", {{"annotations", ann}}}};
  if (!pod.uid.empty()) patch["metadata"]["uid"] = pod.uid;  // precondition: the same pod
  auto annotated = api_.Patch(PodPath(pod.namespace_, pod.name), patch.dump());
  if (!annotated || !annotated->ok()) {
    undo_store();
    if (!annotated) return Fail("pod {}: annotate: {}", who, annotated.error().message);
    return Fail("pod {}: annotate answered {}", who, annotated->status);
  }

  auto undo = [&] {
    undo_store();
    ClearAnnotations(pod);
  };
  if (may_bind && !may_bind()) {
    undo();
    return Fail("pod {}: not the leader any more", who);
  }
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", record.node}}}};
  if (!pod.uid.empty()) binding["metadata"]["uid"] = pod.uid;
  auto bound = api_.Post(PodPath(pod.namespace_, pod.name) + "/binding", binding.dump());
  if (bound && bound->ok()) return {};
  if (bound && bound->status == 409) {
    if (auto got = api_.Get(PodPath(pod.namespace_, pod.name)); got && got->ok()) {
      json p = json::parse(got->body, nullptr, false);
      if (!p.is_discarded() && p.contains("spec") &&
          StringMember(p["spec"], "nodeName") == record.node) {
        return {};  // our own earlier attempt got through
      }
    }
  }
  undo();
  if (!bound) return Fail("pod {}: bind: {}", who, bound.error().message);
  return Fail("pod {}: bind to {} answered {}", who, record.node, bound->status);
}

void Binder::PostEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                       std::string_view message) {
  static std::atomic<uint64_t> counter{0};
  const auto ns_now = std::chrono::system_clock::now().time_since_epoch().count();
  const std::string stamp = MicroTimeNow();
  const std::string ts = stamp.substr(0, 19) + "Z";
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata",
              {{"name", fmt::format("{}.{:x}{:x}", pod.name, ns_now, counter.fetch_add(1))},
               {"namespace", pod.namespace_}}},
             {"involvedObject",
              {{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"namespace", pod.namespace_},
               {"name", pod.name},
               {"uid", pod.uid}}},
             {"type", type},
             {"reason", reason},
             {"message", message.substr(0, 1024)},
             {"source", {{"component", component_}}},
             {"reportingComponent", component_},
             {"reportingInstance", component_},
             {"firstTimestamp", ts},
             {"lastTimestamp", ts},
             {"eventTime", stamp},
             {"action", reason == "Scheduled" ? "Binding" : "Scheduling"},
             {"count", 1}};
  auto r = api_.Post("/api/v1/namespaces/" + UrlEscape(pod.namespace_) + "/events", ev.dump());
  if (!r || !r->ok()) {
    spdlog::warn("pod {}/{}: event {} not recorded: {}", pod.namespace_, pod.name, reason,
                 r ? std::to_string(r->status) : r.error().message);
  }
}

}  // namespace tessera::k8s
