// Every manifest in deploy/ parses as Kubernetes YAML and carries the fields the API server
// requires of its kind; the example workload is one Tessera accepts; RBAC grants what the
// scheduler's calls need and no more.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include "k8s/objects.h"
#include "model/gpu_model.h"

namespace tessera::k8s {
namespace {

namespace fs = std::filesystem;

struct Doc {
  std::string file;  // the file's name
  YAML::Node node;
  std::string dir;  // its folder under deploy/: "" (the top), "extender", "examples", …
  std::string kind() const { return node["kind"].as<std::string>(); }
  std::string name() const { return node["metadata"]["name"].as<std::string>(); }
};

std::vector<Doc> LoadAll() {
  std::vector<Doc> docs;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "deploy")) {
    if (e.path().extension() != ".yaml") continue;
    for (const YAML::Node& n : YAML::LoadAllFromFile(e.path().string())) {
      if (n && !n.IsNull()) {
        const fs::path rel =
            fs::relative(e.path().parent_path(), fs::path(TESSERA_SOURCE_DIR) / "deploy");
        docs.push_back({e.path().filename().string(), n, rel == "." ? "" : rel.string()});
      }
    }
  }
  return docs;
}

nlohmann::json ToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : n) a.push_back(ToJson(v));
    return a;
  }
  if (n.IsNull()) return nullptr;
  return n.as<std::string>();
}

void CheckPodSpec(const Doc& d, const YAML::Node& tmpl) {
  const std::string who = d.file + " " + d.kind() + "/" + d.name();
  ASSERT_TRUE(tmpl["spec"]["containers"].IsSequence()) << who;
  for (const YAML::Node& c : tmpl["spec"]["containers"]) {
    EXPECT_TRUE(c["name"] && c["image"]) << who << ": container without name or image";
  }
  // The selector must select the template (the API server rejects it otherwise). A Job's is
  // generated.
  const YAML::Node selector = d.node["spec"]["selector"];
  if (!selector) return;
  for (const auto& kv : selector["matchLabels"]) {
    const std::string k = kv.first.as<std::string>();
    ASSERT_TRUE(tmpl["metadata"]["labels"][k]) << who << ": selector label " << k;
    EXPECT_EQ(tmpl["metadata"]["labels"][k].as<std::string>(), kv.second.as<std::string>());
  }
}

TEST(DeployManifestsTest, EveryDocumentHasTheFieldsItsKindRequires) {
  const std::vector<Doc> docs = LoadAll();
  ASSERT_GE(docs.size(), 15u);
  std::map<std::string, int> kinds;
  for (const Doc& d : docs) {
    ASSERT_TRUE(d.node["apiVersion"] && d.node["kind"]) << d.file;
    ++kinds[d.kind()];
    if (d.kind() == "KubeSchedulerConfiguration") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
      const YAML::Node ext = d.node["extenders"][0];
      ASSERT_TRUE(ext) << d.file;
      EXPECT_EQ(ext["filterVerb"].as<std::string>(), "filter");
      EXPECT_EQ(ext["prioritizeVerb"].as<std::string>(), "prioritize");
      EXPECT_EQ(ext["bindVerb"].as<std::string>(), "bind");
      EXPECT_TRUE(ext["nodeCacheCapable"].as<bool>());
      EXPECT_GT(ext["weight"].as<int>(), 0);  // required when prioritizeVerb is set
      continue;
    }
    ASSERT_TRUE(d.node["metadata"]["name"]) << d.file << " " << d.kind();
    const std::string who = d.file + " " + d.kind() + "/" + d.name();
    const std::string k = d.kind();
    if (k == "Deployment" || k == "DaemonSet" || k == "StatefulSet") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "apps/v1") << who;
      ASSERT_TRUE(d.node["spec"]["selector"]["matchLabels"]) << who;
      CheckPodSpec(d, d.node["spec"]["template"]);
      if (k == "StatefulSet") {
        EXPECT_TRUE(d.node["spec"]["serviceName"]) << who;
      }
    } else if (k == "Job") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "batch/v1") << who;
      CheckPodSpec(d, d.node["spec"]["template"]);
      // The API server refuses a Job whose pods would restart Always.
      const std::string restart =
          d.node["spec"]["template"]["spec"]["restartPolicy"].as<std::string>("");
      EXPECT_TRUE(restart == "Never" || restart == "OnFailure") << who << ": " << restart;
    } else if (k == "Service") {
      ASSERT_TRUE(d.node["spec"]["ports"].IsSequence()) << who;
      for (const YAML::Node& p : d.node["spec"]["ports"]) EXPECT_TRUE(p["port"]) << who;
    } else if (k == "ClusterRole" || k == "Role") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "rbac.authorization.k8s.io/v1");
      for (const YAML::Node& r : d.node["rules"]) {
        EXPECT_TRUE(r["apiGroups"] && r["resources"] && r["verbs"]) << who;
        for (const YAML::Node& v : r["verbs"]) EXPECT_NE(v.as<std::string>(), "*") << who;
      }
    } else if (k == "ClusterRoleBinding" || k == "RoleBinding") {
      EXPECT_TRUE(d.node["roleRef"]["apiGroup"] && d.node["roleRef"]["kind"] &&
                  d.node["roleRef"]["name"])
          << who;
      EXPECT_TRUE(d.node["subjects"].IsSequence()) << who;
    } else if (k == "Lease") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "coordination.k8s.io/v1");
    } else if (k == "NetworkPolicy") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "networking.k8s.io/v1") << who;
      EXPECT_TRUE(d.node["spec"]["podSelector"]) << who;
    } else if (k == "PodDisruptionBudget") {
      EXPECT_EQ(d.node["apiVersion"].as<std::string>(), "policy/v1") << who;
      EXPECT_TRUE(d.node["spec"]["selector"]["matchLabels"]) << who;
    } else {
      EXPECT_TRUE(k == "ServiceAccount" || k == "Namespace") << "unexpected kind " << who;
    }
  }
  for (const char* k :
       {"Deployment", "DaemonSet", "StatefulSet", "Job", "Service", "ServiceAccount", "ClusterRole",
        "ClusterRoleBinding", "Role", "RoleBinding", "Lease", "Namespace",
        "KubeSchedulerConfiguration", "NetworkPolicy", "PodDisruptionBudget"}) {
    EXPECT_GE(kinds[k], 1) << "no " << k << " in deploy/";
  }
}

