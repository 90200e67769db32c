#pragma once
// MemoryStore: the Store in one process's memory — the default, and what the simulator and the
// unit tests use. TTLs run on the Clock it is given (a ManualClock makes expiry deterministic).
// Thread-safe (one mutex). Does not own the clock, which must outlive it.

#include <map>
#include <mutex>
#include <set>

#include "base/clock.h"
#include "store/store.h"

namespace tessera::store {

class MemoryStore : public Store {
 public:
  explicit MemoryStore(const Clock& clock) : clock_(clock) {}

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

 private:
  struct Lease {
    std::string holder;
    double expires;
  };

  const Clock& clock_;
  std::mutex mu_;
  std::map<std::string, NodeInventory, std::less<>> inventories_;
  std::map<std::string, double, std::less<>> heartbeats_;  // node -> expiry
  std::map<std::string, PlacementRecord, std::less<>> placements_;
  std::map<std::string, PartitionUsage, std::less<>> partitions_;
  std::map<std::string, std::string, std::less<>> profiles_;
  std::map<std::string, Lease, std::less<>> leases_;
};

}  // namespace tessera::store
