// kube-scheduler's NodeAffinity and TaintToleration rules (node_rules.h), case by case as
// Kubernetes documents them (concepts/scheduling-eviction: assign-pod-node, taint-and-toleration).
#include "k8s/node_rules.h"

#include <gtest/gtest.h>

namespace tessera::k8s {
namespace {

using nlohmann::json;
using NodeLabels = std::map<std::string, std::string>;

NodeRules Rules(const json& spec) {
  auto r = NodeRulesFromPodSpec(spec, "pod ns/p");
  EXPECT_TRUE(r.has_value()) << r.error().message;
  return r ? *r : NodeRules{};
}

json Required(const json& terms) {
  return {
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}}}};
}

json Expr(const std::string& key, const std::string& op, const json& values = nullptr) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.is_null()) e["values"] = values;
  return e;
}

TEST(NodeRulesTest, NodeSelectorNeedsEveryLabelEqual) {
  const NodeRules r = Rules({{"nodeSelector", {{"pool", "infer"}, {"gpu", "a100"}}}});
  EXPECT_TRUE(SelectorAdmits(r, {{"pool", "infer"}, {"gpu", "a100"}, {"zone", "z1"}}, "n"));
  EXPECT_FALSE(SelectorAdmits(r, {{"pool", "infer"}}, "n"));
  EXPECT_FALSE(SelectorAdmits(r, {{"pool", "infer"}, {"gpu", "v100"}}, "n"));
  EXPECT_TRUE(SelectorAdmits(Rules(json::object()), {}, "n"));  // no rules: every node
}

TEST(NodeRulesTest, EachOperatorAsKubernetesDefinesIt) {
  const NodeLabels labels = {{"gpu", "a100"}, {"mem", "40"}, {"odd", "4x"}};
  auto admits = [&](const json& expr) {
    return SelectorAdmits(Rules(Required(json::array({{{"matchExpressions", {expr}}}}))), labels,
                          "n");
  };
  EXPECT_TRUE(admits(Expr("gpu", "In", {"v100", "a100"})));
  EXPECT_FALSE(admits(Expr("gpu", "In", {"v100"})));
  EXPECT_FALSE(admits(Expr("absent", "In", {"a100"})));
  EXPECT_TRUE(admits(Expr("gpu", "NotIn", {"v100"})));
  EXPECT_FALSE(admits(Expr("gpu", "NotIn", {"a100"})));
  EXPECT_TRUE(admits(Expr("absent", "NotIn", {"a100"})));  // an absent label is not in
  EXPECT_TRUE(admits(Expr("gpu", "Exists")));
  EXPECT_FALSE(admits(Expr("absent", "Exists")));
  EXPECT_TRUE(admits(Expr("absent", "DoesNotExist")));
  EXPECT_FALSE(admits(Expr("gpu", "DoesNotExist")));
  EXPECT_TRUE(admits(Expr("mem", "Gt", {"32"})));  // 40 > 32, compared as integers
  EXPECT_FALSE(admits(Expr("mem", "Gt", {"40"})));
  EXPECT_TRUE(admits(Expr("mem", "Lt", {"100"})));  // as text "40" > "100"; as numbers, less
  EXPECT_FALSE(admits(Expr("odd", "Gt", {"1"})));   // not an integer: no match
  EXPECT_FALSE(admits(Expr("absent", "Lt", {"1"})));
}

TEST(NodeRulesTest, TermsAreOredTheirExpressionsAndedAndAnEmptyTermMatchesNothing) {
  const json a100 = {{"matchExpressions", {Expr("gpu", "In", {"a100"})}}};
  const json big = {{"matchExpressions", {Expr("mem", "Gt", {"32"}), Expr("gpu", "Exists")}}};
  const NodeRules r = Rules(Required({a100, big}));
  EXPECT_TRUE(SelectorAdmits(r, {{"gpu", "a100"}}, "n"));                 // the first term
  EXPECT_TRUE(SelectorAdmits(r, {{"gpu", "h100"}, {"mem", "80"}}, "n"));  // the second
  EXPECT_FALSE(SelectorAdmits(r, {{"gpu", "h100"}}, "n"));                // the second's Gt fails
  EXPECT_FALSE(SelectorAdmits(Rules(Required(json::array({json::object()}))), {}, "n"));
  EXPECT_FALSE(SelectorAdmits(Rules(Required(json::array())), {{"gpu", "a100"}}, "n"));
  // Selector and affinity both hold, or the node refuses.
  json both = Required(json::array({a100}));
  both["nodeSelector"] = {{"pool", "infer"}};
  EXPECT_FALSE(SelectorAdmits(Rules(both), {{"gpu", "a100"}}, "n"));
  EXPECT_TRUE(SelectorAdmits(Rules(both), {{"gpu", "a100"}, {"pool", "infer"}}, "n"));
}

TEST(NodeRulesTest, MatchFieldsSelectTheNodeByName) {
  const NodeRules r =
      Rules(Required({{{"matchFields", {Expr("metadata.name", "NotIn", {"gpu-0", "gpu-1"})}}}}));
  EXPECT_FALSE(SelectorAdmits(r, {}, "gpu-0"));
  EXPECT_TRUE(SelectorAdmits(r, {}, "gpu-2"));
}

