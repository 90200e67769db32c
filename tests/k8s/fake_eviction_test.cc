// The fake API server's Eviction subresource and PodDisruptionBudgets, driven through the real
// ApiClient as the scheduler drives them. Every budget below is worked out by hand from the
// documented rules (api-eviction, configure-pdb): currentHealthy H = Ready pods selected,
// desiredHealthy D, disruptionsAllowed = max(0, H − D); percentages round up.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "k8s/api_client.h"
#include "k8s_fixtures.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::CredentialsFor;
using testing_support::FakeApiServer;

constexpr const char* kNs = "ml";
constexpr const char* kRefused =
    "Cannot evict pod as it would violate the pod's disruption budget.";

json Requests() { return {{"cpu", "1"}, {"memory", "1Gi"}}; }
json Labels() { return {{"app", "web"}}; }
// The ReplicaSet owning the "web" pods, as its controller.
json WebOwner() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "ReplicaSet"},
          {"name", "web-7c9f"},
          {"uid", "6f1c2a3e-0000-4000-8000-000000000001"},
          {"controller", true}};
}
json WebSelector() { return {{"matchLabels", Labels()}}; }

class FakeEvictionTest : public ::testing::Test {
 protected:
  // The pod watch events after resourceVersion `rv` (a one-second watch).
  std::vector<json> WatchPodsFrom(const std::string& rv) {
    std::vector<json> events;
    auto w = client_->Stream(
        "/api/v1/pods?watch=1&resourceVersion=" + rv + "&timeoutSeconds=1",
        [&](std::string_view line) {
          if (!line.empty()) events.push_back(json::parse(line));
          return true;
        },
        30);
    EXPECT_TRUE(w.has_value()) << w.error().message;
    return events;
  }
  void SetUp() override {
    auto c = ApiClient::Create(CredentialsFor(api_));
    ASSERT_TRUE(c.has_value()) << c.error().message;
    client_ = std::move(*c);
  }

  // A web pod, Running; Ready unless `ready` is false.
  void AddWeb(const std::string& name, bool ready = true, json owner = WebOwner()) {
    api_.AddPodWith(kNs, name, Requests(), json::object(), Labels(), owner);
    api_.SetPodRunning(kNs, name, ready);
  }

  static json EvictionFor(const std::string& name) {
    return {{"apiVersion", "policy/v1"},
            {"kind", "Eviction"},
            {"metadata", {{"name", name}, {"namespace", kNs}}}};
  }
  HttpResponse Post(const std::string& name, const std::string& body) {
    auto r = client_->Post(std::string("/api/v1/namespaces/") + kNs + "/pods/" + name + "/eviction",
                           body);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(HttpResponse{});
  }
  HttpResponse Evict(const std::string& name) { return Post(name, EvictionFor(name).dump()); }
  bool PodExists(const std::string& name) {
    return api_.Get("pods", std::string(kNs) + "/" + name).has_value();
  }
  // The 429's one cause, after checking the Status around it.
  static std::string RefusalCause(const HttpResponse& r) {
    EXPECT_EQ(r.status, 429) << r.body;
    const json s = json::parse(r.body);
    EXPECT_EQ(s["kind"], "Status");
    EXPECT_EQ(s["status"], "Failure");
    EXPECT_EQ(s["reason"], "TooManyRequests");
    EXPECT_EQ(s["code"], 429);
    EXPECT_EQ(s["message"], kRefused);
    const json causes = s["details"]["causes"];
    if (!causes.is_array() || causes.size() != 1) return "causes: " + causes.dump();
    EXPECT_EQ(causes[0]["reason"], "DisruptionBudget");
    return causes[0]["message"].get<std::string>();
  }
  json PdbStatus(const std::string& name) {
    auto r = client_->Get(std::string("/apis/policy/v1/namespaces/") + kNs +
                          "/poddisruptionbudgets/" + name);
    EXPECT_TRUE(r.has_value() && r->status == 200);
    return r.has_value() ? json::parse(r->body)["status"] : json();
  }

  FakeApiServer api_;
  std::unique_ptr<ApiClient> client_;
};

