#include "sim/openb_bound.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "policy/flow/mip.h"
#include "sim/openb.h"
#include "sim/replay.h"

namespace tessera::sim {
namespace {

struct NodeType {
  int64_t cpu = 0, memory = 0;
  int gpus = 0;
  model::GpuModelId model = 0;
  int count = 0;  // nodes of the type
};

struct Shape {
  int64_t cpu = 0, memory = 0;
  int gpus = 0, milli = 0;
  std::vector<model::GpuModelId> models;  // allowed; empty: any
  int count = 0;                          // arrivals of the shape
};

Expected<std::vector<NodeType>> NodeTypes(std::span<const model::NodeSpec> nodes) {
  std::map<std::tuple<int64_t, int64_t, int, model::GpuModelId>, int> count;
  for (const model::NodeSpec& n : nodes) {
    if (n.gpus.empty()) continue;  // no GPU milli to allocate there
    for (const model::GpuSpec& g : n.gpus) {
      if (g.model != n.gpus.front().model) {
        return Fail("openb bound: node {} has GPUs of two models", n.name);
      }
    }
    ++count[{n.cpu_milli, n.memory_mib, static_cast<int>(n.gpus.size()), n.gpus.front().model}];
  }
  std::vector<NodeType> types;
  for (const auto& [key, n] : count) {
    types.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), n});
  }
  return types;
}

// The GPU pods among the first `pods` arrivals, by shape (a CPU-only pod allocates no GPU, so
// a packer that maximises allocation leaves it out).
std::vector<Shape> Shapes(std::span<const model::Workload> arrivals, size_t pods) {
  std::map<std::tuple<int64_t, int64_t, int, int, std::vector<model::GpuModelId>>, int> count;
  for (size_t i = 0; i < pods; ++i) {
    const model::Workload& w = arrivals[i];
    if (w.gpu.count == 0) continue;
    std::vector<model::GpuModelId> models = w.gpu.models;
    std::sort(models.begin(), models.end());
    ++count[{w.cpu_milli, w.memory_mib, w.gpu.count, std::min(w.gpu.milli, 1000), models}];
  }
  std::vector<Shape> shapes;
  for (const auto& [key, n] : count) {
    const auto& [cpu, memory, gpus, milli, models] = key;
    shapes.push_back({cpu, memory, gpus, milli, models, n});
  }
  return shapes;
}

bool Holds(const NodeType& t, const Shape& s) {
  return s.gpus <= t.gpus && s.cpu <= t.cpu && s.memory <= t.memory &&
         (s.models.empty() ||
          std::find(s.models.begin(), s.models.end(), t.model) != s.models.end());
}

// Fekete and Schepers' dual feasible function u^(k) on [0, 1].
double U(double x, int k) {
  const double y = (k + 1) * x;
  if (std::abs(y - std::round(y)) < 1e-9) return x;
  return std::floor(y + 1e-9) / k;
}

// The program of openb_bound.h for these shapes; the objective is −(GPU milli placed).
flow::IntegerProgram Program(const std::vector<NodeType>& types, const std::vector<Shape>& shapes,
                             const OpenbBoundOptions& options) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  flow::IntegerProgram ip;
  std::vector<flow::LinearRow> per_shape(shapes.size(), flow::LinearRow{{}, -kInf, 0});
  for (size_t s = 0; s < shapes.size(); ++s) per_shape[s].upper = shapes[s].count;
  for (const NodeType& t : types) {
    const double nodes = t.count;
    std::vector<flow::LinearRow> rows;
    rows.push_back({{}, -kInf, nodes * static_cast<double>(t.cpu)});
    rows.push_back({{}, -kInf, nodes * static_cast<double>(t.memory)});
    rows.push_back({{}, -kInf, nodes * t.gpus * 1000.0});
    for (int k = 1; k <= 3; ++k) {
      rows.push_back({{}, -kInf, nodes * t.gpus});  // shares of each GPU
      rows.push_back({{}, -kInf, nodes});           // CPU of each node
      rows.push_back({{}, -kInf, nodes});           // memory of each node
      rows.push_back({{}, -kInf, nodes});           // whole GPUs of each node
    }
    for (size_t s = 0; s < shapes.size(); ++s) {
      const Shape& sh = shapes[s];
      if (!Holds(t, sh)) continue;
      const int var = static_cast<int>(ip.cost.size());
      ip.cost.push_back(-1.0 * sh.gpus * sh.milli);
      ip.upper_bound.push_back(sh.count);
      per_shape[s].terms.push_back({var, 1});
      rows[0].terms.push_back({var, static_cast<double>(sh.cpu)});
      rows[1].terms.push_back({var, static_cast<double>(sh.memory)});
      rows[2].terms.push_back({var, static_cast<double>(sh.gpus) * sh.milli});
      for (int k = 1; k <= 3; ++k) {
        const size_t r = 3 + 4 * static_cast<size_t>(k - 1);
        rows[r].terms.push_back({var, sh.gpus * U(sh.milli / 1000.0, k)});
        rows[r + 1].terms.push_back(
            {var, U(double(sh.cpu) / double(std::max<int64_t>(1, t.cpu)), k)});
        rows[r + 2].terms.push_back(
            {var, U(double(sh.memory) / double(std::max<int64_t>(1, t.memory)), k)});
        if (sh.milli == 1000) {
          rows[r + 3].terms.push_back({var, U(double(sh.gpus) / t.gpus, k)});
        }
      }
    }
    for (flow::LinearRow& row : rows) {
      if (!row.terms.empty()) ip.rows.push_back(std::move(row));
    }
  }
  for (flow::LinearRow& row : per_shape) {
    if (!row.terms.empty()) ip.rows.push_back(std::move(row));
  }
  ip.integer.assign(ip.cost.size(), options.integer);
  ip.relative_gap = 1e-4;
  ip.time_limit_s = options.time_limit_s;
  return ip;
}

}  // namespace