// Every Tessera daemon is restarted only when its loops stall (/healthz) and taken out of
// service when a dependency does not answer (/readyz), on the port it listens on: readiness
// asks /readyz, not /healthz, which answers 200 while a dependency is down.
TEST(DeployManifestsTest, ProbesAskLivenessAndReadinessOnTheListenPort) {
  int daemons = 0;
  for (const Doc& d : LoadAll()) {
    if (d.kind() != "Deployment" && d.kind() != "DaemonSet") continue;
    for (const YAML::Node& c : d.node["spec"]["template"]["spec"]["containers"]) {
      if (c["image"].as<std::string>().find("tessera/tessera") == std::string::npos) continue;
      const std::string who = d.file + " " + d.name();
      ++daemons;
      std::string listen_port;
      for (const YAML::Node& a : c["args"]) {
        const std::string arg = a.as<std::string>();
        if (arg.starts_with("--listen=")) listen_port = arg.substr(arg.rfind(':') + 1);
      }
      ASSERT_FALSE(listen_port.empty()) << who << ": no --listen";
      ASSERT_TRUE(c["livenessProbe"]["httpGet"]) << who;
      ASSERT_TRUE(c["readinessProbe"]["httpGet"]) << who;
      EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz") << who;
      EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz") << who;
      EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"].as<std::string>(), listen_port) << who;
      EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<std::string>(), listen_port) << who;
    }
  }
  EXPECT_EQ(daemons, 3);  // schedule, agent, extender
}

// `kubectl apply -f deploy/` applies the files in the order their names sort (it walks the
// directory in lexical order, not into extender/ without -R): the Namespace must come first,
// or everything in tessera-system fails on the first apply.
TEST(DeployManifestsTest, ApplyOrderCreatesTheNamespaceFirst) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "deploy")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  const std::vector<YAML::Node> first = YAML::LoadAllFromFile(files.front().string());
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front()["kind"].as<std::string>(), "Namespace") << files.front();
  EXPECT_EQ(first.front()["metadata"]["name"].as<std::string>(), "tessera-system");
  for (std::size_t i = 1; i < files.size(); ++i) {
    for (const YAML::Node& n : YAML::LoadAllFromFile(files[i].string())) {
      if (n && n["kind"]) {
        EXPECT_NE(n["kind"].as<std::string>(), "Namespace") << files[i];
      }
    }
  }
}

TEST(DeployManifestsTest, ExamplePodIsOneTesseraSchedules) {
  for (const Doc& d : LoadAll()) {
    if (d.file != "example-inference.yaml") continue;
    const YAML::Node tmpl = d.node["spec"]["template"];
    EXPECT_EQ(tmpl["spec"]["schedulerName"].as<std::string>(), "tessera");
    nlohmann::json pod = ToJson(tmpl);
    pod["metadata"]["name"] = "bert-0";
    auto parsed = PodFromJson(pod);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    auto w = WorkloadFromPod(*parsed, 1);
    ASSERT_TRUE(w.has_value()) << w.error().message;
    EXPECT_EQ(w->app, "onnx/bert/bs8");
    EXPECT_EQ(w->slo_qps, 120);
    EXPECT_EQ(w->gpu.count, 1);
    EXPECT_EQ(w->gpu.milli, 250);
    EXPECT_EQ(w->gpu.memory_mib, 8192);
    EXPECT_EQ(w->cpu_milli, 2000);
    // It tolerates the taint GPU nodes often carry, and nothing else.
    EXPECT_EQ(UntoleratedTaint(parsed->node_rules, {{"nvidia.com/gpu", "present", "NoSchedule"}}),
              nullptr);
    EXPECT_NE(UntoleratedTaint(parsed->node_rules, {{"dedicated", "batch", "NoSchedule"}}),
              nullptr);
    return;
  }
  FAIL() << "deploy/examples/example-inference.yaml not found";
}

