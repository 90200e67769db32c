#pragma once
// Store: the cluster state that outlives one process — node inventories published by the
// agents, their heartbeats, workload placements with each partition's accounting, profile
// matrices, and leader-election leases (DESIGN §6; thesis Ch. 8.1 keeps this in Redis).
//
// Two implementations keep the same contract (tests/store/store_contract.h runs against both):
// MemoryStore (default; one process) and RedisStore (hiredis; shared by agents and schedulers).
//
// Contract:
//  - PutPlacement is all-or-nothing: the placement record and every slice's partition
//    accounting change together or not at all. It is refused (a value, not an Error) when a
//    partition is unknown or not present, or when Σ milli would pass 1000 or Σ memory the
//    partition's memory, or when the workload already holds a different placement. Writing
//    the identical placement again is a no-op that reports `already`, so a client may retry a
//    write whose reply it lost.
//  - PutInventory replaces the node's inventory and (re)declares its partitions' capacities;
//    a partition that vanished is dropped if nothing holds it, else marked not present.
//  - Heartbeats and leases expire after their TTL (store time: Redis's clock, or the Clock
//    a MemoryStore was given).
//  - An Error means the store could not be reached or is broken, never a refusal.
// Thread-safety: every method may be called from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "store/records.h"

namespace tessera::store {

struct PutOutcome {
  bool applied = false;  // the placement is in the store (now or already)
  bool already = false;  // it was there, identical, before this call
  std::string refusal;   // why not, when !applied
};

class Store {
 public:
  virtual ~Store() = default;

  // Inventory and liveness.
  [[nodiscard]] virtual Expected<void> PutInventory(const NodeInventory& inventory) = 0;
  [[nodiscard]] virtual Expected<std::optional<NodeInventory>> GetInventory(
      std::string_view node) = 0;
  [[nodiscard]] virtual Expected<std::vector<std::string>> ListNodes() = 0;  // sorted
  [[nodiscard]] virtual Expected<void> Heartbeat(std::string_view node, double ttl_s) = 0;
  [[nodiscard]] virtual Expected<bool> IsAlive(std::string_view node) = 0;

  // Placements and partition accounting.
  [[nodiscard]] virtual Expected<PutOutcome> PutPlacement(const PlacementRecord& placement) = 0;
  // True when a placement was removed (and its partitions' accounting released).
  [[nodiscard]] virtual Expected<bool> RemovePlacement(std::string_view workload) = 0;
  [[nodiscard]] virtual Expected<std::optional<PlacementRecord>> GetPlacement(
      std::string_view workload) = 0;
  [[nodiscard]] virtual Expected<std::vector<PlacementRecord>> ListPlacements() = 0;  // by id
  [[nodiscard]] virtual Expected<std::optional<PartitionUsage>> GetPartition(
      std::string_view uuid) = 0;

  // Profile matrices: named documents (the predictor owns their format, typically JSON).
  [[nodiscard]] virtual Expected<void> PutProfile(std::string_view name,
                                                  std::string_view document) = 0;
  [[nodiscard]] virtual Expected<std::optional<std::string>> GetProfile(std::string_view name) = 0;

  // Leases (SET NX PX semantics): acquire when free or renew when `holder` holds it.
  [[nodiscard]] virtual Expected<bool> TryAcquireLease(std::string_view name,
                                                       std::string_view holder, double ttl_s) = 0;
  // Releases only when `holder` holds it; true when it did.
  [[nodiscard]] virtual Expected<bool> ReleaseLease(std::string_view name,
                                                    std::string_view holder) = 0;
  [[nodiscard]] virtual Expected<std::optional<std::string>> LeaseHolder(std::string_view name) = 0;

  // For a daemon's readiness (base/health.h): what the store is and where ("redis
  // 10.0.0.5:6379/0"), and whether it answers now — one attempt, no retries; the Error names it
  // ("redis 127.0.0.1:1/0: Connection refused"). A store in this process always answers.
  virtual std::string Name() const { return "memory store"; }
  [[nodiscard]] virtual Expected<void> Ping() { return {}; }
};

}  // namespace tessera::store
