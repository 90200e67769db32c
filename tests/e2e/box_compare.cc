#include "e2e/box_compare.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/thesis.h"

namespace tessera::e2e {

using nlohmann::json;

namespace {

// One CSV line split on commas outside double quotes.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::optional<double> Number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return std::stod(s);
}

// A side's figures as the thesis experiment counts them (sim/thesis.cc Summarize): a pod that
// failed or never finished misses its SLO and counts −1 in the mean |achieved − SLO| / SLO.
struct Figures {
  int pods = 0, completed = 0, met = 0;
  double abs_diff = 0, makespan_s = 0;
  void Add(double slo, double achieved, bool ran, double arrival, std::optional<double> end) {
    ++pods;
    completed += ran;
    met += ran && achieved >= slo;
    abs_diff += ran ? std::abs(achieved - slo) / slo : 1;
    first_arrival = std::min(first_arrival, arrival);
    if (ran && end) last_end = std::max(last_end, *end);
  }
  json Json() const {
    return {{"pods", pods},
            {"completed", completed},
            {"slo_attainment", pods ? static_cast<double>(met) / pods : 0},
            {"qps_slo_abs_diff_mean", pods ? abs_diff / pods : 0},
            {"makespan_s", last_end > first_arrival ? last_end - first_arrival : 0}};
  }
  double first_arrival = 1e18, last_end = 0;
};

bool Deterministic(const std::string& policy) { return policy == "max" || policy == "min"; }

}  // namespace

std::vector<SimPod> RunSimulator(const RunSpec& spec) {
  const std::string out = spec.dir + "/sim";
  std::filesystem::create_directories(spec.dir + "/logs");
  const sim::ThesisScenario& s = spec.scenario;
  const std::string experiment =
      s.nodes > 0 ? fmt::format("thesis-scale --workloads {} --cluster-nodes {} --unprofiled {}",
                                s.pods, s.nodes, s.unprofiled)
                  : "thesis";
  const std::string cmd = fmt::format(
      "'{}' simulate --experiment {} --seed {} --policy '{}' --reading time={:g},mig=fixed "
      "--out '{}' "
      ">'{}/logs/simulate.log' 2>&1",
      spec.tessera, experiment, spec.seed, spec.policy, spec.time_scale, out, spec.dir);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    throw std::runtime_error(
        fmt::format("{} failed ({}); see {}/logs/simulate.log", cmd, rc, spec.dir));
  }
  const std::string scenario = s.name();
  std::ifstream in(out + "/workloads.csv");
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = SplitCsv(line);
  auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw std::runtime_error(std::string("workloads.csv has no ") + name);
    return static_cast<size_t>(it - header.begin());
  };
  const size_t c_scenario = col("scenario"), c_id = col("workload"), c_app = col("app"),
               c_slo = col("slo_qps"), c_ach = col("achieved_qps"), c_failed = col("failed"),
               c_arr = col("arrival_s"), c_start = col("start_s"), c_end = col("end_s"),
               c_node = col("node"), c_part = col("partition"), c_prof = col("profile"),
               c_milli = col("mps_milli"), c_moves = col("moves");
  std::vector<SimPod> pods;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = SplitCsv(line);
    if (f.size() != header.size() || f[c_scenario] != scenario) continue;
    pods.push_back({.id = std::stoll(f[c_id]),
                    .app = f[c_app],
                    .slo_qps = std::stod(f[c_slo]),
                    .achieved_qps = std::stod(f[c_ach]),
                    .arrival_s = std::stod(f[c_arr]),
                    .failed = f[c_failed] == "1",
                    .start_s = Number(f[c_start]),
                    .end_s = Number(f[c_end]),
                    .node = f[c_node],
                    .partition = f[c_part],
                    .profile = f[c_prof],
                    .milli = f[c_milli].empty() ? 0 : std::stoi(f[c_milli]),
                    .moves = f[c_moves].empty() ? 0 : std::stoi(f[c_moves])});
  }
  if (static_cast<int>(pods.size()) != s.pods) {
    throw std::runtime_error(fmt::format("{}/workloads.csv: {} pods of {}, expected {}", out,
                                         pods.size(), scenario, s.pods));
  }
  return pods;
}

