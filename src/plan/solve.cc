#include "plan/solve.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/rng.h"
#include "plan/pack.h"
#include "policy/flow/mip.h"

namespace tessera::plan {
namespace {

// Per menu entry: replicas per MIG profile and MPS quarters, and what they cost packed.
struct Load {
  std::vector<Counts> mig;
  std::vector<int> quarters;
  std::vector<MigPacker>* packers;  // per menu entry, shared by every search of one solve

  Load(const Problem& p, std::vector<MigPacker>* shared)
      : quarters(p.gpus.size(), 0), packers(shared) {
    for (size_t g = 0; g < p.gpus.size(); ++g) {
      mig.emplace_back(model::GetGpuModel(p.gpus[g].model).mig_profiles.size(), 0);
    }
  }
  void Add(const SliceKind& k, int n) {
    if (k.profile >= 0) {
      mig[static_cast<size_t>(k.gpu)][static_cast<size_t>(k.profile)] += n;
    } else {
      quarters[static_cast<size_t>(k.gpu)] += n * k.units;
    }
  }
  double Cost(const Problem& p, int gpu) const {
    const size_t g = static_cast<size_t>(gpu);
    return p.gpus[g].price * ((*packers)[g].Fewest(mig[g]) + (quarters[g] + 3) / 4);
  }
};

std::vector<MigPacker> Packers(const Problem& p) {
  std::vector<MigPacker> packers;
  for (size_t g = 0; g < p.gpus.size(); ++g) packers.emplace_back(p, static_cast<int>(g));
  return packers;
}

// Seats for one model's MPS replicas: largest share first, each on the first GPU with room.
void PackMps(const Problem& p, int gpu, std::vector<Seat> seats, Plan& plan) {
  std::stable_sort(seats.begin(), seats.end(), [&](const Seat& a, const Seat& b) {
    return p.kinds[static_cast<size_t>(a.kind)].units > p.kinds[static_cast<size_t>(b.kind)].units;
  });
  const size_t first = plan.gpus.size();
  std::vector<int> free;
  for (const Seat& s : seats) {
    const int units = p.kinds[static_cast<size_t>(s.kind)].units;
    size_t i = 0;
    while (i < free.size() && free[i] < units) ++i;
    if (i == free.size()) {
      plan.gpus.push_back({gpu, std::nullopt, {}});
      free.push_back(4);
    }
    free[i] -= units;
    plan.gpus[first + i].seats.push_back(s);
  }
}

// Seats for one model's MIG replicas on GPUs of the given patterns (layout per pattern).
void SeatMig(const Problem& p, int gpu, const std::vector<std::pair<int, Counts>>& gpus,
             std::vector<std::vector<Seat>> by_profile, Plan& plan) {
  std::vector<size_t> next(by_profile.size(), 0);
  for (const auto& [layout, used] : gpus) {
    const model::MigLayout& shape =
        p.layout_shapes[static_cast<size_t>(gpu)][static_cast<size_t>(layout)];
    PlannedGpu planned{gpu, shape, {}};
    Counts left = used;
    for (size_t i = 0; i < shape.instances.size(); ++i) {
      const size_t prof = static_cast<size_t>(shape.instances[i].profile);
      if (left[prof] == 0 || next[prof] >= by_profile[prof].size()) continue;
      --left[prof];
      Seat s = by_profile[prof][next[prof]++];
      s.instance = static_cast<int>(i);
      planned.seats.push_back(s);
    }
    plan.gpus.push_back(std::move(planned));
  }
}

void Finish(const Problem& p, Plan& plan) {
  plan.cost = 0;
  plan.replicas.assign(p.services.size(), 0);
  plan.capacity.assign(p.services.size(), 0);
  for (const PlannedGpu& g : plan.gpus) {
    plan.cost += p.gpus[static_cast<size_t>(g.gpu)].price;
    for (const Seat& s : g.seats) {
      const size_t i = static_cast<size_t>(s.service);
      ++plan.replicas[i];
      for (const ServiceOption& o : p.services[i].options) {
        if (o.kind == s.kind) plan.capacity[i] += o.rate;
      }
    }
  }
}

// Every replica of `counts` as a seat, grouped per menu entry: MIG per profile, MPS apart.
struct Grouped {
  std::vector<std::vector<std::vector<Seat>>> mig;  // [gpu][profile]
  std::vector<std::vector<Seat>> mps;               // [gpu]
};
Grouped Group(const Problem& p, const std::vector<std::vector<int>>& counts) {
  Grouped g;
  g.mps.resize(p.gpus.size());
  for (size_t i = 0; i < p.gpus.size(); ++i) {
    g.mig.emplace_back(model::GetGpuModel(p.gpus[i].model).mig_profiles.size());
  }
  for (size_t s = 0; s < counts.size(); ++s) {
    for (size_t k = 0; k < counts[s].size(); ++k) {
      const SliceKind& kind = p.kinds[k];
      for (int r = 0; r < counts[s][k]; ++r) {
        const Seat seat{static_cast<int>(s), static_cast<int>(k), -1};
        if (kind.profile >= 0) {
          g.mig[static_cast<size_t>(kind.gpu)][static_cast<size_t>(kind.profile)].push_back(seat);
        } else {
          g.mps[static_cast<size_t>(kind.gpu)].push_back(seat);
        }
      }
    }
  }
  return g;
}

}  // namespace

Plan PackCounts(const Problem& p, const std::vector<std::vector<int>>& counts, std::string solver) {
  Plan plan;
  plan.solver = std::move(solver);
  Grouped grouped = Group(p, counts);
  std::vector<MigPacker> packers = Packers(p);
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    Counts load(grouped.mig[g].size(), 0);
    for (size_t prof = 0; prof < load.size(); ++prof) {
      load[prof] = static_cast<int>(grouped.mig[g][prof].size());
    }
    SeatMig(p, static_cast<int>(g), packers[g].Cut(load), std::move(grouped.mig[g]), plan);
    PackMps(p, static_cast<int>(g), std::move(grouped.mps[g]), plan);
  }
  Finish(p, plan);
  return plan;
}

