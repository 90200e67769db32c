#include "k8s/status_page.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <string_view>

#include "report/html.h"

namespace tessera::k8s {
namespace {

// Inline, so the page stands alone: served from a pod with no asset route, saved to a file,
// opened offline. Row colours carry the SLO state; the left border repeats it for print and
// for readers who do not tell green from red.
constexpr std::string_view kCss = R"css(
*{box-sizing:border-box}
body{margin:0;padding:18px 24px;background:#f4f6f8;color:#1f2933;
  font:13px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif}
header{margin-bottom:14px}
h1{font-size:20px;margin:0 0 2px;font-weight:600}
h1 .badge{margin-left:8px}
h2{font-size:15px;margin:0 0 8px;font-weight:600}
.meta{color:#52606d;margin:0}
.meta b{color:#1f2933;font-weight:600}
.meta .sep{margin:0 8px;color:#9aa5b1}
.badge{display:inline-block;padding:1px 8px;border-radius:9px;font-size:11px;font-weight:600;
  background:#e4e7eb;color:#3e4c59;vertical-align:2px}
.badge.leader,.badge.ready{background:#d5f0dc;color:#1e6b34}
.badge.off,.badge.not-ready{background:#fbdcdc;color:#9b1c1c}
.badge.taint{background:#fdf0d5;color:#8a5a00;font-weight:500}
.grid{display:grid;grid-template-columns:minmax(0,1fr) 430px;gap:16px;align-items:start}
@media (max-width:1100px){.grid{grid-template-columns:minmax(0,1fr)}}
section,.card{background:#fff;border:1px solid #dde2e7;border-radius:6px;padding:12px 14px;
  margin-bottom:14px}
.node{padding:0;overflow:hidden}
.node>h3{margin:0;padding:7px 14px;font-size:14px;background:#eef1f4;
  border-bottom:1px solid #dde2e7}
.gpu{padding:8px 14px 10px;border-top:1px solid #eef1f4}
.node>h3+.gpu{border-top:0}
.gpu h4{margin:0 0 4px;font-size:13px;font-weight:600}
.gpu.off{background:repeating-linear-gradient(-45deg,#fff,#fff 8px,#fbf1f1 8px,#fbf1f1 16px)}
.mig{font-weight:400;color:#3e4c59}
.uuid,.mono{font-family:"DejaVu Sans Mono",monospace;font-size:11px;font-weight:400;color:#616e7c}
table{border-collapse:collapse;width:100%}
.gpu table{table-layout:fixed}
.gpu th:nth-child(1){width:34%}
.gpu th:nth-child(2){width:20%}
th,td{padding:3px 8px;text-align:left;vertical-align:top}
th{font-size:11px;font-weight:600;color:#616e7c;border-bottom:1px solid #dde2e7}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.partition td{padding-top:6px;font-weight:600}
tr.partition svg{vertical-align:-1px;margin-right:6px}
.used{font-weight:400;color:#52606d;font-variant-numeric:tabular-nums}
tr.pod td{border-top:2px solid #fff}
tr.pod td:first-child{padding-left:18px;overflow-wrap:anywhere}
tr.pod.met{background:#e9f7ee}
tr.pod.met td:first-child{border-left:4px solid #2f9e57}
tr.pod.missed{background:#fdecec}
tr.pod.missed td:first-child{border-left:4px solid #d64545}
tr.pod.unknown{background:#f3f4f6}
tr.pod.unknown td:first-child{border-left:4px solid #a3acb6}
.note{color:#8a5a00;font-style:italic}
.empty{color:#7b8794;font-style:italic;margin:0}
.legend{float:right;font-size:11px;font-weight:400;color:#52606d}
.legend span{display:inline-block;margin-left:8px;padding:0 6px;border-radius:3px}
.legend .met{background:#e9f7ee;border-left:4px solid #2f9e57}
.legend .missed{background:#fdecec;border-left:4px solid #d64545}
.legend .unknown{background:#f3f4f6;border-left:4px solid #a3acb6}
#pending tr,#recent tr{display:grid;grid-template-columns:minmax(0,1fr) auto;
  column-gap:10px;padding:5px 0;border-bottom:1px solid #eef1f4}
#pending th,#pending td,#recent th,#recent td{padding:0}
#pending td:last-child,#recent td:last-child{grid-column:1/-1;color:#3e4c59}
#pending td:first-child,#recent td:nth-child(2){font-weight:600;overflow-wrap:anywhere}
#recent tr{grid-template-columns:auto minmax(0,1fr) auto}
#pending th,#recent th{border:0}
#pending th:last-child,#recent th:last-child{display:none}
.action b{font-weight:600;color:#1f2933}
#counters td{border-bottom:1px solid #eef1f4}
)css";

constexpr int kBarWidth = 140;

using report::Escape;  // every text a user or a pod gave goes through it

// An id a test or a link (#node-…) can name: the text with anything but [A-Za-z0-9_-] as '-'.
std::string IdPart(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  }
  return out;
}

std::string IsoUtc(double epoch_s) {
  if (!std::isfinite(epoch_s)) return "—";
  const std::time_t t = static_cast<std::time_t>(std::floor(epoch_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string Qps(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return "—";
  return fmt::format("{:.1f}", *v);
}

const char* SloClass(StatusPod::Slo slo) {
  switch (slo) {
    case StatusPod::Slo::kMet:
      return "met";
    case StatusPod::Slo::kMissed:
      return "missed";
    case StatusPod::Slo::kUnknown:
      break;
  }
  return "unknown";
}

// A bar of the partition's compute held by its pods; past 100 % (a bug upstream, or a reshape
// in flight) the bar stays full, turns red, and the number says by how much.
std::string UsageBar(int used_milli) {
  const double frac = std::clamp(used_milli / 1000.0, 0.0, 1.0);
  const char* fill = used_milli > 1000 ? "#d64545" : "#3b82c4";
  return fmt::format(
      "<svg class=\"bar\" width=\"{0}\" height=\"10\" viewBox=\"0 0 {0} 10\" role=\"img\">"
      "<title>{2:.1f} % used</title>"
      "<rect width=\"{0}\" height=\"10\" rx=\"2\" fill=\"#e4e7eb\"/>"
      "<rect width=\"{1:.1f}\" height=\"10\" rx=\"2\" fill=\"{3}\"/></svg>"
      "<span class=\"used\">{2:.1f} %</span>",
      kBarWidth, frac * kBarWidth, used_milli / 10.0, fill);
}

// `refresh_s` is the whole seconds of the page's reload, 0 for none.
std::string Header(const StatusView& v, long refresh_s) {
  const bool leader = v.role.starts_with("leader");
  const std::string refresh =
      refresh_s > 0 ? fmt::format("<span class=\"sep\">·</span>reloads every {} s", refresh_s) : "";
  return fmt::format(
      "<header><h1>Tessera scheduler <span class=\"mono\">{}</span>"
      "<span class=\"badge {}\" id=\"role\">{}</span></h1>\n"
      "<p class=\"meta\">replica <b id=\"identity\">{}</b><span class=\"sep\">·</span>"
      "policy <b id=\"policy\">{}</b><span class=\"sep\">·</span>"
      "generated <b><time id=\"generated\">{}</time></b>{}</p></header>\n",
      Escape(v.scheduler), leader ? "leader" : "standby", Escape(v.role), Escape(v.identity),
      Escape(v.policy), IsoUtc(v.generated_at), refresh);
}

std::string Counters(const StatusView& v) {
  std::string out = "<section id=\"counters\"><h2>Counters</h2>";
  if (v.counters.empty()) return out + "<p class=\"empty\">no counters yet</p></section>\n";
  out += "<table>";
  for (const auto& [name, value] : v.counters) {
    out += fmt::format("<tr id=\"counter-{}\"><td>{}</td><td class=\"num\">{}</td></tr>",
                       IdPart(name), Escape(name), value);
  }
  return out + "</table></section>\n";
}

std::string PodRow(const StatusPod& p) {
  const std::string slo = p.slo_qps ? "≥ " + Qps(p.slo_qps) : "best effort";
  std::string observed = Qps(p.observed_qps);
  if ((!p.observed_qps || !std::isfinite(*p.observed_qps)) && !p.observed_note.empty()) {
    observed = fmt::format("<span class=\"note\">{}</span>", Escape(p.observed_note));
  }
  return fmt::format(
      "<tr class=\"pod {}\" id=\"pod-{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
      "<td class=\"num\">{}</td><td class=\"num observed\">{}</td></tr>\n",
      SloClass(p.slo), IdPart(p.name), Escape(p.name), Escape(p.slice), slo, Qps(p.predicted_qps),
      observed);
}

std::string Partition(const StatusPartition& part) {
  std::string out = fmt::format(
      "<tr class=\"partition\"><td colspan=\"2\">{}</td><td colspan=\"3\">{}</td></tr>\n",
      Escape(part.label), UsageBar(part.used_milli));
  if (part.pods.empty()) return out + "<tr><td colspan=\"5\" class=\"empty\">no pods</td></tr>\n";
  for (const StatusPod& p : part.pods) out += PodRow(p);
  return out;
}

std::string Gpu(const std::string& node_id, const StatusGpu& g) {
  const std::string mig = g.mig.empty() ? "MIG off" : "MIG " + Escape(g.mig);
  std::string out = fmt::format(
      "<div class=\"gpu{}\" id=\"{}-gpu-{}\"><h4>GPU {} · {} <span class=\"uuid\">{}</span> · "
      "<span class=\"mig\">{}</span>{}</h4>\n",
      g.available ? "" : " off", node_id, g.index, g.index, Escape(g.model), Escape(g.uuid), mig,
      g.available ? ""
                  : fmt::format(" <span class=\"badge off\">held out / unavailable{}</span>",
                                g.held_out.empty() ? "" : ": " + Escape(g.held_out)));
  if (g.partitions.empty()) return out + "<p class=\"empty\">no partitions</p></div>\n";
  out +=
      "<table><tr><th>partition · pod</th><th>slice</th><th class=\"num\">SLO (QPS)</th>"
      "<th class=\"num\">predicted</th><th class=\"num\">observed</th></tr>\n";
  for (const StatusPartition& part : g.partitions) out += Partition(part);
  return out + "</table></div>\n";
}

std::string NodeSection(const StatusNode& n) {
  const std::string id = "node-" + IdPart(n.name);
  std::string taints;
  for (const std::string& t : n.taints) {
    taints += fmt::format(" <span class=\"badge taint\" title=\"taint\">{}</span>", Escape(t));
  }
  std::string out = fmt::format(
      "<div class=\"card node{}\" id=\"{}\"><h3>{} <span class=\"badge {}\">{}</span>{}</h3>\n",
      n.ready ? "" : " not-ready", id, Escape(n.name), n.ready ? "ready" : "not-ready",
      n.ready ? "ready" : "not ready", taints);
  if (n.gpus.empty()) out += "<div class=\"gpu\"><p class=\"empty\">no GPUs</p></div>\n";
  for (const StatusGpu& g : n.gpus) out += Gpu(id, g);
  return out + "</div>\n";
}

std::string Nodes(const StatusView& v) {
  size_t gpus = 0, pods = 0;
  for (const StatusNode& n : v.nodes) {
    gpus += n.gpus.size();
    for (const StatusGpu& g : n.gpus) {
      for (const StatusPartition& p : g.partitions) pods += p.pods.size();
    }
  }
  std::string out = fmt::format(
      "<div id=\"nodes\"><h2>Nodes <span class=\"meta\">{} nodes · {} GPUs · {} pods</span>"
      "<span class=\"legend\"><span class=\"met\">SLO met</span><span class=\"missed\">SLO "
      "missed</span><span class=\"unknown\">unknown</span></span></h2>\n",
      v.nodes.size(), gpus, pods);
  if (v.nodes.empty()) out += "<section><p class=\"empty\">no nodes</p></section>\n";
  for (const StatusNode& n : v.nodes) out += NodeSection(n);
  return out + "</div>\n";
}

std::string Pending(const StatusView& v) {
  std::string out = fmt::format("<section id=\"pending\"><h2>Pending ({})</h2>", v.pending.size());
  if (v.pending.empty()) return out + "<p class=\"empty\">no pending pods</p></section>\n";
  out += "<table><tr><th>pod</th><th class=\"num\">waiting</th><th>reason</th></tr>\n";
  for (const StatusPending& p : v.pending) {
    const std::string reason =
        p.reason.empty() ? "<span class=\"empty\">not tried yet</span>" : Escape(p.reason);
    out += fmt::format(
        "<tr class=\"pending\" id=\"pending-{}\"><td>{}</td><td class=\"num\">{:.0f} s</td>"
        "<td>{}</td></tr>\n",
        IdPart(p.pod), Escape(p.pod), p.waiting_s, reason);
  }
  return out + "</table></section>\n";
}

std::string Recent(const StatusView& v) {
  std::string out = "<section id=\"recent\"><h2>Recent moves and evictions</h2>";
  if (v.recent.empty()) return out + "<p class=\"empty\">no moves or evictions yet</p></section>\n";
  out += "<table><tr><th>time (UTC)</th><th>pod</th><th>action</th><th>reason</th></tr>\n";
  for (const StatusAction& a : v.recent) {
    out += fmt::format(
        "<tr class=\"action\"><td class=\"mono\"><time>{}</time></td><td>{}</td>"
        "<td><b>{}</b></td><td>{}</td></tr>\n",
        IsoUtc(a.at), Escape(a.pod), Escape(a.action), Escape(a.reason));
  }
  return out + "</table></section>\n";
}

}  // namespace

std::string StatusHtml(const StatusView& view, double refresh_s) {
  // The refresh content is whole seconds (browsers drop a fraction), at least 1: 0 would be a
  // reload loop.
  const long refresh = refresh_s > 0 ? std::max(1L, std::lround(std::min(refresh_s, 86400.0))) : 0;
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n{}"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
      "<title>Tessera · {} · status</title>\n<style>",
      refresh > 0 ? fmt::format("<meta http-equiv=\"refresh\" content=\"{}\">\n", refresh) : "",
      Escape(view.scheduler));
  out += kCss;
  out += "</style>\n</head><body>\n";
  out += Header(view, refresh);
  // Left the cluster tree; right what needs attention: the queue, the recent actions, counters.
  out += "<div class=\"grid\"><main>\n" + Nodes(view) + "</main><aside>\n";
  out += Pending(view) + Recent(view) + Counters(view) + "</aside></div>\n</body></html>\n";
  return out;
}

}  // namespace tessera::k8s
