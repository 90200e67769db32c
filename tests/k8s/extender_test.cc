// The extender against request bodies shaped exactly like kube-scheduler's (Go field names,
// a full v1.Pod, NodeNames or a v1.NodeList), over real HTTP on loopback, and its bind
// against the in-process API server.
// Before anything that includes <resolv.h> (cpp-httplib does), whose `_res` macro breaks Eigen.
#include "predict/predictor.h"
//
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <memory>

#include "fake_api_server.h"
#include "k8s/extender.h"
#include "k8s_fixtures.h"
#include "slow_clients.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::A100Inventory;
using testing_support::CredentialsFor;
using testing_support::FakeApiServer;
using testing_support::WaitFor;

// A v1.Pod as the API server serialises it and kube-scheduler forwards it.
json KubePod(const std::string& name, int gpu_milli, json annotations = json::object()) {
  if (annotations.empty()) annotations = {{"tessera.io/app", "onnx/bert/bs8"}};
  json pod = json::parse(R"({
    "metadata": {"namespace": "inference", "resourceVersion": "4711",
                 "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"app": "bert"}},
    "spec": {"schedulerName": "default-scheduler", "priority": 0,
             "containers": [{"name": "server", "image": "triton:24.01",
                             "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]},
    "status": {"phase": "Pending", "qosClass": "Burstable"}})");
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "uid-" + name;
  pod["metadata"]["annotations"] = annotations;
  json& res = pod["spec"]["containers"][0]["resources"];
  res["requests"]["tessera.io/gpu-milli"] = std::to_string(gpu_milli);
  res["limits"]["tessera.io/gpu-milli"] = std::to_string(gpu_milli);
  return pod;
}

json KubeNode(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}}}}}};
}

// filter/prioritize arguments: bert-0 asking a quarter GPU, on node gpu-0 (NodeNames).
std::string Bert0Args() {
  return json{{"Pod", KubePod("bert-0", 250)}, {"NodeNames", {"gpu-0"}}}.dump();
}

// Starts `ext` and serves it on a free loopback port: the port, or why not.
Expected<int> StartAndServe(Extender& ext) {
  if (auto ok = ext.Start(); !ok) return std::unexpected(ok.error());
  return ext.Serve("127.0.0.1", 0);
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 0; n < 2; ++n) {
      ASSERT_TRUE(store_.PutInventory(A100Inventory("gpu-" + std::to_string(n), 2)).has_value());
    }
    // gpu-1's two GPUs are fully taken.
    for (int g = 0; g < 2; ++g) {
      store::PlacementRecord r{"busy-" + std::to_string(g),
                               "gpu-1",
                               "busy",
                               "inference",
                               {{"GPU-gpu-1-" + std::to_string(g), 1000, 0}}};
      ASSERT_TRUE(store_.PutPlacement(r).value().applied);
    }
  }
  SteadyClock clock_;
  store::MemoryStore store_{clock_};
};