namespace {

// What option o of a service costs if GPUs were shared perfectly: replicas × price × the kind's
// share of its GPU.
double ShareCost(const Problem& p, const ServiceNeed& need, const ServiceOption& o) {
  const SliceKind& k = p.kinds[static_cast<size_t>(o.kind)];
  return ReplicasFor(need, o) * p.gpus[static_cast<size_t>(k.gpu)].price * k.share;
}

// A change of the plan's cost: the packed cost first, then the perfectly shared one (which
// lets a move that frees part of a GPU count, so that the next move can free all of it).
struct Delta {
  double packed = 0, shared = 0;
  bool operator<(const Delta& o) const {
    if (packed < o.packed - 1e-9) return true;
    if (packed > o.packed + 1e-9) return false;
    return shared < o.shared - 1e-9;
  }
};

// The heuristic's state: each service's option, and the load it puts on each menu entry.
class Search {
 public:
  Search(const Problem& p, std::vector<MigPacker>* packers, std::vector<size_t> start)
      : p_(p), choice_(std::move(start)), load_(p, packers) {
    for (size_t s = 0; s < p.services.size(); ++s) Apply(s, choice_[s], +1);
    for (size_t g = 0; g < p.gpus.size(); ++g) cost_.push_back(load_.Cost(p, int(g)));
  }

