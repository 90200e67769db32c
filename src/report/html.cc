#include "report/html.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tessera::report {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Fixed(double v, int decimals) {
  if (std::abs(v) < 1e-12) v = 0;  // no "-0.0"
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Num(double x) { return std::isnan(x) ? "" : fmt::format("{:.4f}", x); }

const char* SeriesColor(size_t i) { return kColors[i % std::size(kColors)]; }

const char* SeriesDash(size_t i) {
  constexpr const char* kDashes[] = {"", "8 4", "3 3", "12 4 3 4"};
  return kDashes[i % std::size(kDashes)];
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw * (1 - 1e-9)) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  const long first = std::lround(std::floor(lo / step + 1e-9));
  const long last = std::lround(std::ceil(hi / step - 1e-9));
  for (long k = first; k <= last; ++k) ticks.push_back(k * step);
  return ticks;
}

double PlotFrame::X(double x) const { return left + width * (x - x_min) / (x_max - x_min); }
double PlotFrame::Y(double y) const { return top + height * (1 - (y - y_min) / (y_max - y_min)); }

std::string SvgOpen(int width, int height, std::string_view title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<text x=\"10\" y=\"18\" font-weight=\"bold\" font-size=\"14\">{}</text>\n",
      width, height, width, height, Escape(title));
}

std::string BarsSvg(std::string_view title, std::string_view y_label,
                    const std::vector<Bar>& bars) {
  double hi = 0;
  for (const Bar& b : bars) hi = std::max(hi, b.value);
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? hi : 1, 5);
  const double width = std::max(300.0, 60.0 * static_cast<double>(bars.size()));
  PlotFrame f{.x_min = 0,
              .x_max = static_cast<double>(std::max<size_t>(1, bars.size())),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = width,
              .height = 200};
  std::string svg = SvgOpen(static_cast<int>(width) + 100, 290, title);
  svg += SvgAxes(f, {}, y_ticks, "", y_label, 0, y_ticks.back() < 2 ? 2 : 0);
  for (size_t i = 0; i < bars.size(); ++i) {
    const double x0 = f.X(static_cast<double>(i) + 0.15), x1 = f.X(static_cast<double>(i) + 0.85);
    const double y = f.Y(bars[i].value);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x0, y,
        x1 - x0, f.Y(0) - y, SeriesColor(i));
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
        (x0 + x1) / 2, f.Y(0) + 14, Escape(bars[i].label));
  }
  return svg + "</svg>\n";
}

std::string LinesSvg(std::string_view title, std::string_view x_label, std::string_view y_label,
                     const std::vector<Series>& series, const LinesOptions& o) {
  double hi = o.y_max_at_least, x_hi = std::max(o.x_min + 1, o.x_max_at_least);
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      hi = std::max(hi, y);
      x_hi = std::max(x_hi, x);
    }
  }
  const std::vector<double> x_ticks = NiceTicks(o.x_min, x_hi, o.x_ticks);
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? hi : 1, o.y_ticks);
  PlotFrame f{.x_min = o.x_min,
              .x_max = x_ticks.back(),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = o.plot_width,
              .height = o.plot_height};
  std::string svg = SvgOpen(o.width, o.height, title);
  svg += SvgAxes(f, x_ticks, y_ticks, x_label, y_label, o.x_decimals, y_ticks.back() < 2 ? 2 : 0);
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < series.size(); ++i) {
    legend.push_back({series[i].name, SeriesColor(i), SeriesDash(i)});
    std::string points;
    for (const auto& [x, y] : series[i].points) {
      points += fmt::format("{:.1f},{:.1f} ", f.X(x), f.Y(y));
      if (o.markers) {
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", f.X(x),
                           f.Y(y), SeriesColor(i));
      }
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>\n",
        SeriesColor(i), SeriesDash(i), points);
  }
  svg += SvgLegend(f.left + f.width + o.legend_gap, f.top + 10, legend);
  return svg + "</svg>\n";
}

std::string PageOpen(std::string_view title, std::string_view heading) {
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n"
      "<style>body{{font-family:sans-serif;margin:12px;color:#222}} h1{{font-size:20px}} "
      "table{{border-collapse:collapse;font-size:12px}} "
      "td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} "
      "td:first-child,th:first-child{{text-align:left}}</style>\n</head><body>\n"
      "<h1>{}</h1>\n",
      Escape(title), Escape(heading));
}

std::string PageClose() { return "</body></html>\n"; }

std::string SvgAxes(const PlotFrame& f, const std::vector<double>& x_ticks,
                    const std::vector<double>& y_ticks, std::string_view x_label,
                    std::string_view y_label, int x_decimals, int y_decimals) {
  std::string svg;
  for (double v : y_ticks) {
    const double y = f.Y(v);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        f.left, f.left + f.width, y, y, f.left - 6, y + 4, Fixed(v, y_decimals));
  }
  for (double v : x_ticks) {
    const double x = f.X(v);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
        x, x, f.top, f.top + f.height, x, f.top + f.height + 16, Fixed(v, x_decimals));
  }
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#888\"/>\n",
      f.left, f.top, f.width, f.height);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     f.left + f.width / 2, f.top + f.height + 36, Escape(x_label));
  const double yl = f.left - 46, ym = f.top + f.height / 2;
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 {:.1f} {:.1f})\">{}</text>\n",
      yl, ym, yl, ym, Escape(y_label));
  return svg;
}

std::string SvgLegend(double x, double y, const std::vector<LegendEntry>& entries) {
  std::string svg;
  for (size_t i = 0; i < entries.size(); ++i) {
    const double yi = y + 18 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"3\" stroke-dasharray=\"{}\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        x, x + 24, yi, yi, Escape(entries[i].color), Escape(entries[i].dash), x + 30, yi + 4,
        Escape(entries[i].name));
  }
  return svg;
}

Expected<std::vector<std::string>> WriteFiles(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Fail("{}: cannot create the report directory: {}", dir, ec.message());
  if (!fs::is_directory(dir, ec)) return Fail("{}: not a directory", dir);
  std::vector<std::string> paths, temps;
  for (const auto& [name, text] : files) {
    paths.push_back((fs::path(dir) / name).string());
    const fs::file_status st = fs::symlink_status(paths.back(), ec);
    if (fs::exists(st) && !fs::is_regular_file(st)) {
      return Fail("{}: exists and is not a regular file; nothing written", paths.back());
    }
  }
  auto discard = [&] {
    for (const std::string& t : temps) fs::remove(t, ec);
  };
  for (size_t i = 0; i < files.size(); ++i) {
    temps.push_back(fmt::format("{}.tmp-{}", paths[i], ::getpid()));
    std::ofstream out(temps.back(), std::ios::binary | std::ios::trunc);
    if (out) out << files[i].second;
    if (out) out.close();
    if (!out) {
      const int err = errno;
      discard();
      return Fail("{}: cannot write: {}; nothing written", paths[i], std::strerror(err));
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    fs::rename(temps[i], paths[i], ec);
    if (ec) {
      discard();
      return Fail("{}: cannot rename into place: {}", paths[i], ec.message());
    }
  }
  return paths;
}

}  // namespace tessera::report
