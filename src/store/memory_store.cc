#include "store/memory_store.h"

#include <fmt/format.h>

#include <set>

namespace tessera::store {

Expected<void> MemoryStore::PutInventory(const NodeInventory& inv) {
  if (auto ok = Validate(inv); !ok) return std::unexpected(ok.error());
  std::lock_guard lock(mu_);
  std::set<std::string> now;
  for (const auto& g : inv.gpus) {
    for (const auto& p : g.partitions) {
      now.insert(p.uuid);
      PartitionUsage& u = partitions_[p.uuid];
      u.uuid = p.uuid;
      u.node = inv.node;
      u.memory_mib = p.memory_mib;
      u.present = !g.lost;
    }
  }
  if (auto old = inventories_.find(inv.node); old != inventories_.end()) {
    for (const auto& g : old->second.gpus) {
      for (const auto& p : g.partitions) {
        if (now.contains(p.uuid)) continue;
        auto it = partitions_.find(p.uuid);
        if (it == partitions_.end()) continue;
        if (it->second.used_milli == 0 && it->second.used_memory_mib == 0) {
          partitions_.erase(it);
        } else {
          it->second.present = false;
        }
      }
    }
  }
  inventories_.insert_or_assign(inv.node, inv);
  return {};
}

Expected<std::optional<NodeInventory>> MemoryStore::GetInventory(std::string_view node) {
  std::lock_guard lock(mu_);
  auto it = inventories_.find(node);
  if (it == inventories_.end()) return std::nullopt;
  return it->second;
}

Expected<std::vector<std::string>> MemoryStore::ListNodes() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, _] : inventories_) out.push_back(name);
  return out;
}

Expected<void> MemoryStore::Heartbeat(std::string_view node, double ttl_s) {
  std::lock_guard lock(mu_);
  heartbeats_.insert_or_assign(std::string(node), clock_.Now() + ttl_s);
  return {};
}

Expected<bool> MemoryStore::IsAlive(std::string_view node) {
  std::lock_guard lock(mu_);
  auto it = heartbeats_.find(node);
  return it != heartbeats_.end() && clock_.Now() < it->second;
}

Expected<PutOutcome> MemoryStore::PutPlacement(const PlacementRecord& p) {
  if (auto ok = Validate(p); !ok) return std::unexpected(ok.error());
  std::lock_guard lock(mu_);
  if (auto it = placements_.find(p.workload); it != placements_.end()) {
    if (it->second == p) return PutOutcome{.applied = true, .already = true};
    return PutOutcome{.refusal =
                          fmt::format("workload {} already holds another placement", p.workload)};
  }
  // Check every slice before touching anything: all or nothing.
  for (const auto& s : p.slices) {
    auto it = partitions_.find(s.partition_uuid);
    if (it == partitions_.end() || !it->second.present) {
      return PutOutcome{
          .refusal = fmt::format("partition {} is unknown or not present", s.partition_uuid)};
    }
    const PartitionUsage& u = it->second;
    if (u.used_milli + s.reserved_milli() > 1000) {
      return PutOutcome{.refusal = fmt::format("partition {}: {} + {} milli > 1000",
                                               s.partition_uuid, u.used_milli, s.reserved_milli())};
    }
    if (u.used_memory_mib + s.memory_mib > u.memory_mib) {
      return PutOutcome{.refusal =
                            fmt::format("partition {}: {} + {} MiB > {} MiB", s.partition_uuid,
                                        u.used_memory_mib, s.memory_mib, u.memory_mib)};
    }
  }
  for (const auto& s : p.slices) {
    PartitionUsage& u = partitions_.at(s.partition_uuid);
    u.used_milli += s.reserved_milli();
    u.used_memory_mib += s.memory_mib;
  }
  placements_.emplace(p.workload, p);
  return PutOutcome{.applied = true};
}

Expected<bool> MemoryStore::RemovePlacement(std::string_view workload) {
  std::lock_guard lock(mu_);
  auto it = placements_.find(workload);
  if (it == placements_.end()) return false;
  for (const auto& s : it->second.slices) {
    auto u = partitions_.find(s.partition_uuid);
    if (u == partitions_.end()) continue;
    u->second.used_milli -= s.reserved_milli();
    u->second.used_memory_mib -= s.memory_mib;
    // A vanished partition is kept only while something holds it.
    if (!u->second.present && u->second.used_milli == 0 && u->second.used_memory_mib == 0) {
      partitions_.erase(u);
    }
  }
  placements_.erase(it);
  return true;
}

Expected<std::optional<PlacementRecord>> MemoryStore::GetPlacement(std::string_view workload) {
  std::lock_guard lock(mu_);
  auto it = placements_.find(workload);
  if (it == placements_.end()) return std::nullopt;
  return it->second;
}

Expected<std::vector<PlacementRecord>> MemoryStore::ListPlacements() {
  std::lock_guard lock(mu_);
  std::vector<PlacementRecord> out;
  for (const auto& [_, p] : placements_) out.push_back(p);
  return out;
}

Expected<std::optional<PartitionUsage>> MemoryStore::GetPartition(std::string_view uuid) {
  std::lock_guard lock(mu_);
  auto it = partitions_.find(uuid);
  if (it == partitions_.end()) return std::nullopt;
  return it->second;
}

Expected<void> MemoryStore::PutProfile(std::string_view name, std::string_view document) {
  std::lock_guard lock(mu_);
  profiles_.insert_or_assign(std::string(name), std::string(document));
  return {};
}

Expected<std::optional<std::string>> MemoryStore::GetProfile(std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = profiles_.find(name);
  if (it == profiles_.end()) return std::nullopt;
  return it->second;
}

Expected<bool> MemoryStore::TryAcquireLease(std::string_view name, std::string_view holder,
                                            double ttl_s) {
  std::lock_guard lock(mu_);
  const double now = clock_.Now();
  auto it = leases_.find(name);
  if (it != leases_.end() && now < it->second.expires && it->second.holder != holder) return false;
  leases_.insert_or_assign(std::string(name), Lease{std::string(holder), now + ttl_s});
  return true;
}

Expected<bool> MemoryStore::ReleaseLease(std::string_view name, std::string_view holder) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(name);
  if (it == leases_.end() || clock_.Now() >= it->second.expires || it->second.holder != holder) {
    return false;
  }
  leases_.erase(it);
  return true;
}

Expected<std::optional<std::string>> MemoryStore::LeaseHolder(std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(name);
  if (it == leases_.end() || clock_.Now() >= it->second.expires) return std::nullopt;
  return it->second.holder;
}

}  // namespace tessera::store