  // Moves one service at a time, in `order`, to the option that improves the cost most; false
  // when none does.
  bool Pass(const std::vector<size_t>& order) {
    bool moved = false;
    for (size_t s : order) {
      const size_t from = choice_[s];
      const int from_gpu = Gpu(s, from);
      Apply(s, from, -1);
      const double without = load_.Cost(p_, from_gpu);
      Delta best_delta;
      size_t best = from;
      for (size_t o = 0; o < p_.services[s].options.size(); ++o) {
        if (o == from) continue;
        const int to_gpu = Gpu(s, o);
        Apply(s, o, +1);
        Delta d;
        d.packed = to_gpu == from_gpu ? load_.Cost(p_, to_gpu) - cost_[size_t(from_gpu)]
                                      : without + load_.Cost(p_, to_gpu) - cost_[size_t(from_gpu)] -
                                            cost_[size_t(to_gpu)];
        d.shared = ShareCost(p_, p_.services[s], p_.services[s].options[o]) -
                   ShareCost(p_, p_.services[s], p_.services[s].options[from]);
        Apply(s, o, -1);
        if (d < best_delta) best_delta = d, best = o;
      }
      Apply(s, best, +1);
      if (best != from) {
        choice_[s] = best;
        moved = true;
        cost_[size_t(from_gpu)] = load_.Cost(p_, from_gpu);
        cost_[size_t(Gpu(s, best))] = load_.Cost(p_, Gpu(s, best));
      }
    }
    return moved;
  }

  // Moves two services at once, each among its `top` options of least perfectly shared cost,
  // to the pair of options that improves the cost most: what frees a GPU that neither move
  // alone frees. False when no pair improves.
  bool PairPass(size_t top) {
    const size_t n = p_.services.size();
    std::vector<std::vector<size_t>> best_options(n);
    for (size_t s = 0; s < n; ++s) best_options[s] = Cheapest(s, top);
    bool moved = false;
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) moved |= MovePair(a, b, best_options);
    }
    return moved;
  }

  const std::vector<size_t>& choice() const { return choice_; }
  double cost() const {
    double c = 0;
    for (double x : cost_) c += x;
    return c;
  }

 private:
  std::vector<size_t> Cheapest(size_t s, size_t top) const {
    const ServiceNeed& need = p_.services[s];
    std::vector<size_t> order(need.options.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return ShareCost(p_, need, need.options[x]) < ShareCost(p_, need, need.options[y]);
    });
    if (order.size() > top) order.resize(top);
    return order;
  }

  double CostOf(const std::vector<int>& gpus) const {
    double c = 0;
    for (int g : gpus) c += load_.Cost(p_, g);
    return c;
  }

  bool MovePair(size_t a, size_t b, const std::vector<std::vector<size_t>>& options) {
    const size_t fa = choice_[a], fb = choice_[b];
    const double shared_before = ShareCost(p_, p_.services[a], p_.services[a].options[fa]) +
                                 ShareCost(p_, p_.services[b], p_.services[b].options[fb]);
    Apply(a, fa, -1);
    Apply(b, fb, -1);
    Delta best_delta;
    size_t ba = fa, bb = fb;
    for (size_t oa : options[a]) {
      for (size_t ob : options[b]) {
        if (oa == fa && ob == fb) continue;
        std::vector<int> gpus = {Gpu(a, fa), Gpu(b, fb), Gpu(a, oa), Gpu(b, ob)};
        std::sort(gpus.begin(), gpus.end());
        gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
        double before = 0;
        for (int g : gpus) before += cost_[static_cast<size_t>(g)];
        Apply(a, oa, +1);
        Apply(b, ob, +1);
        Delta d{CostOf(gpus) - before,
                ShareCost(p_, p_.services[a], p_.services[a].options[oa]) +
                    ShareCost(p_, p_.services[b], p_.services[b].options[ob]) - shared_before};
        Apply(a, oa, -1);
        Apply(b, ob, -1);
        if (d < best_delta) best_delta = d, ba = oa, bb = ob;
      }
    }
    Apply(a, ba, +1);
    Apply(b, bb, +1);
    if (ba == fa && bb == fb) return false;
    choice_[a] = ba;
    choice_[b] = bb;
    for (int g : {Gpu(a, fa), Gpu(b, fb), Gpu(a, ba), Gpu(b, bb)}) {
      cost_[static_cast<size_t>(g)] = load_.Cost(p_, g);
    }
    return true;
  }

  int Gpu(size_t s, size_t o) const {
    return p_.kinds[static_cast<size_t>(p_.services[s].options[o].kind)].gpu;
  }
  void Apply(size_t s, size_t o, int sign) {
    const ServiceOption& opt = p_.services[s].options[o];
    load_.Add(p_.kinds[static_cast<size_t>(opt.kind)], sign * ReplicasFor(p_.services[s], opt));
  }

  const Problem& p_;
  std::vector<size_t> choice_;
  Load load_;
  std::vector<double> cost_;
};

