// The openb pod trace CSV (sim/openb.h), as `tessera simulate --trace` reads it.
#include "fuzz.h"
#include "sim/openb.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view) {
  (void)sim::LoadOpenbPods(path);
}
