#pragma once
// Which nodes a pod may use at all, by kube-scheduler's rules (its NodeAffinity and
// TaintToleration filter plugins): the pod's spec.nodeSelector (every label equal), its
// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution (one of the
// nodeSelectorTerms, each term's matchExpressions on labels and matchFields on metadata.name
// all hold; operators In, NotIn, Exists, DoesNotExist, Gt, Lt), and the node's taints of effect
// NoSchedule or NoExecute, each of which one of the pod's spec.tolerations must tolerate
// (PreferNoSchedule is a preference, not a rule). The kubelet refuses a pod bound against the
// selector or affinity (its admission runs the same filter), so a scheduler that ignores them
// binds pods that fail at once.
//
// Parsing names the pod and the field of a malformed rule (the API server validates these, so
// it is rare); a node's malformed taint is skipped with the reason (a node is never dropped for
// it). Plain values; no I/O.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace tessera::k8s {

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule | PreferNoSchedule | NoExecute
  bool operator==(const Taint&) const = default;
};

struct Toleration {
  std::string key;           // "" with operator Exists: every key
  std::string op = "Equal";  // Equal | Exists
  std::string value;         // for Equal
  std::string effect;        // "" : every effect
  bool Tolerates(const Taint& t) const;
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist | Gt | Lt
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on the node's labels
  std::vector<NodeSelectorRequirement> match_fields;       // on metadata.name (In, NotIn)
};

struct NodeRules {
  std::map<std::string, std::string> node_selector;
  // nullopt: no required node affinity; else at least one term must match (none: no node).
  std::optional<std::vector<NodeSelectorTerm>> required_terms;
  std::vector<Toleration> tolerations;

  // A canonical text of the rules: equal texts admit the same nodes ("" for a pod with none).
  std::string Key() const;
};

// What refuses a pod on a node, in kube-scheduler's words.
inline constexpr std::string_view kRefusedBySelector =
    "node(s) didn't match Pod's node affinity/selector";

// The pod's rules from its spec (`who` names the pod in errors: "pod ns/name").
[[nodiscard]] Expected<NodeRules> NodeRulesFromPodSpec(const nlohmann::json& spec,
                                                       const std::string& who);
// The node's taints from its spec; a malformed one is left out and said in `skipped`.
std::vector<Taint> TaintsFromNodeSpec(const nlohmann::json& spec,
                                      std::vector<std::string>& skipped);

// Whether the node's labels and name satisfy the selector and the required affinity.
bool SelectorAdmits(const NodeRules& rules, const std::map<std::string, std::string>& labels,
                    const std::string& node_name);
// The first NoSchedule or NoExecute taint no toleration tolerates, or nullptr.
const Taint* UntoleratedTaint(const NodeRules& rules, const std::vector<Taint>& taints);

}  // namespace tessera::k8s