Expected<std::vector<OpenbBoundPoint>> OpenbAllocationBound(
    std::span<const model::NodeSpec> nodes, std::span<const model::Workload> arrivals,
    std::span<const int> levels_pct, const OpenbBoundOptions& options) {
  auto types = NodeTypes(nodes);
  if (!types) return std::unexpected(types.error());
  double capacity = 0;
  for (const NodeType& t : *types) capacity += 1000.0 * t.gpus * t.count;
  if (capacity <= 0) return Fail("openb bound: the cluster has no GPUs");
  std::vector<double> arrived;  // GPU milli requested by the first i + 1 arrivals
  for (const model::Workload& w : arrivals) {
    arrived.push_back((arrived.empty() ? 0 : arrived.back()) + RequestedGpuMilli(w));
  }
  std::vector<OpenbBoundPoint> points;
  for (int level : levels_pct) {
    const double limit = (level + 0.5) / 100 * capacity;
    const size_t pods = static_cast<size_t>(
        std::upper_bound(arrived.begin(), arrived.end(), limit + 1e-9) - arrived.begin());
    OpenbBoundPoint point{level, pods, 0, true};
    const std::vector<Shape> shapes = Shapes(arrivals, pods);
    if (!shapes.empty()) {
      const flow::MipResult r = flow::SolveMinimum(Program(*types, shapes, options));
      if (r.status != flow::Status::kOptimal) {
        return Fail("openb bound at {} %: {} {}", level, flow::ToString(r.status), r.error);
      }
      point.alloc_pct = std::min(100.0, 100 * -r.bound / capacity);
      point.proven = r.proven;
    }
    points.push_back(point);
  }
  return points;
}

std::vector<std::string> OpenbBoundArms() { return {"ip"}; }

Expected<void> CheckOpenbBoundArgs(const ExperimentArgs& args) {
  for (const std::string& arm : args.policies) {
    if (arm != "ip" && arm != "lp") {
      return Fail("--policy {}: --experiment openb-bound's arms are ip and lp", arm);
    }
  }
  if (args.trace.empty()) return Fail("--experiment openb-bound needs --trace POD_CSV");
  return {};
}

namespace {

struct LevelSummary {
  int level = 0;
  double mean = 0, low = 100, high = 0;
  int proven = 0;
};

std::vector<LevelSummary> Summarize(const std::vector<std::vector<OpenbBoundPoint>>& seeds) {
  std::vector<LevelSummary> out;
  for (size_t l = 0; l < seeds.front().size(); ++l) {
    LevelSummary s{seeds.front()[l].level_pct};
    for (const auto& points : seeds) {
      const OpenbBoundPoint& p = points[l];
      s.mean += p.alloc_pct / static_cast<double>(seeds.size());
      s.low = std::min(s.low, p.alloc_pct);
      s.high = std::max(s.high, p.alloc_pct);
      s.proven += p.proven ? 1 : 0;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

Expected<ExperimentOutput> RunOpenbBoundExperiment(const ExperimentArgs& args,
                                                   const Experiment& experiment) {
  auto input = LoadOpenbArgs(args);
  if (!input) return std::unexpected(input.error());
  const double capacity = 1000.0 * input->total_gpus;
  if (capacity <= 0) return Fail("openb bound: the cluster has no GPUs");
  std::vector<int> levels;
  for (int l = 10; l <= static_cast<int>(std::lround(args.inflation * 100)); l += 10) {
    levels.push_back(l);
  }
  if (levels.empty()) levels.push_back(static_cast<int>(std::lround(args.inflation * 100)));
  ExperimentOutput out;
  out.json = {{"experiment", "openb-bound"},
              {"trace", input->trace_stem},
              {"total_gpus", input->total_gpus},
              {"seeds", args.seeds},
              {"arms", nlohmann::json::array()}};
  out.table = fmt::format(
      "openb-bound: {} on {} GPUs, seeds {}..{}: the most GPU any packer could have allocated "
      "(% of capacity)\n",
      input->trace_stem, input->total_gpus, args.seeds.front(), args.seeds.back());
  for (const std::string& arm : PoliciesOrDefault(args, experiment)) {
    std::vector<std::vector<OpenbBoundPoint>> per_seed;
    for (uint64_t seed : args.seeds) {
      args.Progress(fmt::format("openb-bound: {} seed {}", arm, seed));
      Rng rng(seed);  // as RunOpenb: the same arrivals for the same seed
      const std::vector<model::Workload> arrivals =
          OpenbArrivals(input->pods, capacity, args.inflation, rng);
      auto points = OpenbAllocationBound(input->nodes, arrivals, levels, {.integer = arm == "ip"});
      if (!points) return std::unexpected(points.error());
      per_seed.push_back(std::move(*points));
    }
    nlohmann::json rows = nlohmann::json::array();
    out.table += fmt::format("\n{:>9}  {:>8}  {:>15}  {} ({})\n", "arrived %", "bound %",
                             "min..max", "proven", arm);
    for (const LevelSummary& s : Summarize(per_seed)) {
      rows.push_back({{"arrived_pct", s.level},
                      {"alloc_pct", s.mean},
                      {"alloc_pct_min", s.low},
                      {"alloc_pct_max", s.high},
                      {"proven", s.proven}});
      out.table += fmt::format("{:>9}  {:>8.2f}  {:>6.2f}..{:<6.2f}  {}/{}\n", s.level, s.mean,
                               s.low, s.high, s.proven, per_seed.size());
    }
    out.json["arms"].push_back({{"arm", arm}, {"levels", std::move(rows)}});
  }
  return out;
}

}  // namespace tessera::sim
