// Pods and nodes as the API server serialises them, and the workload a pod becomes.
#include "k8s/objects.h"

#include <gtest/gtest.h>

#include "k8s/informer.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// json::value throws on a member of another type, so a watch event whose metadata.name is a
// number would end the scheduler's watch thread. StringMember reads it as absent.
TEST(ObjectsTest, AMistypedStringMemberReadsAsAbsent) {
  const nlohmann::json m = {{"name", 7}, {"namespace", "ns"}, {"uid", nullptr}};
  EXPECT_EQ(StringMember(m, "name"), "");
  EXPECT_EQ(StringMember(m, "namespace"), "ns");
  EXPECT_EQ(StringMember(m, "uid", "none"), "none");
  EXPECT_EQ(StringMember(m, "missing", "d"), "d");
  EXPECT_EQ(StringMember(nlohmann::json::array(), "name", "d"), "d");
  const nlohmann::json pod = {{"metadata", {{"name", {"x"}}, {"namespace", "ns"}}}};
  EXPECT_EQ(Informer::KeyOf(pod), "ns/");
}

TEST(ObjectsTest, QuantitiesFollowKubernetesSuffixes) {
  struct Case {
    const char* text;
    int64_t scale;
    int64_t want;
  } cases[] = {{"250m", 1000, 250},   {"2", 1000, 2000},       {"1.5", 1000, 1500},
               {"0.1", 1000, 100},    {"512Mi", 1, 536870912}, {"1Gi", 1, 1073741824},
               {"1G", 1, 1000000000}, {"1k", 1, 1000},         {"1e3", 1, 1000},
               {"500.5m", 1000, 501}};  // rounded up, as Kubernetes does
  for (const Case& c : cases) {
    auto q = ParseQuantity(c.text, c.scale);
    ASSERT_TRUE(q.has_value()) << c.text;
    EXPECT_EQ(*q, c.want) << c.text;
  }
  for (const char* bad : {"", "abc", "1x", "-1", "Mi", "+1"}) {
    EXPECT_FALSE(ParseQuantity(bad).has_value()) << bad;
  }
}