TEST(NodeRulesTest, TaintsOfNoScheduleAndNoExecuteMustBeTolerated) {
  const std::vector<Taint> taints = {{"nvidia.com/gpu", "present", "NoSchedule"},
                                     {"spot", "true", "PreferNoSchedule"}};
  // No tolerations: the NoSchedule taint refuses; PreferNoSchedule is only a preference.
  const Taint* t = UntoleratedTaint(Rules(json::object()), taints);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->key, "nvidia.com/gpu");
  auto tolerated = [&](const json& toleration) {
    return UntoleratedTaint(Rules({{"tolerations", {toleration}}}), taints) == nullptr;
  };
  EXPECT_TRUE(tolerated({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}));
  EXPECT_TRUE(tolerated({{"key", "nvidia.com/gpu"}, {"value", "present"}}));  // Equal by default
  EXPECT_FALSE(tolerated({{"key", "nvidia.com/gpu"}, {"value", "absent"}}));
  EXPECT_TRUE(
      tolerated({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}));
  EXPECT_FALSE(
      tolerated({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoExecute"}}));
  EXPECT_TRUE(tolerated({{"operator", "Exists"}}));  // an empty key with Exists: every taint
  EXPECT_FALSE(tolerated({{"key", "other"}, {"operator", "Exists"}}));
  EXPECT_EQ(UntoleratedTaint(Rules(json::object()), {{"k", "", "NoExecute"}})->effect, "NoExecute");
}

TEST(NodeRulesTest, EqualRulesShareAKeyAndOthersDoNot) {
  EXPECT_EQ(Rules(json::object()).Key(), "");
  const json sel = {{"nodeSelector", {{"pool", "infer"}}}};
  EXPECT_EQ(Rules(sel).Key(), Rules(sel).Key());
  EXPECT_NE(Rules(sel).Key(), "");
  json tol = sel;
  tol["tolerations"] = {{{"operator", "Exists"}}};
  EXPECT_NE(Rules(tol).Key(), Rules(sel).Key());
  EXPECT_NE(Rules(Required(json::array())).Key(), Rules(json::object()).Key());  // none vs no node
}

TEST(NodeRulesTest, AMalformedRuleIsOneErrorNamingThePodAndTheField) {
  auto error = [](const json& spec) {
    auto r = NodeRulesFromPodSpec(spec, "pod ns/p");
    return r ? std::string() : r.error().message;
  };
  const std::string req =
      "pod ns/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  EXPECT_EQ(error({{"nodeSelector", {{"pool", 3}}}}),
            "pod ns/p: spec.nodeSelector.pool: not a string");
  EXPECT_EQ(error(Required({{{"matchExpressions", {Expr("gpu", "Near", {"a"})}}}})),
            req +
                ".nodeSelectorTerms[0].matchExpressions[0].operator: 'Near' is not In, NotIn, "
                "Exists, DoesNotExist, Gt or Lt");
  EXPECT_EQ(error(Required({{{"matchExpressions", {Expr("mem", "Gt", {"many"})}}}})),
            req + ".nodeSelectorTerms[0].matchExpressions[0]: operator Gt needs one integer value");
  EXPECT_EQ(error(Required({{{"matchExpressions", {Expr("gpu", "In")}}}})),
            req + ".nodeSelectorTerms[0].matchExpressions[0]: operator In needs values");
  EXPECT_EQ(error(Required({{{"matchFields", {Expr("metadata.labels", "In", {"a"})}}}})),
            req +
                ".nodeSelectorTerms[0].matchFields[0].key: 'metadata.labels' is not a node field "
                "selectors support (metadata.name)");
  EXPECT_EQ(error(Required("all")), req + ".nodeSelectorTerms: not a list");
  EXPECT_EQ(error({{"tolerations", {{{"key", "k"}, {"operator", "Exists"}, {"value", "v"}}}}}),
            "pod ns/p: spec.tolerations[0]: operator Exists takes no value");
  EXPECT_EQ(error({{"tolerations", {{{"value", "v"}}}}}),
            "pod ns/p: spec.tolerations[0]: an empty key needs Exists");
  // JSON null is absent, as the API server serialises an unset field.
  EXPECT_EQ(error({{"nodeSelector", nullptr}, {"tolerations", nullptr}, {"affinity", nullptr}}),
            "");
}

TEST(NodeRulesTest, AMalformedTaintIsLeftOutAndSaid) {
  std::vector<std::string> skipped;
  const std::vector<Taint> taints = TaintsFromNodeSpec(
      {{"taints", {{{"key", "a"}, {"effect", "NoSchedule"}}, {{"key", "b"}}, {{"key", 3}}}}},
      skipped);
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0], (Taint{"a", "", "NoSchedule"}));
  EXPECT_EQ(skipped, (std::vector<std::string>{"spec.taints[1]: needs a key and an effect",
                                               "spec.taints[2].key: not a string"}));
}

}  // namespace
}  // namespace tessera::k8s