// A start: each service on its option of least perfectly shared cost, or with `rng`, on one
// of its three least drawn at random.
std::vector<size_t> Start(const Problem& p, Rng* rng) {
  std::vector<size_t> choice(p.services.size(), 0);
  for (size_t s = 0; s < p.services.size(); ++s) {
    const ServiceNeed& need = p.services[s];
    std::vector<size_t> order(need.options.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ShareCost(p, need, need.options[a]) < ShareCost(p, need, need.options[b]) - 1e-12;
    });
    choice[s] = order[rng == nullptr ? 0 : rng->Below(std::min<size_t>(3, order.size()))];
  }
  return choice;
}

// x: whether service s runs its replicas on option o (one option each: a Deployment's pods
// share one template, so one slice request); it then needs ReplicasFor(s, o) of them.
void AddChoices(const Problem& p, flow::IntegerProgram& ip, std::vector<std::vector<int>>& y,
                std::vector<std::vector<int>>& replicas_of) {
  y.assign(p.services.size(), {});
  replicas_of.assign(p.services.size(), {});
  for (size_t s = 0; s < p.services.size(); ++s) {
    const ServiceNeed& need = p.services[s];
    flow::LinearRow one{{}, 1, 1};
    for (const ServiceOption& o : need.options) {
      const int var = static_cast<int>(ip.cost.size());
      ip.cost.push_back(0);
      ip.upper_bound.push_back(1);
      y[s].push_back(var);
      replicas_of[s].push_back(ReplicasFor(need, o));
      one.terms.push_back({var, 1});
    }
    ip.rows.push_back(std::move(one));
  }
}

// The integer program of SolveExact: x (which option each service takes), z (GPUs per menu
// entry and MIG layout), w (MPS GPUs per menu entry).
struct Program {
  flow::IntegerProgram ip;
  std::vector<std::vector<int>> y, replicas_of, z;
  std::vector<int> w;
};

Program BuildProgram(const Problem& p) {
  Program prog;
  flow::IntegerProgram& ip = prog.ip;
  auto& y = prog.y;
  auto& replicas_of = prog.replicas_of;
  auto& z = prog.z;
  auto& w = prog.w;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  AddChoices(p, ip, y, replicas_of);
  // z: GPUs per (menu entry, layout); w: MPS GPUs per menu entry.
  z.assign(p.gpus.size(), {});
  w.assign(p.gpus.size(), 0);
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    for (size_t l = 0; l < p.layouts[g].size(); ++l) {
      z[g].push_back(static_cast<int>(ip.cost.size()));
      ip.cost.push_back(0);
      ip.upper_bound.push_back(kInf);
    }
    w[g] = static_cast<int>(ip.cost.size());
    ip.cost.push_back(0);
    ip.upper_bound.push_back(kInf);
    // N: all GPUs of the entry, the one variable the cost sees (branching on it splits the
    // search by how many GPUs, not by which of many equivalent layouts).
    {
      const int total = static_cast<int>(ip.cost.size());
      ip.cost.push_back(p.gpus[g].price);
      ip.upper_bound.push_back(kInf);
      flow::LinearRow sum{{{total, -1}, {w[g], 1}}, 0, 0};
      for (int v : z[g]) sum.terms.push_back({v, 1});
      ip.rows.push_back(std::move(sum));
    }
    const size_t profiles = model::GetGpuModel(p.gpus[g].model).mig_profiles.size();
    std::vector<flow::LinearRow> mig(profiles, flow::LinearRow{{}, -kInf, 0});
    flow::LinearRow mps{{{w[g], -4}}, -kInf, 0};
    for (size_t s = 0; s < p.services.size(); ++s) {
      for (size_t o = 0; o < p.services[s].options.size(); ++o) {
        const SliceKind& k = p.kinds[static_cast<size_t>(p.services[s].options[o].kind)];
        if (static_cast<size_t>(k.gpu) != g) continue;
        const double n = replicas_of[s][o];
        if (k.profile >= 0) {
          mig[static_cast<size_t>(k.profile)].terms.push_back({y[s][o], n});
        } else {
          mps.terms.push_back({y[s][o], n * k.units});
        }
      }
    }
    for (size_t prof = 0; prof < profiles; ++prof) {
      if (mig[prof].terms.empty()) continue;
      for (size_t l = 0; l < p.layouts[g].size(); ++l) {
        mig[prof].terms.push_back({z[g][l], -double(p.layouts[g][l][prof])});
      }
      ip.rows.push_back(std::move(mig[prof]));
    }
    ip.rows.push_back(std::move(mps));
  }
  return prog;
}

