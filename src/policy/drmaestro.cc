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
// Named, not anonymous: Drmaestro::Cycle, a member of a class with linkage, holds these types
// (GCC's -Wsubobject-linkage; the unity build includes this file into another).
namespace drmaestro_internal {

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
  double load = 0;  // network: Σ network_share of the remote streams through it and Σ
                    // link_load of what runs there (profiles)
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

// The nodes as this cycle sees them: free CPU and memory, readiness, and (with profiles) the
// network load of the remote streams already running through each.
std::vector<NodeView> ViewNodes(const ClusterState& c, const JobProfiles* profiles) {
  std::vector<NodeView> nodes(static_cast<size_t>(c.node_count()));
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    nodes[n] = {c.node(n).free_cpu_milli(), c.node(n).free_memory_mib(), c.node(n).ready, 0};
  }
  if (profiles != nullptr) {
    for (const auto& [id, pw] : c.placed()) {
      auto it = profiles->find(pw.workload.app);
      if (it == profiles->end()) continue;
      nodes[pw.placement.node].load += it->second.link_load;
      if (!pw.placement.has_remote()) continue;
      for (const auto& [cpu_node, gpu_node] : c.RemoteStreams(pw.placement)) {
        nodes[cpu_node].load += it->second.network_share;
        nodes[gpu_node].load += it->second.network_share;
      }
    }
  }
  return nodes;
}

// Idle, available whole GPUs (MIG off) of ready nodes.
int FreeGpus(const ClusterState& c) {
  int free_gpus = 0;
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
    const model::Gpu& gpu = c.gpu(g);
    free_gpus += c.node(gpu.node).ready && gpu.available && gpu.partition_count == 1 && gpu.idle();
  }
  return free_gpus;
}

// A request shape, with what each node offers it: its idle GPUs the shape can take there,
// and their model (-1: none), found once per cycle and used by the batch and by phase 1.
struct Shape {
  const Workload* rep;
  bool fits = false;
  std::vector<int> gpus_here;
  std::vector<model::GpuModelId> gpu_model;
};

// `w`'s shape. Fits: some ready node has its CPU and memory, and its GPUs are free there (or,
// when disaggregating, anywhere).
Shape ShapeFor(const Workload* w, const ClusterState& c, const std::vector<NodeView>& nodes,
               bool disaggregate) {
  Shape shape{w, false, std::vector<int>(nodes.size(), 0),
              std::vector<model::GpuModelId>(nodes.size(), -1)};
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
  shape.fits = local || (disaggregate && cpu && cluster_gpus >= w->gpu.count);
  return shape;
}

// Phase 1's class of machines for a shape: (local?, GPU model (-1: remote, not known yet),
// load bucket), with each machine's capacity.
struct Class {
  int shape;
  bool local;
  model::GpuModelId gpu_model;
  int bucket;
  std::vector<std::pair<NodeIndex, int64_t>> machines;  // with capacity
};

// Phase 2's GPU supply: a node's idle whole GPUs of one model.
struct Supply {
  NodeIndex node;
  model::GpuModelId gpu_model;
  std::vector<GpuIndex> gpus;  // idle whole GPUs
};

std::vector<Supply> IdleSupplies(const ClusterState& c) {
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
  return supplies;
}

// The arcs' kinds, as last_cycle() counts them (phase 1's, then phase 2's).
constexpr const char* kHostArcKinds[] = {"job→class", "job→unscheduled", "class→machine",
                                         "machine→sink", "unscheduled→sink"};
constexpr const char* kGpuArcKinds[] = {"task→local GPU node", "task→remote aggregator",
                                        "task→unscheduled",    "aggregator→GPU node",
                                        "GPU node→sink",       "unscheduled→sink"};

