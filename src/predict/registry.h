#pragma once
// The one place completion methods are named: adding a method = one file pair + one line in
// registry.cc + its test.

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/completer.h"

namespace tessera::predict {

// A new completer with its default options, or an Error listing the known names.
[[nodiscard]] Expected<std::unique_ptr<Completer>> MakeCompleter(const std::string& name);
std::vector<std::string> CompleterNames();

}  // namespace tessera::predict