namespace {

// A tie: the simulator saw two or more events of other pods (arrivals, ends) within one
// scheduling cycle before this pod's start and decided once, where the daemons, reacting to each
// watch event, may have decided between them.
bool IsTie(const SimPod& s, const std::vector<SimPod>& sim) {
  if (!s.start_s) return false;
  int events = 0;
  for (const SimPod& o : sim) {
    if (o.id == s.id) continue;
    for (std::optional<double> e : {std::optional<double>(o.arrival_s), o.end_s}) {
      events += e && *e <= *s.start_s && *e > *s.start_s - kResolutionS;
    }
  }
  return events >= 2;
}

// The end, before `start`, of the last other pod that ran on `partition` (by `id`), or none.
template <typename Pod, typename Id>
std::optional<std::pair<double, int64_t>> LastEndOn(const std::vector<Pod>& pods,
                                                    const std::string& partition, double start,
                                                    int64_t self, Id id) {
  std::optional<std::pair<double, int64_t>> last;
  for (const Pod& o : pods) {
    if (id(o) == self || o.partition != partition || !o.end_s || *o.end_s > start) continue;
    if (!last || *o.end_s > last->first) last = std::pair{*o.end_s, id(o)};
  }
  return last;
}

// A tie of order: the pod whose end freed this pod's slice in the simulator (A) and the one
// whose end freed its slice in the box (B) ended in one order in the simulator and in the
// other in the box. Each side reacts to an end after a delay of its own (the simulator at its
// next cycle, up to 1 s; the daemons on the watch event, a fraction of that), and along a
// chain of pods those delays add up, so two ends a second or two apart can arrive swapped;
// each side then gave the pod the slice it saw freed first.
bool EndsSwapped(const SimPod& s, const BoxPod& b, const std::vector<SimPod>& sim,
                 const std::vector<BoxPod>& box) {
  if (!s.start_s || !b.start_s) return false;
  const auto a =
      LastEndOn(sim, s.partition, *s.start_s, s.id, [](const SimPod& p) { return p.id; });
  const auto f = LastEndOn(box, b.partition, *b.start_s, b.workload.id,
                           [](const BoxPod& p) { return p.workload.id; });
  if (!a || !f || a->second == f->second) return false;
  auto sim_end = [&](int64_t id) -> std::optional<double> {
    for (const SimPod& p : sim) {
      if (p.id == id) return p.end_s;
    }
    return std::nullopt;
  };
  auto box_end = [&](int64_t id) -> std::optional<double> {
    for (const BoxPod& p : box) {
      if (p.workload.id == id) return p.end_s;
    }
    return std::nullopt;
  };
  const std::optional<double> a_box = box_end(a->second), f_sim = sim_end(f->second);
  if (!a_box || !f_sim) return false;
  return a->first < *f_sim && f->first < *a_box;
}

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(); }

json PodJson(const BoxPod& b, const SimPod& s, int bindings, bool match, bool tie) {
  return {{"pod", b.name},
          {"app", b.workload.app},
          {"slo_qps", b.workload.slo_qps},
          {"arrival_s", b.workload.arrival_s},
          {"sim",
           {{"node", s.node},
            {"partition", s.partition},
            {"profile", s.profile},
            {"milli", s.milli},
            {"start_s", Optional(s.start_s)},
            {"end_s", Optional(s.end_s)},
            {"achieved_qps", s.achieved_qps},
            {"moves", s.moves}}},
          {"box",
           {{"node", b.node},
            {"partition", b.partition},
            {"profile", b.profile},
            {"milli", b.milli},
            {"start_s", Optional(b.start_s)},
            {"end_s", Optional(b.end_s)},
            {"achieved_qps", b.achieved_qps()},
            {"failure", b.failure},
            {"bindings", bindings},
            {"moves", b.moves},
            {"pod", b.api_name}}},
          {"same_slice", match},
          {"tie", tie}};
}