// Minimum-cost flow's node supplies: one unit from each of the first `sources` nodes to `sink`.
std::vector<int64_t> UnitSupplies(int sources, int sink) {
  std::vector<int64_t> supply(static_cast<size_t>(sink + 1), 0);
  for (int k = 0; k < sources; ++k) supply[k] = 1;
  supply[sink] = -sources;
  return supply;
}

}  // namespace drmaestro_internal
using namespace drmaestro_internal;  // NOLINT(google-build-using-namespace): this file's own

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

double Drmaestro::Phi(const Job& j, model::GpuModelId gpu_model, bool remote, double load,
                      double home_load) const {
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
  const double alone = static_cast<double>(j.w->queries) * seconds;
  double factor = 1;
  if (remote) {
    factor = j.profile->remote_slowdown;
    if (options_.network_aware) factor *= 1 + j.profile->network_sensitivity * load;
  }
  if (options_.network_aware) factor += j.profile->local_sensitivity * std::min(home_load, 1.0);
  return alone * factor;
}

int64_t Drmaestro::Cost(const Workload& w, double phi, double preference) const {
  const double complement = phi < 0 ? 1.0 : 1.0 - DrmaestroUtility(phi, w.goal_s, w.goal_z);
  return std::llround(complement * preference * kCostScale);
}

// One PlaceBatch's working state, filled in by its steps in turn.
struct Drmaestro::Cycle {
  const ClusterState& c;
  int buckets = 1;  // network-load buckets: 1 unless network_aware
  bool network_aware = false;
  std::vector<NodeView> nodes;
  // The batch, with its request shapes.
  std::vector<Shape> shapes;
  std::vector<Job> jobs;
  // Phase 1: classes, machine slots, and each job's machine (-1: none) and arc costs.
  std::vector<Class> classes;
  std::vector<std::vector<int>> classes_of_shape;
  std::vector<int64_t> machine_slots;
  std::vector<char> postponed;
  std::vector<NodeIndex> machine_of;
  std::vector<int64_t> cost_of, gpu_cost_of;
  // Phase 2: the GPU supplies, one sub-task (its job) per GPU of each placed job, and per job
  // its GPUs (GPU, remote) and how many of its sub-tasks found none.
  std::vector<Supply> supplies;
  std::vector<int> tasks;
  std::vector<std::vector<std::pair<GpuIndex, bool>>> gpus_of;
  std::vector<int> missing;

  int BucketOf(double load) const {
    return std::min(buckets - 1, static_cast<int>(std::min(load, 1.0) * buckets));
  }
  double Midpoint(int b) const { return network_aware ? (b + 0.5) / buckets : 0.0; }
};

struct Drmaestro::HostNetwork {
  int jobs = 0, unscheduled = 0, class0 = 0, machine0 = 0, sink = 0;
  int postponed = 0;  // job→class arcs left out: the placement would miss the goal (NA)
  std::vector<flow::Arc> arcs;
  std::vector<int> kind;                     // per arc, into kHostArcKinds
  std::vector<std::pair<int, int>> job_arc;  // (arc index, class) of every job→class arc
};

struct Drmaestro::GpuNetwork {
  int tasks = 0, unscheduled = 0, aggregator0 = 0, supply0 = 0, sink = 0;
  int postponed = 0;  // task→aggregator arcs left out, as in phase 1
  std::map<std::pair<model::GpuModelId, int>, int> aggregator_index;
  std::vector<flow::Arc> arcs;
  std::vector<int> kind;  // per arc, into kGpuArcKinds
};

std::optional<std::vector<Candidate>> Drmaestro::PlaceBatch(
    std::span<const Workload* const> pending, const ClusterState& c) {
  last_ = {};
  {  // W of jobs no longer pending is forgotten
    std::unordered_set<WorkloadId> ids;
    for (const Workload* w : pending) ids.insert(w->id);
    std::erase_if(waited_, [&](const auto& kv) { return !ids.contains(kv.first); });
  }
  Cycle y{.c = c,
          .buckets = options_.network_aware ? std::max(1, options_.load_buckets) : 1,
          .network_aware = options_.network_aware,
          .nodes = ViewNodes(c, profiles_)};
  TakeBatch(pending, y);
  if (y.jobs.empty()) return std::vector<Candidate>{};
  BuildClasses(y);                                      // phase 1: CPU and memory
  if (!PlaceHosts(y)) return std::vector<Candidate>{};  // every job waits
  PlaceGpus(y);                                         // phase 2: GPUs
  return Placements(y);
}

