// What `tessera plan` shows: the table, the JSON, the HTML page and --explain (planner.h).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "plan/planner.h"
#include "report/html.h"

namespace tessera::plan {
namespace {

const ServiceOption* OptionOf(const Problem& p, size_t service, int kind) {
  for (const ServiceOption& o : p.services[service].options) {
    if (o.kind == kind) return &o;
  }
  return nullptr;
}

// "2 × A30-24GB 1g.6gb, 1 × V100-32GB 50 % MPS" for one service of a plan.
std::string SlicesOf(const Problem& p, const Plan& plan, size_t service) {
  std::map<int, int> by_kind;
  for (const PlannedGpu& g : plan.gpus) {
    for (const Seat& s : g.seats) {
      if (static_cast<size_t>(s.service) == service) ++by_kind[s.kind];
    }
  }
  std::string out;
  for (const auto& [kind, n] : by_kind) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} × {}", n, p.kinds[static_cast<size_t>(kind)].Label());
  }
  return out;
}

// "V100-32GB: 3, A30-24GB: 2"
std::string GpusByModel(const Problem& p, const Plan& plan) {
  std::map<int, int> n;
  for (const PlannedGpu& g : plan.gpus) ++n[g.gpu];
  std::string out;
  for (const auto& [gpu, count] : n) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}: {}", model::GetGpuModel(p.gpus[static_cast<size_t>(gpu)].model).name,
                       count);
  }
  return out.empty() ? "none" : out;
}

std::string GpuShape(const Problem& p, const PlannedGpu& g, const PlanInput& in) {
  const model::GpuModel& m = model::GetGpuModel(p.gpus[static_cast<size_t>(g.gpu)].model);
  std::string seats;
  for (const Seat& s : g.seats) {
    if (!seats.empty()) seats += ", ";
    const SliceKind& k = p.kinds[static_cast<size_t>(s.kind)];
    seats += fmt::format(
        "{} on {}", in.services[static_cast<size_t>(s.service)].name,
        k.profile >= 0
            ? fmt::format("{}#{}", m.mig_profiles[static_cast<size_t>(k.profile)].name, s.instance)
            : fmt::format("{} %", k.mps_percent));
  }
  const std::string mode = g.mig ? "MIG " + model::LayoutToString(m, *g.mig) : "MPS";
  return fmt::format("{} | {} | {}", m.name, mode, seats);
}

// "3 GPUs (A30-24GB: 3)", or "6.51 per hour, 3 GPUs (A30-24GB: 3)" with prices.
std::string Summary(const PlanRun& r, const Problem& p, const Plan& plan) {
  const std::string gpus = fmt::format("{} GPUs ({})", plan.gpu_count(), GpusByModel(p, plan));
  return r.input.price_source.empty() ? gpus : fmt::format("{:.2f} per hour, {}", plan.cost, gpus);
}

double Ratio(const PlanRun& r) { return r.shared.cost > 0 ? r.whole.cost / r.shared.cost : 0; }

// Φ of a standard normal.
double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The chance that n replicas of option o serve `demand` at peak (the predictor's error is the
// cell's, the same for every replica: log rate ~ N(log(predicted × (1 − lost)), σ)).
double MeetChance(const ServiceOption& o, int n, double demand) {
  const double mean = n * o.predicted * (1 - o.interference);
  if (!(o.sigma > 0)) return mean >= demand ? 1 : 0;
  return Phi((std::log(mean) - std::log(demand)) / o.sigma);
}

}  // namespace

std::string PlanTable(const PlanRun& r) {
  std::string out =
      fmt::format("plan: {} services | shared ({}): {} | whole GPUs: {} | {:.2f}x less\n",
                  r.input.services.size(), r.shared.solver, Summary(r, r.problem, r.shared),
                  Summary(r, r.whole_problem, r.whole), Ratio(r));
  out += fmt::format(
      "twin (a day, noise seed {}): shared meets {:.1f} % of service-hours, whole "
      "GPUs {:.1f} %\n\n",
      1, 100 * r.shared_twin.met_fraction(), 100 * r.whole_twin.met_fraction());
  out += fmt::format("{:<28} {:>9} {:>4} {:>9} {:>9} {:>6}  {}\n", "service", "SLO QPS", "repl",
                     "capacity", "headroom", "hours", "slices");
  for (size_t s = 0; s < r.input.services.size(); ++s) {
    const ServiceSpec& spec = r.input.services[s];
    const ServiceDay& day = r.shared_twin.services[s];
    out += fmt::format(
        "{:<28} {:>9.2f} {:>4} {:>9.2f} {:>8.1f}% {:>6}  {}\n", spec.name, spec.slo_qps,
        r.shared.replicas[s], r.shared.capacity[s], 100 * (r.shared.capacity[s] / spec.slo_qps - 1),
        day.checked ? fmt::format("{}/24", day.hours_met) : "-", SlicesOf(r.problem, r.shared, s));
  }
  out += "\nGPUs of the shared plan:\n";
  for (size_t i = 0; i < r.shared.gpus.size(); ++i) {
    out += fmt::format("  {:>3}  {}\n", i, GpuShape(r.problem, r.shared.gpus[i], r.input));
  }
  return out;
}