// What a run must show: every pod completed (but those neither side started: the simulator
// never did, the box waited for the others only), each bound once, and — without faults — the
// same slices but for ties (a deterministic policy) or the same attainment and QPS deviation
// within 10 and 0.05 points (a random one). A killed leader or a delayed API moves binds in
// time, so with faults only completion and single binding are checked.
json Checks(const RunSpec& spec, bool timed_out, const Figures& fs, const Figures& fb, int waited,
            bool bound_once, bool same_but_ties) {
  json checks = {{"every_pod_completed", fb.completed + waited == fb.pods && !timed_out},
                 {"bound_once", bound_once}};
  if (spec.faults.empty() && Deterministic(spec.policy)) {
    checks["same_slices_but_ties"] = same_but_ties;
  } else if (spec.faults.empty()) {
    const json sj = fs.Json(), bj = fb.Json();
    checks["attainment_within_10_points"] =
        std::abs(bj["slo_attainment"].get<double>() - sj["slo_attainment"].get<double>()) <= 0.10;
    checks["abs_diff_within_0.05"] = std::abs(bj["qps_slo_abs_diff_mean"].get<double>() -
                                              sj["qps_slo_abs_diff_mean"].get<double>()) <= 0.05;
  }
  return checks;
}

}  // namespace

json Compare(const RunSpec& spec, const RunResult& box, const std::vector<SimPod>& sim) {
  std::map<int64_t, const SimPod*> by_id;
  for (const SimPod& s : sim) by_id[s.id] = &s;
  Figures fs, fb;
  int same = 0, different = 0, ties = 0, after_tie = 0, unbound = 0, sim_moves = 0, box_moves = 0;
  int waited = 0;  // pods neither side ever started
  // After the first tie the two histories have diverged within the resolution: later pods on
  // other slices follow from it, counted apart from unexplained differences.
  std::optional<double> first_tie_s;
  int double_bound = 0;  // pods (first or replacement) bound more than once
  for (const auto& [pod, n] : box.bindings) double_bound += n > 1;
  json pods = json::array();
  std::vector<const BoxPod*> order;  // by start in the simulator (never started: last)
  for (const BoxPod& b : box.pods) order.push_back(&b);
  auto sim_start = [&](const BoxPod* b) {
    const auto it = by_id.find(b->workload.id);
    return it != by_id.end() && it->second->start_s ? *it->second->start_s : 1e18;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const BoxPod* a, const BoxPod* b) { return sim_start(a) < sim_start(b); });
  for (const BoxPod* bp : order) {
    const BoxPod& b = *bp;
    const SimPod* s = by_id.count(b.workload.id) ? by_id[b.workload.id] : nullptr;
    if (!s) throw std::runtime_error(fmt::format("the simulator has no pod {}", b.workload.id));
    const bool b_ran = b.end_s && !b.failed;
    fb.Add(b.workload.slo_qps, b.achieved_qps(), b_ran, b.workload.arrival_s, b.end_s);
    fs.Add(s->slo_qps, s->achieved_qps, s->end_s && !s->failed, s->arrival_s, s->end_s);
    const auto bound = box.bindings.find("thesis/" + b.api_name);
    const int bindings = bound == box.bindings.end() ? 0 : bound->second;
    // A pod neither side started (admission control kept it waiting) has no binding to check.
    const bool waited_both = !s->start_s && !b.start_s;
    waited += waited_both;
    unbound += bindings == 0 && !waited_both;
    sim_moves += s->moves;
    box_moves += b.moves;
    const bool match = s->node == b.node && s->partition == b.partition && s->milli == b.milli;
    const bool tie = !match && (IsTie(*s, sim) || EndsSwapped(*s, b, sim, box.pods));
    const bool after = !match && !tie && first_tie_s && s->start_s && *s->start_s >= *first_tie_s;
    if (tie && !first_tie_s) first_tie_s = s->start_s;
    same += match;
    different += !match;
    ties += tie;
    after_tie += after;
    json pj = PodJson(b, *s, bindings, match, tie);
    pj["after_tie"] = after;
    pods.push_back(std::move(pj));
  }
  const json sj = fs.Json(), bj = fb.Json();
  const json checks = Checks(spec, box.timed_out, fs, fb, waited, double_bound == 0 && unbound == 0,
                             different == ties + after_tie);
  bool ok = true;
  for (const auto& [k, v] : checks.items()) ok = ok && v.get<bool>();
  return {{"policy", spec.policy},
          {"seed", spec.seed},
          {"scenario", spec.scenario.name()},
          {"reading", box.reading},
          {"faults", spec.faults},
          {"sim", sj},
          {"box", bj},
          {"placements",
           {{"same", same},
            {"different", different},
            {"ties", ties},
            {"after_tie", after_tie},
            {"first_tie_s", first_tie_s ? json(*first_tie_s) : json()}}},
          {"moves", {{"sim", sim_moves}, {"box", box_moves}}},
          {"never_started", waited},
          {"bind_attempts", box.bind_attempts},
          {"log", box.log},
          {"leader_counters", box.counters},
          {"checks", checks},
          {"ok", ok},
          {"pods", pods}};
}