json PodJson(json requests, json annotations = json::object()) {
  return {
      {"metadata",
       {{"name", "p"}, {"namespace", "ns"}, {"uid", "u-1"}, {"annotations", annotations}}},
      {"spec",
       {{"schedulerName", "tessera"},
        {"containers",
         {{{"name", "a"}, {"resources", {{"requests", requests}}}},
          {{"name", "b"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}},
        {"initContainers", {{{"name", "init"}, {"resources", {{"requests", {{"cpu", "4"}}}}}}}}}},
      {"status", {{"phase", "Pending"}}}};
}

TEST(ObjectsTest, PodRequestsSumContainersAndTakeTheLargerInit) {
  auto pod = PodFromJson(PodJson({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}));
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(pod->Key(), "ns/p");
  EXPECT_EQ(pod->cpu_milli, 4000);  // max(1 + 0.5, init 4)
  EXPECT_EQ(pod->memory_mib, 1024);
  auto w = WorkloadFromPod(*pod, 7);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->gpu.count, 2);
  EXPECT_EQ(w->gpu.milli, 1000);
}

// The Ready condition as the kubelet reports it: none while the status has none (the QPS age
// then runs from the bind), else True or anything else.
TEST(ObjectsTest, PodReadinessIsItsReadyCondition) {
  json j = PodJson({{"cpu", "1"}});
  EXPECT_FALSE(PodFromJson(j)->ready.has_value());
  j["status"]["conditions"] = {{{"type", "PodScheduled"}, {"status", "True"}},
                               {{"type", "Ready"}, {"status", "False"}}};
  EXPECT_EQ(PodFromJson(j)->ready, false);
  j["status"]["conditions"][1]["status"] = "True";
  EXPECT_EQ(PodFromJson(j)->ready, true);
  j["status"]["conditions"][1]["status"] = "Unknown";
  EXPECT_EQ(PodFromJson(j)->ready, false);
}

TEST(ObjectsTest, GpuRequestsAndAnnotationsBecomeTheWorkload) {
  struct Case {
    json requests;
    json annotations;
    int count, milli;
    int64_t memory;
    std::string mig;
  } cases[] = {
      {{{"tessera.io/gpu-milli", "300"}}, {}, 1, 300, 0, ""},
      {{{"tessera.io/gpu-milli", "300"}, {"tessera.io/gpu-memory", "4096"}}, {}, 1, 300, 4096, ""},
      {{{"tessera.io/gpu-memory", "4Gi"}}, {}, 1, 1000, 4096, ""},
      {{{"nvidia.com/mig-1g.5gb", "1"}}, {}, 1, 1000, 0, "1g.5gb"},
      {{},
       {{"tessera.io/gpu-milli", "500"}, {"tessera.io/gpu-memory", "10240"}},
       1,
       500,
       10240,
       ""},
      {{{"cpu", "1"}}, {}, 0, 1000, 0, ""},
  };
  for (const Case& c : cases) {
    auto pod = PodFromJson(PodJson(c.requests, c.annotations));
    ASSERT_TRUE(pod.has_value());
    auto w = WorkloadFromPod(*pod, 1);
    ASSERT_TRUE(w.has_value()) << c.requests.dump() << ": " << w.error().message;
    EXPECT_EQ(w->gpu.count, c.count) << c.requests.dump();
    EXPECT_EQ(w->gpu.milli, c.milli) << c.requests.dump();
    EXPECT_EQ(w->gpu.memory_mib, c.memory) << c.requests.dump();
    EXPECT_EQ(w->gpu.mig_profile, c.mig) << c.requests.dump();
  }
  auto pod = PodFromJson(PodJson({}, {{"tessera.io/app", "onnx/resnet50/bs1"},
                                      {"tessera.io/slo-qps", "87.5"},
                                      {"tessera.io/slo-latency-ms", "20"},
                                      {"tessera.io/class", "offline"},
                                      {"tessera.io/priority", "-3"},
                                      {"tessera.io/gpu-models", "A100-40GB, V100-32GB"},
                                      {"tessera.io/goal-s", "600"},
                                      {"tessera.io/goal-z", "2"},
                                      {"kubectl.kubernetes.io/restartedAt", "x"}}));
  auto w = WorkloadFromPod(*pod, 1);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->app, "onnx/resnet50/bs1");
  EXPECT_EQ(w->slo_qps, 87.5);
  EXPECT_EQ(w->slo_latency_ms, 20);
  EXPECT_EQ(w->klass, model::WorkloadClass::kOffline);
  EXPECT_EQ(w->priority, -3);
  EXPECT_EQ(w->gpu.models.size(), 2u);
  EXPECT_EQ(w->goal_s, 600);  // seed 002's τ and z, for drmaestro
  EXPECT_EQ(w->goal_z, 2);
}

// spec.priority, which the admission controller copies from the pod's PriorityClass, orders the
// scheduler's queue; the tessera.io/priority annotation overrides it. A priority that is not a
// 32-bit integer refuses the pod, naming it and the field.
TEST(ObjectsTest, SpecPriorityIsThePodsPriorityUnlessAnnotated) {
  json object = PodJson({});
  object["spec"]["priority"] = 1000000;
  auto pod = PodFromJson(object);
  ASSERT_TRUE(pod.has_value()) << pod.error().message;
  EXPECT_EQ(pod->priority, 1000000);
  auto w = WorkloadFromPod(*pod, 1);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->priority, 1000000);
  object["metadata"]["annotations"] = {{"tessera.io/priority", "7"}};
  auto annotated = WorkloadFromPod(*PodFromJson(object), 1);
  ASSERT_TRUE(annotated.has_value());
  EXPECT_EQ(annotated->priority, 7);
  auto unset = WorkloadFromPod(*PodFromJson(PodJson({})), 1);
  ASSERT_TRUE(unset.has_value());
  EXPECT_EQ(unset->priority, 0);
  for (const json& bad : {json("high"), json(2.5), json(int64_t{1} << 40)}) {
    object["spec"]["priority"] = bad;
    auto refused = PodFromJson(object);
    ASSERT_FALSE(refused.has_value()) << bad.dump();
    EXPECT_EQ(refused.error().message,
              "pod ns/p: spec.priority: " + bad.dump() + " is not a 32-bit integer");
  }
}