// Seed 001 §4.2: an offline pod must release its CUDA context before the kubelet's signal can
// reach it. The example's preStop asks the trainer to stop and waits STOP_TIMEOUT_S for it;
// the grace period (counted from the deletion, hook included) must outlast the hook by the
// 30 s the manifest gives an overrunning trainer, or SIGKILL lands mid-checkpoint.
TEST(DeployManifestsTest, OfflineExampleIsBestEffortAndReleasesItsContextBeforeSigkill) {
  for (const Doc& d : LoadAll()) {
    if (d.file != "example-offline-training.yaml") continue;
    EXPECT_EQ(d.kind(), "Job");
    const YAML::Node tmpl = d.node["spec"]["template"];
    EXPECT_EQ(tmpl["spec"]["schedulerName"].as<std::string>(), "tessera");
    nlohmann::json pod = ToJson(tmpl);
    pod["metadata"]["name"] = "vgg16-train-x7k2p";
    auto parsed = PodFromJson(pod);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    auto w = WorkloadFromPod(*parsed, 1);
    ASSERT_TRUE(w.has_value()) << w.error().message;
    EXPECT_EQ(w->klass, model::WorkloadClass::kOffline);
    EXPECT_EQ(w->slo_qps, 0);  // best effort: no SLO
    EXPECT_EQ(w->gpu.milli, 400);
    EXPECT_EQ(w->gpu.memory_mib, 16384);  // 40 % of an A100-40GB's 40960 MiB, seed 001 §5
    EXPECT_EQ(UntoleratedTaint(parsed->node_rules, {{"nvidia.com/gpu", "present", "NoSchedule"}}),
              nullptr);

    const YAML::Node c = tmpl["spec"]["containers"][0];
    const YAML::Node hook = c["lifecycle"]["preStop"]["exec"]["command"];
    ASSERT_TRUE(hook.IsSequence()) << "no preStop exec hook";
    const std::string script = hook[hook.size() - 1].as<std::string>();
    EXPECT_NE(script.find("touch \"$STOP_FILE\""), std::string::npos) << script;
    EXPECT_NE(script.find("$STOP_TIMEOUT_S"), std::string::npos) << script;
    std::map<std::string, std::string> env;
    for (const YAML::Node& e : c["env"]) {
      if (e["value"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>();
    }
    ASSERT_TRUE(env.contains("STOP_TIMEOUT_S"));
    const int stop_timeout_s = std::stoi(env["STOP_TIMEOUT_S"]);
    const int grace_s = tmpl["spec"]["terminationGracePeriodSeconds"].as<int>();
    EXPECT_EQ(stop_timeout_s, 90);  // 10 s step + 60 s checkpoint + 10 s exit, + 10 s spare
    EXPECT_EQ(grace_s, 120);
    EXPECT_GE(grace_s, stop_timeout_s + 30);
    EXPECT_GT(grace_s, 30) << "Kubernetes' default grace period is shorter than a checkpoint";
    // The wrapper traps the stop signals rather than letting them reach the trainer.
    EXPECT_NE(c["args"][0].as<std::string>().find("' TERM INT"), std::string::npos);
    return;
  }
  FAIL() << "deploy/examples/example-offline-training.yaml not found";
}

std::string Namespace(const YAML::Node& n) {
  return n["metadata"]["namespace"].as<std::string>("");
}

// The pod templates of the workload kinds, with who they are.
std::vector<std::pair<std::string, YAML::Node>> PodTemplates(const std::vector<Doc>& docs) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (const Doc& d : docs) {
    const std::string k = d.kind();
    if (k == "Deployment" || k == "DaemonSet" || k == "StatefulSet" || k == "Job") {
      out.emplace_back(d.file + " " + k + "/" + d.name(), d.node["spec"]["template"]);
    }
  }
  return out;
}

const Doc* Find(const std::vector<Doc>& docs, const std::string& kind, const std::string& name) {
  for (const Doc& d : docs) {
    if (d.kind() == kind && d.node["metadata"]["name"] && d.name() == name) return &d;
  }
  return nullptr;
}

// The name of the env variable of container c taken from Secret tessera-redis, key password.
std::string RedisPasswordVariable(const YAML::Node& c, const std::string& name = "") {
  for (const YAML::Node& e : c["env"]) {
    const YAML::Node ref = e["valueFrom"]["secretKeyRef"];
    if (!ref || ref["name"].as<std::string>() != "tessera-redis" ||
        ref["key"].as<std::string>() != "password") {
      continue;
    }
    if (name.empty() || e["name"].as<std::string>() == name) return e["name"].as<std::string>();
  }
  return "";
}

// A PodDisruptionBudget with minAvailable >= 1 that selects the Deployment's pods.
bool HasPdb(const std::vector<Doc>& docs, const Doc& deployment) {
  const YAML::Node labels = deployment.node["spec"]["template"]["metadata"]["labels"];
  for (const Doc& d : docs) {
    if (d.kind() != "PodDisruptionBudget" || Namespace(d.node) != Namespace(deployment.node)) {
      continue;
    }
    bool selects = d.node["spec"]["selector"]["matchLabels"].size() > 0;
    for (const auto& kv : d.node["spec"]["selector"]["matchLabels"]) {
      const YAML::Node v = labels[kv.first.as<std::string>()];
      selects &= v && v.as<std::string>() == kv.second.as<std::string>();
    }
    if (selects && d.node["spec"]["minAvailable"].as<int>(0) >= 1) return true;
  }
  return false;
}

// With ignorable: false, a single extender replica is a single point of failure for every
// pod with Tessera's resources. The extender is ignorable, or it runs at least two replicas
// that a PDB keeps from being evicted together; the scheduler's standby likewise.
TEST(DeployManifestsTest, ExtenderAndSchedulerSurviveADrain) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* config = nullptr;
  for (const Doc& d : docs) {
    if (d.kind() == "KubeSchedulerConfiguration") config = &d;
  }
  ASSERT_NE(config, nullptr);
  const bool ignorable = config->node["extenders"][0]["ignorable"].as<bool>(false);
  for (const char* name : {"tessera-extender", "tessera-scheduler"}) {
    const Doc* dep = Find(docs, "Deployment", name);
    ASSERT_NE(dep, nullptr) << name;
    if (std::string(name) == "tessera-extender" && ignorable) continue;
    EXPECT_GE(dep->node["spec"]["replicas"].as<int>(), 2) << name;
    EXPECT_TRUE(HasPdb(docs, *dep)) << name << ": no PodDisruptionBudget with minAvailable >= 1";
    // A node failure, which no PDB prevents, takes one replica, not both.
    const YAML::Node affinity = dep->node["spec"]["template"]["spec"]["affinity"];
    ASSERT_TRUE(affinity && affinity["podAntiAffinity"]) << name << ": no podAntiAffinity";
    const YAML::Node spread =
        affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
    ASSERT_TRUE(spread.IsSequence()) << name;
    EXPECT_EQ(spread[0]["podAffinityTerm"]["topologyKey"].as<std::string>(),
              "kubernetes.io/hostname")
        << name;
  }
  EXPECT_FALSE(ignorable) << "README and kube-scheduler-config.yaml explain ignorable: false";
}

// kube-scheduler runs with hostNetwork and the node's resolver, which cannot resolve *.svc:
// the urlPrefix names the extender Service's fixed ClusterIP and port.
TEST(DeployManifestsTest, ExtenderUrlResolvesFromTheHostNetwork) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* service = Find(docs, "Service", "tessera-extender");
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(service->node["spec"]["clusterIP"]) << "the Service's address is not fixed";
  const std::string ip = service->node["spec"]["clusterIP"].as<std::string>();
  EXPECT_TRUE(std::regex_match(ip, std::regex(R"(\d+\.\d+\.\d+\.\d+)"))) << ip;
  const std::string port = service->node["spec"]["ports"][0]["port"].as<std::string>();
  for (const Doc& d : docs) {
    if (d.kind() != "KubeSchedulerConfiguration") continue;
    const std::string url = d.node["extenders"][0]["urlPrefix"].as<std::string>();
    EXPECT_EQ(url, "https://" + ip + ":" + port);
    EXPECT_EQ(url.find(".svc"), std::string::npos) << url;
  }
}

