#include "e2e/box_burst.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <stdexcept>

#include "report/html.h"
#include "sim/embedded_apps.h"
#include "sim/engine.h"
#include "sim/online_offline.h"

namespace tessera::e2e {

using nlohmann::json;

namespace {

// One side's figures: evictions, services that ran out of memory, jobs done, and each job's
// last GPU, moves and end by workload id.
struct Side {
  int evictions = 0, service_oom = 0, jobs_done = 0, jobs = 0;
  std::map<int64_t, json> job;
  json Summary() const {
    return {{"evictions", evictions},
            {"service_oom", service_oom},
            {"jobs_done", jobs_done},
            {"jobs", jobs}};
  }
};

Side SimulatorSide(const RunSpec& spec) {
  const sim::AppCatalog full = [] {
    auto c = sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
    if (!c) throw std::runtime_error(c.error().message);
    return std::move(*c);
  }();
  auto built = sim::BuildOnlineOfflineWorld(spec.policy, *spec.online_offline, spec.seed, full);
  if (!built) throw std::runtime_error(built.error().message);
  for (const model::Workload& w : built->workloads) {
    if (auto ok = built->world->engine->Add(w); !ok) throw std::runtime_error(ok.error().message);
  }
  const sim::EngineResult r = built->world->engine->Run();
  Side s;
  for (const sim::WorkloadOutcome& o : r.workloads) {
    if (o.workload.klass != model::WorkloadClass::kOffline) {
      s.service_oom += o.oom_kills;
      continue;
    }
    ++s.jobs;
    s.evictions += o.moves;
    const bool done = o.end_s && !o.failed;
    s.jobs_done += done;
    s.job[o.workload.id] = {
        {"gpu", o.partition}, {"moves", o.moves}, {"end_s", done ? json(*o.end_s) : json(nullptr)}};
  }
  return s;
}

Side BoxSide(const RunResult& box) {
  Side s;
  for (const BoxPod& p : box.pods) {
    if (p.workload.klass != model::WorkloadClass::kOffline) {
      s.service_oom += p.oom;
      continue;
    }
    ++s.jobs;
    s.evictions += p.moves;
    const bool done = p.end_s && !p.failed;
    s.jobs_done += done;
    s.job[p.workload.id] = {{"pod", p.name},
                            {"gpu", p.partition},
                            {"failure", p.failure},
                            {"moves", p.moves},
                            {"end_s", done ? json(*p.end_s) : json(nullptr)}};
  }
  return s;
}

// The schedulers' log lines of the pods they evicted (k8s/evictor.cc: "…: evicted: <reason>").
std::vector<std::string> EvictionLines(const RunSpec& spec) {
  std::vector<std::string> out;
  for (const char* who : {"box-a", "box-b"}) {
    std::ifstream in(spec.dir + "/logs/" + who + ".log");
    for (std::string line; std::getline(in, line);) {
      if (line.find(": evicted: ") != std::string::npos) out.push_back(line);
    }
  }
  return out;
}

}  // namespace

RunSpec BurstSpec(uint64_t seed, const std::string& out, const std::string& tessera,
                  const std::string& exporter) {
  return RunSpec{.policy = kBurstPolicy,
                 .seed = seed,
                 .online_offline = sim::ShortBurstScenario(),
                 .tessera = tessera,
                 .exporter = exporter,
                 .dir = fmt::format("{}/burst-{}", out, seed),
                 .timeout_s = 600};
}

json CompareBurst(const RunSpec& spec, const RunResult& box) {
  const Side sim = SimulatorSide(spec);
  const Side onbox = BoxSide(box);
  const std::vector<std::string> reasons = EvictionLines(spec);
  // Each job's last GPU on both sides. Two jobs of one application with the same work left
  // weigh the same on every GPU, so the matching may hand them the GPUs either way round: the
  // sides agree when they put each application's jobs on the same GPUs; a job on another GPU
  // than the simulator's is then a swap (a tie), counted.
  json jobs = json::array();
  std::multiset<std::pair<std::string, std::string>> sim_gpus, box_gpus;
  int swapped = 0;
  for (const auto& [id, s] : sim.job) {
    const auto b = onbox.job.find(id);
    const json bj = b == onbox.job.end() ? json(nullptr) : b->second;
    std::string job_app;
    for (const BoxPod& p : box.pods) {
      if (p.workload.id == id) job_app = p.workload.app;
    }
    sim_gpus.insert({job_app, s["gpu"].get<std::string>()});
    if (!bj.is_null()) {
      box_gpus.insert({job_app, bj["gpu"].get<std::string>()});
      swapped += bj["gpu"] != s["gpu"];
    }
    jobs.push_back({{"id", id}, {"app", job_app}, {"sim", s}, {"box", bj}});
  }
  bool bound_once = true;
  for (const auto& [pod, n] : box.bindings) bound_once = bound_once && n == 1;
  bool sysmonitor = !reasons.empty();
  for (const std::string& r : reasons) {
    sysmonitor = sysmonitor && r.find("SysMonitor Overlimit") != std::string::npos;
  }
  json box_summary = onbox.Summary();
  box_summary["eviction_api"] = box.evictions;
  box_summary["reasons"] = reasons;
  const json checks = {
      {"jobs_done", sim.jobs_done == sim.jobs && onbox.jobs_done == onbox.jobs && sim.jobs > 0},
      {"evicted_through_the_api",
       onbox.evictions > 0 && static_cast<int>(box.evictions.size()) == onbox.evictions},
      {"for_sysmonitor", sysmonitor && static_cast<int>(reasons.size()) == onbox.evictions},
      {"evictions_as_simulated", sim.evictions == onbox.evictions},
      {"same_gpus", sim_gpus == box_gpus},
      {"no_service_oom", sim.service_oom == 0 && onbox.service_oom == 0},
      {"bound_once", bound_once},
      {"finished", !box.timed_out}};
  bool ok = true;
  for (const auto& [name, held] : checks.items()) ok = ok && held.get<bool>();
  return {{"scenario", "burst"},  {"policy", spec.policy}, {"seed", spec.seed},
          {"sim", sim.Summary()}, {"box", box_summary},    {"jobs", jobs},
          {"swapped", swapped},   {"checks", checks},      {"ok", ok},
          {"log", box.log}};
}

std::string BurstPage(const json& report) {
  auto end_of = [](const json& side) {
    return side.is_null() || side["end_s"].is_null()
               ? std::string("—")
               : fmt::format("{:.1f}", side["end_s"].get<double>());
  };
  std::string h =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>Tessera: muxflow's evictions "
      "on the emulated cluster</title><style>body{font:14px sans-serif;margin:2em;max-width:1200px}"
      "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px "
      "6px;text-align:right}th{background:#eee}td.l{text-align:left}.ok{color:#070}.bad{color:#b00;"
      "font-weight:bold}pre{font-size:12px;white-space:pre-wrap}</style></head><body>";
  h += "<h1>muxflow's evictions: the emulated cluster against the simulator</h1>";
  h += fmt::format(
      "<p>Seed 001's short burst scenario (two T4s, a service on each whose memory bursts once, "
      "two offline jobs) run by the production daemons and by the simulator, policy "
      "<code>{}</code>. Written {}.</p>",
      report::Escape(kBurstPolicy), report::Escape(report.value("date", "")));
  for (const json& r : report["runs"]) {
    std::string checks;
    for (const auto& [k, v] : r["checks"].items()) {
      checks += fmt::format("<span class=\"{}\">{}</span> ", v.get<bool>() ? "ok" : "bad", k);
    }
    h += fmt::format("<h2>seed {}</h2><p>{}</p>", r["seed"].get<uint64_t>(), checks);
    h += "<table><tr><th></th><th>evictions</th><th>jobs done</th><th>services out of memory"
         "</th></tr>";
    for (const char* side : {"sim", "box"}) {
      h += fmt::format("<tr><td class=l>{}</td><td>{}</td><td>{} of {}</td><td>{}</td></tr>", side,
                       r[side]["evictions"].get<int>(), r[side]["jobs_done"].get<int>(),
                       r[side]["jobs"].get<int>(), r[side]["service_oom"].get<int>());
    }
    h += "</table><table><tr><th>job</th><th>sim GPU</th><th>moves</th><th>end s</th>"
         "<th>box GPU</th><th>moves</th><th>end s</th></tr>";
    for (const json& j : r["jobs"]) {
      const json& b = j["box"];
      h += fmt::format(
          "<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td class=l>{}</td>"
          "<td>{}</td><td>{}</td></tr>",
          report::Escape(b.is_null() ? std::to_string(j["id"].get<int64_t>())
                                     : b["pod"].get<std::string>()),
          report::Escape(j["sim"]["gpu"].get<std::string>()), j["sim"]["moves"].get<int>(),
          end_of(j["sim"]), report::Escape(b.is_null() ? "—" : b["gpu"].get<std::string>()),
          b.is_null() ? 0 : b["moves"].get<int>(), end_of(b));
    }
    h += "</table><p>The schedulers' evictions:</p><pre>";
    for (const json& line : r["box"]["reasons"])
      h += report::Escape(line.get<std::string>()) + "\n";
    h += "</pre>";
  }
  return h + "</body></html>\n";
}

}  // namespace tessera::e2e
