#include "sim/packing.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/rng.h"
#include "policy/registry.h"
#include "sim/replay.h"

namespace tessera::sim {

model::ClusterState PackingCluster(int nodes) {
  const char* models[] = {"V100-32GB", "T4", "A30-24GB", "A100-40GB", "H100-80GB"};
  model::ClusterState c;
  for (int n = 0; n < nodes; ++n) {
    const model::GpuModelId m = *model::FindGpuModel(models[n % 5]);
    const int gpus = n % 5 == 1 ? 4 : 8;
    auto added =
        c.AddNode(model::UniformNode("node-" + std::to_string(n), m, gpus, 96000, 512 * 1024));
    TESSERA_CHECK(added.has_value());
  }
  return c;
}

std::vector<model::Workload> PackingWorkloads(const model::ClusterState& cluster, uint64_t seed,
                                              double inflation) {
  Rng rng(seed);
  std::vector<model::Workload> out;
  const double target = inflation * 1000.0 * cluster.gpu_count();
  double asked = 0;
  // Shares drawn from the values openb pods use most (100..900 milli), whole and multi GPUs.
  const int shares[] = {100, 200, 250, 300, 400, 500, 600, 700, 800, 900};
  while (asked < target) {
    model::Workload w;
    w.id = static_cast<model::WorkloadId>(out.size() + 1);
    w.name = "pack-" + std::to_string(w.id);
    const double kind = rng.Uniform();
    w.gpu.count = 1;
    if (kind < 0.66) {
      w.gpu.milli = shares[rng.Below(10)];
      w.gpu.memory_mib = 1024 * static_cast<int64_t>(1 + rng.Below(8));
    } else if (kind < 0.92) {
      w.gpu.milli = 1000;
    } else {
      const int counts[] = {2, 4, 8};
      w.gpu.count = counts[rng.Below(3)];
    }
    w.cpu_milli = 1000 * static_cast<int64_t>(1 + rng.Below(8)) * w.gpu.count;
    w.memory_mib = 4096 * static_cast<int64_t>(1 + rng.Below(8)) * w.gpu.count;
    asked += RequestedGpuMilli(w);
    out.push_back(std::move(w));
  }
  return out;
}

Expected<std::vector<PackingRow>> RunPacking(const std::vector<std::string>& policies,
                                             const std::vector<uint64_t>& seeds, int nodes) {
  std::vector<PackingRow> rows;
  const model::ClusterState empty = PackingCluster(nodes);
  const double capacity = 1000.0 * empty.gpu_count();
  for (const std::string& name : policies) {
    for (uint64_t seed : seeds) {
      Rng rng(seed);
      Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(name);  // name or name{json}
      if (!spec) return std::unexpected(spec.error());
      auto policy = policy::MakePolicy(spec->name, {&rng, nullptr}, spec->options);
      if (!policy) return std::unexpected(policy.error());
      const std::vector<model::Workload> workloads = PackingWorkloads(empty, seed, 1.3);
      model::ClusterState cluster = empty;
      const auto start = std::chrono::steady_clock::now();
      // Allocation counts what placed workloads asked for, not what the cluster reserved for
      // them: a 300-milli workload on a whole GPU is 300 allocated and 700 wasted.
      double placed_request = 0, alloc_at_failure = -1;
      const ReplayResult r =
          ReplayArriveOnly(cluster, **policy, rng, workloads, [&](const ReplayEvent& e) {
            if (e.placed) placed_request += RequestedGpuMilli(*e.workload);
            if (!e.placed && alloc_at_failure < 0) alloc_at_failure = placed_request;
          });
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (alloc_at_failure < 0) alloc_at_failure = placed_request;
      rows.push_back({name, seed, workloads.size(), r.failed, 100 * alloc_at_failure / capacity,
                      100 * placed_request / capacity, wall});
    }
  }
  return rows;
}

Expected<ExperimentOutput> RunPackingExperiment(const ExperimentArgs& args,
                                                const Experiment& experiment) {
  const std::vector<std::string> policies = PoliciesOrDefault(args, experiment);
  std::vector<PackingRow> rows;
  for (size_t i = 0; i < policies.size(); ++i) {
    args.Progress(fmt::format("packing: policy {}/{} ({})", i + 1, policies.size(), policies[i]));
    auto part = RunPacking({policies[i]}, args.seeds, args.cluster_nodes);
    if (!part) return std::unexpected(part.error());
    rows.insert(rows.end(), part->begin(), part->end());
  }
  ExperimentOutput out{.json = {{"experiment", "packing"},
                                {"nodes", args.cluster_nodes},
                                {"results", nlohmann::json::array()}}};
  for (const PackingRow& r : rows) {
    out.json["results"].push_back({{"policy", r.policy},
                                   {"seed", r.seed},
                                   {"workloads", r.workloads},
                                   {"failed", r.failed},
                                   {"alloc_at_first_failure_pct", r.alloc_at_first_failure_pct},
                                   {"alloc_final_pct", r.alloc_final_pct},
                                   {"wall_s", r.wall_s}});
  }
  out.table = fmt::format(
      "experiment packing: {} nodes, workloads asking for 130% of GPU capacity, "
      "arrive-only\n\n",
      args.cluster_nodes);
  size_t width = 14;  // as wide as the longest policy with its options
  for (const PackingRow& r : rows) width = std::max(width, r.policy.size());
  out.table +=
      fmt::format("{:<{}} {:>6} {:>9} {:>7} {:>18} {:>12} {:>8}\n", "policy", width, "seed",
                  "workloads", "failed", "alloc@1st-fail %", "alloc end %", "wall s");
  for (const PackingRow& r : rows) {
    out.table += fmt::format("{:<{}} {:>6} {:>9} {:>7} {:>18.2f} {:>12.2f} {:>8.3f}\n", r.policy,
                             width, r.seed, r.workloads, r.failed, r.alloc_at_first_failure_pct,
                             r.alloc_final_pct, r.wall_s);
  }
  return out;
}

}  // namespace tessera::sim
