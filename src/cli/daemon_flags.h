#pragma once
// Flags and plumbing shared by the daemons (`tessera agent`, `schedule`, `extender`): the store
// (memory or Redis) and SIGTERM/SIGINT handling; for the two Kubernetes ones also the API-server
// credentials and the policy. Header-only; used by agent_cmd.cc, schedule_cmd.cc and
// extender_cmd.cc.

#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/error.h"
#include "cli/policy_flags.h"
#include "cli/seed_flags.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"
#include "store/memory_store.h"
#include "store/redis_store.h"

namespace tessera::cli::daemon_flags {

// Makes spdlog's default logger write to stderr under `name` (stdout carries a command's
// output; a daemon's stderr is its log). Safe to call again with the same name.
inline void LogToStderr(const std::string& name) {
  spdlog::drop(name);
  spdlog::set_default_logger(spdlog::stderr_color_mt(name));
}

// --store, --redis, --redis-prefix.
struct StoreFlags {
  std::string store;  // "memory" or "redis"
  std::string redis = "127.0.0.1:6379";
  std::string redis_prefix = "tessera:";
};

inline void AddStoreFlags(CLI::App* sub, StoreFlags& f, const std::string& store_help) {
  sub->add_option("--store", f.store, store_help)
      ->check(CLI::IsMember({"memory", "redis"}))
      ->capture_default_str();
  sub->add_option("--redis", f.redis,
                  "Redis host:port[/db] (password: $TESSERA_REDIS_PASSWORD, user: "
                  "$TESSERA_REDIS_USERNAME)")
      ->capture_default_str();
  sub->add_option("--redis-prefix", f.redis_prefix, "Key prefix in Redis")->capture_default_str();
}

// Opens the store the flags name. It fails only on a malformed --redis (a usage error): the
// Redis store connects lazily and retries, for at most retry_budget_s per call when given.
inline Expected<std::unique_ptr<store::Store>> OpenStore(
    const StoreFlags& f, const Clock& clock, std::optional<double> retry_budget_s = std::nullopt) {
  if (f.store == "memory") return std::make_unique<store::MemoryStore>(clock);
  auto o = store::ParseRedisAddress(f.redis);
  if (!o) return Fail("--redis: {}", o.error().message);
  o->prefix = f.redis_prefix;
  if (const char* p = std::getenv("TESSERA_REDIS_PASSWORD")) o->password = p;
  if (const char* u = std::getenv("TESSERA_REDIS_USERNAME")) o->username = u;
  if (retry_budget_s) o->retry_budget_s = *retry_budget_s;
  return std::unique_ptr<store::Store>(store::RedisStore::Create(*o));
}

// What `schedule` and `extender` share.
struct Common {
  std::string kubeconfig;
  std::string context;
  std::string policy = "first-fit";
  std::string policy_options = "{}";
  uint64_t seed = 1;
  StoreFlags store{.store = "redis"};
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
  sub->add_option("--seed", f.seed, "Seed of the policy's random choices, 0..2^64-1")
      ->check(SeedCheck())
      ->capture_default_str();
  AddStoreFlags(sub, f.store, "Where inventories and placements live");
}

// The inventories come from agents publishing to the store: a memory store has none.
inline Expected<std::unique_ptr<store::Store>> OpenStore(const Common& f, const Clock& clock) {
  if (f.store.store == "memory") {
    spdlog::warn("--store memory: no agent publishes here, so no node has GPUs");
  }
  return OpenStore(f.store, clock);
}

// --policy is a registered policy, with or without its options as in every other command
// (`fgd{"typical_pods":[…]}`), and --policy-options a JSON object; options come one way or the
// other, not both; the option values are checked here, before the daemon starts.
inline Expected<policy::PolicySpec> PolicyOptions(const Common& f) {
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(f.policy);
  if (!spec) return Fail("--policy: {}", spec.error().message);
  if (auto ok = CheckRegistered(spec->name); !ok) return std::unexpected(ok.error());
  nlohmann::json o = nlohmann::json::parse(f.policy_options, nullptr, false);
  if (o.is_discarded() || !o.is_object()) {
    return Fail("--policy-options '{}': not a JSON object", f.policy_options);
  }
  const bool inline_options = spec->options.is_object() && !spec->options.empty();
  if (inline_options && !o.empty()) {
    return Fail("--policy {} carries options and --policy-options gives more: use one or the other",
                f.policy);
  }
  if (!inline_options) spec->options = std::move(o);
  // Option values up front, as simulate checks them: a bad one is a usage error at start.
  if (auto ok = policy::CheckPolicyOptions(*spec); !ok) {
    return Fail("--policy {}: {}", spec->name, ok.error().message);
  }
  return spec;
}

// A policy that predicts needs the matrices only --profile brings: said at start, naming it.
inline Expected<void> CheckPolicyHasProfile(const policy::PolicySpec& spec,
                                            const std::string& profile) {
  const std::optional<policy::PolicyInfo> info = policy::FindPolicy(spec.name);
  if (info && info->needs_predictor && profile.empty()) {
    return Fail(
        "--policy {} needs a predictor: give --profile FILE, a profile matrix CSV "
        "(row,column,value[,count,variance]; docs/prediction.md)",
        spec.name);
  }
  return {};
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

// SIGTERM and SIGINT set StopFlag().
inline void InstallSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// Sleeps until a stop signal or for timeout_s, whichever comes first; true on a stop signal.
inline bool WaitForStop(double timeout_s = std::numeric_limits<double>::infinity()) {
  const auto start = std::chrono::steady_clock::now();
  while (!StopFlag()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
        timeout_s) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace tessera::cli::daemon_flags
