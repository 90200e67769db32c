#pragma once
// A result type's metrics, declared once: the JSON an experiment prints, its CSV, the CLI table,
// the HTML table and the charts are all generated from one MetricTable<Run>. A Run is a plain
// struct (one run, or the mean of runs over seeds); each row of a table is one Run.
//
//   report::MetricTable<KnotsRun> t{
//       .labels = {{"policy", "policy", 14, [](const KnotsRun& r) { return r.policy; }}},
//       .metrics = {{"gpu_util_mean", &KnotsRun::gpu_util_mean, "SM %", 100, 1, 8, "",
//                    "GPU utilisation (SM activity)", "%"}}};
//   t.Json(means)   → [{"policy": ..., "gpu_util_mean": ...}, ...]
//   t.Text(means)   → the CLI table;  t.Html(means) → <table>;  t.Bars(means) → one chart each
//   t.Mean(runs)    → the runs' mean: every metric field averaged (Σ xᵢ / n, in run order)
//
// A metric is shown (CLI, HTML, charts) as raw × scale ÷ divide with `decimals`; its JSON and
// CSV carry the raw value under `key`.
//
// Stateless; safe from any thread.

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "report/html.h"

namespace tessera::report {

// What a row is (its policy, mix, scenario): a string or an integer in JSON.
using LabelValue = std::variant<std::string, int64_t>;
std::string LabelText(const LabelValue& v);
nlohmann::json LabelJson(const LabelValue& v);

template <typename Run>
struct Label {
  std::string_view key;     // JSON and CSV key
  std::string_view header;  // CLI and HTML header
  int width = 0;            // CLI column width, at the least (grows to the longest value)
  std::function<LabelValue(const Run&)> value;
};

template <typename Run>
struct Metric {
  std::string_view key;  // JSON and CSV key: the raw value
  double Run::*field = nullptr;
  std::string_view header;  // CLI and HTML header; "" = in JSON and CSV only
  double scale = 1;         // shown = raw × scale (a share 0..1 shown in %: 100)
  int decimals = 1;
  int width = 0;              // CLI column width with the suffix (0: the header's)
  std::string_view suffix{};  // after the CLI cell ("s")
  std::string_view chart{};   // a chart's title; "" = no chart
  std::string_view unit{};    // the chart's y axis
  double divide = 1;          // shown = raw × scale ÷ divide (kJ from J: 1000)
  // Set for a metric derived from others (a ratio): shown from it, never averaged by Mean;
  // `field` is then null, and an empty key keeps it out of the JSON and the CSV.
  double (*derived)(const Run&) = nullptr;

  double Raw(const Run& r) const { return derived ? derived(r) : r.*field; }
  double Shown(const Run& r) const { return Raw(r) * scale / divide; }
};

template <typename Run>
struct MetricTable {
  std::vector<Label<Run>> labels;
  std::vector<Metric<Run>> metrics;

  // The mean of `runs`: the first run with every metric field replaced by Σ field / n, summed
  // in run order (so a mean over one seed is that run, bit for bit).
  Run Mean(std::span<const Run> runs) const {
    Run m = runs.empty() ? Run{} : runs.front();
    const double n = static_cast<double>(runs.size());
    for (const Metric<Run>& c : metrics) {
      if (c.field == nullptr) continue;
      m.*c.field = 0;
      for (const Run& r : runs) m.*c.field += r.*c.field / n;
    }
    return m;
  }

  nlohmann::json Row(const Run& r) const {
    nlohmann::json j = nlohmann::json::object();
    for (const Label<Run>& l : labels) j[std::string(l.key)] = LabelJson(l.value(r));
    for (const Metric<Run>& c : metrics) {
      if (!c.key.empty()) j[std::string(c.key)] = c.Raw(r);
    }
    return j;
  }
  nlohmann::json Json(std::span<const Run> rows) const {
    nlohmann::json out = nlohmann::json::array();
    for (const Run& r : rows) out.push_back(Row(r));
    return out;
  }

