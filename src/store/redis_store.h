#pragma once
// RedisStore: the Store on a Redis server through hiredis (thesis Ch. 8.1), for clusters where
// agents and schedulers share state. Key schema (all under options.prefix, default "tessera:"):
//   nodes                        set of node names with an inventory
//   node:<name>:inventory        JSON NodeInventory
//   node:<name>:partitions       set of the partition uuids of that inventory
//   node:<name>:heartbeat        agent's last beat (ms); expires after the heartbeat TTL
//   partition:<uuid>             hash: node, memory_mib, used_milli, used_memory_mib, present
//   placement:<workload>         JSON PlacementRecord
//   placements                   set of workload ids with a placement
//   profile:<name>               profile-matrix document
//   lease:<name>                 holder id; expires (SET NX PX)
// Multi-key updates (inventory + partitions, placement + accounting, lease renew/release) are
// Lua scripts, so they are atomic on the server: a placement and its partitions' accounting
// never diverge. Scripts name keys outside KEYS only for vanished partitions, so this targets a
// single Redis server (or a primary with replicas), not Redis Cluster.
//
// Connection: AUTH (user and password, or password only) and SELECT db on every (re)connect.
// A call that meets a broken connection reconnects with exponential backoff and retries until
// options.retry_budget_s runs out, then returns an Error naming the server. Retried writes are
// idempotent (PutPlacement of the identical record reports `already`), so a reply lost to a
// crash neither loses nor doubles a write. Thread-safe: one connection behind a mutex.

#include <hiredis/hiredis.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::store {

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;  // Redis 6 ACL user; empty: AUTH with the password only
  std::string password;  // empty: no AUTH
  int db = 0;
  std::string prefix = "tessera:";
  double connect_timeout_s = 1.0;
  double command_timeout_s = 2.0;
  double retry_budget_s = 10.0;  // how long one call keeps reconnecting before it fails
  double backoff_initial_s = 0.02;
  double backoff_max_s = 0.5;
};

// "host:port" or "host:port/db" (an IPv6 host in brackets: "[::1]:6379"), optionally after
// "redis://", into options (other fields left at their defaults).
[[nodiscard]] Expected<RedisOptions> ParseRedisAddress(std::string_view address);

class RedisStore : public Store {
 public:
  // Connects (within the retry budget) and authenticates; an Error when it cannot.
  [[nodiscard]] static Expected<std::unique_ptr<RedisStore>> Connect(RedisOptions options);
  // Connects on first use instead: for daemons that must start while Redis is down.
  static std::unique_ptr<RedisStore> Create(RedisOptions options);
  ~RedisStore() override;

  Expected<void> PutInventory(const NodeInventory& inventory) override;
  Expected<std::optional<NodeInventory>> GetInventory(std::string_view node) override;
  Expected<std::vector<std::string>> ListNodes() override;
  Expected<void> Heartbeat(std::string_view node, double ttl_s) override;
  Expected<bool> IsAlive(std::string_view node) override;
  Expected<PutOutcome> PutPlacement(const PlacementRecord& placement) override;
  Expected<bool> RemovePlacement(std::string_view workload) override;
  Expected<std::optional<PlacementRecord>> GetPlacement(std::string_view workload) override;
  Expected<std::vector<PlacementRecord>> ListPlacements() override;
  Expected<std::optional<PartitionUsage>> GetPartition(std::string_view uuid) override;
  Expected<void> PutProfile(std::string_view name, std::string_view document) override;
  Expected<std::optional<std::string>> GetProfile(std::string_view name) override;
  Expected<bool> TryAcquireLease(std::string_view name, std::string_view holder,
                                 double ttl_s) override;
  Expected<bool> ReleaseLease(std::string_view name, std::string_view holder) override;
  Expected<std::optional<std::string>> LeaseHolder(std::string_view name) override;
  std::string Name() const override { return endpoint(); }
  // One connection attempt (connect_timeout_s) and one PING (command_timeout_s).
  Expected<void> Ping() override;

  // Connections re-established after a failure (for tests and the agent's own metrics).
  int64_t reconnects() const { return reconnects_.load(); }
  std::string endpoint() const;

  // A parsed reply; errors from the server come back as kError with the text in `str`.
  struct Reply {
    int type = REDIS_REPLY_NIL;
    std::string str;
    long long integer = 0;
    std::vector<Reply> elements;
  };
  struct Script;

 private:
  explicit RedisStore(RedisOptions options) : options_(std::move(options)) {}
  Expected<void> EnsureConnected();  // mu_ held
  // One command with reconnect-and-retry; server error replies are returned, not failed.
  Expected<Reply> Call(const std::vector<std::string>& argv);
  // Call, with server error replies turned into Errors.
  Expected<Reply> Command(const std::vector<std::string>& argv);
  Expected<Reply> Eval(Script& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args);
  std::string Key(std::string_view a, std::string_view b = {}, std::string_view c = {}) const;

  RedisOptions options_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;  // owned; null while disconnected
  bool ever_connected_ = false;
  std::atomic<int64_t> reconnects_{0};
};

}  // namespace tessera::store
