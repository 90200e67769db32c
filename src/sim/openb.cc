#include "sim/openb.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "policy/frag.h"
#include "policy/registry.h"
#include "sim/replay.h"

namespace tessera::sim {
namespace {

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

template <typename T>
bool ParseNumber(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

// A CSV file with a header: the column index of each wanted name (-1 if absent).
struct CsvFile {
  std::string path;
  std::vector<std::string> lines;  // lines[0] is the header
  std::map<std::string, int, std::less<>> columns;
};

Expected<CsvFile> ReadCsv(const std::string& path, const std::vector<std::string>& required) {
  std::ifstream in(path);
  if (!in) return Fail("{}: cannot open", path);
  CsvFile f{path, {}, {}};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    f.lines.push_back(std::move(line));
  }
  if (f.lines.empty()) return FailAt(path, 1, "empty file (expected a header)");
  const std::vector<std::string_view> header = SplitCsv(f.lines[0]);
  for (size_t i = 0; i < header.size(); ++i) f.columns.emplace(std::string(header[i]), i);
  for (const std::string& r : required) {
    if (!f.columns.contains(r)) return FailAt(path, 1, fmt::format("missing column '{}'", r));
  }
  return f;
}

int Column(const CsvFile& f, std::string_view name) {
  auto it = f.columns.find(name);
  return it == f.columns.end() ? -1 : it->second;
}

template <typename T>
Expected<T> Field(const CsvFile& f, int line_no, const std::vector<std::string_view>& cells,
                  std::string_view name) {
  const int col = Column(f, name);
  T value{};
  if (!ParseNumber(cells[col], value) || value < 0) {
    return FailAt(f.path, line_no,
                  fmt::format("{} '{}' is not a non-negative number", name, cells[col]));
  }
  return value;
}

Expected<std::vector<model::GpuModelId>> ParseModels(const CsvFile& f, int line_no,
                                                     std::string_view spec) {
  std::vector<model::GpuModelId> out;
  if (spec.empty()) return out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t bar = spec.find('|', start);
    const std::string_view name =
        spec.substr(start, bar == std::string_view::npos ? bar : bar - start);
    const std::optional<model::GpuModelId> m = model::FindGpuModel(name);
    if (!m) return FailAt(f.path, line_no, fmt::format("unknown GPU model '{}'", name));
    if (std::find(out.begin(), out.end(), *m) == out.end()) out.push_back(*m);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

// Round half to even, as Python's round(x, 0) in the reference analysis.
int Bucket(double pct) { return static_cast<int>(std::nearbyint(pct)); }

// Line i of the file split into cells; an Error naming file and line if the count of cells is
// not the header's.
Expected<std::vector<std::string_view>> RowCells(const CsvFile& csv, const std::string& path,
                                                 size_t i) {
  std::vector<std::string_view> cells = SplitCsv(csv.lines[i]);
  if (cells.size() != csv.columns.size()) {
    return FailAt(path, static_cast<int>(i) + 1,
                  fmt::format("{} fields, header has {}", cells.size(), csv.columns.size()));
  }
  return cells;
}

}  // namespace

Expected<std::vector<model::NodeSpec>> LoadOpenbNodes(const std::string& path) {
  auto csv = ReadCsv(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!csv) return std::unexpected(csv.error());
  model::ClusterState cluster;
  std::vector<model::NodeSpec> specs;
  for (size_t i = 1; i < csv->lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    if (csv->lines[i].empty()) continue;
    auto row = RowCells(*csv, path, i);
    if (!row) return std::unexpected(row.error());
    const std::vector<std::string_view>& cells = *row;
    auto cpu = Field<int64_t>(*csv, line_no, cells, "cpu_milli");
    if (!cpu) return std::unexpected(cpu.error());
    auto mem = Field<int64_t>(*csv, line_no, cells, "memory_mib");
    if (!mem) return std::unexpected(mem.error());
    auto gpus = Field<int>(*csv, line_no, cells, "gpu");
    if (!gpus) return std::unexpected(gpus.error());
    const std::string_view model_name = cells[Column(*csv, "model")];
    model::NodeSpec spec{std::string(cells[Column(*csv, "sn")]), *cpu, *mem, {}, {}};
    if (*gpus > 0) {
      const std::optional<model::GpuModelId> m = model::FindGpuModel(model_name);
      if (!m) return FailAt(path, line_no, fmt::format("unknown GPU model '{}'", model_name));
      spec = model::UniformNode(spec.name, *m, *gpus, *cpu, *mem);
    }
    if (auto added = cluster.AddNode(spec); !added) {
      return FailAt(path, line_no, added.error().message);
    }
    specs.push_back(std::move(spec));
  }
  if (specs.empty()) return Fail("{}: no nodes", path);
  return specs;
}

Expected<std::vector<model::Workload>> LoadOpenbPods(const std::string& path) {
  auto csv = ReadCsv(path, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!csv) return std::unexpected(csv.error());
  const int spec_col = Column(*csv, "gpu_spec");
  std::vector<model::Workload> pods;
  for (size_t i = 1; i < csv->lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    if (csv->lines[i].empty()) continue;
    auto row = RowCells(*csv, path, i);
    if (!row) return std::unexpected(row.error());
    const std::vector<std::string_view>& cells = *row;
    model::Workload w;
    w.id = static_cast<model::WorkloadId>(pods.size() + 1);
    w.name = std::string(cells[Column(*csv, "name")]);
    auto cpu = Field<int64_t>(*csv, line_no, cells, "cpu_milli");
    if (!cpu) return std::unexpected(cpu.error());
    auto mem = Field<int64_t>(*csv, line_no, cells, "memory_mib");
    if (!mem) return std::unexpected(mem.error());
    auto count = Field<int>(*csv, line_no, cells, "num_gpu");
    if (!count) return std::unexpected(count.error());
    auto milli = Field<int>(*csv, line_no, cells, "gpu_milli");
    if (!milli) return std::unexpected(milli.error());
    w.cpu_milli = *cpu;
    w.memory_mib = *mem;
    w.gpu.count = *count;
    w.gpu.milli = *count == 0 ? 0 : std::min(*milli, 1000);  // the method caps shares at 1000
    if (*count > 0 && *milli == 0) {
      return FailAt(path, line_no, "num_gpu > 0 with gpu_milli 0");
    }
    if (spec_col >= 0) {
      auto models = ParseModels(*csv, line_no, cells[spec_col]);
      if (!models) return std::unexpected(models.error());
      w.gpu.models = std::move(*models);
    }
    if (auto ok = w.Validate(); !ok) return FailAt(path, line_no, ok.error().message);
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
    while (total > target && !order.empty()) {
      const size_t i = rng.Below(order.size());
      total -= RequestedGpuMilli(order[i]);
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
    }
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

Expected<OpenbRun> RunOpenb(const OpenbInput& input, const std::string& policy_name, uint64_t seed,
                            double inflation) {
  const double capacity = 1000.0 * input.total_gpus;
  if (capacity <= 0) return Fail("openb: the cluster has no GPUs");
  Rng rng(seed);
  const std::vector<model::Workload> arrivals = OpenbArrivals(input.pods, capacity, inflation, rng);
  // The typical pods come from the original list (reference simulator: SetTypicalPods on the
  // workload pods before tuning), 95% coverage, CPU-only pods included.
  const policy::ShapeDistribution typical = policy::ShapeDistribution::Typical(input.pods, 0.95);
  policy::PolicyContext context{&rng, nullptr};
  context.typical_pods = &typical;  // data for any policy that weighs fragmentation
  auto policy = policy::MakePolicy(policy_name, context);
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
  struct Sums {
    double alloc = 0, frag = 0, frag_idle = 0;
    int events = 0;
  };
  std::array<Sums, kOpenbMaxPct + 2> sums{};
  const ReplayResult result = ReplayArriveOnly(
      cluster, **policy, rng, arrivals,
      [&](const ReplayEvent& e) {
        if (e.placed) {
          const model::NodeIndex n = cluster.Find(e.workload->id)->placement.node;
          const double f = policy::FragmentMilli(policy::NodeFreeOf(cluster, n), typical);
          frag_sum += f - node_frag[n];
          node_frag[n] = f;
        }
        const int b = std::clamp(Bucket(100 * e.arrived_gpu_milli / capacity), 0, kOpenbMaxPct + 1);
        const double idle = capacity - e.allocated_gpu_milli;
        Sums& s = sums[b];
        s.alloc += 100 * e.allocated_gpu_milli / capacity;
        s.frag += 100 * frag_sum / capacity;
        s.frag_idle += idle > 0 ? 100 * frag_sum / idle : 0;
        ++s.events;
      },
      sched::TieBreak::kFirst);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  run.failed_pods = result.failed;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int b = 0; b <= kOpenbMaxPct; ++b) {
    Sums s = sums[b];
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

}  // namespace tessera::sim