// spec.preemptionPolicy (from the PriorityClass too): PreemptLowerPriority, the default, lets the
// pod preempt; Never does not. Anything else refuses the pod, naming it and the field.
TEST(ObjectsTest, PreemptionPolicyNeverKeepsAPodFromPreempting) {
  json object = PodJson({});
  EXPECT_TRUE(PodFromJson(object)->preempts);
  object["spec"]["preemptionPolicy"] = "Never";
  EXPECT_FALSE(PodFromJson(object)->preempts);
  object["spec"]["preemptionPolicy"] = "PreemptLowerPriority";
  EXPECT_TRUE(PodFromJson(object)->preempts);
  for (const json& bad : {json("never"), json(true)}) {
    object["spec"]["preemptionPolicy"] = bad;
    auto refused = PodFromJson(object);
    ASSERT_FALSE(refused.has_value()) << bad.dump();
    EXPECT_EQ(refused.error().message, "pod ns/p: spec.preemptionPolicy: " + bad.dump() +
                                           " is not PreemptLowerPriority or Never");
  }
}

// `tessera.io/feature.<name>` annotations (docs/kubernetes.md, "What a pod says"); a number is
// a number, other text a category.
TEST(ObjectsTest, FeatureAnnotationsBecomeTheWorkloadsFeatures) {
  auto pod = PodFromJson(PodJson({}, {{"tessera.io/app", "bert-base/bs32/seq128"},
                                      {"tessera.io/feature.model", "bert-base"},
                                      {"tessera.io/feature.task", "nlp"},
                                      {"tessera.io/feature.batch", "32"},
                                      {"tessera.io/feature.seq", "128"},
                                      {"tessera.io/feature.params", "1.1e8"},
                                      {"tessera.io/feature.framework", "onnx runtime"}}));
  ASSERT_TRUE(pod.has_value());
  auto w = WorkloadFromPod(*pod, 1);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  const model::AppFeatures want{{"model", "bert-base"}, {"task", "nlp"},
                                {"batch", 32.0},        {"seq", 128.0},
                                {"params", 1.1e8},      {"framework", "onnx runtime"}};
  EXPECT_EQ(w->features, want);
  EXPECT_EQ(w->app, "bert-base/bs32/seq128");

  auto plain = WorkloadFromPod(*PodFromJson(PodJson({{"nvidia.com/gpu", "1"}})), 2);
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->features.empty());  // features are optional
}

