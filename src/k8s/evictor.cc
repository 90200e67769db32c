#include "k8s/evictor.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace tessera::k8s {
namespace {

constexpr double kHour = 3600;
constexpr size_t kRecent = 50;  // records the status page shows

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The Status message of an API answer, else its body.
std::string StatusMessage(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

}  // namespace

Expected<EvictionOptions::Mode> ParseEvictionMode(std::string_view text) {
  if (text == "off") return EvictionOptions::Mode::kOff;
  if (text == "dry-run") return EvictionOptions::Mode::kDryRun;
  if (text == "on") return EvictionOptions::Mode::kOn;
  return Fail("evictions: '{}' is not off, dry-run or on", text);
}

bool Evictor::Try(const Pod& pod, const std::string& node, const std::string& policy,
                  const std::string& reason) {
  const double now = clock_.Now();
  for (auto* times : {&cluster_times_, &node_times_[node]}) {
    while (!times->empty() && now - times->front() >= kHour) times->pop_front();
  }
  if (options_.mode == EvictionOptions::Mode::kOff) {
    Record(pod, node, policy, "off", reason + "; evictions are off (--evictions)");
    return false;
  }
  if (pod.controller.empty()) {
    Record(pod, node, policy, "no_controller",
           reason + "; not evicted: the pod has no controller to recreate it");
    return false;
  }
  // Both windows hold only the last hour's evictions now.
  if (std::ssize(cluster_times_) >= options_.max_per_hour ||
      std::ssize(node_times_[node]) >= options_.max_per_node_hour) {
    Record(pod, node, policy, "budget",
           fmt::format("{}; not evicted: the move budget ({} per hour, {} per node) is spent",
                       reason, options_.max_per_hour, options_.max_per_node_hour));
    return false;
  }
  if (options_.mode == EvictionOptions::Mode::kDryRun) {
    cluster_times_.push_back(now);
    node_times_[node].push_back(now);
    Record(pod, node, policy, "dry_run", reason + "; dry run: not evicted");
    return false;
  }
  const nlohmann::json body = {{"apiVersion", "policy/v1"},
                               {"kind", "Eviction"},
                               {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_}}},
                               {"deleteOptions", {{"preconditions", {{"uid", pod.uid}}}}}};
  auto r = api_.Post(PodPath(pod.namespace_, pod.name) + "/eviction", body.dump());
  if (r && r->ok()) {
    retries_.erase(pod.uid);
    cluster_times_.push_back(now);
    node_times_[node].push_back(now);
    Record(pod, node, policy, "evicted", reason);
    return true;
  }
  if (r && r->status == 429) {
    retries_[pod.uid] = Retry{pod, node, policy, reason, now + options_.retry_s};
    Record(pod, node, policy, "refused_pdb",
           fmt::format("{}; refused: {} (retried in {:.0f} s)", reason, StatusMessage(*r),
                       options_.retry_s));
    return false;
  }
  Record(
      pod, node, policy, "failed",
      fmt::format("{}; eviction failed: {}", reason,
                  r ? fmt::format("HTTP {} {}", r->status, StatusMessage(*r)) : r.error().message));
  return false;
}

std::vector<Evictor::Retry> Evictor::Due() {
  std::vector<Retry> out;
  const double now = clock_.Now();
  for (auto it = retries_.begin(); it != retries_.end();) {
    if (it->second.due > now) {
      ++it;
      continue;
    }
    out.push_back(std::move(it->second));
    it = retries_.erase(it);
  }
  return out;
}

void Evictor::Record(const Pod& pod, const std::string& node, const std::string& policy,
                     const std::string& result, const std::string& reason) {
  const bool done = result == "evicted" || result == "dry_run";
  spdlog::log(done ? spdlog::level::info : spdlog::level::warn, "policy {}: pod {} on {}: {}: {}",
              policy, pod.Key(), node, result, reason);
  {
    std::lock_guard lock(mu_);
    ++counts_[{policy, result}];
    recent_.push_front({UnixNow(), pod.Key(), node, policy, result, reason});
    if (recent_.size() > kRecent) recent_.pop_back();
  }
  const double now = clock_.Now();
  auto last = last_event_.find(pod.uid);
  if (!done && last != last_event_.end() && last->second.first == result &&
      now - last->second.second < options_.event_repeat_s) {
    return;
  }
  last_event_[pod.uid] = {result, now};
  const char* event = result == "evicted"   ? "Evicted"
                      : result == "dry_run" ? "EvictionDryRun"
                                            : "EvictionRefused";
  events_.PostEvent({pod.namespace_, pod.name, pod.uid}, done ? "Normal" : "Warning", event,
                    fmt::format("policy {}: {}", policy, reason));
}

std::map<std::pair<std::string, std::string>, int64_t> Evictor::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

std::vector<EvictionRecord> Evictor::recent() const {
  std::lock_guard lock(mu_);
  return {recent_.begin(), recent_.end()};
}

}  // namespace tessera::k8s