// The batch: jobs that fit in the free resources, longest waiting first, until they ask for
// twice the free GPUs (002 Alg. 1: pop_jobs(cs) takes "only the jobs that fit"), each with its
// arc to unscheduled.
void Drmaestro::TakeBatch(std::span<const Workload* const> pending, Cycle& y) {
  std::map<ShapeKey, int> shape_index;
  const int free_gpus = FreeGpus(y.c);
  int64_t asked = 0;
  for (const Workload* w : pending) {
    if (!FlowShaped(*w)) continue;
    // First, as it is the cheap test that turns the whole queue away when the GPUs are full.
    if (w->gpu.count > 0 && asked + w->gpu.count > 2 * int64_t{free_gpus}) continue;
    auto [it, added] = shape_index.try_emplace(ShapeOf(*w), static_cast<int>(y.shapes.size()));
    if (added) y.shapes.push_back(ShapeFor(w, y.c, y.nodes, options_.disaggregate));
    if (!y.shapes[it->second].fits) continue;
    asked += w->gpu.count;
    const JobProfile* profile = nullptr;
    if (profiles_ != nullptr) {
      if (auto p = profiles_->find(w->app); p != profiles_->end()) profile = &p->second;
    }
    last_.jobs.push_back({.id = w->id, .waited = waited(w->id)});
    y.jobs.push_back({w, waited(w->id), profile, it->second, last_.jobs.size() - 1});
  }
  for (Job& j : y.jobs) {
    last_.jobs[j.line].unscheduled_cost =
        Cost(*j.w, Phi(j, -1, false, 0, 0), options_.unscheduled_preference) +
        j.waited * static_cast<int64_t>(kCostScale);
  }
}

