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
  if (!spec) return spec;
  if (auto ok = CheckRegistered(spec->name); !ok) return std::unexpected(ok.error());
  return spec;
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