TEST(ObjectsTest, MalformedInputNamesThePodAndTheAnnotation) {
  struct Case {
    json requests;
    json annotations;
    std::string want;
  } cases[] = {
      {{},
       {{"tessera.io/slo-qps", "-1"}},
       "pod ns/p: annotation tessera.io/slo-qps: '-1' is not a non-negative number"},
      {{},
       {{"tessera.io/goal-z", "11"}},
       "pod ns/p: annotation tessera.io/goal-z: '11' is not an integer 1..10"},
      {{},
       {{"tessera.io/class", "batch"}},
       "pod ns/p: annotation tessera.io/class: 'batch' is not online or offline"},
      {{},
       {{"tessera.io/priority", "high"}},
       "pod ns/p: annotation tessera.io/priority: 'high' is not an integer"},
      {{},
       {{"tessera.io/gpu-models", "A100-40GB,Z9000"}},
       "pod ns/p: annotation tessera.io/gpu-models: 'A100-40GB,Z9000' names 'Z9000', not a "
       "catalog GPU model"},
      {{},
       {{"tessera.io/gpu-milli", "1500"}},
       "pod ns/p: annotation tessera.io/gpu-milli: '1500' is not an integer share 1..1000"},
      {{},
       {{"tessera.io/app", ""}},
       "pod ns/p: annotation tessera.io/app: '' is not an application key (non-empty, no "
       "spaces)"},
      {{{"tessera.io/gpu-milli", "300"}},
       {{"tessera.io/gpu-milli", "300"}},
       "pod ns/p: annotation tessera.io/gpu-milli: the share is also requested as a resource"},
      {{},
       {{"tessera.io/feature.Batch", "32"}},
       "pod ns/p: annotation tessera.io/feature.Batch: feature name 'Batch' may hold only a-z, "
       "0-9, '_', '-' and '.'"},
      {{},
       {{"tessera.io/feature.", "32"}},
       "pod ns/p: annotation tessera.io/feature.: feature name '' must be 1-63 characters"},
      {{},
       {{"tessera.io/feature.batch", ""}},
       "pod ns/p: annotation tessera.io/feature.batch: empty feature value"},
      {{},
       {{"tessera.io/feature.batch", "inf"}},
       "pod ns/p: annotation tessera.io/feature.batch: feature value 'inf' is not finite"},
      {{},
       {{"tessera.io/feature.model", "bert "}},
       "pod ns/p: annotation tessera.io/feature.model: feature value 'bert ' has leading or "
       "trailing spaces"},
      {{},
       {{"tessera.io/features.model", "bert"}},
       "pod ns/p: annotation tessera.io/features.model: unknown Tessera annotation (see "
       "docs/kubernetes.md)"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/mig-1g.5gb", "1"}},
       {},
       "pod ns/p: resource nvidia.com/mig-1g.5gb: cannot be combined with nvidia.com/gpu"},
      {{{"nvidia.com/gpu", "2"}, {"tessera.io/gpu-milli", "500"}},
       {},
       "pod ns/p: workload ns/p: a share of a GPU (500 milli) can only be asked for one GPU, "
       "not 2"},
  };
  for (const Case& c : cases) {
    auto pod = PodFromJson(PodJson(c.requests, c.annotations));
    ASSERT_TRUE(pod.has_value());
    auto w = WorkloadFromPod(*pod, 1);
    ASSERT_FALSE(w.has_value()) << c.want;
    EXPECT_EQ(w.error().message, c.want);
  }
  auto bad = PodFromJson(PodJson({{"cpu", "lots"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "pod ns/p: resource cpu: 'lots' is not a Kubernetes quantity");
  EXPECT_FALSE(PodFromJson(json::array()).has_value());
}

// A pod's spec in the wrong JSON shape is an error naming the field, never a pod that asks for
// nothing (a CPU-only pod passes every GPU filter).
TEST(ObjectsTest, ContainersAndResourcesOfTheWrongShapeNameTheField) {
  const json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "ns"}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"resources",
            {{"requests", {{"nvidia.com/gpu", "1"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  ASSERT_TRUE(PodFromJson(pod).has_value());
  struct Case {
    json::json_pointer at;
    json value;
    std::string want;
  } cases[] = {
      {json::json_pointer("/spec/containers"), pod["spec"]["containers"][0],
       "pod ns/p: spec.containers is an object, not an array"},
      {json::json_pointer("/spec/containers"), "c",
       "pod ns/p: spec.containers is a string, not an array"},
      {json::json_pointer("/spec/containers/0"), json::array(),
       "pod ns/p: spec.containers[0] is an array, not an object"},
      {json::json_pointer("/spec/containers/0/resources"), "nvidia.com/gpu: 1",
       "pod ns/p: spec.containers[0].resources is a string, not an object"},
      {json::json_pointer("/spec/containers/0/resources/requests"), json::array({"cpu"}),
       "pod ns/p: spec.containers[0].resources.requests is an array, not an object"},
      {json::json_pointer("/spec/containers/0/resources/limits"), 1,
       "pod ns/p: spec.containers[0].resources.limits is a number, not an object"},
      {json::json_pointer("/spec/initContainers"), json::object(),
       "pod ns/p: spec.initContainers is an object, not an array"},
      {json::json_pointer("/spec"), json::array(), "pod ns/p: spec is an array, not an object"},
      {json::json_pointer("/metadata/annotations"), "tessera.io/app=x",
       "pod ns/p: metadata.annotations is a string, not an object"},
  };
  for (const Case& c : cases) {
    json bad = pod;
    bad[c.at] = c.value;
    auto got = PodFromJson(bad);
    ASSERT_FALSE(got.has_value()) << c.want;
    EXPECT_EQ(got.error().message, c.want);
  }
  // Absent or null fields are what the API server leaves out: nothing requested.
  json bare = pod;
  bare["spec"]["containers"][0]["resources"] = nullptr;
  bare["spec"]["initContainers"] = nullptr;
  ASSERT_TRUE(PodFromJson(bare).has_value());
}

TEST(ObjectsTest, NodeReadinessAndAllocatable) {
  json n = {{"metadata", {{"name", "gpu-0"}, {"labels", {{"zone", "a"}}}}},
            {"spec", {{"unschedulable", true}}},
            {"status",
             {{"allocatable", {{"cpu", "63500m"}, {"memory", "515517Mi"}}},
              {"conditions",
               {{{"type", "MemoryPressure"}, {"status", "False"}},
                {{"type", "Ready"}, {"status", "True"}}}}}}};
  auto node = NodeFromJson(n);
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(node->ready);
  EXPECT_TRUE(node->unschedulable);
  EXPECT_EQ(node->cpu_milli, 63500);
  EXPECT_EQ(node->memory_mib, 515517);
  EXPECT_EQ(node->labels.at("zone"), "a");
}

}  // namespace
}  // namespace tessera::k8s