// The extender serves HTTPS by default. kube-scheduler calls it with HTTPS and
// checks its certificate against a CA file under the name the certificate carries (not
// `insecure`); the extender is given its certificate and key from the Secret mounted where its
// flags point, and the kubelet probes it over HTTPS.
TEST(DeployManifestsTest, TheExtenderServesHttpsWithACertificateFromASecret) {
  const std::vector<Doc> docs = LoadAll();
  bool configured = false;
  for (const Doc& d : docs) {
    if (d.kind() != "KubeSchedulerConfiguration") continue;
    const YAML::Node e = d.node["extenders"][0];
    EXPECT_TRUE(e["enableHTTPS"].as<bool>(false)) << d.file;
    const YAML::Node tls = e["tlsConfig"];
    ASSERT_TRUE(tls && tls.IsMap()) << d.file << ": no tlsConfig";
    EXPECT_FALSE(tls["insecure"].as<bool>(false)) << d.file;
    EXPECT_TRUE(tls["caFile"] || tls["caData"]) << d.file << ": no CA to check the extender";
    EXPECT_EQ(tls["serverName"].as<std::string>(""), "tessera-extender.tessera-system.svc");
    configured = true;
  }
  EXPECT_TRUE(configured);
  const Doc* dep = Find(docs, "Deployment", "tessera-extender");
  ASSERT_NE(dep, nullptr);
  const YAML::Node spec = dep->node["spec"]["template"]["spec"];
  const YAML::Node c = spec["containers"][0];
  std::string cert, key;
  for (const YAML::Node& a : c["args"]) {
    const std::string arg = a.as<std::string>();
    if (arg.starts_with("--tls-cert=")) cert = arg.substr(11);
    if (arg.starts_with("--tls-key=")) key = arg.substr(10);
  }
  ASSERT_FALSE(cert.empty()) << "no --tls-cert";
  ASSERT_FALSE(key.empty()) << "no --tls-key";
  std::string mount, volume;
  for (const YAML::Node& m : c["volumeMounts"]) {
    const std::string path = m["mountPath"].as<std::string>();
    if (cert.starts_with(path + "/") && key.starts_with(path + "/")) {
      mount = path;
      volume = m["name"].as<std::string>();
    }
  }
  ASSERT_FALSE(mount.empty()) << cert << " and " << key << " are not in a mounted volume";
  bool from_secret = false;
  for (const YAML::Node& v : spec["volumes"]) {
    if (v["name"].as<std::string>() == volume && v["secret"]) {
      from_secret = v["secret"]["secretName"].as<std::string>() == "tessera-extender-tls";
    }
  }
  EXPECT_TRUE(from_secret) << "volume " << volume << " is not the Secret tessera-extender-tls";
  EXPECT_EQ(cert, mount + "/tls.crt");  // the keys of a kubernetes.io/tls Secret
  EXPECT_EQ(key, mount + "/tls.key");
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    EXPECT_EQ(c[probe]["httpGet"]["scheme"].as<std::string>(""), "HTTPS") << probe;
  }
}

// Every container (Tessera's, Redis, the examples'), initContainers included, drops every
// capability, cannot gain privileges, runs as a numeric non-root user (its own or the pod's)
// on a read-only root filesystem. kExceptions names a container allowed to run as root, with
// the reason; it is empty: the agent opens the GPU device files, 0666 by default, as its
// non-root user.
TEST(DeployManifestsTest, EveryContainerDropsAllCapabilitiesAndRunsAsNonRoot) {
  const std::map<std::string, std::string> kExceptions = {};
  int containers = 0;
  for (const auto& [who, tmpl] : PodTemplates(LoadAll())) {
    const YAML::Node pod_sc = tmpl["spec"]["securityContext"] ? tmpl["spec"]["securityContext"]
                                                              : YAML::Node(YAML::NodeType::Map);
    for (const char* list : {"initContainers", "containers"}) {
      for (const YAML::Node& c : tmpl["spec"][list]) {
        const std::string name = who + " " + c["name"].as<std::string>();
        ++containers;
        if (!c["securityContext"]) {
          ADD_FAILURE() << name << ": no securityContext";
          continue;
        }
        const YAML::Node sc = c["securityContext"];
        ASSERT_TRUE(!sc["capabilities"] || sc["capabilities"].IsMap()) << name;
        bool drops_all = false;
        if (sc["capabilities"] && sc["capabilities"]["drop"]) {
          for (const YAML::Node& cap : sc["capabilities"]["drop"]) {
            drops_all |= cap.as<std::string>() == "ALL";
          }
        }
        EXPECT_TRUE(drops_all) << name << ": capabilities.drop lacks ALL";
        EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true)) << name;
        EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false)) << name;
        if (kExceptions.contains(name)) continue;
        // The container's own setting, or else the pod's.
        auto setting = [&](const char* key) {
          if (sc[key]) return sc[key];
          return pod_sc[key] ? pod_sc[key] : YAML::Node();
        };
        EXPECT_TRUE(setting("runAsNonRoot").as<bool>(false)) << name << ": runAsNonRoot";
        const YAML::Node uid = setting("runAsUser");
        EXPECT_TRUE(uid.IsScalar() && uid.as<int>(-1) > 0) << name << ": no numeric runAsUser";
      }
    }
  }
  EXPECT_GE(containers, 6);  // redis, agent, scheduler, extender, two examples
}

