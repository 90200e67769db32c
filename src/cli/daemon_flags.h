#pragma once
// Flags and plumbing shared by `tessera schedule` and `tessera extender`: the store to read
// inventories from and record placements in, the API-server credentials, the policy, and
// SIGTERM/SIGINT handling. Header-only; used by schedule_cmd.cc and extender_cmd.cc.

#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/error.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"
#include "store/memory_store.h"
#include "store/redis_store.h"

namespace tessera::cli::k8s_flags {

struct Common {
  std::string kubeconfig;
  std::string context;
  std::string policy = "first-fit";
  std::string policy_options = "{}";
  uint64_t seed = 1;
  std::string store = "redis";
  std::string redis = "127.0.0.1:6379";
  std::string redis_prefix = "tessera:";
};

inline void AddCommon(CLI::App* sub, Common& f) {
  sub->add_option("--kubeconfig", f.kubeconfig,
                  "kubeconfig file (default: in-cluster service account, else $KUBECONFIG, "
                  "else ~/.kube/config)");
  sub->add_option("--context", f.context, "kubeconfig context (default: its current-context)");
  sub->add_option("--policy", f.policy, "Scheduling policy (tessera simulate --list-policies)")
      ->capture_default_str();
  sub->add_option("--policy-options", f.policy_options, "The policy's options as JSON")
      ->capture_default_str();
  sub->add_option("--seed", f.seed, "Seed of the policy's random choices")->capture_default_str();
  sub->add_option("--store", f.store, "Where inventories and placements live")
      ->check(CLI::IsMember({"memory", "redis"}))
      ->capture_default_str();
  sub->add_option("--redis", f.redis,
                  "Redis host:port[/db] (password: $TESSERA_REDIS_PASSWORD, user: "
                  "$TESSERA_REDIS_USERNAME)")
      ->capture_default_str();
  sub->add_option("--redis-prefix", f.redis_prefix, "Key prefix in Redis")->capture_default_str();
}

inline Expected<std::unique_ptr<store::Store>> OpenStore(const Common& f, const Clock& clock) {
  if (f.store == "memory") {
    spdlog::warn("--store memory: no agent publishes here, so no node has GPUs");
    return std::make_unique<store::MemoryStore>(clock);
  }
  auto o = store::ParseRedisAddress(f.redis);
  if (!o) return std::unexpected(o.error());
  o->prefix = f.redis_prefix;
  if (const char* p = std::getenv("TESSERA_REDIS_PASSWORD")) o->password = p;
  if (const char* u = std::getenv("TESSERA_REDIS_USERNAME")) o->username = u;
  return std::unique_ptr<store::Store>(store::RedisStore::Create(*o));
}

inline Expected<nlohmann::json> PolicyOptions(const Common& f) {
  nlohmann::json o = nlohmann::json::parse(f.policy_options, nullptr, false);
  if (o.is_discarded() || !o.is_object()) {
    return Fail("--policy-options '{}': not a JSON object", f.policy_options);
  }
  return o;
}

inline Expected<std::unique_ptr<k8s::ApiClient>> Connect(const Common& f) {
  auto creds = k8s::DefaultCredentials(f.kubeconfig, f.context);
  if (!creds) return std::unexpected(creds.error());
  spdlog::info("API server {} ({})", creds->server, creds->source);
  return k8s::ApiClient::Create(std::move(*creds));
}

inline std::atomic<bool>& StopFlag() {
  static std::atomic<bool> stop{false};
  return stop;
}
extern "C" inline void OnStopSignal(int) { StopFlag() = true; }

inline void InstallSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

inline void WaitForStop() {
  while (!StopFlag()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace tessera::cli::k8s_flags