TEST_F(ExtenderTest, FilterAnswersInTheFormItWasAsked) {
  Extender ext(store_, clock_, {}, nullptr);
  ASSERT_TRUE(ext.Start().has_value());
  // nodeCacheCapable: names in, names out.
  json args = {{"Pod", KubePod("bert-0", 250)},
               {"Nodes", nullptr},
               {"NodeNames", {"gpu-0", "gpu-1", "cpu-0"}}};
  auto r = ext.Filter(args.dump());
  ASSERT_EQ(r.status, 200);
  json res = json::parse(r.body);
  EXPECT_EQ(res["NodeNames"], json({"gpu-0"}));
  EXPECT_TRUE(res["Nodes"].is_null());
  EXPECT_EQ(res["Error"], "");
  ASSERT_TRUE(res["FailedNodes"].contains("gpu-1"));
  EXPECT_EQ(res["FailedAndUnresolvableNodes"]["cpu-0"],
            "no GPU inventory from a Tessera agent on this node");
  // Full Node objects in, the passing Node objects out, untouched.
  json args2 = {
      {"Pod", KubePod("bert-0", 250)},
      {"Nodes", {{"metadata", json::object()}, {"items", {KubeNode("gpu-0"), KubeNode("gpu-1")}}}},
      {"NodeNames", nullptr}};
  json res2 = json::parse(ext.Filter(args2.dump()).body);
  ASSERT_EQ(res2["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(res2["Nodes"]["items"][0], KubeNode("gpu-0"));
  EXPECT_TRUE(res2["NodeNames"].is_null());
  ext.Stop();
}

// As the scheduler: a GPU whose agent judges its MPS server stuck takes no new pod.
TEST_F(ExtenderTest, AGpuWhoseMpsServerIsStuckIsNotOffered) {
  store::NodeInventory inv = A100Inventory("gpu-0", 2);
  inv.generation = 2;
  inv.gpus[0].mps_stuck = inv.gpus[1].mps_stuck = true;
  ASSERT_TRUE(store_.PutInventory(inv).has_value());
  const std::string args = json{{"Pod", KubePod("bert-0", 250)}, {"NodeNames", {"gpu-0"}}}.dump();
  {
    Extender ext(store_, clock_, {}, nullptr);
    ASSERT_TRUE(ext.Start().has_value());
    json res = json::parse(ext.Filter(args).body);
    EXPECT_EQ(res["NodeNames"], json::array());
    EXPECT_TRUE(res["FailedNodes"].contains("gpu-0")) << res.dump();
    ext.Stop();
  }
  inv.generation = 3;
  inv.gpus[1].mps_stuck = false;  // one of the two recovered
  ASSERT_TRUE(store_.PutInventory(inv).has_value());
  Extender ext(store_, clock_, {}, nullptr);
  ASSERT_TRUE(ext.Start().has_value());
  json res = json::parse(ext.Filter(args).body);
  EXPECT_EQ(res["NodeNames"], json({"gpu-0"}));
  ext.Stop();
}

// As under `tessera schedule` (SchedulerTest.DeclaredFeatures…): a pod's tessera.io/feature.*
// declarations reach the predictor before the policy judges it; one the feature table refuses
// leaves the pod judged all the same, with one FeaturesIgnored event however often it is asked.
TEST_F(ExtenderTest, DeclaredFeaturesReachThePredictorAndABadOneOnlyWarns) {
  predict::ProfileMatrix profile;
  const int cfg = profile.AddCol("A100-SXM4-40GB/whole/100");
  profile.Observe(profile.AddRow("bert/bs1"), cfg, 100);
  profile.Observe(profile.AddRow("bert/bs4"), cfg, 380);
  predict::FeatureTable features;
  ASSERT_TRUE(features.Set("bert/bs1", {{"batch", 1.0}}).has_value());
  ASSERT_TRUE(features.Set("bert/bs4", {{"batch", 4.0}}).has_value());
  predict::PredictorOptions options;
  options.method = "features";
  auto predictor = predict::Predictor::Create(profile, {}, options, features);
  ASSERT_TRUE(predictor.has_value()) << predictor.error().message;
  FakeApiServer api;
  auto client = ApiClient::Create(CredentialsFor(api));
  ASSERT_TRUE(client.has_value());
  ExtenderConfig config;
  config.predictor = &*predictor;
  config.learner = &*predictor;
  Extender ext(store_, clock_, config, client->get());
  ASSERT_TRUE(ext.Start().has_value());
  const uint64_t generation = predictor->generation();

  json good = {
      {"Pod", KubePod("new-model", 250,
                      {{"tessera.io/app", "bert/bs2"}, {"tessera.io/feature.batch", "2"}})},
      {"NodeNames", {"gpu-0"}}};
  EXPECT_EQ(json::parse(ext.Filter(good.dump()).body)["NodeNames"], json({"gpu-0"}));
  // The declared application has a row, refitted from its features: between its neighbours.
  const std::optional<predict::AppId> app = predictor->FindApp("bert/bs2");
  ASSERT_TRUE(app.has_value());
  const double qps =
      predictor->IsolatedAt(*app, *predictor->FindConfig("A100-SXM4-40GB/whole/100"));
  EXPECT_GT(qps, 100);
  EXPECT_LT(qps, 380);
  EXPECT_GT(predictor->generation(), generation);
  // Asked again (prioritize, a retry): the same declaration is no change, and no refit.
  const uint64_t refitted = predictor->generation();
  EXPECT_EQ(ext.Prioritize(good.dump()).status, 200);
  EXPECT_EQ(predictor->generation(), refitted);

  // batch is numeric in the table: a categorical batch is refused, the pod still judged.
  json odd = {
      {"Pod",
       KubePod("odd", 250, {{"tessera.io/app", "bert/bs8"}, {"tessera.io/feature.batch", "big"}})},
      {"NodeNames", {"gpu-0"}}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(json::parse(ext.Filter(odd.dump()).body)["NodeNames"], json({"gpu-0"}));
    EXPECT_EQ(ext.Prioritize(odd.dump()).status, 200);
  }
  EXPECT_FALSE(predictor->FindApp("bert/bs8").has_value());
  std::vector<json> warned;
  for (const json& e : api.All("events")) {
    if (e["reason"] == "FeaturesIgnored") warned.push_back(e);
  }
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0]["involvedObject"]["name"], "odd");
  EXPECT_EQ(warned[0]["type"], "Warning");
  EXPECT_NE(warned[0]["message"].get<std::string>().find("feature 'batch' is categorical"),
            std::string::npos);
  ext.Stop();
}