// Phase 1's machines and classes. Machine slots: how many of the cycle's smallest request fit.
void Drmaestro::BuildClasses(Cycle& y) const {
  const ClusterState& c = y.c;
  int64_t min_cpu = std::numeric_limits<int64_t>::max(), min_memory = min_cpu;
  for (const Job& j : y.jobs) {
    if (j.w->cpu_milli > 0) min_cpu = std::min(min_cpu, j.w->cpu_milli);
    if (j.w->memory_mib > 0) min_memory = std::min(min_memory, j.w->memory_mib);
  }
  const auto slots = [&](NodeIndex n) -> int64_t {
    int64_t k = static_cast<int64_t>(y.jobs.size());
    if (min_cpu != std::numeric_limits<int64_t>::max())
      k = std::min(k, y.nodes[n].free_cpu / min_cpu);
    if (min_memory != std::numeric_limits<int64_t>::max()) {
      k = std::min(k, y.nodes[n].free_memory / min_memory);
    }
    return std::max<int64_t>(0, k);
  };
  // Eq. 5: each resource normalised by the cluster's largest free amount, summed.
  double max_cpu = 0, max_memory = 0;
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    if (!y.nodes[n].ready) continue;
    max_cpu = std::max(max_cpu, static_cast<double>(y.nodes[n].free_cpu));
    max_memory = std::max(max_memory, static_cast<double>(y.nodes[n].free_memory));
  }
  const auto summed = [&](NodeIndex n) -> int64_t {
    double supply = 0, demand = 0;
    if (min_cpu != std::numeric_limits<int64_t>::max() && max_cpu > 0) {
      supply += static_cast<double>(y.nodes[n].free_cpu) / max_cpu;
      demand += static_cast<double>(min_cpu) / max_cpu;
    }
    if (min_memory != std::numeric_limits<int64_t>::max() && max_memory > 0) {
      supply += static_cast<double>(y.nodes[n].free_memory) / max_memory;
      demand += static_cast<double>(min_memory) / max_memory;
    }
    const auto jobs = static_cast<int64_t>(y.jobs.size());
    if (demand <= 0) return jobs;
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor(supply / demand + 1e-9)), 0, jobs);
  };
  std::map<std::tuple<int, bool, model::GpuModelId, int>, int> class_index;
  y.classes_of_shape.resize(y.shapes.size());
  y.machine_slots.assign(static_cast<size_t>(c.node_count()), 0);
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    if (y.nodes[n].ready) y.machine_slots[n] = options_.summed_supply ? summed(n) : slots(n);
  }
  for (size_t s = 0; s < y.shapes.size(); ++s) {
    if (!y.shapes[s].fits) continue;
    const Workload& w = *y.shapes[s].rep;
    for (NodeIndex n = 0; n < c.node_count(); ++n) {
      const NodeView& v = y.nodes[n];
      if (!v.ready || y.machine_slots[n] == 0 || v.free_cpu < w.cpu_milli ||
          v.free_memory < w.memory_mib) {
        continue;
      }
      const int here = y.shapes[s].gpus_here[n];
      const model::GpuModelId gpu_model = y.shapes[s].gpu_model[n];
      const auto join = [&](bool local, model::GpuModelId class_model, int64_t capacity) {
        const auto key = std::tuple(static_cast<int>(s), local, class_model, y.BucketOf(v.load));
        auto [it, added] = class_index.try_emplace(key, static_cast<int>(y.classes.size()));
        if (added) {
          y.classes.push_back({static_cast<int>(s), local, class_model, std::get<3>(key), {}});
          y.classes_of_shape[s].push_back(it->second);
        }
        y.classes[it->second].machines.emplace_back(n, capacity);
      };
      // The local class takes as many jobs as its idle GPUs hold; with disaggregation the
      // machine's CPU and memory are also on offer to jobs whose GPUs are elsewhere.
      if (here >= w.gpu.count) {
        join(true, gpu_model,
             w.gpu.count > 0 ? std::min<int64_t>(y.machine_slots[n], here / w.gpu.count)
                             : y.machine_slots[n]);
      }
      if (options_.disaggregate && w.gpu.count > 0) join(false, -1, y.machine_slots[n]);
    }
  }
}

// Phase 1's network: each job's arcs to its shape's classes (one postponed while it would miss
// the goal at its load, with network_aware) and to unscheduled, then the classes' machines.
Drmaestro::HostNetwork Drmaestro::BuildHostNetwork(Cycle& y) const {
  HostNetwork net;
  const int J = static_cast<int>(y.jobs.size());
  net.jobs = J;
  net.unscheduled = J;
  net.class0 = J + 1;
  net.machine0 = net.class0 + static_cast<int>(y.classes.size());
  net.sink = net.machine0 + y.c.node_count();
  const auto add = [&](flow::Arc arc, int kind) {
    net.arcs.push_back(arc);
    net.kind.push_back(kind);
  };
  y.postponed.assign(y.jobs.size(), 0);
  for (int k = 0; k < J; ++k) {
    const Job& j = y.jobs[k];
    for (int ci : y.classes_of_shape[j.shape]) {
      const Class& cl = y.classes[ci];
      const double load = y.Midpoint(cl.bucket);
      const double phi = Phi(j, cl.gpu_model, !cl.local && j.w->gpu.count > 0, load, load);
      const bool remote = !cl.local;
      // 002: "if the placement does not satisfy the task's SLO, the placement will be
      // postponed" — a local one too where its link's load would make it miss.
      if (options_.network_aware && phi >= 0 && phi > j.w->goal_s &&
          j.waited < options_.max_postpone_cycles) {
        y.postponed[k] = 1;
        ++net.postponed;
        continue;
      }
      net.job_arc.emplace_back(static_cast<int>(net.arcs.size()), ci);
      add({k, net.class0 + ci, 1, Cost(*j.w, phi, remote ? options_.remote_preference : 1)}, 0);
    }
    add({k, net.unscheduled, 1, last_.jobs[j.line].unscheduled_cost}, 1);
  }
  add({net.unscheduled, net.sink, flow::kUnlimited, 0}, 4);
  for (size_t ci = 0; ci < y.classes.size(); ++ci) {
    for (const auto& [n, capacity] : y.classes[ci].machines) {
      add({net.class0 + static_cast<int>(ci), net.machine0 + n, capacity, 0}, 2);
    }
  }
  for (NodeIndex n = 0; n < y.c.node_count(); ++n) {
    if (y.machine_slots[n] == 0) continue;
    add({net.machine0 + n, net.sink, y.machine_slots[n], 0}, 3);
  }
  return net;
}