nlohmann::json PlanJson(const PlanRun& r) {
  auto plan_json = [&](const Problem& problem, const Plan& plan, const TwinResult& twin) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const PlannedGpu& g : plan.gpus) {
      const model::GpuModel& m = model::GetGpuModel(problem.gpus[static_cast<size_t>(g.gpu)].model);
      nlohmann::json seats = nlohmann::json::array();
      for (const Seat& s : g.seats) {
        const SliceKind& k = problem.kinds[static_cast<size_t>(s.kind)];
        seats.push_back({{"service", r.input.services[static_cast<size_t>(s.service)].name},
                         {"config", k.config},
                         {"instance", s.instance}});
      }
      gpus.push_back({{"model", m.name},
                      {"mig", g.mig ? model::LayoutToString(m, *g.mig) : ""},
                      {"seats", seats}});
    }
    nlohmann::json services = nlohmann::json::array();
    for (size_t s = 0; s < r.input.services.size(); ++s) {
      services.push_back({{"name", r.input.services[s].name},
                          {"slo_qps", r.input.services[s].slo_qps},
                          {"replicas", plan.replicas[s]},
                          {"capacity_qps", plan.capacity[s]},
                          {"headroom", plan.capacity[s] / r.input.services[s].slo_qps - 1},
                          {"twin_checked", twin.services[s].checked},
                          {"twin_hours_met", twin.services[s].hours_met}});
    }
    return nlohmann::json{
        {"solver", plan.solver},         {"cost", plan.cost},
        {"gpu_count", plan.gpu_count()}, {"gpus", gpus},
        {"services", services},          {"twin_met_fraction", twin.met_fraction()}};
  };
  nlohmann::json menu = nlohmann::json::array();
  for (const GpuOffer& g : r.input.gpus) {
    menu.push_back({{"model", model::GetGpuModel(g.model).name}, {"price", g.price}});
  }
  return {{"input", r.input.file},
          {"confidence", r.problem.options.confidence},
          {"cost_basis", r.input.price_source.empty() ? "gpu count" : r.input.price_source},
          {"menu", menu},
          {"shared", plan_json(r.problem, r.shared, r.shared_twin)},
          {"whole_gpus", plan_json(r.whole_problem, r.whole, r.whole_twin)},
          {"whole_over_shared", Ratio(r)}};
}

std::string PlanHtml(const PlanRun& r) {
  using report::Escape;
  std::string h = report::PageOpen("Tessera capacity plan", "Capacity plan: " + r.input.file);
  h += fmt::format(
      "<p>{} services, confidence {:.0f} %, cost basis: {}. <b>Shared plan ({}): {}</b>; one "
      "whole GPU per replica: {} — <b>{:.2f}× less</b>.</p>\n",
      r.input.services.size(), 100 * r.problem.options.confidence,
      Escape(r.input.price_source.empty() ? "GPU count" : r.input.price_source),
      Escape(r.shared.solver), Escape(Summary(r, r.problem, r.shared)),
      Escape(Summary(r, r.whole_problem, r.whole)), Ratio(r));
  const bool fails = r.shared_twin.met_fraction() < 0.98;
  h += fmt::format(
      "<p>Digital twin (the simulator's physics, a day of load): the shared plan meets <b>{:.1f} "
      "%</b> of {} service-hours{}; the whole-GPU plan {:.1f} %.</p>\n",
      100 * r.shared_twin.met_fraction(), r.shared_twin.service_hours,
      fails ? " — <b style='color:#b00'>below 98 %: this plan fails its own check</b>" : "",
      100 * r.whole_twin.met_fraction());
  std::vector<report::Bar> bars = {{"shared", r.shared.cost}, {"whole GPUs", r.whole.cost}};
  h += report::BarsSvg("Cost", r.input.price_source.empty() ? "GPUs" : "per hour", bars);
  h += "<h2>Services</h2>\n<table><tr><th>service</th><th>application</th><th>SLO QPS</th>"
       "<th>replicas</th><th>slices</th><th>counted QPS</th><th>headroom</th><th>twin hours "
       "met</th></tr>\n";
  for (size_t s = 0; s < r.input.services.size(); ++s) {
    const ServiceSpec& spec = r.input.services[s];
    const ServiceDay& day = r.shared_twin.services[s];
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>"
        "{:.1f} %</td><td>{}</td></tr>\n",
        Escape(spec.name), Escape(spec.AppKey()), spec.slo_qps, r.shared.replicas[s],
        Escape(SlicesOf(r.problem, r.shared, s)), r.shared.capacity[s],
        100 * (r.shared.capacity[s] / spec.slo_qps - 1),
        day.checked ? fmt::format("{} / 24", day.hours_met) : "unchecked");
  }
  h += "</table>\n<h2>GPUs</h2>\n<table><tr><th>#</th><th>model</th><th>mode</th><th>replicas"
       "</th></tr>\n";
  for (size_t i = 0; i < r.shared.gpus.size(); ++i) {
    std::string shape = GpuShape(r.problem, r.shared.gpus[i], r.input);
    std::string cells;
    size_t start = 0;
    for (size_t bar = shape.find(" | "); bar != std::string::npos; bar = shape.find(" | ", start)) {
      cells += "<td>" + Escape(shape.substr(start, bar - start)) + "</td>";
      start = bar + 3;
    }
    cells += "<td>" + Escape(shape.substr(start)) + "</td>";
    h += fmt::format("<tr><td>{}</td>{}</tr>\n", i, cells);
  }
  h += "</table>\n";
  return h + report::PageClose();
}