// Creating MIG instances (docs/runtime.md, "MIG reshapes") needs root and the driver's MIG
// capability files. An agent that runs as non-root passes --mig-reshape=off, so it refuses a
// reshape request at once (and says so) instead of failing halfway in NVML.
TEST(DeployManifestsTest, ANonRootAgentRefusesMigReshapes) {
  int agents = 0;
  for (const auto& [who, tmpl] : PodTemplates(LoadAll())) {
    for (const YAML::Node& c : tmpl["spec"]["containers"]) {
      const YAML::Node args = c["args"];
      if (!args || !args.IsSequence() || args.size() == 0 ||
          args[0].as<std::string>("") != "agent") {
        continue;
      }
      ++agents;
      bool off = false;
      for (const YAML::Node& a : args) off |= a.as<std::string>("") == "--mig-reshape=off";
      const bool non_root = c["securityContext"]["runAsNonRoot"].as<bool>(false);
      EXPECT_TRUE(!non_root || off) << who << ": a non-root agent cannot create MIG instances; "
                                    << "pass --mig-reshape=off";
    }
  }
  EXPECT_EQ(agents, 1);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The manifests run an image someone can build: the Dockerfile at the root documents the tag
// (its `docker build -t` line), which is ghcr.io/tessera/tessera:<project version>, and every
// Tessera container in deploy/ names exactly that tag and the Dockerfile's numeric user.
TEST(DeployManifestsTest, TesseraImagesAreTheDockerfilesTag) {
  const std::string dockerfile = ReadFile(fs::path(TESSERA_SOURCE_DIR) / "Dockerfile");
  ASSERT_FALSE(dockerfile.empty()) << "no Dockerfile at the repository root";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dockerfile, m, std::regex(R"(docker build -t (\S+) \.)")));
  const std::string tag = m[1];
  const std::string cmake = ReadFile(fs::path(TESSERA_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch v;
  ASSERT_TRUE(std::regex_search(cmake, v, std::regex(R"(project\(tessera VERSION (\S+))")));
  EXPECT_EQ(tag, "ghcr.io/tessera/tessera:" + v[1].str());
  // Every stage on the pinned Debian 12 base; a numeric non-root user; tessera the entrypoint.
  int stages = 0;
  const std::regex from(R"((^|\n)FROM (\S+))");
  for (std::sregex_iterator it(dockerfile.begin(), dockerfile.end(), from), end; it != end; ++it) {
    EXPECT_EQ((*it)[2].str(), "debian:12-slim");
    ++stages;
  }
  EXPECT_GE(stages, 2) << "build and runtime stages";
  std::smatch user;
  ASSERT_TRUE(std::regex_search(dockerfile, user, std::regex(R"(\nUSER (\d+):(\d+)\n)")));
  EXPECT_NE(dockerfile.find("ENTRYPOINT [\"/usr/local/bin/tessera\"]"), std::string::npos);
  EXPECT_NE(dockerfile.find("scripts/deps.sh"), std::string::npos);

  int images = 0;
  for (const auto& [who, tmpl] : PodTemplates(LoadAll())) {
    for (const YAML::Node& c : tmpl["spec"]["containers"]) {
      const std::string image = c["image"].as<std::string>();
      if (image.find("tessera") == std::string::npos) continue;
      ++images;
      EXPECT_EQ(image, tag) << who;
      EXPECT_EQ(c["securityContext"]["runAsUser"].as<std::string>(""), user[1].str()) << who;
    }
  }
  EXPECT_EQ(images, 3);
  const std::string ignore = ReadFile(fs::path(TESSERA_SOURCE_DIR) / ".dockerignore");
  EXPECT_NE(ignore.find("build*/"), std::string::npos) << "build trees in the build context";
}

// Redis holds every placement, so it requires AUTH. It must start with requirepass from the
// Secret (through the environment, no password in the manifest or on a command line), its
// readiness probe must authenticate, and every Tessera daemon must have the password where
// the shared redis flag code reads it ($TESSERA_REDIS_PASSWORD, src/cli/daemon_flags.h).
TEST(DeployManifestsTest, RedisRequiresThePasswordOfItsSecret) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* redis = Find(docs, "StatefulSet", "tessera-redis");
  ASSERT_NE(redis, nullptr);
  const YAML::Node c = redis->node["spec"]["template"]["spec"]["containers"][0];
  const std::string var = RedisPasswordVariable(c, "REDIS_PASSWORD");
  ASSERT_EQ(var, "REDIS_PASSWORD") << "no REDIS_PASSWORD from Secret tessera-redis";
  std::string command;
  for (const YAML::Node& a : c["command"]) command += a.as<std::string>() + " ";
  for (const YAML::Node& a : c["args"]) command += a.as<std::string>() + " ";
  EXPECT_NE(command.find("requirepass $REDIS_PASSWORD"), std::string::npos) << command;
  EXPECT_EQ(command.find("--requirepass"), std::string::npos)
      << "a password on redis-server's command line is readable in /proc: " << command;
  // redis-cli answers NOAUTH with exit status 0: the probe must authenticate and want PONG.
  EXPECT_EQ(RedisPasswordVariable(c, "REDISCLI_AUTH"), "REDISCLI_AUTH");
  std::string probe;
  for (const YAML::Node& a : c["readinessProbe"]["exec"]["command"]) probe += a.as<std::string>();
  EXPECT_NE(probe.find("PONG"), std::string::npos) << probe;
  EXPECT_EQ(Find(docs, "Secret", "tessera-redis"), nullptr)
      << "a Secret in the repository is a published password";

  int daemons = 0;
  for (const auto& [who, tmpl] : PodTemplates(docs)) {
    for (const YAML::Node& d : tmpl["spec"]["containers"]) {
      if (d["image"].as<std::string>().find("tessera/tessera") == std::string::npos) continue;
      ++daemons;
      EXPECT_EQ(RedisPasswordVariable(d, "TESSERA_REDIS_PASSWORD"), "TESSERA_REDIS_PASSWORD")
          << who;
      for (const YAML::Node& a : d["args"]) {
        EXPECT_EQ(a.as<std::string>().find("password"), std::string::npos) << who;
      }
    }
  }
  EXPECT_EQ(daemons, 3);
}