// The program's linear relaxation: per service, how much of each option it holds (empty when
// the relaxation fails).
std::vector<std::vector<double>> Relaxation(const Problem& p) {
  Program prog = BuildProgram(p);
  prog.ip.integer.assign(prog.ip.cost.size(), false);
  const flow::MipResult r = flow::SolveMinimum(prog.ip);
  if (r.status != flow::Status::kOptimal) return {};
  std::vector<std::vector<double>> x(p.services.size());
  for (size_t s = 0; s < p.services.size(); ++s) {
    for (int var : prog.y[s]) x[s].push_back(std::max(0.0, r.values[static_cast<size_t>(var)]));
  }
  return x;
}

// A start from the relaxation: each service on the option it holds most of.
std::vector<size_t> RelaxedStart(const Problem& p, const std::vector<std::vector<double>>& x) {
  if (x.empty()) return Start(p, nullptr);
  std::vector<size_t> choice(p.services.size(), 0);
  for (size_t s = 0; s < p.services.size(); ++s) {
    choice[s] = static_cast<size_t>(std::max_element(x[s].begin(), x[s].end()) - x[s].begin());
  }
  return choice;
}

}  // namespace

Plan SolveHeuristic(const Problem& p) {
  const size_t n = p.services.size();
  size_t options = 0;
  for (const ServiceNeed& need : p.services) options += need.options.size();
  // Restarts while they are cheap: about 4 million option evaluations, at most 128.
  const int starts =
      static_cast<int>(std::clamp<size_t>(4'000'000 / std::max<size_t>(1, options * 20), 1, 128));
  Rng rng(1);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<size_t> best;
  double best_cost = std::numeric_limits<double>::infinity();
  const std::vector<std::vector<double>> relaxed = Relaxation(p);
  std::vector<MigPacker> packers = Packers(p);
  // Start 0: each service's cheapest option if shared perfectly; start 1: the rounded linear
  // relaxation. Then, in turn: the best plan so far with two services moved to a random option
  // (iterated local search); a randomised greedy start; and a search under prices of the menu
  // scaled by a random factor each (×0.67–1.5), whose result the true prices then refine — the
  // way out of a plan stuck on one GPU model when the optimum moves several services to
  // another at once. A result is kept when no dearer (equal plans let the search drift
  // across plateaus).
  for (int start = 0; start < starts; ++start) {
    const int turn = start < 2 ? -1 : (start - 2) % 3;
    std::vector<size_t> from = start == 0   ? Start(p, nullptr)
                               : start == 1 ? RelaxedStart(p, relaxed)
                               : turn == 0  ? best
                                            : Start(p, &rng);
    for (int k = 0; turn == 0 && k < 2; ++k) {
      const size_t s = rng.Below(n);
      from[s] = rng.Below(p.services[s].options.size());
    }
    if (turn == 2) {
      Problem skewed = p;
      for (GpuOffer& g : skewed.gpus) g.price *= std::exp(rng.Uniform(-0.4, 0.4));
      Search search(skewed, &packers, std::move(from));
      for (int pass = 0; pass < 50 && search.Pass(order); ++pass) rng.Shuffle(order);
      from = search.choice();
    }
    Search search(p, &packers, std::move(from));
    for (int pass = 0; pass < 50 && search.Pass(order); ++pass) {
      if (start > 0) rng.Shuffle(order);
    }
    if (search.cost() <= best_cost + 1e-9) best_cost = search.cost(), best = search.choice();
  }
  // Then pairs of services, from the best plan, while it improves and the input is small
  // enough for n² pairs of each one's eight cheapest options.
  if (n <= 200) {
    Search search(p, &packers, best);
    for (int round = 0; round < 10 && search.PairPass(8); ++round) {
      while (search.Pass(order)) {
      }
    }
    if (search.cost() < best_cost - 1e-9) best_cost = search.cost(), best = search.choice();
  }
  const std::vector<size_t>& choice = best;
  std::vector<std::vector<int>> counts(n, std::vector<int>(p.kinds.size(), 0));
  for (size_t s = 0; s < n; ++s) {
    const ServiceOption& o = p.services[s].options[choice[s]];
    counts[s][static_cast<size_t>(o.kind)] = ReplicasFor(p.services[s], o);
  }
  return PackCounts(p, counts, "heuristic");
}

