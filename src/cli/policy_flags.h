#pragma once
// Policies on the command line: the check every --policy flag gets, and
// `tessera simulate --list-policies`.

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "policy/registry.h"

namespace tessera::cli {

// Fails, naming the flag and pointing at --list-policies, unless `name` is a registered policy.
[[nodiscard]] Expected<void> CheckRegistered(std::string_view name);

// "name" or "name{json}" (policy::ParsePolicySpec) naming a registered policy whose options
// are valid (policy::CheckPolicyOptions): every --policy error is a usage error.
[[nodiscard]] Expected<policy::PolicySpec> ParseRegisteredPolicy(std::string_view text);

// Splits one --policy value into policies at the commas outside braces, brackets and JSON
// strings: `fgd,predictive{"slo_headroom":0.1,"reshape":false}` is two policies. An Error for
// an empty item, an unbalanced bracket or an unterminated string.
[[nodiscard]] Expected<std::vector<std::string>> SplitPolicyList(std::string_view text);

// The registered policies as text, one block per policy: its name and summary, then one
// indented line per option (name, default as JSON, help), or "(no options)".
std::string PolicyList(const std::vector<policy::PolicyInfo>& policies);

}  // namespace tessera::cli