// Only Tessera's pods reach Redis, on 6379: a NetworkPolicy selects the Redis pods and admits
// exactly the daemons' pods by label (no empty `from`, no namespace or IP block).
TEST(DeployManifestsTest, RedisNetworkPolicyAdmitsOnlyTesseraPods) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* redis = Find(docs, "StatefulSet", "tessera-redis");
  ASSERT_NE(redis, nullptr);
  const YAML::Node redis_labels = redis->node["spec"]["template"]["metadata"]["labels"];
  std::set<std::string> daemons;  // the app.kubernetes.io/name of each Tessera daemon's pods
  for (const auto& [who, tmpl] : PodTemplates(docs)) {
    for (const YAML::Node& c : tmpl["spec"]["containers"]) {
      if (c["image"].as<std::string>().find("tessera/tessera") != std::string::npos) {
        daemons.insert(tmpl["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>());
      }
    }
  }
  ASSERT_EQ(daemons.size(), 3u);
  int policies = 0;
  for (const Doc& d : docs) {
    if (d.kind() != "NetworkPolicy") continue;
    bool selects_redis = Namespace(d.node) == Namespace(redis->node);
    for (const auto& kv : d.node["spec"]["podSelector"]["matchLabels"]) {
      const YAML::Node v = redis_labels[kv.first.as<std::string>()];
      selects_redis &= v && v.as<std::string>() == kv.second.as<std::string>();
    }
    if (!selects_redis) continue;
    ++policies;
    ASSERT_TRUE(d.node["spec"]["ingress"].IsSequence()) << d.name();
    std::set<std::string> admitted;
    for (const YAML::Node& rule : d.node["spec"]["ingress"]) {
      ASSERT_TRUE(rule["from"].IsSequence() && rule["from"].size() > 0)
          << d.name() << ": an ingress rule without from admits everyone";
      for (const YAML::Node& from : rule["from"]) {
        EXPECT_FALSE(from["namespaceSelector"] || from["ipBlock"]) << d.name();
        for (const YAML::Node& e : from["podSelector"]["matchExpressions"]) {
          EXPECT_EQ(e["key"].as<std::string>(), "app.kubernetes.io/name");
          EXPECT_EQ(e["operator"].as<std::string>(), "In");
          for (const YAML::Node& v : e["values"]) admitted.insert(v.as<std::string>());
        }
      }
      ASSERT_TRUE(rule["ports"].IsSequence()) << d.name() << ": every port open";
      for (const YAML::Node& p : rule["ports"]) EXPECT_EQ(p["port"].as<int>(), 6379);
    }
    EXPECT_EQ(admitted, daemons);
  }
  EXPECT_EQ(policies, 1) << "no NetworkPolicy selects the Redis pods";
}

// A moving tag (redis:7.0, redis:latest) changes the store under a running cluster at the next
// pull: the image names a patch release (or a digest).
TEST(DeployManifestsTest, RedisImageIsPinnedToAPatchRelease) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* redis = Find(docs, "StatefulSet", "tessera-redis");
  ASSERT_NE(redis, nullptr);
  const std::string image =
      redis->node["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>();
  EXPECT_TRUE(
      std::regex_match(image, std::regex(R"(redis:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?)")) ||
      std::regex_match(image, std::regex(R"(redis(:[^@]+)?@sha256:[0-9a-f]{64})")))
      << image;
}

// Everything a ServiceAccount of tessera-system is granted, following its bindings, as
// "<scope>|<group>/<resource>:<verb>[@<resourceName>]", scope "*" for cluster-wide (a
// ClusterRoleBinding) or the namespace of the RoleBinding.
std::set<std::string> GrantsOf(const std::vector<Doc>& docs, const std::string& account) {
  std::map<std::string, YAML::Node> roles;  // "ClusterRole/<name>" or "Role/<ns>/<name>"
  for (const Doc& d : docs) {
    if (d.kind() == "ClusterRole") roles["ClusterRole/" + d.name()] = d.node;
    if (d.kind() == "Role") roles["Role/" + Namespace(d.node) + "/" + d.name()] = d.node;
  }
  std::set<std::string> granted;
  for (const Doc& d : docs) {
    if (d.kind() != "ClusterRoleBinding" && d.kind() != "RoleBinding") continue;
    bool bound = false;
    for (const YAML::Node& s : d.node["subjects"]) {
      bound |= s["kind"].as<std::string>() == "ServiceAccount" &&
               s["name"].as<std::string>() == account &&
               s["namespace"].as<std::string>("") == "tessera-system";
    }
    if (!bound) continue;
    const std::string scope = d.kind() == "RoleBinding" ? Namespace(d.node) : "*";
    const std::string ref_kind = d.node["roleRef"]["kind"].as<std::string>();
    const std::string ref_name = d.node["roleRef"]["name"].as<std::string>();
    const std::string key =
        ref_kind == "Role" ? "Role/" + scope + "/" + ref_name : "ClusterRole/" + ref_name;
    if (!roles.contains(key)) {
      ADD_FAILURE() << d.file << " " << d.name() << " refers to " << key << ", which is not here";
      continue;
    }
    for (const YAML::Node& r : roles[key]["rules"]) {
      std::vector<std::string> names;
      for (const YAML::Node& n : r["resourceNames"]) names.push_back("@" + n.as<std::string>());
      if (names.empty()) names.push_back("");
      for (const YAML::Node& g : r["apiGroups"]) {
        for (const YAML::Node& res : r["resources"]) {
          for (const YAML::Node& v : r["verbs"]) {
            for (const std::string& n : names) {
              granted.insert(scope + "|" + g.as<std::string>() + "/" + res.as<std::string>() + ":" +
                             v.as<std::string>() + n);
            }
          }
        }
      }
    }
  }
  return granted;
}

// The namespaces of the example workloads Tessera schedules: they need the binder's writes.
std::set<std::string> WorkloadNamespaces(const std::vector<Doc>& docs) {
  std::set<std::string> out;
  for (const Doc& d : docs) {
    if (d.file.starts_with("example-")) out.insert(Namespace(d.node));
  }
  return out;
}

// What a binding writes (src/k8s/binder.cc), in each workload namespace.
void AddBinderWrites(std::set<std::string>& needed, const std::set<std::string>& namespaces) {
  for (const std::string& ns : namespaces) {
    for (const char* g : {"/configmaps:create", "/configmaps:get", "/configmaps:update",
                          "/pods:patch", "/pods/binding:create"}) {
      needed.insert(ns + "|" + g);
    }
  }
}

// Exactly what k8s::Scheduler, Binder, Informer and LeaderElector call: the reads and Events
// cluster-wide, the binding's writes only in the workload namespaces, the Lease only in
// tessera-system and, but for create, only by name.
TEST(DeployManifestsTest, SchedulerRbacCoversItsCallsAndNoMore) {
  const std::vector<Doc> docs = LoadAll();
  std::set<std::string> needed = {
      "*|/pods:get",
      "*|/pods:list",
      "*|/pods:watch",
      "*|/nodes:list",
      "*|/nodes:watch",
      "*|/events:create",
      "tessera-system|coordination.k8s.io/leases:get@tessera-scheduler",
      "tessera-system|coordination.k8s.io/leases:update@tessera-scheduler",
      "tessera-system|coordination.k8s.io/leases:create"};
  const std::set<std::string> namespaces = WorkloadNamespaces(docs);
  EXPECT_TRUE(namespaces.contains("default"));
  AddBinderWrites(needed, namespaces);
  const std::set<std::string> granted = GrantsOf(docs, "tessera-scheduler");
  for (const std::string& n : needed) EXPECT_TRUE(granted.contains(n)) << "missing " << n;
  for (const std::string& g : granted) EXPECT_TRUE(needed.contains(g)) << "not called: " << g;
}

// The extender: bind GETs the pod, the pod informer lists and watches, bind records an Event
// and makes the same writes as the scheduler's binder.
TEST(DeployManifestsTest, ExtenderRbacCoversItsCallsAndNoMore) {
  const std::vector<Doc> docs = LoadAll();
  std::set<std::string> needed = {"*|/pods:get", "*|/pods:list", "*|/pods:watch",
                                  "*|/events:create"};
  AddBinderWrites(needed, WorkloadNamespaces(docs));
  const std::set<std::string> granted = GrantsOf(docs, "tessera-extender");
  for (const std::string& n : needed) EXPECT_TRUE(granted.contains(n)) << "missing " << n;
  for (const std::string& g : granted) EXPECT_TRUE(needed.contains(g)) << "not called: " << g;
}

// ConfigMap writes and pod patches are limited to what binding needs. The
// ConfigMaps are named after the pods, in the pods' namespaces, so resourceNames cannot narrow
// them: the rule is that no ClusterRole grants a write on configmaps, pods or pods/binding
// (a ClusterRole bound by a ClusterRoleBinding writes every namespace, kube-system's included),
// and that the namespaced Roles that do live outside tessera-system (binding writes only
// where workloads run) or name what they write.
TEST(DeployManifestsTest, WritesOnConfigMapsAndPodsOnlyInWorkloadNamespaceRoles) {
  const std::set<std::string> writes = {"create", "update",           "patch",
                                        "delete", "deletecollection", "*"};
  const std::set<std::string> guarded = {"configmaps", "pods", "pods/binding", "*"};
  int roles_with_writes = 0;
  for (const Doc& d : LoadAll()) {
    if (d.kind() != "ClusterRole" && d.kind() != "Role") continue;
    const std::string who = d.file + " " + d.kind() + "/" + d.name();
    for (const YAML::Node& r : d.node["rules"]) {
      bool writes_guarded = false;
      for (const YAML::Node& res : r["resources"]) {
        for (const YAML::Node& v : r["verbs"]) {
          writes_guarded |=
              guarded.contains(res.as<std::string>()) && writes.contains(v.as<std::string>());
        }
      }
      if (!writes_guarded || r["resourceNames"]) continue;
      EXPECT_EQ(d.kind(), "Role") << who << " writes configmaps or pods cluster-wide";
      EXPECT_NE(Namespace(d.node), "tessera-system") << who;
      ++roles_with_writes;
    }
  }
  EXPECT_GE(roles_with_writes, 1);  // the binder's Role exists
}

// Deleting the Lease must not stop leader election for good: LeaderElector creates it on 404,
// which needs create on leases (resourceNames cannot restrict create, so the rule has none).
TEST(DeployManifestsTest, SchedulerMayRecreateItsLease) {
  const std::set<std::string> granted = GrantsOf(LoadAll(), "tessera-scheduler");
  EXPECT_TRUE(granted.contains("tessera-system|coordination.k8s.io/leases:create"));
  for (const std::string& g : granted) {
    if (g.find("leases:") != std::string::npos) {
      EXPECT_TRUE(g.starts_with("tessera-system|")) << g;
    }
  }
}

// `kubectl apply -f deploy/` must not apply the standalone scheduler beside the extender and
// the examples. It applies what both modes share (namespace, Redis, agents, the binder
// Role); then deploy/scheduler/ or deploy/extender/ (one mode, its own folder); the examples
// are in deploy/examples/. kubectl cannot apply a KubeSchedulerConfiguration (it is
// kube-scheduler's file, not an API object): none is in a folder one of those applies.
TEST(DeployManifestsTest, EachModeHasItsFolderAndTheTopHoldsOnlyWhatBothShare) {
  const std::vector<Doc> docs = LoadAll();
  std::map<std::string, std::set<std::string>> by_dir;  // folder -> "Kind/name"
  for (const Doc& d : docs) {
    // A KubeSchedulerConfiguration has no metadata: index it only where there is some.
    const bool named = d.node["metadata"] && d.node["metadata"]["name"];
    by_dir[d.dir].insert(d.kind() + "/" + (named ? d.name() : ""));
  }
  auto holds = [&](const std::string& dir, const std::string& what) {
    return by_dir[dir].contains(what);
  };
  for (const char* what : {"Namespace/tessera-system", "StatefulSet/tessera-redis",
                           "DaemonSet/tessera-agent", "Role/tessera-binder"}) {
    EXPECT_TRUE(holds("", what)) << what << " is not in deploy/";
  }
  EXPECT_TRUE(holds("scheduler", "Deployment/tessera-scheduler"));
  EXPECT_TRUE(holds("extender", "Deployment/tessera-extender"));
  for (const std::string dir : {"", "scheduler", "extender", "examples"}) {
    for (const std::string& what : by_dir[dir]) {
      EXPECT_FALSE(what.starts_with("KubeSchedulerConfiguration/"))
          << "kubectl apply -f deploy/" << dir << " would fail on " << what;
    }
  }
  for (const std::string& what : by_dir[""]) {
    EXPECT_NE(what, "Deployment/tessera-scheduler") << "deploy/ applies one mode only";
    EXPECT_NE(what, "Deployment/tessera-extender") << "deploy/ applies one mode only";
  }
  // Workloads outside examples/ are Tessera's own, in tessera-system.
  for (const auto& [who, tmpl] : PodTemplates(docs)) {
    (void)tmpl;
    if (who.starts_with("example-")) continue;
    EXPECT_NE(who.find("tessera-"), std::string::npos) << "an example workload: " << who;
  }
  for (const Doc& d : docs) {
    if (d.file.starts_with("example-")) {
      EXPECT_EQ(d.dir, "examples") << d.file;
    }
  }
  EXPECT_FALSE(by_dir["examples"].empty());
  EXPECT_EQ(by_dir["extender/kube-scheduler"],
            std::set<std::string>{"KubeSchedulerConfiguration/"});
}

// managedResources names nvidia.com/mig-*, or pods asking for a whole MIG instance never
// reach the extender. Every MIG profile of the GPU catalog that can be a
// resource name (a '+' cannot) is there, and kube-scheduler checks it against the node too.
TEST(DeployManifestsTest, ManagedResourcesNameEveryMigProfileOfTheCatalog) {
  std::set<std::string> want;
  for (const model::GpuModel& m : model::AllGpuModels()) {
    for (const model::MigProfile& p : m.mig_profiles) {
      if (p.name.find('+') == std::string::npos) want.insert("nvidia.com/mig-" + p.name);
    }
  }
  ASSERT_GE(want.size(), 10u);
  int configs = 0;
  for (const Doc& d : LoadAll()) {
    if (d.kind() != "KubeSchedulerConfiguration") continue;
    ++configs;
    std::map<std::string, bool> managed;  // name -> ignoredByScheduler
    for (const YAML::Node& r : d.node["extenders"][0]["managedResources"]) {
      managed[r["name"].as<std::string>()] = r["ignoredByScheduler"].as<bool>(false);
    }
    for (const std::string& name : want) {
      ASSERT_TRUE(managed.contains(name)) << name << " is not in managedResources";
      EXPECT_FALSE(managed[name]) << name << ": the node's device plugin advertises it";
    }
    EXPECT_TRUE(managed.contains("tessera.io/gpu-milli"));
    EXPECT_TRUE(managed.contains("nvidia.com/gpu"));
  }
  EXPECT_EQ(configs, 1);
}

// A hung Redis is restarted, not only taken out of service: it has a liveness probe that
// wants PONG (or LOADING, while a large append-only file replays), with enough failures
// allowed not to restart a slow start; its single replica is stated and explained in the
// manifest, with its persistence (appendfsync always on a volume claim).
TEST(DeployManifestsTest, RedisIsRestartedWhenItStopsAnsweringAndPersistsEveryWrite) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* redis = Find(docs, "StatefulSet", "tessera-redis");
  ASSERT_NE(redis, nullptr);
  const YAML::Node c = redis->node["spec"]["template"]["spec"]["containers"][0];
  ASSERT_TRUE(c["livenessProbe"]["exec"]["command"].IsSequence());
  const std::string live = c["livenessProbe"]["exec"]["command"][2].as<std::string>();
  EXPECT_NE(live.find("redis-cli ping"), std::string::npos) << live;
  EXPECT_NE(live.find("PONG"), std::string::npos) << live;
  EXPECT_NE(live.find("LOADING"), std::string::npos) << live;
  EXPECT_GE(c["livenessProbe"]["periodSeconds"].as<int>() *
                c["livenessProbe"]["failureThreshold"].as<int>(),
            60);
  ASSERT_TRUE(c["readinessProbe"]["exec"]);
  EXPECT_EQ(redis->node["spec"]["replicas"].as<int>(), 1);
  EXPECT_NE(c["args"][0].as<std::string>().find("--appendfsync always"), std::string::npos);
  EXPECT_TRUE(redis->node["spec"]["volumeClaimTemplates"].IsSequence());
}

