#include "sim/openb.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/csv.h"
#include "policy/frag.h"
#include "policy/registry.h"
#include "sim/moves.h"
#include "sim/openb_report.h"
#include "sim/replay.h"

namespace tessera::sim {
namespace {

// A non-negative integer cell that fits T; an Error naming file:line and the column.
template <typename T>
Expected<T> NonNegative(const CsvTable& csv, const CsvRow& row, int column) {
  Expected<long long> value = csv.Int(row, column);
  if (!value || *value < 0 || *value > std::numeric_limits<T>::max()) {
    return csv.FailAt(row, fmt::format("{} '{}' is not a non-negative number", csv.header()[column],
                                       row.cells[column]));
  }
  return static_cast<T>(*value);
}

Expected<std::vector<model::GpuModelId>> ParseModels(const CsvTable& csv, const CsvRow& row,
                                                     std::string_view spec) {
  std::vector<model::GpuModelId> out;
  if (spec.empty()) return out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t bar = spec.find('|', start);
    const std::string_view name =
        spec.substr(start, bar == std::string_view::npos ? bar : bar - start);
    const std::optional<model::GpuModelId> m = model::FindGpuModel(name);
    if (!m) return csv.FailAt(row, fmt::format("unknown GPU model '{}'", name));
    if (std::find(out.begin(), out.end(), *m) == out.end()) out.push_back(*m);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

// Round half to even, as Python's round(x, 0) in the reference analysis.
int Bucket(double pct) { return static_cast<int>(std::nearbyint(pct)); }

}  // namespace

Expected<std::vector<model::NodeSpec>> LoadOpenbNodes(const std::string& path) {
  auto csv = CsvTable::ReadFile(path);
  if (!csv) return std::unexpected(csv.error());
  auto columns = csv->Columns({"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!columns) return std::unexpected(columns.error());
  const int sn = (*columns)[0], cpu_col = (*columns)[1], mem_col = (*columns)[2],
            gpu_col = (*columns)[3], model_col = (*columns)[4];
  model::ClusterState cluster;
  std::vector<model::NodeSpec> specs;
  int total_gpus = 0;
  for (const CsvRow& row : csv->rows()) {
    if (specs.size() == static_cast<size_t>(kOpenbMaxNodes)) {
      return csv->FailAt(row, fmt::format("more than {} nodes", kOpenbMaxNodes));
    }
    auto cpu = NonNegative<int64_t>(*csv, row, cpu_col);
    if (!cpu) return std::unexpected(cpu.error());
    auto mem = NonNegative<int64_t>(*csv, row, mem_col);
    if (!mem) return std::unexpected(mem.error());
    auto gpus = NonNegative<int>(*csv, row, gpu_col);
    if (!gpus) return std::unexpected(gpus.error());
    // Checked before the node's GPUs are made: one line asking for 2e9 of them was bad_alloc.
    if (*gpus > kOpenbMaxGpusPerNode) {
      return csv->FailAt(
          row, fmt::format("gpu {}: at most {} GPUs on one node", *gpus, kOpenbMaxGpusPerNode));
    }
    total_gpus += *gpus;
    if (total_gpus > kOpenbMaxGpus) {
      return csv->FailAt(row, fmt::format("more than {} GPUs in all", kOpenbMaxGpus));
    }
    const std::string& model_name = row.cells[model_col];
    model::NodeSpec spec{row.cells[sn], *cpu, *mem, {}, {}};
    if (*gpus > 0) {
      const std::optional<model::GpuModelId> m = model::FindGpuModel(model_name);
      if (!m) return csv->FailAt(row, fmt::format("unknown GPU model '{}'", model_name));
      spec = model::UniformNode(spec.name, *m, *gpus, *cpu, *mem);
    }
    if (auto added = cluster.AddNode(spec); !added) {
      return csv->FailAt(row, added.error().message);
    }
    specs.push_back(std::move(spec));
  }
  if (specs.empty()) return Fail("{}: no nodes", path);
  return specs;
}

Expected<std::vector<model::Workload>> LoadOpenbPods(const std::string& path) {
  auto csv = CsvTable::ReadFile(path);
  if (!csv) return std::unexpected(csv.error());
  auto columns = csv->Columns({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!columns) return std::unexpected(columns.error());
  const int name_col = (*columns)[0], cpu_col = (*columns)[1], mem_col = (*columns)[2],
            count_col = (*columns)[3], milli_col = (*columns)[4];
  const std::optional<int> spec_col = csv->FindColumn("gpu_spec");
  std::vector<model::Workload> pods;
  for (const CsvRow& row : csv->rows()) {
    model::Workload w;
    w.id = static_cast<model::WorkloadId>(pods.size() + 1);
    w.name = row.cells[name_col];
    auto cpu = NonNegative<int64_t>(*csv, row, cpu_col);
    if (!cpu) return std::unexpected(cpu.error());
    auto mem = NonNegative<int64_t>(*csv, row, mem_col);
    if (!mem) return std::unexpected(mem.error());
    auto count = NonNegative<int>(*csv, row, count_col);
    if (!count) return std::unexpected(count.error());
    auto milli = NonNegative<int>(*csv, row, milli_col);
    if (!milli) return std::unexpected(milli.error());
    w.cpu_milli = *cpu;
    w.memory_mib = *mem;
    w.gpu.count = *count;
    w.gpu.milli = *count == 0 ? 0 : std::min(*milli, 1000);  // the method caps shares at 1000
    if (*count > 0 && *milli == 0) return csv->FailAt(row, "num_gpu > 0 with gpu_milli 0");
    if (spec_col) {
      auto models = ParseModels(*csv, row, row.cells[*spec_col]);
      if (!models) return std::unexpected(models.error());
      w.gpu.models = std::move(*models);
    }
    if (auto ok = w.Validate(); !ok) return csv->FailAt(row, ok.error().message);
    pods.push_back(std::move(w));
  }
  if (pods.empty()) return Fail("{}: no pods", path);
  return pods;
}

std::vector<model::Workload> OpenbArrivals(std::span<const model::Workload> pods,
                                           double capacity_gpu_milli, double inflation, Rng& rng) {
  std::vector<model::Workload> order(pods.begin(), pods.end());
  rng.Shuffle(order);
  const double target = inflation * capacity_gpu_milli;
  double total = 0;
  for (const model::Workload& w : order) total += RequestedGpuMilli(w);
  if (total > target) {
    // The method removes a pod drawn uniformly from those left until the total is at the
    // target: draw k = Below(left), drop the k-th pod still in. Erasing it from the vector cost
    // O(n) a pod (80,000 lines: 16 s); a Fenwick tree of the pods still in finds the k-th one
    // in O(log n), with the same draws and so the same pods kept.
    const size_t n = order.size();
    std::vector<uint32_t> in_tree(n + 1, 0);  // 1-based; node i counts pods in (i - lowbit, i]
    for (size_t i = 1; i <= n; ++i) {
      in_tree[i] += 1;
      if (const size_t up = i + (i & -i); up <= n) in_tree[up] += in_tree[i];
    }
    std::vector<bool> dropped(n, false);
    size_t left = n;
    while (total > target && left > 0) {
      uint64_t rank = rng.Below(left) + 1;  // the rank-th pod still in, counting from 1
      size_t at = 0;                        // pods in [1, at] number fewer than rank
      for (size_t step = std::bit_floor(n); step > 0; step >>= 1) {
        if (at + step <= n && in_tree[at + step] < rank) {
          at += step;
          rank -= in_tree[at];
        }
      }
      dropped[at] = true;  // position at + 1, 1-based
      total -= RequestedGpuMilli(order[at]);
      for (size_t i = at + 1; i <= n; i += i & -i) --in_tree[i];
      --left;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (dropped[i]) continue;
      if (kept != i) order[kept] = std::move(order[i]);
      ++kept;
    }
    order.resize(kept);
  } else {
    for (int drawn = 0;; ++drawn) {
      const model::Workload& pick = pods[rng.Below(pods.size())];
      if (total + RequestedGpuMilli(pick) > target) break;  // the first overshooting draw stops
      total += RequestedGpuMilli(pick);
      order.push_back(pick);
      order.back().name += fmt::format("-inflated-{}", drawn);
    }
  }
  for (size_t i = 0; i < order.size(); ++i) order[i].id = static_cast<model::WorkloadId>(i + 1);
  return order;
}

Expected<OpenbInput> LoadOpenb(const std::string& pods_path, const std::string& nodes_path) {
  auto nodes = LoadOpenbNodes(nodes_path);
  if (!nodes) return std::unexpected(nodes.error());
  auto pods = LoadOpenbPods(pods_path);
  if (!pods) return std::unexpected(pods.error());
  int gpus = 0;
  for (const model::NodeSpec& n : *nodes) gpus += static_cast<int>(n.gpus.size());
  return OpenbInput{std::move(*nodes), gpus, std::move(*pods),
                    std::filesystem::path(pods_path).stem().string()};
}

namespace {

// What one replay adds up per arrived-load bucket (1 %), and its curve points: each bucket's
// means, NaN where no event fell in it or its neighbours.
struct BucketSums {
  double alloc = 0, frag = 0, frag_idle = 0;
  int events = 0;
};

void FillBuckets(const std::array<BucketSums, kOpenbMaxPct + 2>& sums, OpenbRun& run) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int b = 0; b <= kOpenbMaxPct; ++b) {
    BucketSums s = sums[b];
    if (s.events == 0) {  // the reference analysis falls back to the neighbours ±1
      for (int d : {-1, 1}) {
        if (b + d < 0 || b + d > kOpenbMaxPct + 1) continue;
        s.alloc += sums[b + d].alloc;
        s.frag += sums[b + d].frag;
        s.frag_idle += sums[b + d].frag_idle;
        s.events += sums[b + d].events;
      }
    }
    run.alloc_pct[b] = s.events ? s.alloc / s.events : nan;
    run.frag_pct[b] = s.events ? s.frag / s.events : nan;
    run.frag_idle_pct[b] = s.events ? s.frag_idle / s.events : nan;
  }
}

}  // namespace

Expected<OpenbRun> RunOpenb(const OpenbInput& input, const std::string& policy_name, uint64_t seed,
                            double inflation, double moves_per_100) {
  const double capacity = 1000.0 * input.total_gpus;
  if (capacity <= 0) return Fail("openb: the cluster has no GPUs");
  Rng rng(seed);
  const std::vector<model::Workload> arrivals = OpenbArrivals(input.pods, capacity, inflation, rng);
  // The typical pods come from the original list (reference simulator: SetTypicalPods on the
  // workload pods before tuning), 95% coverage, CPU-only pods included.
  const policy::ShapeDistribution typical = policy::ShapeDistribution::Typical(input.pods, 0.95);
  policy::PolicyContext context{&rng, nullptr};
  context.typical_pods = &typical;  // data for any policy that weighs fragmentation
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(policy_name);  // name or name{json}
  if (!spec) return std::unexpected(spec.error());
  auto policy = policy::MakePolicy(spec->name, context, spec->options);
  if (!policy) return std::unexpected(policy.error());

  OpenbRun run;
  run.policy = policy_name;
  run.seed = seed;
  run.total_gpus = input.total_gpus;
  run.pods = arrivals.size();

  // Nodes in a seeded random order; the core's ties go to the first of them.
  std::vector<const model::NodeSpec*> node_order;
  for (const model::NodeSpec& n : input.nodes) node_order.push_back(&n);
  rng.Shuffle(node_order);
  model::ClusterState cluster;
  for (const model::NodeSpec* n : node_order) {
    if (auto added = cluster.AddNode(*n); !added) return std::unexpected(added.error());
  }
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  // Fragmentation of every node, updated when a placement changes one.
  std::vector<double> node_frag(cluster.node_count());
  double frag_sum = 0;
  for (model::NodeIndex n = 0; n < cluster.node_count(); ++n) {
    node_frag[n] = policy::FragmentMilli(policy::NodeFreeOf(cluster, n), typical);
    frag_sum += node_frag[n];
  }
  std::array<BucketSums, kOpenbMaxPct + 2> sums{};
  auto refresh = [&](model::NodeIndex n) {
    const double f = policy::FragmentMilli(policy::NodeFreeOf(cluster, n), typical);
    frag_sum += f - node_frag[n];
    node_frag[n] = f;
  };
  auto on_event = [&](const ReplayEvent& e) {
    if (e.placed) refresh(cluster.Find(e.workload->id)->placement.node);
    for (model::NodeIndex n : e.touched) refresh(n);
    const int b = std::clamp(Bucket(100 * e.arrived_gpu_milli / capacity), 0, kOpenbMaxPct + 1);
    const double idle = capacity - e.allocated_gpu_milli;
    BucketSums& s = sums[b];
    s.alloc += 100 * e.allocated_gpu_milli / capacity;
    s.frag += 100 * frag_sum / capacity;
    s.frag_idle += idle > 0 ? 100 * frag_sum / idle : 0;
    ++s.events;
  };
  MoveStats moved;
  run.moves_per_100 = moves_per_100;
  const ReplayResult result =
      moves_per_100 > 0
          ? ReplayWithMoves(cluster, **policy, rng, arrivals, {moves_per_100}, moved, on_event)
          : ReplayArriveOnly(cluster, **policy, rng, arrivals, on_event, sched::TieBreak::kFirst);
  run.moves = moved.moves;
  run.rescued = moved.rescued;
  run.moved_gpu_milli = moved.moved_gpu_milli;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  run.failed_pods = result.failed;
  FillBuckets(sums, run);
  return run;
}

std::vector<OpenbSummary> SummarizeOpenb(std::span<const OpenbRun> runs) {
  std::vector<OpenbSummary> out;
  for (const OpenbRun& r : runs) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const OpenbSummary& s) { return s.policy == r.policy; });
    if (it == out.end()) {
      out.push_back({});
      it = out.end() - 1;
      it->policy = r.policy;
      it->total_gpus = r.total_gpus;
    }
    it->seeds.push_back(r.seed);
  }
  auto stats = [](const std::vector<double>& xs, double& mean, double& sd) {
    mean = sd = std::numeric_limits<double>::quiet_NaN();
    if (xs.empty()) return;
    double sum = 0;
    for (double x : xs) sum += x;
    mean = sum / xs.size();
    double sq = 0;
    for (double x : xs) sq += (x - mean) * (x - mean);
    sd = xs.size() > 1 ? std::sqrt(sq / (xs.size() - 1)) : 0;
  };
  for (OpenbSummary& s : out) {
    std::vector<const OpenbRun*> mine;
    for (const OpenbRun& r : runs) {
      if (r.policy == s.policy) mine.push_back(&r);
    }
    for (const OpenbRun* r : mine) {
      s.failed_pods += static_cast<double>(r->failed_pods) / mine.size();
      s.wall_s += r->wall_s / mine.size();
      s.cpu_s += r->cpu_s / mine.size();
    }
    for (int b = 0; b <= kOpenbMaxPct; ++b) {
      std::vector<double> a, f, fi;
      for (const OpenbRun* r : mine) {
        if (!std::isnan(r->alloc_pct[b])) a.push_back(r->alloc_pct[b]);
        if (!std::isnan(r->frag_pct[b])) f.push_back(r->frag_pct[b]);
        if (!std::isnan(r->frag_idle_pct[b])) fi.push_back(r->frag_idle_pct[b]);
      }
      double unused = 0;
      stats(a, s.alloc_pct[b], s.alloc_std[b]);
      stats(f, s.frag_pct[b], s.frag_std[b]);
      stats(fi, s.frag_idle_pct[b], unused);
    }
  }
  return out;
}

