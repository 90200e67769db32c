// The openb node list CSV (sim/openb.h), as `tessera simulate --nodes` reads it.
#include "fuzz.h"
#include "sim/openb.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view) {
  (void)sim::LoadOpenbNodes(path);
}
