#include "plan/twin.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

#include "model/cluster.h"
#include "sim/physics.h"

namespace tessera::plan {
namespace {

struct Replica {
  model::WorkloadId id;
  size_t service;
};

// The plan's GPUs as a cluster, one node per GPU, and its replicas placed.
Expected<std::vector<Replica>> Build(const PlanInput& input, const Problem& p, const Plan& plan,
                                     const sim::AppCatalog& catalog, model::ClusterState& cluster) {
  std::vector<Replica> replicas;
  for (size_t i = 0; i < plan.gpus.size(); ++i) {
    const PlannedGpu& g = plan.gpus[i];
    const model::GpuModelId m = p.gpus[static_cast<size_t>(g.gpu)].model;
    auto node = cluster.AddNode(
        model::UniformNode(fmt::format("plan-{}", i), m, 1, 1'000'000, 1'000'000'000, g.mig));
    if (!node) return std::unexpected(node.error());
    const model::GpuIndex gpu = cluster.node(*node).first_gpu;
    for (const Seat& seat : g.seats) {
      const ServiceSpec& s = input.services[static_cast<size_t>(seat.service)];
      if (catalog.Find(s.app) == nullptr) continue;  // no ground truth: unchecked
      const SliceKind& kind = p.kinds[static_cast<size_t>(seat.kind)];
      model::Workload w;
      w.id = static_cast<model::WorkloadId>(replicas.size() + 1);
      w.name = fmt::format("{}-{}", s.name, w.id);
      w.app = s.app;
      w.slo_qps = s.slo_qps;
      w.gpu.count = 1;
      w.gpu.milli = kind.mps_percent * 10;
      model::Placement placement{w.id, *node, {}};
      placement.slices.push_back(
          {.partition = model::ClusterState::PartitionOf(gpu, std::max(seat.instance, 0)),
           .milli = kind.mps_percent * 10,
           .memory_mib = kind.memory_mib});
      if (auto ok = cluster.Place(w, placement); !ok) {
        return Fail("plan: the twin cannot place {}: {}", w.name, ok.error().message);
      }
      replicas.push_back({w.id, static_cast<size_t>(seat.service)});
    }
  }
  return replicas;
}

}  // namespace

Expected<TwinResult> RunTwin(const PlanInput& input, const Problem& p, const Plan& plan,
                             const sim::AppCatalog& catalog, const TwinOptions& options) {
  model::ClusterState cluster;
  sim::Physics physics(catalog, options.seed);
  // Counted rate per replica, in placement order, to split each service's load.
  std::vector<double> counted;
  for (const PlannedGpu& g : plan.gpus) {
    for (const Seat& seat : g.seats) {
      if (catalog.Find(input.services[static_cast<size_t>(seat.service)].app) == nullptr) continue;
      double rate = 0;
      for (const ServiceOption& o : p.services[static_cast<size_t>(seat.service)].options) {
        if (o.kind == seat.kind) rate = o.rate;
      }
      counted.push_back(rate);
    }
  }
  auto replicas = Build(input, p, plan, catalog, cluster);
  if (!replicas) return std::unexpected(replicas.error());
  std::vector<double> total(input.services.size(), 0);
  for (size_t i = 0; i < replicas->size(); ++i) total[(*replicas)[i].service] += counted[i];
  for (size_t i = 0; i < replicas->size(); ++i) {
    const Replica& r = (*replicas)[i];
    const ServiceSpec& s = input.services[r.service];
    const double share = counted[i] / total[r.service];
    const sim::DailyLoad day = s.load.value_or(sim::DailyLoad{s.slo_qps, s.slo_qps, 20});
    physics.SetOfferedLoad(r.id, {day.trough_qps * share, day.peak_qps * share, day.peak_hour});
  }
  TwinResult result;
  result.services.resize(input.services.size());
  for (const Replica& r : *replicas) result.services[r.service].checked = true;
  std::vector<std::vector<bool>> hour_ok(input.services.size(), std::vector<bool>(24, true));
  for (auto& sd : result.services) sd.worst_ratio = std::numeric_limits<double>::infinity();
  for (double t = 0; t < 24 * 3600; t += options.sample_s) {
    physics.SetTime(t);
    std::vector<double> capacity(input.services.size(), 0);
    std::vector<bool> failed(input.services.size(), false);
    for (const Replica& r : *replicas) {
      const sim::RunRate rate = physics.Rate(*cluster.Find(r.id), cluster);
      capacity[r.service] += rate.capacity_qps;
      if (rate.fails) failed[r.service] = true;
    }
    const int hour = static_cast<int>(t / 3600);
    for (size_t s = 0; s < input.services.size(); ++s) {
      if (!result.services[s].checked) continue;
      const double offered = input.services[s].QpsAt(t);
      const double ratio = failed[s] ? 0 : capacity[s] / offered;
      result.services[s].worst_ratio = std::min(result.services[s].worst_ratio, ratio);
      if (ratio < 1 - 1e-9) hour_ok[s][static_cast<size_t>(hour)] = false;
    }
  }
  for (size_t s = 0; s < input.services.size(); ++s) {
    ServiceDay& sd = result.services[s];
    if (!sd.checked) {
      sd.worst_ratio = 0;
      continue;
    }
    sd.hours_met = static_cast<int>(std::count(hour_ok[s].begin(), hour_ok[s].end(), true));
    result.service_hours += 24;
    result.met_hours += sd.hours_met;
  }
  return result;
}

}  // namespace tessera::plan