Expected<Plan> SolveExact(const Problem& p) {
  Program prog = BuildProgram(p);
  flow::IntegerProgram& ip = prog.ip;
  const auto& y = prog.y;
  const auto& replicas_of = prog.replicas_of;
  const auto& z = prog.z;
  ip.relative_gap = 1e-4;  // within 0.01 % of the optimum
  // Branching on the GPUs per model proves these programs; CBC's cuts add nothing measurable
  // (Release: the 100 random test instances in 10.4 s without, 9.8 s with; 1,000 services
  // 780 GPUs in 10.4 s either way) and cost each solve their setup (under ASan 35 s against
  // 116 s for the 100 instances).
  ip.cuts = false;
  ip.time_limit_s =
      p.options.exact_time_limit_s;  // past it, the best plan found, reported as not proven
  const flow::MipResult r = flow::SolveMinimum(ip);
  if (r.status != flow::Status::kOptimal) {
    return Fail("plan: the exact solver found no plan ({}{})", flow::ToString(r.status),
                r.error.empty() ? "" : ": " + r.error);
  }
  auto value = [&](int var) {
    return static_cast<int>(std::llround(r.values[static_cast<size_t>(var)]));
  };
  std::vector<std::vector<int>> counts(p.services.size(), std::vector<int>(p.kinds.size(), 0));
  for (size_t s = 0; s < p.services.size(); ++s) {
    for (size_t o = 0; o < p.services[s].options.size(); ++o) {
      counts[s][static_cast<size_t>(p.services[s].options[o].kind)] +=
          value(y[s][o]) * replicas_of[s][o];
    }
  }
  Plan plan;
  plan.solver =
      r.proven ? "exact"
               : fmt::format("exact (not proven optimal in {:g} s)", p.options.exact_time_limit_s);
  Grouped grouped = Group(p, counts);
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    std::vector<std::pair<int, Counts>> gpus;
    for (size_t l = 0; l < p.layouts[g].size(); ++l) {
      for (int i = 0; i < value(z[g][l]); ++i) gpus.emplace_back(int(l), p.layouts[g][l]);
    }
    SeatMig(p, static_cast<int>(g), gpus, std::move(grouped.mig[g]), plan);
    PackMps(p, static_cast<int>(g), std::move(grouped.mps[g]), plan);
  }
  Finish(p, plan);
  plan.lower_bound = r.bound;
  return plan;
}

}  // namespace tessera::plan
