#include "k8s/node_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace tessera::k8s {

using nlohmann::json;

namespace {

// A member that is absent or JSON null reads as absent.
const json* MemberOf(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

Expected<std::string> StringField(const json& o, const char* key, const std::string& where) {
  const json* v = MemberOf(o, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Fail("{}.{}: not a string", where, key);
  return v->get<std::string>();
}

std::optional<int64_t> Integer(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

Expected<NodeSelectorRequirement> RequirementFrom(const json& r, const std::string& where,
                                                  bool field) {
  if (!r.is_object()) return Fail("{}: not an object", where);
  NodeSelectorRequirement req;
  auto key = StringField(r, "key", where);
  if (!key) return std::unexpected(key.error());
  auto op = StringField(r, "operator", where);
  if (!op) return std::unexpected(op.error());
  req.key = *key;
  req.op = *op;
  if (const json* values = MemberOf(r, "values")) {
    if (!values->is_array()) return Fail("{}.values: not a list", where);
    for (const json& v : *values) {
      if (!v.is_string()) return Fail("{}.values: holds a non-string", where);
      req.values.push_back(v.get<std::string>());
    }
  }
  if (req.key.empty()) return Fail("{}.key: empty", where);
  const std::string& o = req.op;
  if (field) {
    if (req.key != "metadata.name") {
      return Fail("{}.key: '{}' is not a node field selectors support (metadata.name)", where,
                  req.key);
    }
    if (o != "In" && o != "NotIn") return Fail("{}.operator: '{}' is not In or NotIn", where, o);
  }
  if (o == "In" || o == "NotIn") {
    if (req.values.empty()) return Fail("{}: operator {} needs values", where, o);
  } else if (o == "Exists" || o == "DoesNotExist") {
    if (!req.values.empty()) return Fail("{}: operator {} takes no values", where, o);
  } else if (o == "Gt" || o == "Lt") {
    if (req.values.size() != 1 || !Integer(req.values[0])) {
      return Fail("{}: operator {} needs one integer value", where, o);
    }
  } else {
    return Fail("{}.operator: '{}' is not In, NotIn, Exists, DoesNotExist, Gt or Lt", where, o);
  }
  return req;
}

Expected<std::vector<NodeSelectorRequirement>> RequirementsFrom(const json& term, const char* key,
                                                                const std::string& where) {
  std::vector<NodeSelectorRequirement> out;
  const json* list = MemberOf(term, key);
  if (list == nullptr) return out;
  if (!list->is_array()) return Fail("{}.{}: not a list", where, key);
  const bool field = std::string_view(key) == "matchFields";
  for (size_t i = 0; i < list->size(); ++i) {
    auto r = RequirementFrom((*list)[i], fmt::format("{}.{}[{}]", where, key, i), field);
    if (!r) return std::unexpected(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

Expected<std::vector<NodeSelectorTerm>> RequiredTermsFrom(const json& required,
                                                          const std::string& where) {
  const json* terms = MemberOf(required, "nodeSelectorTerms");
  if (terms == nullptr || !terms->is_array())
    return Fail("{}.nodeSelectorTerms: not a list", where);
  std::vector<NodeSelectorTerm> out;
  for (size_t i = 0; i < terms->size(); ++i) {
    const std::string at = fmt::format("{}.nodeSelectorTerms[{}]", where, i);
    if (!(*terms)[i].is_object()) return Fail("{}: not an object", at);
    auto exprs = RequirementsFrom((*terms)[i], "matchExpressions", at);
    if (!exprs) return std::unexpected(exprs.error());
    auto fields = RequirementsFrom((*terms)[i], "matchFields", at);
    if (!fields) return std::unexpected(fields.error());
    out.push_back({std::move(*exprs), std::move(*fields)});
  }
  return out;
}

Expected<Toleration> TolerationFrom(const json& t, const std::string& where) {
  if (!t.is_object()) return Fail("{}: not an object", where);
  Toleration tol;
  for (auto [key, out] : {std::pair{"key", &tol.key}, std::pair{"operator", &tol.op},
                          std::pair{"value", &tol.value}, std::pair{"effect", &tol.effect}}) {
    auto v = StringField(t, key, where);
    if (!v) return std::unexpected(v.error());
    if (!v->empty()) *out = *v;
  }
  if (tol.op != "Equal" && tol.op != "Exists") {
    return Fail("{}.operator: '{}' is not Equal or Exists", where, tol.op);
  }
  if (tol.op == "Exists" && !tol.value.empty()) {
    return Fail("{}: operator Exists takes no value", where);
  }
  if (tol.key.empty() && tol.op != "Exists") return Fail("{}: an empty key needs Exists", where);
  return tol;
}

bool Holds(const NodeSelectorRequirement& r, const std::string* value) {
  auto listed = [&] {
    return value != nullptr && std::ranges::find(r.values, *value) != r.values.end();
  };
  if (r.op == "In") return listed();
  if (r.op == "NotIn") return !listed();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  const std::optional<int64_t> have = value != nullptr ? Integer(*value) : std::nullopt;
  const std::optional<int64_t> bound = Integer(r.values.at(0));
  if (!have || !bound) return false;
  return r.op == "Gt" ? *have > *bound : *have < *bound;
}

bool TermMatches(const NodeSelectorTerm& term, const std::map<std::string, std::string>& labels,
                 const std::string& node_name) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;  // as k8s
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    auto it = labels.find(r.key);
    if (!Holds(r, it == labels.end() ? nullptr : &it->second)) return false;
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    if (!Holds(r, &node_name)) return false;
  }
  return true;
}

json RequirementsJson(const std::vector<NodeSelectorRequirement>& rs) {
  json out = json::array();
  for (const auto& r : rs) out.push_back({r.key, r.op, r.values});
  return out;
}

}  // namespace

bool Toleration::Tolerates(const Taint& t) const {
  if (!effect.empty() && effect != t.effect) return false;
  if (!key.empty() && key != t.key) return false;
  return op == "Exists" || value == t.value;
}

std::string NodeRules::Key() const {
  if (node_selector.empty() && !required_terms && tolerations.empty()) return "";
  json k = json::array();
  k.push_back(node_selector);
  json terms = nullptr;
  if (required_terms) {
    terms = json::array();
    for (const auto& t : *required_terms) {
      terms.push_back({RequirementsJson(t.match_expressions), RequirementsJson(t.match_fields)});
    }
  }
  k.push_back(terms);
  json tols = json::array();
  for (const auto& t : tolerations) tols.push_back({t.key, t.op, t.value, t.effect});
  k.push_back(tols);
  return k.dump();
}

Expected<NodeRules> NodeRulesFromPodSpec(const json& spec, const std::string& who) {
  NodeRules rules;
  if (const json* sel = MemberOf(spec, "nodeSelector")) {
    if (!sel->is_object()) return Fail("{}: spec.nodeSelector: not a map", who);
    for (const auto& [k, v] : sel->items()) {
      if (!v.is_string()) return Fail("{}: spec.nodeSelector.{}: not a string", who, k);
      rules.node_selector[k] = v.get<std::string>();
    }
  }
  const json* affinity = MemberOf(spec, "affinity");
  const json* node_affinity = affinity ? MemberOf(*affinity, "nodeAffinity") : nullptr;
  const json* required =
      node_affinity ? MemberOf(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
                    : nullptr;
  if (required != nullptr) {
    auto terms = RequiredTermsFrom(
        *required,
        who + ": spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    if (!terms) return std::unexpected(terms.error());
    rules.required_terms = std::move(*terms);
  }
  if (const json* tols = MemberOf(spec, "tolerations")) {
    if (!tols->is_array()) return Fail("{}: spec.tolerations: not a list", who);
    for (size_t i = 0; i < tols->size(); ++i) {
      auto t = TolerationFrom((*tols)[i], fmt::format("{}: spec.tolerations[{}]", who, i));
      if (!t) return std::unexpected(t.error());
      rules.tolerations.push_back(std::move(*t));
    }
  }
  return rules;
}

std::vector<Taint> TaintsFromNodeSpec(const json& spec, std::vector<std::string>& skipped) {
  std::vector<Taint> out;
  const json* taints = MemberOf(spec, "taints");
  if (taints == nullptr) return out;
  if (!taints->is_array()) {
    skipped.push_back("spec.taints: not a list");
    return out;
  }
  for (size_t i = 0; i < taints->size(); ++i) {
    const json& t = (*taints)[i];
    const std::string where = fmt::format("spec.taints[{}]", i);
    auto key = StringField(t, "key", where);
    auto value = key ? StringField(t, "value", where) : key;
    auto effect = value ? StringField(t, "effect", where) : value;
    if (!t.is_object() || !effect || key->empty() || effect->empty()) {
      skipped.push_back(effect ? where + ": needs a key and an effect" : effect.error().message);
      continue;
    }
    out.push_back({*key, *value, *effect});
  }
  return out;
}

bool SelectorAdmits(const NodeRules& rules, const std::map<std::string, std::string>& labels,
                    const std::string& node_name) {
  for (const auto& [k, v] : rules.node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  if (!rules.required_terms) return true;
  return std::ranges::any_of(*rules.required_terms, [&](const NodeSelectorTerm& t) {
    return TermMatches(t, labels, node_name);
  });
}

const Taint* UntoleratedTaint(const NodeRules& rules, const std::vector<Taint>& taints) {
  for (const Taint& t : taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    const bool tolerated = std::ranges::any_of(
        rules.tolerations, [&](const Toleration& tol) { return tol.Tolerates(t); });
    if (!tolerated) return &t;
  }
  return nullptr;
}

}  // namespace tessera::k8s