Expected<std::string> ExplainService(const PlanRun& r, const std::string& name) {
  const auto it = std::find_if(r.input.services.begin(), r.input.services.end(),
                               [&](const ServiceSpec& s) { return s.name == name; });
  if (it == r.input.services.end()) return Fail("plan --explain: no service '{}'", name);
  const size_t s = static_cast<size_t>(it - r.input.services.begin());
  const ServiceNeed& need = r.problem.services[s];
  const Problem& p = r.problem;
  auto share_cost = [&](const ServiceOption& o, int n) {
    const SliceKind& k = p.kinds[static_cast<size_t>(o.kind)];
    return n * p.gpus[static_cast<size_t>(k.gpu)].price * k.share;
  };
  double got = 0;
  for (const PlannedGpu& g : r.shared.gpus) {
    for (const Seat& seat : g.seats) {
      if (static_cast<size_t>(seat.service) == s) got += share_cost(*OptionOf(p, s, seat.kind), 1);
    }
  }
  std::string out = fmt::format(
      "{}: {:.2f} QPS at peak, at least {} replica(s). Got {} ({:.2f} QPS counted at {:.0f} % "
      "confidence, headroom {:.1f} %), its share of the GPUs' cost {:.3f}.\n",
      name, need.demand, need.min_replicas, SlicesOf(p, r.shared, s), r.shared.capacity[s],
      100 * p.options.confidence, 100 * (r.shared.capacity[s] / need.demand - 1), got);
  out +=
      "A replica is counted on the lower end of the predictor's interval at that confidence, "
      "less what MPS neighbours may take.\n\n";
  out += fmt::format("{:<26} {:>9} {:>8} {:>6} {:>8} {:>5} {:>9} {:>9}\n", "slice", "predicted",
                     "sigma", "lost", "counted", "repl", "cost", "P(miss)");
  struct Row {
    const ServiceOption* o;
    int n;
    double cost;
  };
  std::vector<Row> rows;
  for (const ServiceOption& o : need.options) {
    const int needed =
        std::max(need.min_replicas, static_cast<int>(std::ceil(need.demand / o.rate - 1e-9)));
    rows.push_back({&o, needed, share_cost(o, needed)});
    // The cheaper choices: as many replicas as cost less than what the service got.
    int n = needed;
    while (n > need.min_replicas && share_cost(o, n) >= got - 1e-12) --n;
    if (share_cost(o, n) < got - 1e-12 && n != needed) rows.push_back({&o, n, share_cost(o, n)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.cost < b.cost; });
  for (const Row& row : rows) {
    out += fmt::format("{:<26} {:>9.2f} {:>8.3f} {:>5.0f}% {:>8.2f} {:>5} {:>9.3f} {:>8.1f}%{}\n",
                       p.kinds[static_cast<size_t>(row.o->kind)].Label(), row.o->predicted,
                       row.o->sigma, 100 * row.o->interference, row.o->rate, row.n, row.cost,
                       100 * (1 - MeetChance(*row.o, row.n, need.demand)),
                       row.cost < got - 1e-12 ? "  cheaper" : "");
  }
  return out;
}

}  // namespace tessera::plan
