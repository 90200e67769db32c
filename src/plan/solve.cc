#include "plan/solve.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "policy/flow/mip.h"

namespace tessera::plan {
namespace {

using Counts = std::vector<int>;  // per MIG profile of one model

bool Fits(const std::vector<Counts>& layouts, const Counts& v) {
  for (const Counts& l : layouts) {
    bool ok = true;
    for (size_t p = 0; p < v.size() && ok; ++p) ok = v[p] <= l[p];
    if (ok) return true;
  }
  return false;
}

int FirstLayoutHolding(const std::vector<Counts>& layouts, const Counts& v) {
  for (size_t i = 0; i < layouts.size(); ++i) {
    bool ok = true;
    for (size_t p = 0; p < v.size() && ok; ++p) ok = v[p] <= layouts[i][p];
    if (ok) return static_cast<int>(i);
  }
  return -1;
}

// One model's MIG GPUs for `remaining` instances per profile: each GPU takes the largest
// profiles first as long as some layout holds them; a pattern repeats while it can.
struct Pattern {
  Counts used;
  int gpus = 0;
};
std::vector<Pattern> PackMig(const Problem& p, int gpu, Counts remaining) {
  const std::vector<Counts>& layouts = p.layouts[static_cast<size_t>(gpu)];
  const model::GpuModel& m = model::GetGpuModel(p.gpus[static_cast<size_t>(gpu)].model);
  std::vector<int> order(remaining.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return m.mig_profiles[static_cast<size_t>(a)].compute_slices >
           m.mig_profiles[static_cast<size_t>(b)].compute_slices;
  });
  std::vector<Pattern> out;
  while (std::any_of(remaining.begin(), remaining.end(), [](int c) { return c > 0; })) {
    Counts v(remaining.size(), 0);
    for (int prof : order) {
      const size_t i = static_cast<size_t>(prof);
      while (v[i] < remaining[i]) {
        ++v[i];
        if (!Fits(layouts, v)) {
          --v[i];
          break;
        }
      }
    }
    int repeat = std::numeric_limits<int>::max();
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] > 0) repeat = std::min(repeat, remaining[i] / v[i]);
    }
    TESSERA_CHECK(repeat > 0 && repeat < std::numeric_limits<int>::max());
    for (size_t i = 0; i < v.size(); ++i) remaining[i] -= v[i] * repeat;
    out.push_back({std::move(v), repeat});
  }
  return out;
}

int MigGpus(const Problem& p, int gpu, const Counts& counts) {
  int n = 0;
  for (const Pattern& pat : PackMig(p, gpu, counts)) n += pat.gpus;
  return n;
}

// Per menu entry: replicas per MIG profile and MPS quarters.
struct Load {
  std::vector<Counts> mig;
  std::vector<int> quarters;

  explicit Load(const Problem& p) : quarters(p.gpus.size(), 0) {
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
    return p.gpus[g].price * (MigGpus(p, gpu, mig[g]) + (quarters[g] + 3) / 4);
  }
};

int ReplicasFor(const ServiceNeed& need, const ServiceOption& o) {
  const int by_rate = static_cast<int>(std::ceil(need.demand / o.rate - 1e-9));
  return std::max(need.min_replicas, by_rate);
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
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    Counts need(grouped.mig[g].size(), 0);
    for (size_t prof = 0; prof < need.size(); ++prof) {
      need[prof] = static_cast<int>(grouped.mig[g][prof].size());
    }
    std::vector<std::pair<int, Counts>> gpus;
    for (const Pattern& pat : PackMig(p, static_cast<int>(g), need)) {
      const int layout = FirstLayoutHolding(p.layouts[g], pat.used);
      for (int i = 0; i < pat.gpus; ++i) gpus.emplace_back(layout, pat.used);
    }
    SeatMig(p, static_cast<int>(g), gpus, std::move(grouped.mig[g]), plan);
    PackMps(p, static_cast<int>(g), std::move(grouped.mps[g]), plan);
  }
  Finish(p, plan);
  return plan;
}

