#include "sim/usage.h"

#include <algorithm>
#include <cmath>

#include "model/cluster.h"

namespace tessera::sim {

UsagePoint UsageTrajectory::At(double t, double burst_offset_s) const {
  if (phases.empty()) return {};
  t = std::max(t, 0.0);
  double total = 0;
  for (const UsagePhase& p : phases) total += p.duration_s;
  double in = loop && total > 0 ? std::fmod(t, total) : t;
  UsagePoint use = phases.back().use;
  for (const UsagePhase& p : phases) {
    if (in < p.duration_s) {
      use = p.use;
      break;
    }
    in -= p.duration_s;
  }
  if (!burst) return use;
  const double shifted = burst->staggered ? t + burst_offset_s : t;
  if (!burst->repeat && shifted >= burst->period_s) return use;
  const double into = std::fmod(shifted, burst->period_s) - (burst->period_s - burst->duration_s);
  if (into >= 0) {
    const double ramp = burst->ramp_s > 0 ? std::min(1.0, into / burst->ramp_s) : 1.0;
    const double peak = use.memory_mib + ramp * (burst->peak.memory_mib - use.memory_mib);
    use.memory_mib = std::max(use.memory_mib, peak);
    use.sm = std::max(use.sm, burst->peak.sm);
    use.bandwidth = std::max(use.bandwidth, burst->peak.bandwidth);
  }
  return use;
}

double UsageTrajectory::PeakMemoryMib() const {
  double peak = 0;
  for (const UsagePhase& p : phases) peak = std::max(peak, p.use.memory_mib);
  if (burst && !phases.empty()) peak = std::max(peak, burst->peak.memory_mib);
  return peak;
}

namespace {

// Adds `sign` × x's use to its partitions in `partitions`.
void AddUsage(const WorkloadUsage& x, double sign,
              std::map<model::PartitionIndex, PartitionUsage>& partitions) {
  const double n = static_cast<double>(x.placement->slices.size());
  for (const model::Slice& slice : x.placement->slices) {
    PartitionUsage& p = partitions[slice.partition];
    if (!x.use) {
      p.sum.memory_mib += sign * static_cast<double>(slice.memory_mib);
      continue;
    }
    // A workload on several partitions holds its use spread evenly over them.
    p.traced = true;
    p.activity = p.activity || x.activity;
    p.sum.memory_mib += sign * x.use->memory_mib / n;
    p.sum.sm += sign * x.use->sm / n;
    p.sum.bandwidth += sign * x.use->bandwidth / n;
  }
}

}  // namespace

UsageSample SumUsage(std::vector<WorkloadUsage> workloads) {
  UsageSample sample{std::move(workloads), {}};
  for (const WorkloadUsage& x : sample.workloads) {
    AddUsage(x, 1, sample.partitions);
    if (!x.use) continue;
    for (const model::Slice& slice : x.placement->slices) {
      sample.partitions[slice.partition].growers.emplace_back(x.growth_mib, x.order, x.id);
    }
  }
  return sample;
}

namespace {

// kGrowersUntilFit on one partition: its growers, the most grown first, crash until it fits;
// each crash takes the crashed workload's use out of the sample at once.
void KillGrowersUntilFit(model::PartitionIndex index, double capacity, UsageSample& sample,
                         std::vector<model::WorkloadId>& killed) {
  std::vector<std::tuple<double, size_t, model::WorkloadId>> by_growth =
      sample.partitions.at(index).growers;
  std::sort(by_growth.rbegin(), by_growth.rend());
  for (const auto& [growth, order, id] : by_growth) {
    if (sample.partitions.at(index).sum.memory_mib <= capacity || growth <= 0) break;
    if (std::find(killed.begin(), killed.end(), id) != killed.end()) continue;
    for (WorkloadUsage& x : sample.workloads) {
      if (x.id != id || !x.use) continue;
      AddUsage(x, -1, sample.partitions);
      x.use = UsagePoint{};
      killed.push_back(id);
    }
  }
}

}  // namespace

std::vector<model::WorkloadId> KillOutOfMemory(const model::ClusterState& cluster,
                                               UsageSample& sample, OomRule rule) {
  std::vector<model::WorkloadId> killed;
  if (rule == OomRule::kGrowersUntilFit) {
    std::vector<model::PartitionIndex> over;
    for (const auto& [index, p] : sample.partitions) over.push_back(index);
    for (model::PartitionIndex index : over) {
      KillGrowersUntilFit(index, static_cast<double>(cluster.partition(index).memory_mib), sample,
                          killed);
    }
    std::sort(killed.begin(), killed.end());
    return killed;
  }
  // The allocation that fails is the grower's.
  for (const auto& [index, p] : sample.partitions) {
    if (p.sum.memory_mib > static_cast<double>(cluster.partition(index).memory_mib) &&
        !p.growers.empty()) {
      killed.push_back(std::get<2>(*std::max_element(p.growers.begin(), p.growers.end())));
    }
  }
  std::sort(killed.begin(), killed.end());
  killed.erase(std::unique(killed.begin(), killed.end()), killed.end());
  for (WorkloadUsage& x : sample.workloads) {
    if (!std::binary_search(killed.begin(), killed.end(), x.id)) continue;
    AddUsage(x, -1, sample.partitions);  // what the sample shows is after the crash
    x.use = UsagePoint{};
  }
  return killed;
}

}  // namespace tessera::sim