namespace {

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string Slice(const json& side) {
  if (side["node"].get<std::string>().empty()) return "—";
  std::string p = side["partition"].get<std::string>();
  if (p.size() > 13) p = p.substr(0, 13) + "…";
  return fmt::format("{} {} {} {}‰", side["node"].get<std::string>(), p,
                     side["profile"].get<std::string>(), side["milli"].get<int>());
}

std::string Time(const json& v) {
  return v.is_null() ? "—" : fmt::format("{:.1f}", v.get<double>());
}

}  // namespace

RunRow RowOf(const json& r) {
  RunRow row{.policy = r["policy"].get<std::string>(),
             .seed = r["seed"].get<uint64_t>(),
             .attainment_sim = 100 * r["sim"]["slo_attainment"].get<double>(),
             .attainment_box = 100 * r["box"]["slo_attainment"].get<double>(),
             .diff_sim = r["sim"]["qps_slo_abs_diff_mean"].get<double>(),
             .diff_box = r["box"]["qps_slo_abs_diff_mean"].get<double>(),
             .makespan_sim = r["sim"]["makespan_s"].get<double>(),
             .makespan_box = r["box"]["makespan_s"].get<double>(),
             .same = r["placements"]["same"].get<int>(),
             .different = r["placements"]["different"].get<int>(),
             .ties = r["placements"]["ties"].get<int>(),
             .after_tie = r["placements"].value("after_tie", 0),
             .moves_sim = r.contains("moves") ? r["moves"]["sim"].get<int>() : 0,
             .moves_box = r.contains("moves") ? r["moves"]["box"].get<int>() : 0};
  for (const auto& [k, v] : r["checks"].items()) {
    if (!v.get<bool>()) row.failed += (row.failed.empty() ? "" : ",") + k;
  }
  return row;
}

