#pragma once
// What every report page shares (DESIGN §1 report::): HTML escaping, CSV quoting, a colour per
// series, tick placement, an SVG plot frame with ticks and labels, and writing a report's files
// all-or-nothing. Pages are self-contained: no scripts, no external assets, they open offline.
// Stateless; safe from any thread.

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace tessera::report {

// Text safe inside HTML elements and double- or single-quoted attributes.
std::string Escape(std::string_view s);

// One CSV field: quoted (with doubled quotes) when it holds a comma, quote or line break.
std::string CsvField(std::string_view s);

// A number for a CSV cell: 4 decimals; NaN is an empty cell.
std::string Num(double x);

// The i-th colour of a categorical palette (cycles after ten); give each series the same index
// on every plot of a page.
const char* SeriesColor(size_t i);
// The i-th line dash pattern (SVG stroke-dasharray; "" = solid), cycling after four, so lines
// that coincide still show each other through the gaps.
const char* SeriesDash(size_t i);

// Round tick values covering [lo, hi] with about `target` steps of 1, 2 or 5 × 10^k.
std::vector<double> NiceTicks(double lo, double hi, int target = 6);

// A plot area inside an SVG: data ranges mapped onto a pixel rectangle.
struct PlotFrame {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double left = 60, top = 30, width = 400, height = 240;  // pixels
  double X(double x) const;
  double Y(double y) const;
};

// Opens an <svg> of the given size, with a bold title at the top left.
std::string SvgOpen(int width, int height, std::string_view title);
// The frame's border, grid lines and labelled ticks on the y axis and (unless x_ticks is empty)
// on the x axis, and the axis labels. `x_ticks`/`y_ticks` are data values; labels print with
// printf-style precision `x_decimals`/`y_decimals`.
std::string SvgAxes(const PlotFrame& f, const std::vector<double>& x_ticks,
                    const std::vector<double>& y_ticks, std::string_view x_label,
                    std::string_view y_label, int x_decimals = 1, int y_decimals = 1);
// A legend: one line in the entry's colour and dash and its name per entry, from (x, y) down.
struct LegendEntry {
  std::string name;
  std::string color;
  std::string dash;  // "" = solid
};
std::string SvgLegend(double x, double y, const std::vector<LegendEntry>& entries);

// One bar per (label, value), in its series colour, from 0, with the value's axis in y_label.
struct Bar {
  std::string label;
  double value = 0;
};
std::string BarsSvg(std::string_view title, std::string_view y_label, const std::vector<Bar>& bars);

// Lines through (x, y) points, one per series in its colour and dash, from y = 0, with a legend
// to the right of the plot; x from `x_min` to the last tick past the largest x.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};
struct LinesOptions {
  int width = 520, height = 280;               // the SVG
  double plot_width = 300, plot_height = 200;  // the plot area inside it
  int x_ticks = 6;                             // about this many steps on x
  double x_min = 0;
  double x_max_at_least = 0;  // x runs to this at the least
  int x_decimals = 0;
  int y_ticks = 5;            // about this many steps on y
  double y_max_at_least = 0;  // y runs to this at the least
  double legend_gap = 16;     // between the plot and the legend
  bool markers = false;       // a dot on every point
};
std::string LinesSvg(std::string_view title, std::string_view x_label, std::string_view y_label,
                     const std::vector<Series>& series, const LinesOptions& options = {});

// A page's opening: doctype, <title>, the shared table style, an <h1>; the caller writes the
// body and closes it with PageClose().
std::string PageOpen(std::string_view title, std::string_view heading);
std::string PageClose();

// Writes every (file name, text) into `dir` (created if needed), all or nothing: it checks that
// no target is a directory or other non-file, writes each to a temporary file beside it, and
// renames them into place only once all were written; on failure it removes its temporary
// files and returns one Error naming the path. Returns the paths written.
[[nodiscard]] Expected<std::vector<std::string>> WriteFiles(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace tessera::report
