#include "policy/drmaestro.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_set>

#include "policy/fit.h"
#include "policy/flow/flow.h"

namespace tessera::policy {
namespace {

constexpr double kCostScale = 1000;  // costs are (1 − Ut) · P · 1000, rounded

// A request the flow places: whole GPUs (any count, MIG off) or none.
bool FlowShaped(const Workload& w) {
  return w.gpu.count == 0 || (w.gpu.milli == 1000 && w.gpu.mig_profile.empty());
}

// An idle, available whole GPU (MIG off) of a ready node that a whole-GPU request of `w` may
// take: allowed model, enough memory.
bool UsableGpu(const Workload& w, GpuIndex g, const ClusterState& c) {
  const model::Gpu& gpu = c.gpu(g);
  if (!c.node(gpu.node).ready || !gpu.available || gpu.partition_count != 1 || !gpu.idle()) {
    return false;
  }
  return PartitionFits(w, gpu, c.partition(ClusterState::PartitionOf(g, 0)));
}

// Whether a whole GPU of `gpu_model` can hold one of `w`'s GPUs: an allowed model with enough
// memory (phase 2's supplies are grouped by model, not checked per job).
bool Takes(const Workload& w, model::GpuModelId gpu_model) {
  return w.gpu.AllowsModel(gpu_model) &&
         w.gpu.memory_mib <= model::GetGpuModel(gpu_model).memory_mib;
}

// The cycle's view of the nodes: free CPU and memory (as phase 1 reserves them) and idle GPUs.
struct NodeView {
  int64_t free_cpu = 0;
  int64_t free_memory = 0;
  bool ready = false;
  double load = 0;  // network: Σ network_share of the remote streams through it (profiles)
};

// A request shape: what decides where a job may go.
using ShapeKey = std::tuple<int64_t, int64_t, int, int64_t, std::vector<model::GpuModelId>>;
ShapeKey ShapeOf(const Workload& w) {
  return {w.cpu_milli, w.memory_mib, w.gpu.count, w.gpu.memory_mib, w.gpu.models};
}

std::string NodeList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (out.find(n) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

double DrmaestroUtility(double phi, double tau, int z) {
  const double u = (tau - phi) / tau;
  return phi <= tau ? u : u * (10.0 - z) / 9.0;
}

struct Drmaestro::Job {
  const Workload* w = nullptr;
  int64_t waited = 0;
  const JobProfile* profile = nullptr;
  int shape = 0;
  size_t line = 0;  // into last_.jobs
};

Drmaestro::Drmaestro(DrmaestroOptions options, const JobProfiles* profiles)
    : options_(options), profiles_(profiles) {}

int64_t Drmaestro::waited(WorkloadId id) const {
  auto it = waited_.find(id);
  return it == waited_.end() ? 0 : it->second;
}

void Drmaestro::Order(std::vector<const Workload*>& pending) const {
  // Those that waited first (few), then the rest in arrival order, without sorting the rest.
  const auto front = std::stable_partition(pending.begin(), pending.end(),
                                           [&](const Workload* w) { return waited(w->id) > 0; });
  std::stable_sort(pending.begin(), front, [&](const Workload* a, const Workload* b) {
    return std::tuple(-waited(a->id), a->arrival_s, a->id) <
           std::tuple(-waited(b->id), b->arrival_s, b->id);
  });
  const auto fifo = [](const Workload* a, const Workload* b) {
    return std::tuple(a->arrival_s, a->id) < std::tuple(b->arrival_s, b->id);
  };
  if (!std::is_sorted(front, pending.end(), fifo)) std::stable_sort(front, pending.end(), fifo);
}

std::optional<Candidate> Drmaestro::Score(const Workload& w, NodeIndex node,
                                          const ClusterState& c) {
  if (!FlowShaped(w)) return std::nullopt;
  std::optional<Placement> p = FirstFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  return Candidate{.score = 50, .placement = std::move(*p)};
}

double Drmaestro::Phi(const Job& j, model::GpuModelId gpu_model, bool remote, double load) const {
  if (j.profile == nullptr || j.w->goal_s <= 0) return -1;
  double seconds = -1;
  if (gpu_model >= 0) {
    auto it = j.profile->seconds_per_query.find(gpu_model);
    if (it != j.profile->seconds_per_query.end()) seconds = it->second;
  } else {  // not known yet (phase 1's remote class): the fastest allowed model profiled
    for (const auto& [m, s] : j.profile->seconds_per_query) {
      if (j.w->gpu.AllowsModel(m) && (seconds < 0 || s < seconds)) seconds = s;
    }
  }
  if (seconds < 0) return -1;
  double phi = static_cast<double>(j.w->queries) * seconds;
  if (remote) {
    phi *= j.profile->remote_slowdown;
    if (options_.network_aware) phi *= 1 + j.profile->network_sensitivity * load;
  }
  return phi;
}

int64_t Drmaestro::Cost(const Workload& w, double phi, double preference) const {
  const double complement = phi < 0 ? 1.0 : 1.0 - DrmaestroUtility(phi, w.goal_s, w.goal_z);
  return std::llround(complement * preference * kCostScale);
}

std::optional<std::vector<Candidate>> Drmaestro::PlaceBatch(
    std::span<const Workload* const> pending, const ClusterState& c) {
  last_ = {};
  std::vector<Candidate> out;
  {  // W of jobs no longer pending is forgotten
    std::unordered_set<WorkloadId> ids;
    for (const Workload* w : pending) ids.insert(w->id);
    std::erase_if(waited_, [&](const auto& kv) { return !ids.contains(kv.first); });
  }
  const int buckets = options_.network_aware ? std::max(1, options_.load_buckets) : 1;
  const auto bucket_of = [&](double load) {
    return std::min(buckets - 1, static_cast<int>(std::min(load, 1.0) * buckets));
  };
  const auto midpoint = [&](int b) { return options_.network_aware ? (b + 0.5) / buckets : 0.0; };

  // The nodes as this cycle sees them.
  std::vector<NodeView> nodes(static_cast<size_t>(c.node_count()));
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    nodes[n] = {c.node(n).free_cpu_milli(), c.node(n).free_memory_mib(), c.node(n).ready, 0};
  }
  if (profiles_ != nullptr) {
    for (const auto& [id, pw] : c.placed()) {
      if (!pw.placement.has_remote()) continue;
      auto it = profiles_->find(pw.workload.app);
      if (it == profiles_->end()) continue;
      for (const auto& [cpu_node, gpu_node] : c.RemoteStreams(pw.placement)) {
        nodes[cpu_node].load += it->second.network_share;
        nodes[gpu_node].load += it->second.network_share;
      }
    }
  }

  // The batch: jobs that fit in the free resources, longest waiting first, until they ask for
  // twice the free GPUs (002 Alg. 1: pop_jobs(cs) takes "only the jobs that fit").
  // A request shape, with what each node offers it: its idle GPUs the shape can take there,
  // and their model (-1: none), found once per cycle and used by the batch and by phase 1.
  struct Shape {
    const Workload* rep;
    bool fits = false;
    std::vector<int> gpus_here;
    std::vector<model::GpuModelId> gpu_model;
  };
  std::map<ShapeKey, int> shape_index;
  std::vector<Shape> shapes;
  std::vector<Job> jobs;
  int free_gpus = 0;
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
    const model::Gpu& gpu = c.gpu(g);
    free_gpus += c.node(gpu.node).ready && gpu.available && gpu.partition_count == 1 && gpu.idle();
  }
  int64_t asked = 0;
  for (const Workload* w : pending) {
    if (!FlowShaped(*w)) continue;
    // First, as it is the cheap test that turns the whole queue away when the GPUs are full.
    if (w->gpu.count > 0 && asked + w->gpu.count > 2 * int64_t{free_gpus}) continue;
    auto [it, added] = shape_index.try_emplace(ShapeOf(*w), static_cast<int>(shapes.size()));
    if (added) {
      Shape shape{w, false, std::vector<int>(nodes.size(), 0),
                  std::vector<model::GpuModelId>(nodes.size(), -1)};
      // Fits: some ready node has its CPU and memory, and its GPUs are free there (or, when
      // disaggregating, anywhere).
      int cluster_gpus = 0;
      bool local = false, cpu = false;
      for (NodeIndex n = 0; n < c.node_count(); ++n) {
        for (int i = 0; i < c.node(n).gpu_count; ++i) {
          const GpuIndex g = c.node(n).first_gpu + i;
          if (!UsableGpu(*w, g, c)) continue;
          ++shape.gpus_here[n];
          if (shape.gpu_model[n] < 0) shape.gpu_model[n] = c.gpu(g).model;
        }
        cluster_gpus += shape.gpus_here[n];
        const NodeView& v = nodes[n];
        const bool room = v.ready && v.free_cpu >= w->cpu_milli && v.free_memory >= w->memory_mib;
        cpu = cpu || room;
        local = local || (room && shape.gpus_here[n] >= w->gpu.count);
      }
      shape.fits = local || (options_.disaggregate && cpu && cluster_gpus >= w->gpu.count);
      shapes.push_back(std::move(shape));
    }
    if (!shapes[it->second].fits) continue;
    asked += w->gpu.count;
    const JobProfile* profile = nullptr;
    if (profiles_ != nullptr) {
      if (auto p = profiles_->find(w->app); p != profiles_->end()) profile = &p->second;
    }
    last_.jobs.push_back({.id = w->id, .waited = waited(w->id)});
    jobs.push_back({w, waited(w->id), profile, it->second, last_.jobs.size() - 1});
  }
  if (jobs.empty()) return out;
  for (Job& j : jobs) {
    last_.jobs[j.line].unscheduled_cost =
        Cost(*j.w, Phi(j, -1, false, 0), options_.unscheduled_preference) +
        j.waited * static_cast<int64_t>(kCostScale);
  }

