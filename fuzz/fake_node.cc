// The agent's fake node YAML (agent/fake_backend.h).
#include "agent/fake_backend.h"
#include "fuzz.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view data) {
  (void)agent::ParseFakeNode(std::string(data), path);
}
