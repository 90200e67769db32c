#pragma once
// Numbers on the command line: the one CLI11 check behind every duration and ratio flag of the
// daemons (schedule, extender, agent) and of any command that takes a bounded real.
// CLI11's own Range and PositiveNumber compare with < and >, which NaN passes ("--refresh nan"
// made the extender's refresher spin), and accept "inf". FiniteRange refuses both.
//
//   FiniteRange(min, max)   a finite decimal number in [min, max] ("1", "0.25", "1e-3")
//   Seconds(min, max)       the same, for a number of seconds; the messages say "s"
//
// Anything else ("nan", "inf", "-0x1p3", "", "5s", "1e308" above max) is refused with one
// message; CLI11 prefixes the flag's name to it ("--refresh: 'nan' is not a number of seconds").

#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

CLI::Validator FiniteRange(double min, double max);
CLI::Validator Seconds(double min, double max);

// Text values: NonEmpty refuses "" (a flag given with nothing is a mistake, not its default;
// RefuseEmptyValues puts it on every value option of every subcommand, those where empty
// means something excepted); AtMost(n) refuses values longer than n bytes (a regex: std::regex
// recurses per character and a 128 KiB pattern overflows the stack).
CLI::Validator NonEmpty();
CLI::Validator AtMost(size_t bytes);
void RefuseEmptyValues(CLI::App* app);

}  // namespace tessera::cli