  // Phase 1: CPU and memory. Machine slots: how many of the cycle's smallest request fit.
  int64_t min_cpu = std::numeric_limits<int64_t>::max(), min_memory = min_cpu;
  for (const Job& j : jobs) {
    if (j.w->cpu_milli > 0) min_cpu = std::min(min_cpu, j.w->cpu_milli);
    if (j.w->memory_mib > 0) min_memory = std::min(min_memory, j.w->memory_mib);
  }
  const auto slots = [&](NodeIndex n) -> int64_t {
    int64_t k = static_cast<int64_t>(jobs.size());
    if (min_cpu != std::numeric_limits<int64_t>::max())
      k = std::min(k, nodes[n].free_cpu / min_cpu);
    if (min_memory != std::numeric_limits<int64_t>::max()) {
      k = std::min(k, nodes[n].free_memory / min_memory);
    }
    return std::max<int64_t>(0, k);
  };
  // Classes per shape: (local?, GPU model (-1: remote, not known yet), load bucket).
  struct Class {
    int shape;
    bool local;
    model::GpuModelId gpu_model;
    int bucket;
    std::vector<std::pair<NodeIndex, int64_t>> machines;  // with capacity
  };
  std::vector<Class> classes;
  std::map<std::tuple<int, bool, model::GpuModelId, int>, int> class_index;
  std::vector<std::vector<int>> classes_of_shape(shapes.size());
  std::vector<int64_t> machine_slots(static_cast<size_t>(c.node_count()), 0);
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    if (nodes[n].ready) machine_slots[n] = slots(n);
  }
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (!shapes[s].fits) continue;
    const Workload& w = *shapes[s].rep;
    for (NodeIndex n = 0; n < c.node_count(); ++n) {
      const NodeView& v = nodes[n];
      if (!v.ready || machine_slots[n] == 0 || v.free_cpu < w.cpu_milli ||
          v.free_memory < w.memory_mib) {
        continue;
      }
      const int here = shapes[s].gpus_here[n];
      const model::GpuModelId gpu_model = shapes[s].gpu_model[n];
      const auto join = [&](bool local, model::GpuModelId class_model, int64_t capacity) {
        const auto key = std::tuple(static_cast<int>(s), local, class_model, bucket_of(v.load));
        auto [it, added] = class_index.try_emplace(key, static_cast<int>(classes.size()));
        if (added) {
          classes.push_back({static_cast<int>(s), local, class_model, std::get<3>(key), {}});
          classes_of_shape[s].push_back(it->second);
        }
        classes[it->second].machines.emplace_back(n, capacity);
      };
      // The local class takes as many jobs as its idle GPUs hold; with disaggregation the
      // machine's CPU and memory are also on offer to jobs whose GPUs are elsewhere.
      if (here >= w.gpu.count) {
        join(true, gpu_model,
             w.gpu.count > 0 ? std::min<int64_t>(machine_slots[n], here / w.gpu.count)
                             : machine_slots[n]);
      }
      if (options_.disaggregate && w.gpu.count > 0) join(false, -1, machine_slots[n]);
    }
  }
  // Node numbering: jobs, unscheduled, classes, machines, sink.
  const int J = static_cast<int>(jobs.size());
  const int unscheduled1 = J;
  const int class0 = J + 1;
  const int machine0 = class0 + static_cast<int>(classes.size());
  const int sink1 = machine0 + c.node_count();
  std::vector<flow::Arc> arcs;
  std::vector<std::pair<int, int>> job_arc;  // arc index → (job, class)
  std::vector<int> kind1;                    // per arc: 0 job→class, 1 job→unscheduled, 2 …
  std::vector<char> postponed(jobs.size(), 0);
  for (int k = 0; k < J; ++k) {
    const Job& j = jobs[k];
    for (int ci : classes_of_shape[j.shape]) {
      const Class& cl = classes[ci];
      const double phi = Phi(j, cl.gpu_model, !cl.local && j.w->gpu.count > 0, midpoint(cl.bucket));
      const bool remote = !cl.local;
      if (remote && options_.network_aware && phi >= 0 && phi > j.w->goal_s &&
          j.waited < options_.max_postpone_cycles) {
        postponed[k] = 1;
        continue;
      }
      job_arc.emplace_back(static_cast<int>(arcs.size()), ci);
      arcs.push_back({k, class0 + ci, 1, Cost(*j.w, phi, remote ? options_.remote_preference : 1)});
      kind1.push_back(0);
    }
    arcs.push_back({k, unscheduled1, 1, last_.jobs[j.line].unscheduled_cost});
    kind1.push_back(1);
  }
  arcs.push_back({unscheduled1, sink1, flow::kUnlimited, 0});
  kind1.push_back(4);
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    for (const auto& [n, capacity] : classes[ci].machines) {
      arcs.push_back({class0 + static_cast<int>(ci), machine0 + n, capacity, 0});
      kind1.push_back(2);
    }
  }
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    if (machine_slots[n] == 0) continue;
    arcs.push_back({machine0 + n, sink1, machine_slots[n], 0});
    kind1.push_back(3);
  }
  std::vector<int64_t> supply(static_cast<size_t>(sink1 + 1), 0);
  for (int k = 0; k < J; ++k) supply[k] = 1;
  supply[sink1] = -J;
  static constexpr const char* kKinds1[] = {"job→class", "job→unscheduled", "class→machine",
                                            "machine→sink", "unscheduled→sink"};
  const flow::FlowResult r1 = flow::MinCostFlow(sink1 + 1, arcs, supply);
  last_.phase1.nodes = sink1 + 1;
  for (int kind : kind1) ++last_.phase1.arcs_by_kind[kKinds1[kind]];
  if (r1.status != flow::Status::kOptimal) {
    for (const Job& j : jobs) {
      last_.jobs[j.line].outcome =
          fmt::format("unscheduled: phase 1 {}: {}", flow::ToString(r1.status), r1.error);
      ++waited_[j.w->id];
    }
    return out;
  }
  last_.phase1.total_cost = r1.total_cost;
  if (record_) {
    const auto label = [&](int v) -> std::string {
      if (v < J) return fmt::format("job {}", jobs[v].w->id);
      if (v == unscheduled1) return "unscheduled";
      if (v < machine0) {
        const Class& cl = classes[v - class0];
        return fmt::format("{} {} load {} (shape {})", cl.local ? "local" : "remote",
                           cl.gpu_model >= 0 ? model::GetGpuModel(cl.gpu_model).name : "any",
                           cl.bucket, cl.shape);
      }
      if (v < sink1) return c.node(v - machine0).name;
      return "sink";
    };
    for (size_t a = 0; a < arcs.size(); ++a) {
      last_.phase1.network.push_back(
          {label(arcs[a].from), label(arcs[a].to), arcs[a].capacity, arcs[a].cost, r1.flow[a]});
    }
  }
  // Back from flows to machines: each class hands its machines' units to its jobs in order.
  std::vector<std::vector<NodeIndex>> class_units(classes.size());
  for (size_t a = 0; a < arcs.size(); ++a) {
    if (kind1[a] != 2 || r1.flow[a] == 0) continue;
    const int ci = arcs[a].from - class0;
    for (int64_t u = 0; u < r1.flow[a]; ++u) class_units[ci].push_back(arcs[a].to - machine0);
  }
  std::vector<size_t> class_next(classes.size(), 0);
  std::vector<NodeIndex> machine_of(jobs.size(), -1);
  std::vector<int64_t> cost_of(jobs.size(), 0), gpu_cost_of(jobs.size(), 0);
  for (const auto& [a, ci] : job_arc) {
    if (r1.flow[a] == 0) continue;
    const int k = arcs[a].from;
    machine_of[k] = class_units[ci][class_next[ci]++];
    cost_of[k] = arcs[a].cost;
  }
  for (int k = 0; k < J; ++k) {
    DrmaestroJobLine& line = last_.jobs[jobs[k].line];
    const NodeIndex n = machine_of[k];
    if (n < 0) {
      ++last_.phase1.unscheduled;
      line.outcome = postponed[k]
                         ? "unscheduled: postponed, every remote placement would miss its goal "
                           "at the network's load (network_aware)"
                         : "unscheduled: waiting was cheaper than any placement left to it";
      continue;
    }
    NodeView& v = nodes[n];
    if (v.free_cpu < jobs[k].w->cpu_milli || v.free_memory < jobs[k].w->memory_mib) {
      machine_of[k] = -1;
      ++last_.phase1.unscheduled;
      line.outcome = fmt::format(
          "unscheduled: {} ran out of CPU or memory after the cycle's earlier placements",
          c.node(n).name);
      continue;
    }
    ++last_.phase1.placed;
    v.free_cpu -= jobs[k].w->cpu_milli;
    v.free_memory -= jobs[k].w->memory_mib;
  }

  // Phase 2: one sub-task per GPU of every job phase 1 placed. GPU supply per (node, model).
  struct Supply {
    NodeIndex node;
    model::GpuModelId gpu_model;
    std::vector<GpuIndex> gpus;  // idle whole GPUs
  };
  std::vector<Supply> supplies;
  std::map<std::pair<NodeIndex, model::GpuModelId>, int> supply_index;
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!c.node(gpu.node).ready || !gpu.available || gpu.partition_count != 1 || !gpu.idle()) {
      continue;
    }
    auto [it, added] =
        supply_index.try_emplace({gpu.node, gpu.model}, static_cast<int>(supplies.size()));
    if (added) supplies.push_back({gpu.node, gpu.model, {}});
    supplies[it->second].gpus.push_back(g);
  }
  struct Task {
    int job;
  };
  std::vector<Task> tasks;
  for (int k = 0; k < J; ++k) {
    if (machine_of[k] < 0) continue;
    for (int i = 0; i < jobs[k].w->gpu.count; ++i) tasks.push_back({k});
  }
  std::vector<std::vector<std::pair<GpuIndex, bool>>> gpus_of(jobs.size());  // (GPU, remote)
  std::vector<int> missing(jobs.size(), 0);
  if (!tasks.empty()) {
    // Remote aggregators per (model, bucket of the GPU node's load).
    std::map<std::pair<model::GpuModelId, int>, int> aggregator_index;
    for (const Supply& s : supplies) {
      aggregator_index.try_emplace({s.gpu_model, bucket_of(nodes[s.node].load)},
                                   static_cast<int>(aggregator_index.size()));
    }
    const int T = static_cast<int>(tasks.size());
    const int unscheduled2 = T;
    const int aggregator0 = T + 1;
    const int supply0 = aggregator0 + static_cast<int>(aggregator_index.size());
    const int sink2 = supply0 + static_cast<int>(supplies.size());
    std::vector<flow::Arc> arcs2;
    std::vector<int> kind2;  // 0 task→local, 1 task→aggregator, 2 task→unscheduled,
                             // 3 aggregator→GPU node, 4 GPU node→sink, 5 unscheduled→sink
    for (int t = 0; t < T; ++t) {
      const Job& j = jobs[tasks[t].job];
      const NodeIndex home = machine_of[tasks[t].job];
      const Workload& w = *j.w;
      for (size_t si = 0; si < supplies.size(); ++si) {
        const Supply& s = supplies[si];
        if (s.node != home || !Takes(w, s.gpu_model)) continue;
        arcs2.push_back(
            {t, supply0 + static_cast<int>(si), 1, Cost(w, Phi(j, s.gpu_model, false, 0), 1)});
        kind2.push_back(0);
      }
      if (options_.disaggregate) {
        for (const auto& [key, ai] : aggregator_index) {
          const auto& [gpu_model, bucket] = key;
          if (!Takes(w, gpu_model)) continue;
          const double load = std::max(midpoint(bucket), midpoint(bucket_of(nodes[home].load)));
          const double phi = Phi(j, gpu_model, true, load);
          if (options_.network_aware && phi >= 0 && phi > w.goal_s &&
              j.waited < options_.max_postpone_cycles) {
            continue;
          }
          arcs2.push_back({t, aggregator0 + ai, 1, Cost(w, phi, options_.remote_preference)});
          kind2.push_back(1);
        }
      }
      arcs2.push_back({t, unscheduled2, 1, last_.jobs[j.line].unscheduled_cost});
      kind2.push_back(2);
    }
    for (size_t si = 0; si < supplies.size(); ++si) {
      const Supply& s = supplies[si];
      const auto count = static_cast<int64_t>(s.gpus.size());
      if (options_.disaggregate) {
        const int ai = aggregator_index.at({s.gpu_model, bucket_of(nodes[s.node].load)});
        arcs2.push_back({aggregator0 + ai, supply0 + static_cast<int>(si), count, 0});
        kind2.push_back(3);
      }
      arcs2.push_back({supply0 + static_cast<int>(si), sink2, count, 0});
      kind2.push_back(4);
    }
    arcs2.push_back({unscheduled2, sink2, flow::kUnlimited, 0});
    kind2.push_back(5);
    std::vector<int64_t> supply2(static_cast<size_t>(sink2 + 1), 0);
    for (int t = 0; t < T; ++t) supply2[t] = 1;
    supply2[sink2] = -T;
    static constexpr const char* kKinds2[] = {"task→local GPU node", "task→remote aggregator",
                                              "task→unscheduled",    "aggregator→GPU node",
                                              "GPU node→sink",       "unscheduled→sink"};
    const flow::FlowResult r2 = flow::MinCostFlow(sink2 + 1, arcs2, supply2);
    last_.phase2.nodes = sink2 + 1;
    for (int kind : kind2) ++last_.phase2.arcs_by_kind[kKinds2[kind]];
    if (r2.status != flow::Status::kOptimal) {
      for (int k = 0; k < J; ++k) {
        if (machine_of[k] < 0) continue;
        machine_of[k] = -1;
        last_.jobs[jobs[k].line].outcome =
            fmt::format("unscheduled: phase 2 {}: {}", flow::ToString(r2.status), r2.error);
      }
    } else {
      last_.phase2.total_cost = r2.total_cost;
      if (record_) {
        std::vector<std::string> aggregator_name(aggregator_index.size());
        for (const auto& [key, ai] : aggregator_index) {
          aggregator_name[ai] =
              fmt::format("remote {} load {}", model::GetGpuModel(key.first).name, key.second);
        }
        const auto label = [&](int v) -> std::string {
          if (v < T) return fmt::format("job {} GPU", jobs[tasks[v].job].w->id);
          if (v == unscheduled2) return "unscheduled";
          if (v < supply0) return aggregator_name[v - aggregator0];
          if (v < sink2)
            return fmt::format("{} {}", c.node(supplies[v - supply0].node).name,
                               model::GetGpuModel(supplies[v - supply0].gpu_model).name);
          return "sink";
        };
        for (size_t a = 0; a < arcs2.size(); ++a) {
          last_.phase2.network.push_back({label(arcs2[a].from), label(arcs2[a].to),
                                          arcs2[a].capacity, arcs2[a].cost, r2.flow[a]});
        }
      }
      std::vector<std::vector<int>> aggregator_units(aggregator_index.size());
      for (size_t a = 0; a < arcs2.size(); ++a) {
        if (kind2[a] != 3) continue;
        for (int64_t u = 0; u < r2.flow[a]; ++u) {
          aggregator_units[arcs2[a].from - aggregator0].push_back(arcs2[a].to - supply0);
        }
      }
      std::vector<size_t> aggregator_next(aggregator_index.size(), 0);
      std::vector<size_t> supply_next(supplies.size(), 0);
      for (size_t a = 0; a < arcs2.size(); ++a) {
        if (kind2[a] > 2 || r2.flow[a] == 0) continue;
        const int t = arcs2[a].from;
        const int k = tasks[t].job;
        if (kind2[a] == 2) {
          ++missing[k];
          ++last_.phase2.unscheduled;
          continue;
        }
        const int si = kind2[a] == 0
                           ? arcs2[a].to - supply0
                           : aggregator_units[arcs2[a].to - aggregator0]
                                             [aggregator_next[arcs2[a].to - aggregator0]++];
        const GpuIndex g = supplies[si].gpus[supply_next[si]++];
        gpus_of[k].emplace_back(g, supplies[si].node != machine_of[k]);
        gpu_cost_of[k] += arcs2[a].cost;
        ++last_.phase2.placed;
      }
    }
  }

  // Gang: a job with any GPU left unscheduled waits whole.
  for (int k = 0; k < J; ++k) {
    const Job& j = jobs[k];
    DrmaestroJobLine& line = last_.jobs[j.line];
    if (machine_of[k] >= 0 && missing[k] > 0) {
      line.outcome = fmt::format("unscheduled: gang, {} of its {} GPUs found no place", missing[k],
                                 j.w->gpu.count);
      machine_of[k] = -1;
    }
    if (machine_of[k] < 0) {
      ++waited_[j.w->id];
      continue;
    }
    Candidate cand{.score = 100, .placement = {.workload = j.w->id, .node = machine_of[k]}};
    std::vector<std::string> where;
    for (const auto& [g, remote] : gpus_of[k]) {
      const model::PartitionIndex p = ClusterState::PartitionOf(g, 0);
      model::Slice slice = SliceFor(*j.w, p, c.partition(p));
      slice.remote = remote;
      cand.placement.slices.push_back(slice);
      where.push_back(c.node(c.gpu(g).node).name);
    }
    line.phase1_cost = cost_of[k];
    line.phase2_cost = gpu_cost_of[k];
    line.outcome = where.empty()
                       ? c.node(machine_of[k]).name
                       : fmt::format("{}, GPUs on {}", c.node(machine_of[k]).name, NodeList(where));
    waited_.erase(j.w->id);
    out.push_back(std::move(cand));
  }
  return out;
}