namespace {

nlohmann::json AtBuckets(const std::array<double, kOpenbMaxPct + 1>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (int b : {80, 90, 100, 110, 120, 130}) {
    j[std::to_string(b)] = std::isnan(v[b]) ? nlohmann::json(nullptr) : nlohmann::json(v[b]);
  }
  return j;
}

// One object per policy (the object alone for one policy).
nlohmann::json OpenbJson(const OpenbInput& input, std::span<const OpenbSummary> summaries) {
  nlohmann::json results = nlohmann::json::array();
  for (const OpenbSummary& s : summaries) {
    nlohmann::json j = {{"experiment", "openb-alloc"},
                        {"trace", input.trace_stem},
                        {"policy", s.policy},
                        {"total_gpus", s.total_gpus},
                        {"alloc_at", AtBuckets(s.alloc_pct)},
                        {"frag_at", AtBuckets(s.frag_pct)},
                        {"failed_pods", s.failed_pods},
                        {"wall_s", s.wall_s},
                        {"cpu_s", s.cpu_s}};
    if (s.seeds.size() == 1) {
      j["seed"] = s.seeds[0];
      j["failed_pods"] = static_cast<int64_t>(std::llround(s.failed_pods));
    } else {
      j["seeds"] = s.seeds;
      j["alloc_std_at"] = AtBuckets(s.alloc_std);
      j["frag_std_at"] = AtBuckets(s.frag_std);
    }
    results.push_back(std::move(j));
  }
  return results.size() == 1 ? results[0] : results;
}

// A row per policy; a bucket that no arrival reached (a cluster so small that one pod moves
// the arrived load past it) prints "-", with a note below.
std::string OpenbText(const OpenbInput& input, std::span<const OpenbSummary> summaries,
                      double inflation, size_t seeds) {
  std::string out = fmt::format(
      "experiment openb-alloc: {}, {} GPUs, inflated to {:.0f}% of GPU capacity, {} seed(s)\n\n",
      input.trace_stem, input.total_gpus, 100 * inflation, seeds);
  size_t width = 16;  // as wide as the longest policy with its options
  for (const OpenbSummary& s : summaries) width = std::max(width, s.policy.size());
  out += fmt::format("{:<{}} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}\n", "policy",
                     width, "a@80", "a@90", "a@100", "a@110", "a@120", "a@130", "frag@130",
                     "failed", "wall s");
  auto cell = [](double v, int w) {
    return std::isnan(v) ? fmt::format("{:>{}}", "-", w) : fmt::format("{:>{}.2f}", v, w);
  };
  bool gaps = false;
  for (const OpenbSummary& s : summaries) {
    for (int b : {80, 90, 100, 110, 120, 130}) gaps |= std::isnan(s.alloc_pct[b]);
    out +=
        fmt::format("{:<{}} {} {} {} {} {} {} {} {:>9.1f} {:>8.3f}\n", s.policy, width,
                    cell(s.alloc_pct[80], 8), cell(s.alloc_pct[90], 8), cell(s.alloc_pct[100], 8),
                    cell(s.alloc_pct[110], 8), cell(s.alloc_pct[120], 8), cell(s.alloc_pct[130], 8),
                    cell(s.frag_pct[130], 9), s.failed_pods, s.wall_s);
  }
  if (gaps) {
    std::vector<double> asked;  // GPU milli each pod of the trace asks for
    for (const model::Workload& w : input.pods) asked.push_back(RequestedGpuMilli(w));
    std::nth_element(asked.begin(), asked.begin() + asked.size() / 2, asked.end());
    const double median = asked.empty() ? 0 : asked[asked.size() / 2];
    out += fmt::format(
        "\n-: no arrival brought the arrived load to that level (or within 1% of it): with {} "
        "GPU(s) a median pod moves it by {:.0f}%; use a larger node list for the curve\n",
        input.total_gpus, median / (10.0 * input.total_gpus));
  }
  return out;
}

}  // namespace

