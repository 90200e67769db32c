// The command line's small grammars: --seeds ranges (cli/seed_flags.h) and policy names with
// options, `name{json}` (policy/registry.h, cli/policy_flags.h).
#include "cli/policy_flags.h"
#include "cli/seed_flags.h"
#include "fuzz.h"
#include "policy/registry.h"

void tessera::fuzz::FuzzOne(const std::string&, std::string_view data) {
  (void)cli::ParseSeedRange(data);
  (void)policy::ParsePolicySpec(data);
  (void)cli::ParseRegisteredPolicy(data);
}