std::string Drmaestro::Explain(const Workload& w, const ClusterState&) {
  std::string s = fmt::format(
      "drmaestro (disaggregate {}, network_aware {}): the last cycle's flow networks, costs "
      "(1 − Ut)·P·1000 (+ W·1000 to wait)\n",
      options_.disaggregate, options_.network_aware);
  const auto phase = [&](const char* title, const DrmaestroPhase& p) {
    s += fmt::format("  {}: {} nodes, total cost {}, {} placed, {} unscheduled; arcs:", title,
                     p.nodes, p.total_cost, p.placed, p.unscheduled);
    for (const auto& [kind, n] : p.arcs_by_kind) s += fmt::format(" {} {},", kind, n);
    if (!p.arcs_by_kind.empty()) s.pop_back();
    s += "\n";
  };
  phase("phase 1 (CPU, memory)", last_.phase1);
  phase("phase 2 (GPUs)", last_.phase2);
  for (const DrmaestroJobLine& j : last_.jobs) {
    s += fmt::format("  {} job {}: W {}, wait cost {}, {}{}\n", j.id == w.id ? "*" : " ", j.id,
                     j.waited, j.unscheduled_cost,
                     j.phase1_cost ? fmt::format("placed (arc costs {} + {}) on ", *j.phase1_cost,
                                                 *j.phase2_cost)
                                   : "",
                     j.outcome);
  }
  if (std::none_of(last_.jobs.begin(), last_.jobs.end(),
                   [&](const DrmaestroJobLine& j) { return j.id == w.id; })) {
    s += fmt::format("  job {} was not in the batch: {}\n", w.id,
                     FlowShaped(w) ? "its request does not fit in the free resources"
                                   : "drmaestro places whole GPUs only (no share, no MIG)");
  }
  return s;
}

