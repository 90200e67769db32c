// A pod from the API server and its tessera.io/ annotations (k8s/objects.h): what the
// scheduler and the extender turn into a workload, and its node rules against nodes.
#include <nlohmann/json.hpp>

#include "fuzz.h"
#include "k8s/objects.h"

void tessera::fuzz::FuzzOne(const std::string&, std::string_view data) {
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) return;
  auto pod = k8s::PodFromJson(j);
  auto node = k8s::NodeFromJson(j);
  if (pod) {
    (void)k8s::WorkloadFromPod(*pod, 1);
    // Its node rules against a node with labels and a taint, and against itself read as a node.
    (void)k8s::SelectorAdmits(pod->node_rules, {{"pool", "a"}, {"mem", "40"}}, "n");
    (void)k8s::UntoleratedTaint(pod->node_rules, {{"dedicated", "batch", "NoSchedule"}});
    (void)pod->node_rules.Key();
    if (node) {
      (void)k8s::SelectorAdmits(pod->node_rules, node->labels, node->name);
      (void)k8s::UntoleratedTaint(pod->node_rules, node->taints);
    }
  }
}