std::string ComparisonPage(const json& report) {
  std::string h =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>Tessera: the emulated cluster "
      "against the simulator</title><style>body{font:14px sans-serif;margin:2em;max-width:1200px}"
      "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px "
      "6px;text-align:right}th{background:#eee}td.l{text-align:left}.ok{color:#070}.bad{color:#b00;"
      "font-weight:bold}.tie{color:#a60}</style></head><body>";
  h += "<h1>The emulated cluster against the simulator</h1>";
  h += fmt::format(
      "<p>The thesis's scenarios run by the production daemons (two <code>tessera schedule</code> "
      "replicas, <code>tessera agent --fake</code> per GPU node, redis-server, prometheus, the "
      "fake API server and the emulated kubelet) and by <code>tessera simulate</code>, on the same "
      "pods, SLOs, seeds and time scale (reading <code>{}</code>). Written {}.</p>",
      Escape(report.value("reading", "")), Escape(report.value("date", "")));
  h += "<table><tr><th>policy</th><th>seed</th><th>faults</th><th>attainment sim</th><th>box</th>"
       "<th>|ach−SLO|/SLO sim</th><th>box</th><th>makespan sim s</th><th>box</th><th>same slice"
       "</th><th>different</th><th>ties</th><th>after a tie</th><th>checks</th></tr>";
  for (const json& r : report["runs"]) {
    std::string checks;
    for (const auto& [k, v] : r["checks"].items()) {
      checks += fmt::format("<span class=\"{}\">{}</span> ", v.get<bool>() ? "ok" : "bad", k);
    }
    std::string faults;
    for (const json& f : r["faults"]) faults += f.get<std::string>() + " ";
    const RunRow row = RowOf(r);
    h += fmt::format(
        "<tr><td class=l>{}</td><td>{}</td><td class=l>{}</td><td>{:.0f} %</td><td>{:.0f} %</td>"
        "<td>{:.3f}</td><td>{:.3f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td class=l>{}</td></tr>",
        Escape(row.policy), row.seed, Escape(faults), row.attainment_sim, row.attainment_box,
        row.diff_sim, row.diff_box, row.makespan_sim, row.makespan_box, row.same, row.different,
        row.ties, row.after_tie, checks);
  }
  h += "</table>";
  for (const json& r : report["runs"]) {
    h += fmt::format(
        "<h2>{} seed {} <small>({})</small></h2><table><tr><th>pod</th><th>SLO</th>"
        "<th>arrival s</th><th>sim slice</th><th>start</th><th>end</th><th>QPS</th>"
        "<th>box slice</th><th>start</th><th>end</th><th>QPS</th></tr>",
        Escape(r["policy"].get<std::string>()), r["seed"].get<uint64_t>(),
        Escape(r.value("scenario", "")));
    for (const json& p : r["pods"]) {
      const char* cls = p["same_slice"].get<bool>()                           ? ""
                        : p["tie"].get<bool>() || p.value("after_tie", false) ? "tie"
                                                                              : "bad";
      h += fmt::format(
          "<tr class=\"{}\"><td class=l>{}</td><td>{:.1f}</td><td>{:.1f}</td><td class=l>{}</td>"
          "<td>{}</td><td>{}</td><td>{:.1f}</td><td class=l>{}</td><td>{}</td><td>{}</td>"
          "<td>{:.1f}</td></tr>",
          cls, Escape(p["pod"].get<std::string>()), p["slo_qps"].get<double>(),
          p["arrival_s"].get<double>(), Escape(Slice(p["sim"])), Time(p["sim"]["start_s"]),
          Time(p["sim"]["end_s"]), p["sim"]["achieved_qps"].get<double>(), Escape(Slice(p["box"])),
          Time(p["box"]["start_s"]), Time(p["box"]["end_s"]),
          p["box"]["achieved_qps"].get<double>());
    }
    h += "</table>";
    if (!r["log"].empty() || !r.value("leader_counters", json::array()).empty()) {
      h += "<pre>";
      for (const json& l : r["log"]) h += Escape(l.get<std::string>()) + "\n";
      for (const json& l : r.value("leader_counters", json::array())) {
        h += Escape(l.get<std::string>()) + "\n";
      }
      h += "</pre>";
    }
  }
  return h + "</body></html>\n";
}

}  // namespace tessera::e2e