Expected<OpenbInput> LoadOpenbArgs(const ExperimentArgs& args) {
  const std::string nodes =
      !args.nodes.empty()
          ? args.nodes
          : (std::filesystem::path(args.trace).parent_path() / "openb_node_list_gpu_node.csv")
                .string();
  for (const auto& [flag, path] :
       {std::pair<std::string, std::string>{"--trace", args.trace},
        {args.nodes.empty() ? "the node list beside --trace" : "--nodes", nodes}}) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Fail("{} {}: {}", flag, path,
                  std::filesystem::exists(path, ec) ? "is not a file" : "does not exist");
    }
  }
  return LoadOpenb(args.trace, nodes);
}

Expected<void> CheckOpenbArgs(const ExperimentArgs& args) {
  if (args.trace.empty()) return Fail("--experiment openb-alloc needs --trace POD_CSV");
  return {};
}

Expected<ExperimentOutput> RunOpenbExperiment(const ExperimentArgs& args,
                                              const Experiment& experiment) {
  auto input = LoadOpenbArgs(args);
  if (!input) return std::unexpected(input.error());
  const std::vector<std::string> policies = PoliciesOrDefault(args, experiment);
  std::vector<OpenbRun> runs;
  const size_t total = policies.size() * args.seeds.size();
  for (const std::string& name : policies) {
    for (uint64_t seed : args.seeds) {
      args.Progress(
          fmt::format("openb-alloc: {}/{} replays ({} seed {})", runs.size(), total, name, seed));
      auto run = RunOpenb(*input, name, seed, args.inflation);
      if (!run) return std::unexpected(run.error());
      runs.push_back(std::move(*run));
    }
  }
  const std::vector<OpenbSummary> summaries = SummarizeOpenb(runs);
  ExperimentOutput out{.json = OpenbJson(*input, summaries),
                       .table = OpenbText(*input, summaries, args.inflation, args.seeds.size())};
  if (!args.out.empty()) {
    auto written = WriteOpenbReport(args.out, input->trace_stem, runs);
    if (!written) return std::unexpected(written.error());
    out.written = std::move(*written);
  }
  return out;
}

}  // namespace tessera::sim
