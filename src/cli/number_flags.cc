#include "cli/number_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string_view>

namespace tessera::cli {
namespace {

// `unit` "" for a plain number, else the unit's symbol ("s").
CLI::Validator Bounded(double min, double max, std::string unit) {
  const std::string what = unit.empty() ? "a finite number" : "a number of seconds";
  const std::string sep = unit.empty() ? "" : " ";
  return CLI::Validator(
      [min, max, unit, what, sep](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        // from_chars takes no sign "+" and no white space, and reads "nan" and "inf": the
        // isfinite check refuses those.
        auto [at, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc{} || at != end || !std::isfinite(v)) {
          return fmt::format("'{}' is not {}", text, what);
        }
        if (v < min)
          return fmt::format("{}{}{} is below the {}{}{} minimum", text, sep, unit, min, sep, unit);
        if (v > max)
          return fmt::format("{}{}{} is above the {}{}{} maximum", text, sep, unit, max, sep, unit);
        return "";
      },
      unit.empty() ? fmt::format("NUMBER in [{}, {}]", min, max)
                   : fmt::format("SECONDS in [{}, {}]", min, max));
}

}  // namespace

CLI::Validator FiniteRange(double min, double max) { return Bounded(min, max, ""); }
CLI::Validator Seconds(double min, double max) { return Bounded(min, max, "s"); }

}  // namespace tessera::cli