TEST_F(FakeEvictionTest, WithoutABudgetThePodIsDeletedAndWatchersSeeItGo) {
  AddWeb("web-0");
  auto list = client_->Get("/api/v1/pods");
  ASSERT_TRUE(list.has_value() && list->status == 200);
  const std::string rv = json::parse(list->body)["metadata"]["resourceVersion"];

  const HttpResponse r = Evict("web-0");
  EXPECT_EQ(r.status, 201) << r.body;
  const json s = json::parse(r.body);
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["status"], "Success");
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"ml/web-0"});
  EXPECT_EQ(api_.eviction_refusals(), 0);

  EXPECT_EQ(client_->Get("/api/v1/namespaces/ml/pods/web-0").value().status, 404);
  auto after = client_->Get("/api/v1/pods");
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(json::parse(after->body)["items"].empty());

  // A watch from the list before the eviction sees exactly one event: the pod DELETED, marked
  // as the eviction API's disruption.
  const std::vector<json> events = WatchPodsFrom(rv);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "DELETED");
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "web-0");
  const json conditions = events[0]["object"]["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 2u);  // Ready, then DisruptionTarget
  EXPECT_EQ(conditions[1]["type"], "DisruptionTarget");
  EXPECT_EQ(conditions[1]["reason"], "EvictionByEvictionAPI");
}

TEST_F(FakeEvictionTest, MinAvailableOneProtectsTheLastHealthyReplica) {
  AddWeb("web-0");
  api_.AddPdb(kNs, "web-pdb", {{"selector", WebSelector()}, {"minAvailable", 1}});
  // H = 1, D = 1 → allowed 0.
  EXPECT_EQ(RefusalCause(Evict("web-0")),
            "The disruption budget web-pdb needs 1 healthy pods and has 1 currently");
  EXPECT_TRUE(PodExists("web-0"));
  EXPECT_EQ(api_.eviction_refusals(), 1);
  EXPECT_TRUE(api_.evictions().empty());

  AddWeb("web-1");  // H = 2, D = 1 → allowed 1; an int minAvailable expects the 2 pods seen
  json st = PdbStatus("web-pdb");
  EXPECT_EQ(st["expectedPods"], 2);
  EXPECT_EQ(st["currentHealthy"], 2);
  EXPECT_EQ(st["desiredHealthy"], 1);
  EXPECT_EQ(st["disruptionsAllowed"], 1);
  EXPECT_EQ(Evict("web-0").status, 201);
  EXPECT_FALSE(PodExists("web-0"));

  st = PdbStatus("web-pdb");  // H = 1, D = 1 → allowed 0, and the next one is refused
  EXPECT_EQ(st["currentHealthy"], 1);
  EXPECT_EQ(st["disruptionsAllowed"], 0);
  EXPECT_EQ(st["conditions"][0]["reason"], "InsufficientPods");
  EXPECT_EQ(RefusalCause(Evict("web-1")),
            "The disruption budget web-pdb needs 1 healthy pods and has 1 currently");
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"ml/web-0"});
  EXPECT_EQ(api_.eviction_refusals(), 2);
}

// Successive evictions of Ready replicas of one ReplicaSet under a budget: 201 while
// disruptionsAllowed > 0, then 429. Evicted replicas are not replaced, so the expected count
// (the ReplicaSet's scale) stays put while H falls by one per eviction.
struct BudgetCase {
  const char* name;
  json budget;    // minAvailable or maxUnavailable
  int replicas;   // Ready pods made
  int scale;      // SetControllerScale, 0: left to the fake (= replicas)
  int evictable;  // evictions that pass before the first 429
  int desired;    // D in the refusal
};

class FakeEvictionBudgetTest : public FakeEvictionTest,
                               public ::testing::WithParamInterface<BudgetCase> {};

TEST_P(FakeEvictionBudgetTest, EvictsUntilTheBudgetIsSpent) {
  const BudgetCase& c = GetParam();
  for (int i = 0; i < c.replicas; ++i) AddWeb("web-" + std::to_string(i));
  if (c.scale > 0) api_.SetControllerScale(kNs, "ReplicaSet", "web-7c9f", c.scale);
  json spec = c.budget;
  spec["selector"] = WebSelector();
  api_.AddPdb(kNs, "web-pdb", spec);

  for (int i = 0; i < c.evictable; ++i) {
    EXPECT_EQ(Evict("web-" + std::to_string(i)).status, 201) << "eviction " << i;
  }
  const int healthy = c.replicas - c.evictable;
  EXPECT_EQ(RefusalCause(Evict("web-" + std::to_string(c.evictable))),
            "The disruption budget web-pdb needs " + std::to_string(c.desired) +
                " healthy pods and has " + std::to_string(healthy) + " currently");
  EXPECT_EQ(static_cast<int>(api_.evictions().size()), c.evictable);
  EXPECT_EQ(api_.eviction_refusals(), 1);
}