// The extender admits only kube-scheduler. kube-scheduler shows its client certificate
// (tlsConfig.certFile/keyFile, the one credential it can send an extender), and the extender
// is given the CA that signed it (--client-ca) from a Secret; no extender runs without client
// authentication.
TEST(DeployManifestsTest, TheExtenderAdmitsOnlyKubeSchedulersClientCertificate) {
  const std::vector<Doc> docs = LoadAll();
  for (const Doc& d : docs) {
    if (d.kind() != "KubeSchedulerConfiguration") continue;
    const YAML::Node tls = d.node["extenders"][0]["tlsConfig"];
    EXPECT_TRUE(tls["certFile"] && tls["keyFile"]) << d.file << ": no client certificate";
  }
  const Doc* dep = Find(docs, "Deployment", "tessera-extender");
  ASSERT_NE(dep, nullptr);
  const YAML::Node spec = dep->node["spec"]["template"]["spec"];
  const YAML::Node c = spec["containers"][0];
  std::string ca;
  for (const YAML::Node& a : c["args"]) {
    const std::string arg = a.as<std::string>();
    if (arg.starts_with("--client-ca=")) ca = arg.substr(12);
  }
  ASSERT_FALSE(ca.empty()) << "the extender runs without --client-ca";
  std::string volume;
  for (const YAML::Node& m : c["volumeMounts"]) {
    if (ca.starts_with(m["mountPath"].as<std::string>() + "/"))
      volume = m["name"].as<std::string>();
  }
  ASSERT_FALSE(volume.empty()) << ca << " is not in a mounted volume";
  bool from_secret = false;
  for (const YAML::Node& v : spec["volumes"]) {
    if (v["name"].as<std::string>() == volume && v["secret"]) {
      from_secret = v["secret"]["secretName"].as<std::string>() == "tessera-extender-client-ca";
    }
  }
  EXPECT_TRUE(from_secret) << "volume " << volume;
}