TEST_F(ExtenderTest, PrioritizeScoresZeroToTen) {
  ExtenderConfig cfg;
  cfg.policy = "best-fit";
  Extender ext(store_, clock_, cfg, nullptr);
  ASSERT_TRUE(ext.Start().has_value());
  json args = {{"Pod", KubePod("bert-0", 250)}, {"NodeNames", {"gpu-0", "gpu-1", "cpu-0"}}};
  auto r = ext.Prioritize(args.dump());
  ASSERT_EQ(r.status, 200);
  json list = json::parse(r.body);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["Host"], "gpu-0");
  EXPECT_GE(list[0]["Score"].get<int>(), 0);
  EXPECT_LE(list[0]["Score"].get<int>(), 10);
  EXPECT_EQ(list[1], json({{"Host", "gpu-1"}, {"Score", 0}}));  // full
  EXPECT_EQ(list[2], json({{"Host", "cpu-0"}, {"Score", 0}}));  // unknown to Tessera
  ext.Stop();
}

TEST_F(ExtenderTest, BadInputGetsOneErrorNamingTheObject) {
  Extender ext(store_, clock_, {}, nullptr);
  ASSERT_TRUE(ext.Start().has_value());
  json bad = {{"Pod", KubePod("bert-bad", 250, {{"tessera.io/class", "urgent"}})},
              {"NodeNames", {"gpu-0"}}};
  json res = json::parse(ext.Filter(bad.dump()).body);
  EXPECT_EQ(res["Error"],
            "pod inference/bert-bad: annotation tessera.io/class: 'urgent' is not online or "
            "offline");
  auto p = ext.Prioritize(bad.dump());
  EXPECT_EQ(p.status, 400);
  EXPECT_NE(p.body.find("tessera.io/class"), std::string::npos);
  EXPECT_EQ(json::parse(ext.Filter("{not json").body)["Error"],
            "request body is not a JSON object");
  EXPECT_EQ(json::parse(ext.Filter(R"({"Pod": {"metadata": {"name": "x"}}})").body)["Error"],
            "pod default/x: request has neither NodeNames nor Nodes.items");
  EXPECT_EQ(json::parse(ext.Bind("[]").body)["Error"], "bind: body is not a JSON object");
  // A binding argument of another type than string (a case fuzz/extender_body.cc reaches) is
  // one error naming the member, not an exception thrown out of Bind.
  EXPECT_EQ(json::parse(ext.Bind(R"({"PodName":"b0","Node":["gpu-0","gpu-1"]})").body)["Error"],
            "bind: Node must be a string");
  EXPECT_EQ(json::parse(ext.Bind(R"({"PodName":7,"Node":"gpu-0"})").body)["Error"],
            "bind: PodName must be a string");
  // Still serving.
  json good = {{"Pod", KubePod("bert-1", 250)}, {"NodeNames", {"gpu-0"}}};
  EXPECT_EQ(json::parse(ext.Filter(good.dump()).body)["NodeNames"], json({"gpu-0"}));
  ext.Stop();
}