Plan SolveHeuristic(const Problem& p) {
  const size_t n = p.services.size();
  std::vector<size_t> choice(n, 0);
  Load load(p);
  // Start: each service's cheapest option if GPUs were shared perfectly.
  for (size_t s = 0; s < n; ++s) {
    const ServiceNeed& need = p.services[s];
    double best = std::numeric_limits<double>::infinity();
    for (size_t o = 0; o < need.options.size(); ++o) {
      const SliceKind& k = p.kinds[static_cast<size_t>(need.options[o].kind)];
      const double cost = ReplicasFor(need, need.options[o]) *
                          p.gpus[static_cast<size_t>(k.gpu)].price * k.units / k.units_per_gpu;
      if (cost < best - 1e-12) best = cost, choice[s] = o;
    }
    const ServiceOption& o = need.options[choice[s]];
    load.Add(p.kinds[static_cast<size_t>(o.kind)], ReplicasFor(need, o));
  }
  std::vector<double> cost(p.gpus.size());
  for (size_t g = 0; g < p.gpus.size(); ++g) cost[g] = load.Cost(p, static_cast<int>(g));
  // Moves: one service to another option, the one that lowers the packed cost most.
  for (int pass = 0; pass < 20; ++pass) {
    bool moved = false;
    for (size_t s = 0; s < n; ++s) {
      const ServiceNeed& need = p.services[s];
      const ServiceOption& cur = need.options[choice[s]];
      const SliceKind& from = p.kinds[static_cast<size_t>(cur.kind)];
      const int cur_n = ReplicasFor(need, cur);
      load.Add(from, -cur_n);
      const double without = load.Cost(p, from.gpu);
      double best_delta = -1e-9;
      size_t best = choice[s];
      for (size_t o = 0; o < need.options.size(); ++o) {
        if (o == choice[s]) continue;
        const SliceKind& to = p.kinds[static_cast<size_t>(need.options[o].kind)];
        load.Add(to, ReplicasFor(need, need.options[o]));
        const double delta = to.gpu == from.gpu
                                 ? load.Cost(p, to.gpu) - cost[static_cast<size_t>(from.gpu)]
                                 : without + load.Cost(p, to.gpu) -
                                       cost[static_cast<size_t>(from.gpu)] -
                                       cost[static_cast<size_t>(to.gpu)];
        load.Add(to, -ReplicasFor(need, need.options[o]));
        if (delta < best_delta) best_delta = delta, best = o;
      }
      const ServiceOption& chosen = need.options[best];
      const SliceKind& to = p.kinds[static_cast<size_t>(chosen.kind)];
      load.Add(to, ReplicasFor(need, chosen));
      if (best != choice[s]) {
        choice[s] = best;
        moved = true;
        cost[static_cast<size_t>(from.gpu)] = load.Cost(p, from.gpu);
        cost[static_cast<size_t>(to.gpu)] = load.Cost(p, to.gpu);
      }
    }
    if (!moved) break;
  }
  std::vector<std::vector<int>> counts(n, std::vector<int>(p.kinds.size(), 0));
  for (size_t s = 0; s < n; ++s) {
    const ServiceOption& o = p.services[s].options[choice[s]];
    counts[s][static_cast<size_t>(o.kind)] = ReplicasFor(p.services[s], o);
  }
  return PackCounts(p, counts, "heuristic");
}

namespace {

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

}  // namespace

Expected<Plan> SolveExact(const Problem& p) {
  flow::IntegerProgram ip;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int>> y, replicas_of;
  AddChoices(p, ip, y, replicas_of);
  // z: GPUs per (menu entry, layout); w: MPS GPUs per menu entry.
  std::vector<std::vector<int>> z(p.gpus.size());
  std::vector<int> w(p.gpus.size());
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    for (size_t l = 0; l < p.layouts[g].size(); ++l) {
      z[g].push_back(static_cast<int>(ip.cost.size()));
      ip.cost.push_back(p.gpus[g].price);
      ip.upper_bound.push_back(kInf);
    }
    w[g] = static_cast<int>(ip.cost.size());
    ip.cost.push_back(p.gpus[g].price);
    ip.upper_bound.push_back(kInf);
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
  ip.relative_gap = 1e-4;  // within 0.01 % of the optimum
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
  return plan;
}

}  // namespace tessera::plan
