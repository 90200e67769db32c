#include "cli/policy_flags.h"

#include <fmt/core.h>

namespace tessera::cli {

Expected<void> CheckRegistered(std::string_view name) {
  if (!policy::FindPolicy(name)) {
    return Fail("--policy {}: no such policy (see tessera simulate --list-policies)", name);
  }
  return {};
}

Expected<policy::PolicySpec> ParseRegisteredPolicy(std::string_view text) {
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(text);
  if (!spec) return Fail("--policy: {}", spec.error().message);
  if (auto ok = CheckRegistered(spec->name); !ok) return std::unexpected(ok.error());
  // Option values too, up front: `predictive{"slo_headroom":5}` is a usage error like bad JSON.
  if (auto ok = policy::CheckPolicyOptions(*spec); !ok) {
    return Fail("--policy {}: {}", text, ok.error().message);
  }
  return spec;
}

Expected<std::vector<std::string>> SplitPolicyList(std::string_view text) {
  std::vector<std::string> out;
  std::string open;  // the brackets open at this point, innermost last
  bool in_string = false, escaped = false;
  size_t start = 0;
  const auto item = [&](size_t end) -> Expected<void> {
    if (end == start) return Fail("--policy '{}': an empty policy at offset {}", text, start);
    out.emplace_back(text.substr(start, end - start));
    return {};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      open.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != c) {
        return Fail("--policy '{}': unbalanced '{}' at offset {}", text, c, i);
      }
      open.pop_back();
    } else if (c == ',' && open.empty()) {
      if (auto ok = item(i); !ok) return std::unexpected(ok.error());
      start = i + 1;
    }
  }
  if (in_string) return Fail("--policy '{}': a string is not terminated", text);
  if (!open.empty())
    return Fail("--policy '{}': '{}' is never closed", text, open.back() == '}' ? '{' : '[');
  if (auto ok = item(text.size()); !ok) return std::unexpected(ok.error());
  return out;
}

std::string PolicyList(const std::vector<policy::PolicyInfo>& policies) {
  std::string out =
      "Registered policies (--policy NAME; options as JSON: --policy-options in the daemons, "
      "NAME{json} in simulate and explain):\n";
  for (const policy::PolicyInfo& p : policies) {
    out += fmt::format("\n{}: {}{}\n", p.name, p.summary,
                       p.needs_predictor ? " [needs a predictor]" : "");
    if (p.options.empty()) out += "    (no options)\n";
    for (const policy::OptionInfo& o : p.options) {
      out += fmt::format("    {} (default {}): {}\n", o.name, o.default_json, o.help);
    }
  }
  return out;
}

}  // namespace tessera::cli