// A pod whose containers or resources have the wrong JSON shape is not read as asking for no
// GPU (which would pass every node); it gets one error naming the field, and the extender keeps
// serving.
TEST_F(ExtenderTest, APodOfTheWrongShapeIsAnErrorNotACpuOnlyPod) {
  Extender ext(store_, clock_, {}, nullptr);
  ASSERT_TRUE(ext.Start().has_value());
  json dict = KubePod("bert-dict", 250);
  dict["spec"]["containers"] = dict["spec"]["containers"][0];  // an object, not a list
  json text = KubePod("bert-text", 250);
  text["spec"]["containers"][0]["resources"] = "tessera.io/gpu-milli: 250";
  for (const auto& [pod, want] :
       {std::pair{dict, "pod inference/bert-dict: spec.containers is an object, not an array"},
        std::pair{text,
                  "pod inference/bert-text: spec.containers[0].resources is a string, not an "
                  "object"}}) {
    json args = {{"Pod", pod}, {"NodeNames", {"gpu-0", "gpu-1"}}};
    json res = json::parse(ext.Filter(args.dump()).body);
    EXPECT_EQ(res["Error"], want);
    EXPECT_TRUE(res["NodeNames"].is_null() || res["NodeNames"].empty()) << res.dump();
    EXPECT_EQ(ext.Prioritize(args.dump()).status, 400);
  }
  json good = {{"Pod", KubePod("bert-2", 250)}, {"NodeNames", {"gpu-0"}}};
  EXPECT_EQ(json::parse(ext.Filter(good.dump()).body)["NodeNames"], json({"gpu-0"}));
  ext.Stop();
}