  // A header line and a line per row: labels left-aligned, metrics right-aligned.
  std::string Text(std::span<const Run> rows) const {
    std::vector<size_t> widths;
    for (const Label<Run>& l : labels) {
      size_t w = std::max<size_t>(l.width, l.header.size());
      for (const Run& r : rows) w = std::max(w, LabelText(l.value(r)).size());
      widths.push_back(w);
    }
    std::string out;
    auto line = [&](auto&& label_cell, auto&& metric_cell) {
      std::string s;
      for (size_t i = 0; i < labels.size(); ++i) {
        s += fmt::format("{}{:<{}}", s.empty() ? "" : " ", label_cell(i), widths[i]);
      }
      for (const Metric<Run>& c : metrics) {
        if (!c.header.empty()) s += " " + metric_cell(c);
      }
      out += s + "\n";
    };
    line([&](size_t i) { return std::string(labels[i].header); },
         [](const Metric<Run>& c) { return fmt::format("{:>{}}", c.header, Width(c)); });
    for (const Run& r : rows) {
      line([&](size_t i) { return LabelText(labels[i].value(r)); },
           [&](const Metric<Run>& c) {
             return fmt::format("{:>{}.{}f}{}", c.Shown(r), Width(c) - c.suffix.size(), c.decimals,
                                c.suffix);
           });
    }
    return out;
  }

  // A CSV with every label and metric (raw values), a header line first.
  std::string Csv(std::span<const Run> rows) const {
    std::string out;
    for (const Label<Run>& l : labels) out += std::string(out.empty() ? "" : ",") += l.key;
    for (const Metric<Run>& c : metrics) {
      if (!c.key.empty()) out += std::string(out.empty() ? "" : ",") += c.key;
    }
    out += "\n";
    for (const Run& r : rows) {
      std::string s;
      for (const Label<Run>& l : labels) {
        s += (s.empty() ? "" : ",") + CsvField(LabelText(l.value(r)));
      }
      for (const Metric<Run>& c : metrics) {
        if (!c.key.empty()) s += (s.empty() ? "" : ",") + Num(c.Raw(r));
      }
      out += s + "\n";
    }
    return out;
  }

  // An HTML table of the labels and the shown metrics.
  std::string Html(std::span<const Run> rows) const {
    std::string out = "<table><tr>";
    for (const Label<Run>& l : labels) out += fmt::format("<th>{}</th>", Escape(l.header));
    for (const Metric<Run>& c : metrics) {
      if (!c.header.empty()) out += fmt::format("<th>{}</th>", Escape(c.header));
    }
    out += "</tr>\n";
    for (const Run& r : rows) {
      out += "<tr>";
      for (const Label<Run>& l : labels) {
        out += fmt::format("<td>{}</td>", Escape(LabelText(l.value(r))));
      }
      for (const Metric<Run>& c : metrics) {
        if (!c.header.empty()) {
          out += fmt::format("<td>{:.{}f}</td>", c.Shown(r), c.decimals);
        }
      }
      out += "</tr>\n";
    }
    return out + "</table>\n";
  }

  // One bar chart per metric with a chart title: a bar per row, named by `name`.
  std::string Bars(std::span<const Run> rows,
                   const std::function<std::string(const Run&)>& name) const {
    std::string out;
    for (const Metric<Run>& c : metrics) {
      if (c.chart.empty()) continue;
      std::vector<Bar> bars;
      for (const Run& r : rows) bars.push_back({name(r), c.Shown(r)});
      out += BarsSvg(c.chart, c.unit, bars);
    }
    return out;
  }

  // One line chart per metric with a chart title: a line per `series` value, through the rows
  // of that series at x = `x(row)`, in row order.
  std::string Lines(std::span<const Run> rows, std::string_view x_label,
                    const std::function<double(const Run&)>& x,
                    const std::function<std::string(const Run&)>& series,
                    const LinesOptions& options = {}) const {
    std::string out;
    for (const Metric<Run>& c : metrics) {
      if (c.chart.empty()) continue;
      std::vector<Series> lines;
      for (const Run& r : rows) {
        const std::string s = series(r);
        auto it =
            std::find_if(lines.begin(), lines.end(), [&](const Series& l) { return l.name == s; });
        if (it == lines.end()) it = lines.insert(lines.end(), Series{.name = s});
        it->points.push_back({x(r), c.Shown(r)});
      }
      out += LinesSvg(c.chart, x_label, c.unit, lines, options);
    }
    return out;
  }

 private:
  static size_t Width(const Metric<Run>& c) { return std::max<size_t>(c.width, c.header.size()); }
};

}  // namespace tessera::report