// Phase 1: solves the network and gives each job its machine. False when the flow failed:
// then every job of the batch waits.
bool Drmaestro::PlaceHosts(Cycle& y) {
  const HostNetwork net = BuildHostNetwork(y);
  const flow::FlowResult r1 =
      flow::MinCostFlow(net.sink + 1, net.arcs, UnitSupplies(net.jobs, net.sink));
  last_.phase1.nodes = net.sink + 1;
  last_.postponed += net.postponed;
  for (int kind : net.kind) ++last_.phase1.arcs_by_kind[kHostArcKinds[kind]];
  if (r1.status != flow::Status::kOptimal) {
    for (const Job& j : y.jobs) {
      last_.jobs[j.line].outcome =
          fmt::format("unscheduled: phase 1 {}: {}", flow::ToString(r1.status), r1.error);
      ++waited_[j.w->id];
    }
    return false;
  }
  last_.phase1.total_cost = r1.total_cost;
  if (record_) RecordHostNetwork(y, net, r1.flow);
  HostsFromFlow(y, net, r1.flow);
  return true;
}

void Drmaestro::RecordHostNetwork(const Cycle& y, const HostNetwork& net,
                                  const std::vector<int64_t>& units) {
  const auto label = [&](int v) -> std::string {
    if (v < net.jobs) return fmt::format("job {}", y.jobs[v].w->id);
    if (v == net.unscheduled) return "unscheduled";
    if (v < net.machine0) {
      const Class& cl = y.classes[v - net.class0];
      return fmt::format("{} {} load {} (shape {})", cl.local ? "local" : "remote",
                         cl.gpu_model >= 0 ? model::GetGpuModel(cl.gpu_model).name : "any",
                         cl.bucket, cl.shape);
    }
    if (v < net.sink) return y.c.node(v - net.machine0).name;
    return "sink";
  };
  for (size_t a = 0; a < net.arcs.size(); ++a) {
    const flow::Arc& arc = net.arcs[a];
    last_.phase1.network.push_back(
        {label(arc.from), label(arc.to), arc.capacity, arc.cost, units[a]});
  }
}

