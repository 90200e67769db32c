// A pod from the API server and its tessera.io/ annotations (k8s/objects.h): what the
// scheduler and the extender turn into a workload.
#include <nlohmann/json.hpp>

#include "fuzz.h"
#include "k8s/objects.h"

void tessera::fuzz::FuzzOne(const std::string&, std::string_view data) {
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) return;
  auto pod = k8s::PodFromJson(j);
  if (pod) (void)k8s::WorkloadFromPod(*pod, 1);
  (void)k8s::NodeFromJson(j);
}
