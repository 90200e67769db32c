// The simulator's application catalogue (sim/apps.h), usage trajectories included.
#include "fuzz.h"
#include "sim/apps.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view data) {
  (void)sim::ParseAppCatalog(std::string(data), path);
}