// Flows → machines: each class hands its machines' units to its jobs in order; a placement
// is then checked against the machine's real free CPU and memory (slots are an estimate).
void Drmaestro::HostsFromFlow(Cycle& y, const HostNetwork& net, const std::vector<int64_t>& units) {
  std::vector<std::vector<NodeIndex>> class_units(y.classes.size());
  for (size_t a = 0; a < net.arcs.size(); ++a) {
    if (net.kind[a] != 2 || units[a] == 0) continue;
    const int ci = net.arcs[a].from - net.class0;
    for (int64_t u = 0; u < units[a]; ++u) class_units[ci].push_back(net.arcs[a].to - net.machine0);
  }
  std::vector<size_t> class_next(y.classes.size(), 0);
  y.machine_of.assign(y.jobs.size(), -1);
  y.cost_of.assign(y.jobs.size(), 0);
  y.gpu_cost_of.assign(y.jobs.size(), 0);
  for (const auto& [a, ci] : net.job_arc) {
    if (units[a] == 0) continue;
    const int k = net.arcs[a].from;
    y.machine_of[k] = class_units[ci][class_next[ci]++];
    y.cost_of[k] = net.arcs[a].cost;
  }
  for (int k = 0; k < net.jobs; ++k) {
    const Workload& w = *y.jobs[k].w;
    DrmaestroJobLine& line = last_.jobs[y.jobs[k].line];
    const NodeIndex n = y.machine_of[k];
    if (n < 0) {
      ++last_.phase1.unscheduled;
      line.outcome = y.postponed[k]
                         ? "unscheduled: postponed, every placement left would miss its goal "
                           "at the network's load (network_aware)"
                         : "unscheduled: waiting was cheaper than any placement left to it";
      continue;
    }
    NodeView& v = y.nodes[n];
    if (v.free_cpu < w.cpu_milli || v.free_memory < w.memory_mib) {
      y.machine_of[k] = -1;
      ++last_.phase1.unscheduled;
      line.outcome = fmt::format(
          "unscheduled: {} ran out of CPU or memory after the cycle's earlier placements",
          y.c.node(n).name);
      continue;
    }
    ++last_.phase1.placed;
    v.free_cpu -= w.cpu_milli;
    v.free_memory -= w.memory_mib;
  }
}

// Phase 2: one sub-task per GPU of every job phase 1 placed, onto the idle GPUs grouped per
// (node, model).
void Drmaestro::PlaceGpus(Cycle& y) {
  y.supplies = IdleSupplies(y.c);
  for (int k = 0; k < static_cast<int>(y.jobs.size()); ++k) {
    if (y.machine_of[k] < 0) continue;
    for (int i = 0; i < y.jobs[k].w->gpu.count; ++i) y.tasks.push_back(k);
  }
  y.gpus_of.resize(y.jobs.size());
  y.missing.assign(y.jobs.size(), 0);
  if (y.tasks.empty()) return;
  const GpuNetwork net = BuildGpuNetwork(y);
  const flow::FlowResult r2 =
      flow::MinCostFlow(net.sink + 1, net.arcs, UnitSupplies(net.tasks, net.sink));
  last_.phase2.nodes = net.sink + 1;
  last_.postponed += net.postponed;
  for (int kind : net.kind) ++last_.phase2.arcs_by_kind[kGpuArcKinds[kind]];
  if (r2.status != flow::Status::kOptimal) {
    for (size_t k = 0; k < y.jobs.size(); ++k) {
      if (y.machine_of[k] < 0) continue;
      y.machine_of[k] = -1;
      last_.jobs[y.jobs[k].line].outcome =
          fmt::format("unscheduled: phase 2 {}: {}", flow::ToString(r2.status), r2.error);
    }
    return;
  }
  last_.phase2.total_cost = r2.total_cost;
  if (record_) RecordGpuNetwork(y, net, r2.flow);
  GpusFromFlow(y, net, r2.flow);
}

