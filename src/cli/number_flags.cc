#include "cli/number_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>
#include <string>
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

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty value (give one, or leave the flag out)" : "";
      },
      "");
}

CLI::Validator AtMost(size_t bytes) {
  return CLI::Validator(
      [bytes](std::string& text) -> std::string {
        return text.size() > bytes
                   ? fmt::format("{} bytes given, at most {} taken", text.size(), bytes)
                   : "";
      },
      "");
}

void RefuseEmptyValues(CLI::App* app) {
  // Prefixes, where empty is the documented "none".
  static const std::set<std::string> kMayBeEmpty = {"redis-prefix", "url-prefix"};
  for (CLI::Option* o : app->get_options()) {
    if (o->get_type_size() == 0 || o->get_lnames().empty()) continue;  // a flag without value
    if (kMayBeEmpty.contains(o->get_lnames()[0])) continue;
    o->check(NonEmpty());
  }
  for (CLI::App* sub : app->get_subcommands({})) RefuseEmptyValues(sub);
}

}  // namespace tessera::cli