// The body limit is 4 MiB by default (a v1.Pod is at most 1.5 MiB, etcd's request limit, and
// 5,000 node names of at most 253 characters take 1.3 MB): a request one byte over it is
// refused with 413 before it is stored, one of exactly 4 MiB is served, and so is the next.
TEST_F(ExtenderTest, ABodyOverTheLimitIsRefusedWith413AndTheExtenderStaysUp) {
  Extender ext(store_, clock_, {}, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  std::string body = Bert0Args();
  ASSERT_LT(body.size(), size_t{4} << 20);
  body.resize(size_t{4} << 20, ' ');  // JSON allows trailing white space
  httplib::Client http("127.0.0.1", *port);
  auto at_limit = http.Post("/filter", body, "application/json");
  ASSERT_TRUE(at_limit) << httplib::to_string(at_limit.error());
  EXPECT_EQ(at_limit->status, 200);
  EXPECT_EQ(json::parse(at_limit->body)["NodeNames"], json({"gpu-0"}));
  auto over = http.Post("/filter", body + " ", "application/json");
  ASSERT_TRUE(over) << httplib::to_string(over.error());
  EXPECT_EQ(over->status, 413);
  auto after = http.Post("/prioritize", body, "application/json");
  ASSERT_TRUE(after) << httplib::to_string(after.error());
  EXPECT_EQ(after->status, 200);
  ext.Stop();
}

// A 4 MiB body of nested '[' would take 139 MB to parse (eight at once, 1.2 GB: over the
// manifest's memory limit). A body nested deeper than kMaxJsonDepth is refused unparsed, over
// HTTP with 400 and a message saying why, on every verb; the extender keeps serving. Brackets
// inside strings do not count, and a body nested exactly to the limit is parsed.
TEST_F(ExtenderTest, ABodyNestedPastTheDepthLimitIsRefusedUnparsed) {
  const int limit = ExtenderConfig::kMaxJsonDepth;
  EXPECT_EQ(limit, 64);
  EXPECT_TRUE(JsonDepthWithin(std::string(64, '[') + std::string(64, ']'), 64));
  EXPECT_FALSE(JsonDepthWithin(std::string(65, '['), 64));
  EXPECT_FALSE(JsonDepthWithin("{\"a\":" + std::string(64, '['), 64));
  EXPECT_TRUE(JsonDepthWithin("[\"" + std::string(100, '[') + "\"]", 64));
  EXPECT_TRUE(JsonDepthWithin(R"(["\"[[[[", "\\", [[]]])", 3));
  EXPECT_FALSE(JsonDepthWithin(R"(["\\", [[[]]]])", 3));

  Extender ext(store_, clock_, {}, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  httplib::Client http("127.0.0.1", *port);
  const std::string hostile(size_t{4} << 20, '[');  // at the size limit, so not a 413
  const std::string want = "request body nests arrays or objects deeper than 64 levels";
  for (const char* verb : {"/filter", "/prioritize", "/bind"}) {
    auto r = http.Post(verb, hostile, "application/json");
    ASSERT_TRUE(r) << verb << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 400) << verb;
    EXPECT_EQ(json::parse(r->body)["Error"], want) << verb;
  }
  // Called directly, the verbs answer as for any malformed body.
  EXPECT_EQ(json::parse(ext.Filter(hostile).body)["Error"],
            "request body nests arrays or objects deeper than 64 levels");
  EXPECT_EQ(ext.Prioritize(hostile).status, 400);
  EXPECT_EQ(json::parse(ext.Bind(hostile).body)["Error"],
            "bind: body nests arrays or objects deeper than 64 levels");
  // A request nested exactly to the limit (an unknown member 63 deep, in the 1 of the object)
  // is still served.
  json deep = json::array();
  for (int i = 0; i < limit - 2; ++i) deep = json::array({deep});
  json args = {{"Pod", KubePod("bert-deep", 250)}, {"NodeNames", {"gpu-0"}}, {"Extra", deep}};
  auto ok = http.Post("/filter", args.dump(), "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body)["NodeNames"], json({"gpu-0"}));
  ext.Stop();
}

// A body shallow but wide — 4 MiB of "[]," items, 1.4 M JSON values — would parse into about
// 80 MB, and eight at once would take the extender to 510 MB. Counted from above (brackets,
// braces and commas outside strings, plus one), a body of more than kMaxJsonValues values is
// refused unparsed with 400; a body at the limit is served.
TEST_F(ExtenderTest, ABodyWithTooManyValuesIsRefusedUnparsed) {
  EXPECT_TRUE(JsonValuesWithin("[1,2,3]", 4));  // [ , , : 3 counted, plus one
  EXPECT_FALSE(JsonValuesWithin("[1,2,3]", 3));
  EXPECT_TRUE(JsonValuesWithin(R"(["a,b,c,d", "[{"])", 3));  // in strings: not counted
  EXPECT_TRUE(JsonValuesWithin(R"({"a\",":1})", 2));  // after an escaped quote: still a string
  EXPECT_EQ(ExtenderConfig::kMaxJsonValues, 250000u);

  Extender ext(store_, clock_, {}, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  httplib::Client http("127.0.0.1", *port);
  std::string wide = "[";
  for (size_t i = 0; i < ExtenderConfig::kMaxJsonValues; ++i) wide += "[],";
  wide += "[]]";
  auto r = http.Post("/filter", wide, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["Error"], "request body has more than 250000 JSON values");
  // NodeNames of 10,000 nodes (10,000 values and a pod's few dozen) is served.
  json names = json::array();
  for (int i = 0; i < 10000; ++i) names.push_back("n" + std::to_string(i));
  json args = {{"Pod", KubePod("bert-wide", 250)}, {"NodeNames", names}};
  auto ok = http.Post("/filter", args.dump(), "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  ext.Stop();
}

// Given a bearer token, the extender answers the verbs (POST /bind among them) only to a
// client that sends it (401 otherwise, the body unread), and the kubelet's probes still reach
// /healthz and /readyz without one.
TEST_F(ExtenderTest, WithABearerTokenTheVerbsAnswerOnlyClientsThatSendIt) {
  ExtenderConfig cfg;
  cfg.bearer_token = "s3cret-token";
  Extender ext(store_, clock_, cfg, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  const std::string body = Bert0Args();
  for (const char* verb : {"/filter", "/prioritize", "/bind"}) {
    for (const char* auth : {"", "Bearer wrong", "Bearer s3cret-token2", "Bearer s3cret-toke",
                             "Basic s3cret-token", "s3cret-token"}) {
      httplib::Client http("127.0.0.1", *port);
      httplib::Headers headers;
      if (*auth) headers.emplace("Authorization", auth);
      auto r = http.Post(verb, headers, body, "application/json");
      ASSERT_TRUE(r) << verb << " " << auth << ": " << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 401) << verb << " '" << auth << "'";
      EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
      EXPECT_NE(json::parse(r->body)["Error"].get<std::string>().find("unauthenticated"),
                std::string::npos);
    }
  }
  httplib::Client http("127.0.0.1", *port);
  auto r =
      http.Post("/filter", {{"Authorization", "Bearer s3cret-token"}}, body, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json({"gpu-0"}));
  for (const char* probe : {"/healthz", "/readyz"}) {
    auto p = http.Get(probe);
    ASSERT_TRUE(p) << probe;
    EXPECT_EQ(p->status, 200) << probe;
  }
  ext.Stop();
}

// kube-scheduler cannot send an extender a bearer token: its one credential is a client
// certificate (extenders[].tlsConfig.certFile/keyFile). Given a client CA, the extender serves
// the verbs to a client whose certificate that CA signed, refuses with 401 a client without
// one, and ends the handshake of a client whose certificate another CA signed. The probes
// need no certificate.
TEST_F(ExtenderTest, WithAClientCaTheVerbsAnswerOnlyCertificatesItSigned) {
  testing_support::TestPki pki;
  const std::string d = pki.dir;
  auto run = [](const std::string& cmd) {
    ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  };
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  for (const char* signer : {"ca", "other"}) {
    const std::string name = std::string("client-") + signer;
    run("openssl req" + ec + " -keyout " + d + "/" + name + ".key -out " + d + "/" + name +
        ".csr -subj /CN=kube-scheduler");
    run("openssl x509 -req -in " + d + "/" + name + ".csr -CA " + d + "/" + signer +
        ".crt -CAkey " + d + "/" + signer + ".key -CAcreateserial -out " + d + "/" + name +
        ".crt -days 2");
  }
  ExtenderConfig cfg;
  cfg.tls_cert_file = pki.cert_path;
  cfg.tls_key_file = pki.key_path;
  cfg.client_ca_file = d + "/ca.crt";
  Extender ext(store_, clock_, cfg, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  const std::string body = Bert0Args();
  auto client = [&](const std::string& name) {
    auto c = name.empty()
                 ? std::make_unique<httplib::SSLClient>("127.0.0.1", *port)
                 : std::make_unique<httplib::SSLClient>("127.0.0.1", *port, d + "/" + name + ".crt",
                                                        d + "/" + name + ".key");
    c->set_ca_cert_path(d + "/ca.crt");
    c->enable_server_certificate_verification(true);
    return c;
  };
  auto signed_by_ca = client("client-ca")->Post("/filter", body, "application/json");
  ASSERT_TRUE(signed_by_ca) << httplib::to_string(signed_by_ca.error());
  EXPECT_EQ(signed_by_ca->status, 200);
  EXPECT_EQ(json::parse(signed_by_ca->body)["NodeNames"], json({"gpu-0"}));
  auto none = client("")->Post("/bind", body, "application/json");
  ASSERT_TRUE(none) << httplib::to_string(none.error());
  EXPECT_EQ(none->status, 401);
  EXPECT_FALSE(client("client-other")->Post("/filter", body, "application/json"));
  auto probe = client("")->Get("/healthz");
  ASSERT_TRUE(probe) << httplib::to_string(probe.error());
  EXPECT_EQ(probe->status, 200);
  ext.Stop();

  ExtenderConfig plain;
  plain.client_ca_file = d + "/ca.crt";
  Extender no_tls(store_, clock_, plain, nullptr);
  auto refused = no_tls.Serve("127.0.0.1", 0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "client CA " + d +
                                         "/ca.crt: client certificates need HTTPS (a TLS "
                                         "certificate and key)");
}

// The shipped manifests run the extender on HTTPS (deploy/README.md): given a certificate and
// key it serves the protocol over TLS to a client that checks the certificate against its CA,
// as kube-scheduler does with tlsConfig.caFile; a client trusting another CA gets no answer,
// and nothing is served in clear on that port.
TEST_F(ExtenderTest, WithACertificateItServesHttpsThatTheCaVouchesFor) {
  testing_support::TestPki pki;
  ExtenderConfig cfg;
  cfg.tls_cert_file = pki.cert_path;
  cfg.tls_key_file = pki.key_path;
  Extender ext(store_, clock_, cfg, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  const std::string body = Bert0Args();
  httplib::SSLClient trusted("127.0.0.1", *port);
  trusted.set_ca_cert_path(pki.dir + "/ca.crt");
  trusted.enable_server_certificate_verification(true);
  auto r = trusted.Post("/filter", body, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json({"gpu-0"}));
  httplib::SSLClient wary("127.0.0.1", *port);
  wary.set_ca_cert_path(pki.dir + "/other.crt");
  wary.enable_server_certificate_verification(true);
  auto refused = wary.Get("/healthz");
  EXPECT_FALSE(refused);
  httplib::Client plain("127.0.0.1", *port);
  plain.set_read_timeout(2);
  auto clear = plain.Get("/healthz");
  EXPECT_TRUE(!clear || clear->status != 200);
  ext.Stop();
}

// Twelve connections that keep a request line unfinished do not starve kube-scheduler's
// filter call (were it to time out, with `ignorable: false` no GPU pod would be scheduled):
// it is answered while they hold on, and once they go quiet the extender closes them after
// its read timeout.
TEST_F(ExtenderTest, SlowClientsDoNotStarveAFilterCall) {
  Extender ext(store_, clock_, {}, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  ::tessera::testing_support::SlowClients slow(*port, 12, "POST /filter?slow=");
  ASSERT_EQ(slow.connected(), 12);
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(120);  // generous: the point is that it is served at all
  json args = {{"Pod", KubePod("bert-0", 250)}, {"NodeNames", {"gpu-0", "gpu-1"}}};
  auto f = http.Post("/filter", args.dump(), "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  EXPECT_EQ(json::parse(f->body)["NodeNames"], json({"gpu-0"}));
  slow.StopTrickling();
  EXPECT_EQ(slow.ClosedByServer(120), 12);
  ext.Stop();
}

// A store whose node listing fails while `down` is set, naming itself as Redis would.
class FlakyStore : public store::MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  std::atomic<bool> down{false};
  std::string Name() const override { return "redis 127.0.0.1:1/0"; }
  Expected<std::vector<std::string>> ListNodes() override {
    if (down) return Fail("redis 127.0.0.1:1/0: SMEMBERS failed after retrying: refused");
    return MemoryStore::ListNodes();
  }
};

// /readyz follows the extender's dependencies: the store its view is rebuilt from and the API
// server its pod watch (and bind) need; /healthz stays 200 through both outages.
TEST(ExtenderHealthTest, ReadinessFollowsTheStoreAndTheApiServer) {
  auto api = std::make_unique<FakeApiServer>();
  const std::string url = api->url();
  const std::string host_port = url.substr(url.find("://") + 3);
  auto client = ApiClient::Create(CredentialsFor(*api));
  ASSERT_TRUE(client.has_value()) << client.error().message;
  SteadyClock clock;
  FlakyStore store(clock);
  ExtenderConfig cfg;
  cfg.refresh_s = 0.05;
  Extender ext(store, clock, cfg, client->get());
  ASSERT_TRUE(ext.Start().has_value());
  const std::string ready = "api server " + url + ": ok\nredis 127.0.0.1:1/0: ok\n";
  ASSERT_TRUE(WaitFor([&] { return ext.health().Readiness().text == ready; }))
      << ext.health().Readiness().text;
  store.down = true;
  ASSERT_TRUE(WaitFor([&] {
    return ext.health().Readiness().text ==
           "redis 127.0.0.1:1/0: SMEMBERS failed after retrying: refused\napi server " + url +
               ": ok\n";
  })) << ext.health().Readiness().text;
  store.down = false;
  ASSERT_TRUE(WaitFor([&] { return ext.health().Readiness().text == ready; }));
  api.reset();  // the API server goes away: the pod watch, then its retries, cannot connect
  ASSERT_TRUE(WaitFor([&] {
    const Health::Report r = ext.health().Readiness();
    return !r.ok && r.text.starts_with("api server " + url + ": pods: ") &&
           r.text.find("cannot connect to " + host_port) != std::string::npos;
  })) << ext.health().Readiness().text;
  EXPECT_TRUE(ext.health().Liveness().ok);
  ext.Stop();
}

// --url-prefix is "" or a path of unreserved characters: '/' first, not last, at most 1,024
// characters; anything else is named (a 128 KiB prefix overflowed the route regex's stack).
TEST(ExtenderUrlPrefixTest, AcceptsPathsAndNamesWhatIsWrongWithTheRest) {
  for (const char* ok : {"", "/tessera", "/a/b.v1", "/x-y_z~"}) {
    EXPECT_EQ(UrlPrefixProblem(ok), "") << ok;
  }
  EXPECT_EQ(UrlPrefixProblem(std::string(1024, 'x').replace(0, 1, "/")), "");
  EXPECT_EQ(UrlPrefixProblem(std::string(1025, 'x').replace(0, 1, "/")),
            "is 1025 characters long; a path prefix is at most 1024");
  EXPECT_EQ(UrlPrefixProblem("nan"), "must start with '/' (a path such as /tessera)");
  EXPECT_EQ(UrlPrefixProblem("/tessera/"),
            "must not end with '/' (the verbs' '/filter' follows it)");
  EXPECT_EQ(UrlPrefixProblem("/a(b"),
            "holds '('; a path prefix holds letters, digits, '-', '.', '_', '~' and '/'");
  EXPECT_EQ(UrlPrefixProblem(std::string("/a\x01")),
            "holds the byte 0x01; a path prefix holds letters, digits, '-', '.', '_', '~' and '/'");
}

// With a prefix the verbs are served under it and only there: its '.' matches only a dot
// (the routes are regular expressions), and the probes stay at /healthz and /readyz. Serve
// refuses a prefix that is not a path, naming it.
TEST_F(ExtenderTest, VerbsAreServedUnderTheUrlPrefixOnly) {
  ExtenderConfig cfg;
  cfg.url_prefix = "/tessera.v1";
  Extender ext(store_, clock_, cfg, nullptr);
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  const std::string body = Bert0Args();
  httplib::Client http("127.0.0.1", *port);
  auto f = http.Post("/tessera.v1/filter", body, "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  EXPECT_EQ(f->status, 200);
  EXPECT_EQ(json::parse(f->body)["NodeNames"], json({"gpu-0"}));
  for (const char* elsewhere : {"/filter", "/tesseraXv1/filter", "/tessera.v1/filter/x"}) {
    auto r = http.Post(elsewhere, body, "application/json");
    ASSERT_TRUE(r) << elsewhere;
    EXPECT_EQ(r->status, 404) << elsewhere;
  }
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  ext.Stop();

  cfg.url_prefix = "tessera";
  Extender bad(store_, clock_, cfg, nullptr);
  auto refused = bad.Serve("127.0.0.1", 0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "URL prefix must start with '/' (a path such as /tessera)");
}

TEST_F(ExtenderTest, BindOverHttpCarriesTheDecisionOut) {
  FakeApiServer api;
  auto client = ApiClient::Create(CredentialsFor(api));
  ASSERT_TRUE(client.has_value());
  Extender ext(store_, clock_, {}, client->get());
  auto port = StartAndServe(ext);
  ASSERT_TRUE(port.has_value()) << port.error().message;
  api.AddNode("gpu-0");
  api.AddPod("inference", "bert-0", {{"tessera.io/gpu-milli", "250"}},
             {{"tessera.io/app", "onnx/bert/bs8"}}, "default-scheduler");
  const json pod = api.Get("pods", "inference/bert-0").value();

  httplib::Client http("127.0.0.1", *port);
  json args = {{"Pod", pod}, {"NodeNames", {"gpu-0", "gpu-1"}}};
  auto f = http.Post("/filter", args.dump(), "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(json::parse(f->body)["NodeNames"], json({"gpu-0"}));
  json bind = {{"PodName", "bert-0"},
               {"PodNamespace", "inference"},
               {"PodUID", pod["metadata"]["uid"]},
               {"Node", "gpu-0"}};
  auto b = http.Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(json::parse(b->body), json({{"Error", ""}}));
  EXPECT_EQ(api.bindings().at("inference/bert-0"), 1);
  auto cm = api.Get("configmaps", "inference/bert-0");
  ASSERT_TRUE(cm.has_value());
  EXPECT_EQ((*cm)["data"]["CUDA_VISIBLE_DEVICES"], "GPU-gpu-0-0");
  EXPECT_EQ((*cm)["data"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  auto placed = store_.GetPlacement(pod["metadata"]["uid"].get<std::string>());
  ASSERT_TRUE(placed.has_value() && placed->has_value());
  EXPECT_EQ((*placed)->slices[0].milli, 250);
  // Binding the same pod again (kube-scheduler retrying) does not book a second slice.
  auto again = http.Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(store_.GetPartition("GPU-gpu-0-0").value()->used_milli, 250);
  // Deleting the pod releases its slice.
  api.DeletePod("inference", "bert-0");
  EXPECT_TRUE(WaitFor([&] { return store_.GetPartition("GPU-gpu-0-0").value()->used_milli == 0; }));
  ext.Stop();
}

}  // namespace
}  // namespace tessera::k8s