// Phase 2's network: each sub-task's arcs to the GPU supplies of its job's machine (P = 1),
// with `disaggregate` to the remote aggregators (postponed as in phase 1), and to unscheduled;
// then the aggregators' and supplies' arcs.
Drmaestro::GpuNetwork Drmaestro::BuildGpuNetwork(const Cycle& y) const {
  GpuNetwork net;
  for (const Supply& s : y.supplies) {
    net.aggregator_index.try_emplace({s.gpu_model, y.BucketOf(y.nodes[s.node].load)},
                                     static_cast<int>(net.aggregator_index.size()));
  }
  const int T = static_cast<int>(y.tasks.size());
  net.tasks = T;
  net.unscheduled = T;
  net.aggregator0 = T + 1;
  net.supply0 = net.aggregator0 + static_cast<int>(net.aggregator_index.size());
  net.sink = net.supply0 + static_cast<int>(y.supplies.size());
  const auto add = [&](flow::Arc arc, int kind) {
    net.arcs.push_back(arc);
    net.kind.push_back(kind);
  };
  for (int t = 0; t < T; ++t) {
    const Job& j = y.jobs[y.tasks[t]];
    const NodeIndex home = y.machine_of[y.tasks[t]];
    const Workload& w = *j.w;
    for (size_t si = 0; si < y.supplies.size(); ++si) {
      const Supply& s = y.supplies[si];
      if (s.node != home || !Takes(w, s.gpu_model)) continue;
      const double phi = Phi(j, s.gpu_model, false, 0, y.Midpoint(y.BucketOf(y.nodes[home].load)));
      add({t, net.supply0 + static_cast<int>(si), 1, Cost(w, phi, 1)}, 0);
    }
    if (options_.disaggregate) {
      for (const auto& [key, ai] : net.aggregator_index) {
        const auto& [gpu_model, bucket] = key;
        if (!Takes(w, gpu_model)) continue;
        const double load =
            std::max(y.Midpoint(bucket), y.Midpoint(y.BucketOf(y.nodes[home].load)));
        const double phi =
            Phi(j, gpu_model, true, load, y.Midpoint(y.BucketOf(y.nodes[home].load)));
        if (options_.network_aware && phi >= 0 && phi > w.goal_s &&
            j.waited < options_.max_postpone_cycles) {
          ++net.postponed;
          continue;
        }
        add({t, net.aggregator0 + ai, 1, Cost(w, phi, options_.remote_preference)}, 1);
      }
    }
    add({t, net.unscheduled, 1, last_.jobs[j.line].unscheduled_cost}, 2);
  }
  for (size_t si = 0; si < y.supplies.size(); ++si) {
    const Supply& s = y.supplies[si];
    const auto count = static_cast<int64_t>(s.gpus.size());
    if (options_.disaggregate) {
      const int ai = net.aggregator_index.at({s.gpu_model, y.BucketOf(y.nodes[s.node].load)});
      add({net.aggregator0 + ai, net.supply0 + static_cast<int>(si), count, 0}, 3);
    }
    add({net.supply0 + static_cast<int>(si), net.sink, count, 0}, 4);
  }
  add({net.unscheduled, net.sink, flow::kUnlimited, 0}, 5);
  return net;
}

void Drmaestro::RecordGpuNetwork(const Cycle& y, const GpuNetwork& net,
                                 const std::vector<int64_t>& units) {
  std::vector<std::string> aggregator_name(net.aggregator_index.size());
  for (const auto& [key, ai] : net.aggregator_index) {
    aggregator_name[ai] =
        fmt::format("remote {} load {}", model::GetGpuModel(key.first).name, key.second);
  }
  const auto label = [&](int v) -> std::string {
    if (v < net.tasks) return fmt::format("job {} GPU", y.jobs[y.tasks[v]].w->id);
    if (v == net.unscheduled) return "unscheduled";
    if (v < net.supply0) return aggregator_name[v - net.aggregator0];
    if (v < net.sink) {
      const Supply& s = y.supplies[v - net.supply0];
      return fmt::format("{} {}", y.c.node(s.node).name, model::GetGpuModel(s.gpu_model).name);
    }
    return "sink";
  };
  for (size_t a = 0; a < net.arcs.size(); ++a) {
    const flow::Arc& arc = net.arcs[a];
    last_.phase2.network.push_back(
        {label(arc.from), label(arc.to), arc.capacity, arc.cost, units[a]});
  }
}