// Only kube-scheduler reaches the extender's port. A NetworkPolicy selects the extender's
// pods and admits, on its port only, kube-scheduler: from the control-plane nodes' addresses
// (a host-network kube-scheduler) or as a pod labelled component: kube-scheduler in
// kube-system. No rule admits every pod, every namespace or every port.
TEST(DeployManifestsTest, ExtenderNetworkPolicyAdmitsOnlyKubeScheduler) {
  const std::vector<Doc> docs = LoadAll();
  const Doc* ext = Find(docs, "Deployment", "tessera-extender");
  ASSERT_NE(ext, nullptr);
  const YAML::Node labels = ext->node["spec"]["template"]["metadata"]["labels"];
  int policies = 0;
  for (const Doc& d : docs) {
    if (d.kind() != "NetworkPolicy" || Namespace(d.node) != Namespace(ext->node)) continue;
    bool selects = d.node["spec"]["podSelector"]["matchLabels"].size() > 0;
    for (const auto& kv : d.node["spec"]["podSelector"]["matchLabels"]) {
      const YAML::Node v = labels[kv.first.as<std::string>()];
      selects &= v && v.as<std::string>() == kv.second.as<std::string>();
    }
    if (!selects) continue;
    ++policies;
    ASSERT_TRUE(d.node["spec"]["ingress"].IsSequence()) << d.name();
    for (const YAML::Node& rule : d.node["spec"]["ingress"]) {
      ASSERT_TRUE(rule["from"].IsSequence() && rule["from"].size() > 0)
          << d.name() << ": an ingress rule without from admits everyone";
      for (const YAML::Node& from : rule["from"]) {
        if (from["ipBlock"]) {
          const std::string cidr = from["ipBlock"]["cidr"].as<std::string>();
          EXPECT_NE(cidr, "0.0.0.0/0") << d.name();
          EXPECT_NE(cidr, "::/0") << d.name();
          continue;
        }
        EXPECT_EQ(
            from["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"].as<std::string>(
                ""),
            "kube-system")
            << d.name();
        EXPECT_EQ(from["podSelector"]["matchLabels"]["component"].as<std::string>(""),
                  "kube-scheduler")
            << d.name();
      }
      ASSERT_TRUE(rule["ports"].IsSequence()) << d.name() << ": every port open";
      for (const YAML::Node& p : rule["ports"]) EXPECT_EQ(p["port"].as<int>(), 8888);
    }
  }
  EXPECT_EQ(policies, 1) << "no NetworkPolicy selects the extender's pods";
}

}  // namespace
}  // namespace tessera::k8s