std::vector<OptionInfo> DrmaestroOptionList() {
  return {
      {"disaggregate", "true", "GPUs may be remote (false: local only, 002's Firmament baseline)"},
      {"network_aware", "false", "φ grows with network load; goal-missing remote arcs postponed"},
      {"remote_preference", "2.0", "P of a remote GPU (local: 1)"},
      {"unscheduled_preference", "2.0", "P of the arc to unscheduled, before + W"},
      {"load_buckets", "10", "network-load classes of machines when network_aware"},
      {"max_postpone_cycles", "30", "network_aware postpones a job at most this many cycles"},
  };
}

Expected<std::unique_ptr<Policy>> MakeDrmaestro(const PolicyContext& context,
                                                const nlohmann::json& options) {
  DrmaestroOptions o;
  for (auto ok :
       {ReadOption("drmaestro", options, "disaggregate", o.disaggregate),
        ReadOption("drmaestro", options, "network_aware", o.network_aware),
        ReadOption("drmaestro", options, "remote_preference", o.remote_preference),
        ReadOption("drmaestro", options, "unscheduled_preference", o.unscheduled_preference),
        ReadOption("drmaestro", options, "load_buckets", o.load_buckets),
        ReadOption("drmaestro", options, "max_postpone_cycles", o.max_postpone_cycles),
        OptionWithin("drmaestro", "remote_preference", o.remote_preference, 0, 1e3),
        OptionWithin("drmaestro", "unscheduled_preference", o.unscheduled_preference, 0, 1e3),
        OptionWithin("drmaestro", "load_buckets", o.load_buckets, 1, 1000),
        OptionWithin("drmaestro", "max_postpone_cycles", o.max_postpone_cycles, 0, 1e9)}) {
    if (!ok) return std::unexpected(ok.error());
  }
  return std::make_unique<Drmaestro>(o, context.job_profiles);
}

}  // namespace tessera::policy
