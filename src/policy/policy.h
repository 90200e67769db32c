#pragma once
// Policy: the judgement half of scheduling (DESIGN §3). The scheduler core owns the queue and
// the cycle (order → filter → score → select → reserve → bind) and asks a Policy at each step;
// a Policy never mutates the cluster, it proposes. Nothing here knows whether it runs in the
// simulator or in Kubernetes.
//
// Only Score is required; every other method has a sensible default. Scheduling outcomes are
// values: Filter says "no, because …", Score says "yes, this well, on these slices" or nothing.
// A policy instance is used by one scheduler at a time (not thread-safe unless it says so).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster.h"

namespace tessera::policy {

using model::ClusterState;
using model::GpuIndex;
using model::MigLayout;
using model::NodeIndex;
using model::Placement;
using model::Workload;
using model::WorkloadId;

// Feasible, or why not. Reasons are static strings so filtering thousands of nodes allocates
// nothing; the scheduler counts them into "0/64 nodes: 40 not enough GPU memory, …".
struct Feasibility {
  std::string_view reason;  // empty = feasible
  bool ok() const { return reason.empty(); }
  static Feasibility Yes() { return {}; }
  static Feasibility No(std::string_view why) { return {why}; }
};

// Cut an idle MIG-capable GPU into `layout` (nullopt: MIG off) before placing.
struct ReshapeTo {
  GpuIndex gpu = 0;
  std::optional<MigLayout> layout;
};

// New MPS limits for a workload already running (same partitions): how a policy makes room on
// a shared partition, e.g. round-robin's equal 1/n shares.
struct ResizeTo {
  WorkloadId workload = 0;
  std::vector<model::Slice> slices;
};

// A running workload a policy wants off its slice. A move (`requeue`) asks the driver to start
// it again through the queue — the simulator resumes it after a restart, Kubernetes evicts the
// pod for its controller to recreate — rather than to end it.
struct Eviction {
  WorkloadId workload = 0;
  bool requeue = false;
  std::string reason;  // for the driver's log and Event
  bool preemption = false;  // the core's, for a workload of higher priority (not the policy's)
};

// A node's offer for one workload.
struct Candidate {
  double score = 0;     // 0..100, higher is better
  Placement placement;  // node and slices (partition slots of the reshaped GPU if any)
  std::optional<ReshapeTo> reshape;
  std::vector<ResizeTo> resizes;  // applied with the placement, all or nothing
};

// What a policy does to running workloads at the end of a cycle: evictions first, then new
// MPS limits. Both are proposals; the core applies what the cluster accepts.
struct CycleActions {
  std::vector<Eviction> evictions;
  std::vector<ResizeTo> resizes;
};

// Each method says when it is called and which policies override it.
class Policy {
 public:
  virtual ~Policy() = default;
  // The registered name, for logs, explain and reports; every policy.
  virtual std::string_view name() const = 0;

  // Queue order. By default FIFO by arrival time, then id, which the core keeps incrementally
  // (cheap with a long queue). A policy that orders otherwise returns true from CustomOrder
  // and sorts `pending` in Order, which the core calls at the start of every cycle; drmaestro
  // (waiting counter W), knots-cbp, knots-pp, knots-resag and resource-aware (by memory) do.
  virtual bool CustomOrder() const { return false; }
  virtual void Order(std::vector<const Workload*>& pending) const;

  // Called for every node while the core scores a workload, before Score; most policies
  // override it to refuse early with a reason (first-fit, best-fit, random, dot-product,
  // gpu-packing, gpu-clustering, fgd, frag-pack and drmaestro keep the default). Default: the
  // node is ready, has the CPU and memory, and some GPU that could host it.
  //
  // Contract the core relies on: whether Filter passes and Score makes an offer may depend on
  // the cluster state and on the workload's request — its application key, its class, whether
  // it has an SLO, and its CPU, memory and GPU request (sched::RequestShape) — plus what
  // OfferInputs declares, and on nothing else (scores may use anything). So when a request shape
  // finds no node, the core does not retry identical shapes until the cluster changes.
  virtual Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const;