// Flows → GPUs: a sub-task's unit through an aggregator takes the next unit the aggregator
// passed on to a supply; each supply hands out its GPUs in order.
void Drmaestro::GpusFromFlow(Cycle& y, const GpuNetwork& net, const std::vector<int64_t>& units) {
  std::vector<std::vector<int>> aggregator_units(net.aggregator_index.size());
  for (size_t a = 0; a < net.arcs.size(); ++a) {
    if (net.kind[a] != 3) continue;
    for (int64_t u = 0; u < units[a]; ++u) {
      aggregator_units[net.arcs[a].from - net.aggregator0].push_back(net.arcs[a].to - net.supply0);
    }
  }
  std::vector<size_t> aggregator_next(net.aggregator_index.size(), 0);
  std::vector<size_t> supply_next(y.supplies.size(), 0);
  for (size_t a = 0; a < net.arcs.size(); ++a) {
    if (net.kind[a] > 2 || units[a] == 0) continue;
    const int k = y.tasks[net.arcs[a].from];
    if (net.kind[a] == 2) {
      ++y.missing[k];
      ++last_.phase2.unscheduled;
      continue;
    }
    const int to = net.arcs[a].to;
    const int si =
        net.kind[a] == 0
            ? to - net.supply0
            : aggregator_units[to - net.aggregator0][aggregator_next[to - net.aggregator0]++];
    const GpuIndex g = y.supplies[si].gpus[supply_next[si]++];
    y.gpus_of[k].emplace_back(g, y.supplies[si].node != y.machine_of[k]);
    y.gpu_cost_of[k] += net.arcs[a].cost;
    ++last_.phase2.placed;
  }
}

// Gang: a job with any GPU left unscheduled waits whole; the others are placed, and their W
// forgotten.
std::vector<Candidate> Drmaestro::Placements(Cycle& y) {
  std::vector<Candidate> out;
  const ClusterState& c = y.c;
  for (size_t k = 0; k < y.jobs.size(); ++k) {
    const Job& j = y.jobs[k];
    DrmaestroJobLine& line = last_.jobs[j.line];
    if (y.machine_of[k] >= 0 && y.missing[k] > 0) {
      line.outcome = fmt::format("unscheduled: gang, {} of its {} GPUs found no place",
                                 y.missing[k], j.w->gpu.count);
      y.machine_of[k] = -1;
    }
    if (y.machine_of[k] < 0) {
      ++waited_[j.w->id];
      continue;
    }
    Candidate cand{.score = 100, .placement = {.workload = j.w->id, .node = y.machine_of[k]}};
    std::vector<std::string> where;
    for (const auto& [g, remote] : y.gpus_of[k]) {
      const model::PartitionIndex p = ClusterState::PartitionOf(g, 0);
      model::Slice slice = SliceFor(*j.w, p, c.partition(p));
      slice.remote = remote;
      cand.placement.slices.push_back(slice);
      where.push_back(c.node(c.gpu(g).node).name);
    }
    line.phase1_cost = y.cost_of[k];
    line.phase2_cost = y.gpu_cost_of[k];
    line.outcome = where.empty() ? c.node(y.machine_of[k]).name
                                 : fmt::format("{}, GPUs on {}", c.node(y.machine_of[k]).name,
                                               NodeList(where));
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
      {"max_postpone_cycles", "30",
       "network_aware postpones a job at most this many cycles (at most 100,000)"},
      {"summed_supply", "false",
       "002 eq. 5 as written: a machine's CPU and memory summed, normalised by the largest"},
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
        ReadOption("drmaestro", options, "summed_supply", o.summed_supply),
        OptionWithin("drmaestro", "remote_preference", o.remote_preference, 0, 1e3),
        OptionWithin("drmaestro", "unscheduled_preference", o.unscheduled_preference, 0, 1e3),
        OptionWithin("drmaestro", "load_buckets", o.load_buckets, 1, 1000),
        OptionWithin("drmaestro", "max_postpone_cycles", o.max_postpone_cycles, 0, 1e5)}) {
    if (!ok) return std::unexpected(ok.error());
  }
  return std::make_unique<Drmaestro>(o, context.job_profiles);
}

}  // namespace tessera::policy