INSTANTIATE_TEST_SUITE_P(
    Budgets, FakeEvictionBudgetTest,
    ::testing::Values(
        // maxUnavailable 50% of scale 3 = ⌈1.5⌉ = 2 → D = 3 − 2 = 1; H 3 → 2 → 1: two pass.
        BudgetCase{"MaxUnavailableHalfOfThree", {{"maxUnavailable", "50%"}}, 3, 0, 2, 1},
        // maxUnavailable 50% of scale 2 = 1 → D = 1; H 2 → 1: one passes.
        BudgetCase{"MaxUnavailableHalfOfTwo", {{"maxUnavailable", "50%"}}, 2, 0, 1, 1},
        // minAvailable 50% of scale 3 = ⌈1.5⌉ = 2 = D; H 3 → 2: one passes.
        BudgetCase{"MinAvailableHalfOfThree", {{"minAvailable", "50%"}}, 3, 0, 1, 2},
        // maxUnavailable 1 of scale 3 → D = 2; one passes.
        BudgetCase{"MaxUnavailableOne", {{"maxUnavailable", 1}}, 3, 0, 1, 2},
        // minAvailable 2 (int: expected = the 3 pods) → D = 2; one passes.
        BudgetCase{"MinAvailableTwo", {{"minAvailable", 2}}, 3, 0, 1, 2},
        // maxUnavailable 0 and minAvailable 100%: D = 3 = H, nothing passes.
        BudgetCase{"MaxUnavailableZero", {{"maxUnavailable", 0}}, 3, 0, 0, 3},
        BudgetCase{"MinAvailableAll", {{"minAvailable", "100%"}}, 3, 0, 0, 3},
        // The ReplicaSet wants 4 but 3 exist: maxUnavailable 1 → D = 3 = H, nothing passes.
        BudgetCase{"AMissingReplicaCountsAsUnavailable", {{"maxUnavailable", 1}}, 3, 4, 0, 3}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(FakeEvictionTest, BarePodsAddNothingToADesiredReplicaCount) {
  // configure-pdb: maxUnavailable needs pods with a controller. Without one they add nothing to
  // expectedPods (the controller leaves them out): D = max(0, 0 − 1) = 0, so all 3 Ready pods
  // can go, H 3 → 2 → 1 → 0.
  for (int i = 0; i < 3; ++i) AddWeb("bare-" + std::to_string(i), true, nullptr);
  api_.AddPdb(kNs, "web-pdb", {{"selector", WebSelector()}, {"maxUnavailable", 1}});
  EXPECT_EQ(PdbStatus("web-pdb")["expectedPods"], 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Evict("bare-" + std::to_string(i)).status, 201);
}

TEST_F(FakeEvictionTest, UnhealthyPodsUnderAnExhaustedBudget) {
  AddWeb("web-0");
  AddWeb("web-1");
  AddWeb("web-2", /*ready=*/false);
  api_.AddPdb(kNs, "web-pdb", {{"selector", WebSelector()}, {"minAvailable", 2}});
  // H = 2 (web-2 is not Ready), D = 2 → allowed 0: a Ready pod is refused...
  EXPECT_EQ(RefusalCause(Evict("web-0")),
            "The disruption budget web-pdb needs 2 healthy pods and has 2 currently");
  // ...but the unready one goes: IfHealthyBudget, H 2 ≥ D 2 > 0.
  EXPECT_EQ(Evict("web-2").status, 201);

  // web-1 stops being Ready: H = 1 < D = 2, so an unready pod is held like a Ready one.
  api_.SetPodRunning(kNs, "web-1", /*ready=*/false);
  EXPECT_EQ(RefusalCause(Evict("web-1")),
            "The disruption budget web-pdb needs 2 healthy pods and has 1 currently");
  EXPECT_TRUE(PodExists("web-1"));
  // A Pending pod is always considered for eviction, whatever the budget.
  api_.AddPodWith(kNs, "web-3", Requests(), json::object(), Labels(), WebOwner());
  EXPECT_EQ(Evict("web-3").status, 201);

  // AlwaysAllow lets unready Running pods go regardless; Ready ones are still held.
  api_.AddPdb(kNs, "web-pdb",
              {{"selector", WebSelector()},
               {"minAvailable", 2},
               {"unhealthyPodEvictionPolicy", "AlwaysAllow"}});
  EXPECT_EQ(Evict("web-1").status, 201);
  EXPECT_EQ(RefusalCause(Evict("web-0")),
            "The disruption budget web-pdb needs 2 healthy pods and has 1 currently");
  EXPECT_EQ(api_.evictions(), (std::vector<std::string>{"ml/web-2", "ml/web-3", "ml/web-1"}));
  EXPECT_EQ(api_.eviction_refusals(), 3);
}

TEST_F(FakeEvictionTest, TwoBudgetsForOnePodAreAServerError) {
  AddWeb("web-0");
  AddWeb("web-1");
  api_.AddPdb(kNs, "web-pdb", {{"selector", WebSelector()}, {"minAvailable", 0}});
  api_.AddPdb(kNs, "everything", {{"selector", json::object()}, {"maxUnavailable", 1}});
  const HttpResponse r = Evict("web-0");
  EXPECT_EQ(r.status, 500);
  const json s = json::parse(r.body);
  EXPECT_EQ(s["status"], "Failure");
  EXPECT_EQ(s["message"],
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
            "not support.");
  EXPECT_TRUE(PodExists("web-0"));
  EXPECT_EQ(api_.eviction_refusals(), 0);  // not a budget's refusal

  // A budget without a selector selects nothing; one in another namespace is not this pod's.
  api_.DeletePdb(kNs, "everything");
  api_.AddPdb(kNs, "nothing", {{"minAvailable", 5}});
  api_.AddPdb("other", "web-pdb", {{"selector", WebSelector()}, {"minAvailable", 5}});
  EXPECT_EQ(PdbStatus("nothing")["expectedPods"], 0);
  EXPECT_EQ(Evict("web-0").status, 201);  // web-pdb alone: H 2, D 0
}

TEST_F(FakeEvictionTest, AMissingPodIsNotFound) {
  const HttpResponse r = Evict("ghost");
  EXPECT_EQ(r.status, 404);
  const json s = json::parse(r.body);
  EXPECT_EQ(s["reason"], "NotFound");
  EXPECT_EQ(s["message"], "pods \"ghost\" not found");
}

TEST_F(FakeEvictionTest, ABodyThatIsNotThisPodsEvictionIsABadRequest) {
  AddWeb("web-0");
  json other_name = EvictionFor("web-1");
  json wrong_kind = EvictionFor("web-0");
  wrong_kind["kind"] = "Pod";
  json wrong_version = EvictionFor("web-0");
  wrong_version["apiVersion"] = "v1";
  json other_ns = EvictionFor("web-0");
  other_ns["metadata"]["namespace"] = "default";
  for (const std::string& body : {std::string("{not json"), other_name.dump(), wrong_kind.dump(),
                                  wrong_version.dump(), other_ns.dump(), std::string("[]")}) {
    const HttpResponse r = Post("web-0", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(json::parse(r.body)["reason"], "BadRequest") << body;
  }
  EXPECT_EQ(json::parse(Post("web-0", other_name.dump()).body)["message"],
            "name in URL does not match name in Eviction object");
  EXPECT_TRUE(PodExists("web-0"));
  EXPECT_TRUE(api_.evictions().empty());
}

TEST_F(FakeEvictionTest, DeleteOptionsPreconditionsAndDryRun) {
  AddWeb("web-0");
  json stale = EvictionFor("web-0");
  stale["deleteOptions"] = {{"preconditions", {{"uid", "not-the-uid"}}}};
  EXPECT_EQ(Post("web-0", stale.dump()).status, 409);

  json dry = EvictionFor("web-0");
  dry["deleteOptions"] = {{"dryRun", {"All"}}};
  EXPECT_EQ(Post("web-0", dry.dump()).status, 201);
  EXPECT_TRUE(PodExists("web-0"));
  EXPECT_TRUE(api_.evictions().empty());

  json exact = EvictionFor("web-0");
  const json pod = api_.Get("pods", "ml/web-0").value();
  exact["deleteOptions"] = {
      {"preconditions",
       {{"uid", pod["metadata"]["uid"]}, {"resourceVersion", pod["metadata"]["resourceVersion"]}}}};
  EXPECT_EQ(Post("web-0", exact.dump()).status, 201);
  EXPECT_FALSE(PodExists("web-0"));
}

TEST_F(FakeEvictionTest, BudgetsOverRest) {
  const std::string base = "/apis/policy/v1/namespaces/ml/poddisruptionbudgets";
  AddWeb("web-0");
  AddWeb("web-1");
  json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web-pdb"}}},
              {"spec", {{"selector", WebSelector()}, {"minAvailable", 1}}}};
  auto created = client_->Post(base, pdb.dump());
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(created->status, 201) << created->body;
  EXPECT_EQ(client_->Post(base, pdb.dump()).value().status, 409);

  json got = json::parse(client_->Get(base + "/web-pdb").value().body);
  EXPECT_EQ(got["metadata"]["namespace"], "ml");
  EXPECT_EQ(got["metadata"]["generation"], 1);
  EXPECT_EQ(got["status"]["disruptionsAllowed"], 1);  // H 2, D 1
  EXPECT_EQ(got["status"]["observedGeneration"], 1);

  // A PUT changes the spec (generation 2) but not the status, which the server recomputes.
  got["spec"]["minAvailable"] = 2;
  got["status"]["disruptionsAllowed"] = 7;
  auto put = client_->Put(base + "/web-pdb", got.dump());
  ASSERT_TRUE(put.has_value());
  EXPECT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(client_->Put(base + "/web-pdb", got.dump()).value().status, 409);  // stale now
  const json now = json::parse(client_->Get(base + "/web-pdb").value().body);
  EXPECT_EQ(now["metadata"]["generation"], 2);
  EXPECT_EQ(now["status"]["disruptionsAllowed"], 0);  // H 2, D 2
  EXPECT_EQ(now["status"]["desiredHealthy"], 2);
  EXPECT_EQ(RefusalCause(Evict("web-0")),
            "The disruption budget web-pdb needs 2 healthy pods and has 2 currently");

  json both = pdb;
  both["metadata"]["name"] = "both";
  both["spec"]["maxUnavailable"] = 1;
  EXPECT_EQ(client_->Post(base, both.dump()).value().status, 422);
  json over = pdb;
  over["metadata"]["name"] = "over";
  over["spec"]["minAvailable"] = "150%";
  EXPECT_EQ(client_->Post(base, over.dump()).value().status, 422);

  const json list = json::parse(client_->Get(base).value().body);
  EXPECT_EQ(list["kind"], "PodDisruptionBudgetList");
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "web-pdb");

  EXPECT_EQ(client_->Delete(base + "/web-pdb").value().status, 200);
  EXPECT_EQ(client_->Get(base + "/web-pdb").value().status, 404);
  EXPECT_EQ(client_->Delete(base + "/web-pdb").value().status, 404);
  EXPECT_EQ(Evict("web-0").status, 201);  // no budget any more
}

TEST_F(FakeEvictionTest, AddPodIsUnchangedAndSetPodRunningIsAModification) {
  api_.AddPod(kNs, "plain", Requests(), {{"a", "b"}});
  const json plain = api_.Get("pods", "ml/plain").value();
  EXPECT_FALSE(plain["metadata"].contains("labels"));
  EXPECT_FALSE(plain["metadata"].contains("ownerReferences"));
  EXPECT_EQ(plain["status"], json({{"phase", "Pending"}}));

  auto list = client_->Get("/api/v1/pods");
  ASSERT_TRUE(list.has_value());
  const std::string rv = json::parse(list->body)["metadata"]["resourceVersion"];
  api_.SetPodRunning(kNs, "plain");
  api_.SetPodRunning(kNs, "plain", /*ready=*/false);
  const std::vector<json> events = WatchPodsFrom(rv);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "MODIFIED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  const json status = events[1]["object"]["status"];
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["conditions"], json::array({{{"type", "Ready"}, {"status", "False"}}}));
}

}  // namespace
}  // namespace tessera::k8s