  // What beyond the request shape decides whether Filter passes and Score makes an offer, read
  // by the core when it queues a workload and at the start of every cycle: slo-aware declares
  // the SLO value (it admits a workload only where its SLO is met), muxflow, knots-cbp,
  // knots-pp and resource-aware live state. Default: nothing (offers follow the request shape
  // alone).
  struct OfferInputs {
    // Offers follow the SLO's value, not only whether there is one: two workloads are one
    // request shape only when their SLOs are equal.
    bool slo_value = false;
    // Offers follow live state the cluster's version does not capture (telemetry, a
    // rescheduling period): the core never skips a cycle as fruitless for this policy.
    bool live_state = false;
    // Filter's verdict on a node follows that node's state (model::Node::version) and the
    // request shape alone — not other nodes, not live state, not the SLO's value (with
    // slo_value, verdicts are kept under the shape without it): the core keeps each shape's
    // verdict per node and calls Filter again only on nodes that changed since (policies that
    // keep the default Filter, whole-gpu and max declare it; slo-aware, with filter_epoch).
    bool node_local_filter = false;
    // With node_local_filter: what else the verdicts follow, as a number that moves when it
    // does (slo-aware: its predictor's generation, since a workload of an application the
    // predictor learns is filtered as predictable from then on). The core drops every kept
    // verdict when it moves.
    uint64_t filter_epoch = 0;
    // ScoreCeiling answers for the nodes of most workloads, cheaply (predictive): with the
    // lowest-node tie rule, the core scores nodes highest ceiling first and stops at the first
    // ceiling below the best offer — the same choice as the scan in node order.
    bool score_ceilings = false;
    // With node_local_filter: Score's offer on a node — whether it makes one, and its score —
    // follows that node's state (model::Node::version) and the request shape alone, for the
    // policy's whole life (not other nodes, not live state, not what it learned from earlier
    // workloads). With the lowest-node tie rule the core keeps each shape's nodes ranked by
    // offer and re-rates only the nodes touched since its last decision (sched/kept_ranking.h;
    // the packing baselines, whole-gpu, max, and fgd and frag-pack with their typical pods
    // given).
    bool node_local_score = false;
    // With slo_value: where a workload has no offer on any node, none with a higher SLO and
    // the rest of the request equal has one either (in that state, or after binds only took
    // resources away), and Filter does not read the SLO's value — so its reason is the same.
    // The core lets a failure stand for the higher SLOs of its shape for the rest of the
    // cycle (slo-aware under admission: a higher SLO is a higher target, the predictions and
    // the neighbours' terms the same).
    bool slo_monotone = false;
  };
  virtual OfferInputs OffersDependOn() const { return {}; }

  // The best this node can offer, or nullopt if it cannot take the workload after all; called
  // for every node Filter passed, for each workload the cycle tries (every policy).
  virtual std::optional<Candidate> Score(const Workload& w, NodeIndex node,
                                         const ClusterState& c) = 0;
  // Score's offer written into `out` (true), reusing its buffers, or false for no offer (`out`
  // is then unspecified). The core's node loop calls this; the default calls Score. A policy
  // whose offers cost less than a Placement's allocation overrides it, so that the nodes that
  // lose allocate nothing (fgd and frag-pack do).
  virtual bool ScoreInto(const Workload& w, NodeIndex node, const ClusterState& c, Candidate& out);
  // A number no score Score would give `w` on `node` exceeds (nullopt: none known), cheaper to
  // work out than the score: the core skips a node whose ceiling is below the best score it
  // already has (never one that could tie, and never while it records every node's score).
  // Called for nodes Filter passed, in the same state Score would see. −∞: Score would make no
  // offer (the core counts the node refused without scoring it). Default: nullopt.
  virtual std::optional<double> ScoreCeiling(const Workload&, NodeIndex, const ClusterState&) {
    return std::nullopt;
  }

  // Policies that decide many placements at once (Kuhn-Munkres, min-cost flow) return them
  // here; called once per cycle, before any per-workload scoring, which the core skips for the
  // cycle when it returns a value (drmaestro every cycle, muxflow at its matching rounds).
  // Called only for a policy whose Batches() is true (its PolicyInfo::batch; the core then
  // lists the whole queue every cycle, which it otherwise never does). Default: nullopt.
  virtual bool Batches() const { return false; }
  virtual std::optional<std::vector<Candidate>> PlaceBatch(std::span<const Workload* const> pending,
                                                           const ClusterState& c);

  // Proactive reshaping of an idle MIG-capable GPU: called at the end of every cycle for each
  // such GPU, before AfterCycle (min, max and round-robin reshape). Returns the new layout
  // (nullopt inside: MIG off), or nullopt to leave it. Default: leave it.
  virtual std::optional<std::optional<MigLayout>> Reshape(GpuIndex idle_gpu, const ClusterState& c);

  // Called once at the end of every cycle, after the placements and reshapes: where a policy
  // reads what happened (knots-cbp, knots-pp and resource-aware note the pods bound and their
  // use; slo-aware learns observed rates) and acts on running workloads (muxflow's SysMonitor
  // evictions and dynamic-SM resizes, slo-aware's moves). The core then applies the evictions
  // (Hooks::evict), then each resize the cluster accepts (same partitions, same best-effort
  // kind, room on the partition; Hooks::resized). Both are decided on `c` before any eviction is
  // applied, so a policy that evicts and resizes in one cycle leaves its evicted workloads out
  // of its resizes (a resize of a workload no longer placed counts as a policy error). Default:
  // nothing.
  virtual CycleActions AfterCycle(const ClusterState& c);

  // Whether the last cycle held back a workload it could have placed, on a count of cycles
  // (drmaestro's network-aware postponement, bounded by max_postpone_cycles): the driver then
  // keeps running cycles, even with nothing running, until it lets the workload go (002's
  // scheduler event is "periodically generated", ≈426). Default: false.
  virtual bool HoldsBack() const { return false; }

  // Human-readable breakdown of how this policy judges `w` on every node (DESIGN §3 explain),
  // called by `tessera explain` only; drmaestro, knots-cbp, knots-pp, muxflow, predictive,
  // resource-aware and slo-aware say more than the default: each feasible node's score, or its
  // filter reason.
  virtual std::string Explain(const Workload& w, const ClusterState& c);
};

}  // namespace tessera::policy
