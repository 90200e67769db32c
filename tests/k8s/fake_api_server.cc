// FakeApiServer (fake_api_server.h): the server itself, one object behind the header's API.
#include "fake_api_server.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

namespace tessera::k8s::testing_support {

TestPki::TestPki() {
  char tmpl[] = "/tmp/tessera-k8s-pki-XXXXXX";
  dir = mkdtemp(tmpl);
  const std::string d = dir;
  const std::string quiet = " >/dev/null 2>&1";
  auto run = [&](const std::string& cmd) {
    if (std::system((cmd + quiet).c_str()) != 0) {
      std::fprintf(stderr, "TestPki: failed: %s\n", cmd.c_str());
      std::abort();
    }
  };
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  run("openssl req -x509" + ec + " -keyout " + d + "/ca.key -out " + d +
      "/ca.crt -subj /CN=tessera-test-ca -days 2");
  run("openssl req -x509" + ec + " -keyout " + d + "/other.key -out " + d +
      "/other.crt -subj /CN=some-other-ca -days 2");
  run("openssl req" + ec + " -keyout " + d + "/server.key -out " + d +
      "/server.csr -subj /CN=kube-apiserver");
  std::ofstream(d + "/ext.cnf") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  run("openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.crt -CAkey " + d +
      "/ca.key -CAcreateserial -out " + d + "/server.crt -days 2 -extfile " + d + "/ext.cnf");
  ca_pem = Read(d + "/ca.crt");
  other_ca_pem = Read(d + "/other.crt");
  cert_path = d + "/server.crt";
  key_path = d + "/server.key";
}

TestPki::~TestPki() { std::filesystem::remove_all(dir); }

std::string TestPki::Read(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class FakeApiServer::Impl {
 public:
  Impl() : server_(pki_.cert_path.c_str(), pki_.key_path.c_str()) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(48); };
    server_.set_keep_alive_max_count(100000);
    server_.set_tcp_nodelay(true);
    const std::string ns = "/api/v1/namespaces/([^/]+)";
    const std::string lease = "/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases";
    const std::string pdb = "/apis/policy/v1/namespaces/([^/]+)/poddisruptionbudgets";
    auto h = [this](auto fn) {
      return [this, fn](const httplib::Request& req, httplib::Response& res) {
        if (!Admit(req, res)) return;
        (this->*fn)(req, res);
      };
    };
    server_.Get("/api/v1/pods", h(&Impl::ListOrWatchPods));
    server_.Get("/api/v1/nodes", h(&Impl::ListOrWatchNodes));
    server_.Get(ns + "/pods/([^/]+)", h(&Impl::GetObject));
    server_.Patch(ns + "/pods/([^/]+)", h(&Impl::PatchPod));
    server_.Post(ns + "/pods/([^/]+)/binding", h(&Impl::Bind));
    server_.Post(ns + "/pods/([^/]+)/eviction", h(&Impl::Evict));
    server_.Post(ns + "/configmaps", h(&Impl::Create));
    server_.Get(ns + "/configmaps/([^/]+)", h(&Impl::GetObject));
    server_.Put(ns + "/configmaps/([^/]+)", h(&Impl::Update));
    server_.Post(ns + "/events", h(&Impl::Create));
    server_.Post(lease, h(&Impl::Create));
    server_.Get(lease + "/([^/]+)", h(&Impl::GetObject));
    server_.Put(lease + "/([^/]+)", h(&Impl::Update));
    server_.Post(pdb, h(&Impl::Create));
    server_.Get(pdb, h(&Impl::ListPdbs));
    server_.Get(pdb + "/([^/]+)", h(&Impl::GetObject));
    server_.Put(pdb + "/([^/]+)", h(&Impl::Update));
    server_.Delete(pdb + "/([^/]+)", h(&Impl::DeleteObject));
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Impl() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const TestPki& pki() const { return pki_; }

  // ---- test-side object manipulation (as kubectl or a kubelet would) ----
  void AddNode(const std::string& name, int64_t cpu_milli = 64000, int64_t memory_gib = 512,
               bool ready = true) {
    json n = {{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"status",
               {{"allocatable",
                 {{"cpu", std::to_string(cpu_milli) + "m"},
                  {"memory", std::to_string(memory_gib) + "Gi"}}},
                {"conditions",
                 json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
    std::lock_guard lock(mu_);
    Store("nodes", name, n, "ADDED");
  }
  // A pod with one container; `resources` are its requests, `annotations` its metadata's.
  void AddPod(const std::string& ns, const std::string& name, const json& requests,
              const json& annotations = json::object(), const std::string& scheduler = "tessera") {
    AddPodWith(ns, name, requests, annotations, json::object(), nullptr, scheduler);
  }
  // AddPod with metadata.labels and an owner: one ownerReference object (the pod's controller
  // unless it says "controller": false), an array of them, or null for a bare pod.
  void AddPodWith(const std::string& ns, const std::string& name, const json& requests,
                  const json& annotations, const json& labels, const json& owner,
                  const std::string& scheduler = "tessera", const json& spec_patch = nullptr) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"annotations", annotations}}},
              {"spec",
               {{"schedulerName", scheduler},
                {"containers",
                 json::array({{{"name", "main"},
                               {"image", "inference:latest"},
                               {"resources", {{"requests", requests}, {"limits", requests}}}}})}}},
              {"status", {{"phase", "Pending"}}}};
    if (!labels.empty()) p["metadata"]["labels"] = labels;
    if (spec_patch.is_object()) p["spec"].merge_patch(spec_patch);
    if (owner.is_object() || owner.is_array()) {
      json refs = owner.is_array() ? owner : json::array({owner});
      for (auto& r : refs) {
        if (!r.contains("controller")) r["controller"] = true;
      }
      p["metadata"]["ownerReferences"] = refs;
    }
    std::lock_guard lock(mu_);
    Store("pods", ns + "/" + name, p, "ADDED");
  }
  // `kubectl patch --type merge` (RFC 7386) of a node, or of a pod's spec before anyone saw it
  // (AddPodWithSpec). Aborts if there is no such object (a broken test).
  void MergePatch(const std::string& resource, const std::string& key, const json& patch) {
    std::lock_guard lock(mu_);
    auto& objects = objects_[resource];
    auto it = objects.find(key);
    if (it == objects.end()) {
      std::fprintf(stderr, "FakeApiServer::MergePatch: no %s %s\n", resource.c_str(), key.c_str());
      std::abort();
    }
    json obj = it->second;
    obj.merge_patch(patch);
    Store(resource, key, obj, "MODIFIED");
  }
  // The kubelet's part: phase Running and the Ready condition True (or False: running, not yet
  // healthy). Aborts if there is no such pod (a broken test).
  void SetPodRunning(const std::string& ns, const std::string& name, bool ready = true) {
    std::lock_guard lock(mu_);
    auto& pods = objects_["pods"];
    auto it = pods.find(ns + "/" + name);
    if (it == pods.end()) {
      std::fprintf(stderr, "FakeApiServer::SetPodRunning: no pod %s/%s\n", ns.c_str(),
                   name.c_str());
      std::abort();
    }
    json obj = it->second;
    obj["status"]["phase"] = "Running";
    json conditions = json::array();
    for (const auto& c : obj["status"].value("conditions", json::array())) {
      if (c.value("type", "") != "Ready") conditions.push_back(c);
    }
    conditions.push_back({{"type", "Ready"}, {"status", ready ? "True" : "False"}});
    obj["status"]["conditions"] = conditions;
    Store("pods", it->first, obj, "MODIFIED");
  }
  // A container that ended: phase Succeeded or Failed, the Ready condition False. Aborts if
  // there is no such pod (a broken caller).
  void SetPodDone(const std::string& ns, const std::string& name, bool succeeded) {
    std::lock_guard lock(mu_);
    auto& pods = objects_["pods"];
    auto it = pods.find(ns + "/" + name);
    if (it == pods.end()) {
      std::fprintf(stderr, "FakeApiServer::SetPodDone: no pod %s/%s\n", ns.c_str(), name.c_str());
      std::abort();
    }
    json obj = it->second;
    obj["status"]["phase"] = succeeded ? "Succeeded" : "Failed";
    json conditions = json::array();
    for (const auto& c : obj["status"].value("conditions", json::array())) {
      if (c.value("type", "") != "Ready") conditions.push_back(c);
    }
    conditions.push_back({{"type", "Ready"}, {"status", "False"}});
    obj["status"]["conditions"] = conditions;
    Store("pods", it->first, obj, "MODIFIED");
  }
  void DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    RemoveObject("pods", ns + "/" + name);
  }
  // A policy/v1 PodDisruptionBudget as `kubectl apply` would make it (a second call replaces the
  // spec). `spec`: selector, one of minAvailable/maxUnavailable (int or "NN%"), optionally
  // unhealthyPodEvictionPolicy. Aborts on a spec the API server would refuse (a broken test).
  void AddPdb(const std::string& ns, const std::string& name, const json& spec) {
    if (const std::string e = PdbSpecError(spec); !e.empty()) {
      std::fprintf(stderr, "FakeApiServer::AddPdb %s/%s: %s\n", ns.c_str(), name.c_str(),
                   e.c_str());
      std::abort();
    }
    json p = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"generation", 1}}},
              {"spec", spec}};
    std::lock_guard lock(mu_);
    const std::string key = ns + "/" + name;
    auto& pdbs = objects_[kPdbs];
    std::string type = "ADDED";
    if (auto it = pdbs.find(key); it != pdbs.end()) {
      type = "MODIFIED";
      p["metadata"]["uid"] = it->second["metadata"]["uid"];
      p["metadata"]["generation"] = it->second["metadata"].value("generation", 1) + 1;
    }
    Store(kPdbs, key, p, type);
    SyncPdbs(ns);
  }
  void DeletePdb(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    RemoveObject(kPdbs, ns + "/" + name);
  }
  // The scale (spec.replicas) of the controller `kind`/`name` in `ns`, for PDBs that count
  // desired replicas; without it, the most pods that controller has had alive at once.
  void SetControllerScale(const std::string& ns, const std::string& kind, const std::string& name,
                          int replicas) {
    std::lock_guard lock(mu_);
    controller_scale_[ns + "/" + kind + "/" + name] = replicas;
    SyncPdbs(ns);
  }
  // Pods evicted through the eviction subresource, "ns/name" in order (dry runs left out).
  std::vector<std::string> evictions() {
    std::lock_guard lock(mu_);
    return evictions_;
  }
  // Evictions refused with 429 because of a disruption budget.
  int eviction_refusals() {
    std::lock_guard lock(mu_);
    return eviction_refusals_;
  }
  std::optional<json> Get(const std::string& resource, const std::string& key) {
    std::lock_guard lock(mu_);
    auto& m = objects_[resource];
    auto it = m.find(key);
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
  std::vector<json> All(const std::string& resource) {
    std::lock_guard lock(mu_);
    std::vector<json> out;
    for (const auto& [k, v] : objects_[resource]) out.push_back(v);
    return out;
  }
  // Successful bindings per pod key (a double bind would show as 2; the server refuses it).
  std::map<std::string, int> bindings() {
    std::lock_guard lock(mu_);
    return bindings_;
  }
  int bind_attempts() {
    std::lock_guard lock(mu_);
    return bind_attempts_;
  }

  // ---- fault injection ----
  // Drops the history: watches from older resourceVersions get 410 Gone at once (HTTP status),
  // and every open watch gets an in-stream ERROR event with code 410 and ends.
  void ExpireWatches() {
    std::lock_guard lock(mu_);
    compacted_rv_ = rv_;
    ++expire_generation_;
    cv_.notify_all();
  }
  // Cuts every open watch connection without a word.
  void DropWatches() {
    std::lock_guard lock(mu_);
    ++drop_generation_;
    cv_.notify_all();
  }
  // The next `n` watch requests answer HTTP 410 Gone, as for a compacted resourceVersion.
  void GoneOnNextWatches(int n) {
    std::lock_guard lock(mu_);
    gone_next_watches_ = n;
  }
  void FailNextBinds(int n) {
    std::lock_guard lock(mu_);
    fail_binds_ = n;
  }
  void SetDelay(double seconds) {
    std::lock_guard lock(mu_);
    delay_s_ = seconds;
  }
  int open_watches() {
    std::lock_guard lock(mu_);
    return open_watches_;
  }
  int64_t watches_started() {
    std::lock_guard lock(mu_);
    return watches_started_;
  }
  int64_t gone_answers() {
    std::lock_guard lock(mu_);
    return gone_answers_;
  }

 private:
  struct LogEntry {
    int64_t rv;
    std::string resource;
    std::string type;
    json object;
  };

  static void Status(httplib::Response& res, int code, const std::string& reason,
                     const std::string& message) {
    json s = {{"apiVersion", "v1"}, {"kind", "Status"}, {"status", "Failure"},
              {"code", code},       {"reason", reason}, {"message", message}};
    res.status = code;
    res.set_content(s.dump(), "application/json");
  }

  bool Admit(const httplib::Request& req, httplib::Response& res) {
    double delay = 0;
    {
      std::lock_guard lock(mu_);
      delay = delay_s_;
    }
    if (delay > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    if (req.get_header_value("Authorization") != std::string("Bearer ") + kToken) {
      Status(res, 401, "Unauthorized", "Unauthorized");
      return false;
    }
    return true;
  }

  // Caller holds mu_.
  void Store(const std::string& resource, const std::string& key, json obj,
             const std::string& type) {
    auto& meta = obj["metadata"];
    if (!meta.contains("uid")) meta["uid"] = fmt_uid(++uid_counter_);
    if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = "2024-01-01T00:00:00Z";
    meta["resourceVersion"] = std::to_string(++rv_);
    objects_[resource][key] = obj;
    log_.push_back({rv_, resource, type, obj});
    cv_.notify_all();
    if (resource == "pods") PodChanged(obj);
  }
  static std::string fmt_uid(int64_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012lld", static_cast<long long>(n));
    return buf;
  }

  // Resource and key of a namespaced request path, from its regex matches: the resource is the
  // segment after /namespaces/{ns}/ (so an object named "events" is no event).
  static std::pair<std::string, std::string> Target(const httplib::Request& req) {
    std::string resource = "pods";
    const std::string marker = "/namespaces/";
    if (const auto at = req.path.find(marker); at != std::string::npos) {
      const auto ns_end = req.path.find('/', at + marker.size());
      if (ns_end != std::string::npos) {
        const auto end = req.path.find('/', ns_end + 1);
        resource = req.path.substr(ns_end + 1,
                                   end == std::string::npos ? std::string::npos : end - ns_end - 1);
      }
    }
    std::string key = req.matches.size() > 2
                          ? std::string(req.matches[1]) + "/" + std::string(req.matches[2])
                          : "";
    return {resource, key};
  }

  void GetObject(const httplib::Request& req, httplib::Response& res) {
    auto [resource, key] = Target(req);
    std::lock_guard lock(mu_);
    auto& m = objects_[resource];
    auto it = m.find(key);
    if (it == m.end()) return Status(res, 404, "NotFound", resource + " " + key + " not found");
    res.set_content(it->second.dump(), "application/json");
  }

  void Create(const httplib::Request& req, httplib::Response& res) {
    auto [resource, unused] = Target(req);
    json obj = json::parse(req.body, nullptr, false);
    if (obj.is_discarded() || !obj.contains("metadata") || !obj["metadata"].contains("name")) {
      return Status(res, 400, "BadRequest", "body is not an object with metadata.name");
    }
    const std::string key =
        std::string(req.matches[1]) + "/" + obj["metadata"]["name"].get<std::string>();
    const std::string ns = req.matches[1];
    if (resource == kPdbs) {
      if (const std::string e = PdbSpecError(obj.value("spec", json())); !e.empty()) {
        return Invalid(res, obj["metadata"]["name"].get<std::string>(), e);
      }
      obj.erase("status");  // the controller's
      obj["metadata"]["generation"] = 1;
    }
    std::lock_guard lock(mu_);
    if (objects_[resource].contains(key)) {
      return Status(res, 409, "AlreadyExists", resource + " " + key + " already exists");
    }
    obj["metadata"]["namespace"] = ns;
    obj["metadata"].erase("resourceVersion");
    Store(resource, key, obj, "ADDED");
    if (resource == kPdbs) SyncPdbs(ns);
    res.status = 201;
    res.set_content(objects_[resource][key].dump(), "application/json");
  }

  void Update(const httplib::Request& req, httplib::Response& res) {
    auto [resource, key] = Target(req);
    json obj = json::parse(req.body, nullptr, false);
    if (obj.is_discarded() || !obj.is_object()) return Status(res, 400, "BadRequest", "bad body");
    std::lock_guard lock(mu_);
    auto& m = objects_[resource];
    auto it = m.find(key);
    if (it == m.end()) return Status(res, 404, "NotFound", key);
    const std::string want = obj["metadata"].value("resourceVersion", "");
    if (want != it->second["metadata"].value("resourceVersion", "")) {
      return Status(res, 409, "Conflict", "the object has been modified");
    }
    obj["metadata"]["uid"] = it->second["metadata"]["uid"];
    if (resource == kPdbs) {
      if (const std::string e = PdbSpecError(obj.value("spec", json())); !e.empty()) {
        return Invalid(res, std::string(req.matches[2]), e);
      }
      const json& old = it->second;
      const int64_t generation = old["metadata"].value("generation", int64_t{1});
      obj["metadata"]["generation"] =
          obj.value("spec", json()) == old.value("spec", json()) ? generation : generation + 1;
      obj["status"] = old.value("status", json::object());  // a PUT cannot set the status
    }
    Store(resource, key, obj, "MODIFIED");
    if (resource == kPdbs) SyncPdbs(std::string(req.matches[1]));
    res.set_content(m[key].dump(), "application/json");
  }

  // DELETE of an object without graceful deletion (PDBs): a Success Status naming it.
  void DeleteObject(const httplib::Request& req, httplib::Response& res) {
    auto [resource, key] = Target(req);
    std::lock_guard lock(mu_);
    auto& m = objects_[resource];
    auto it = m.find(key);
    if (it == m.end()) return NotFound(res, resource, std::string(req.matches[2]));
    const json details = {{"name", std::string(req.matches[2])},
                          {"kind", resource},
                          {"uid", it->second["metadata"]["uid"]}};
    RemoveObject(resource, key);
    res.set_content(json{{"apiVersion", "v1"},
                         {"kind", "Status"},
                         {"metadata", json::object()},
                         {"status", "Success"},
                         {"details", details}}
                        .dump(),
                    "application/json");
  }

  void ListPdbs(const httplib::Request& req, httplib::Response& res) {
    const std::string ns = req.matches[1];
    std::lock_guard lock(mu_);
    json items = json::array();
    for (const auto& [key, pdb] : InNamespace(kPdbs, ns)) items.push_back(*pdb);
    res.set_content(json{{"apiVersion", "policy/v1"},
                         {"kind", "PodDisruptionBudgetList"},
                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                         {"items", items}}
                        .dump(),
                    "application/json");
  }

  void PatchPod(const httplib::Request& req, httplib::Response& res) {
    auto [resource, key] = Target(req);
    json patch = json::parse(req.body, nullptr, false);
    if (patch.is_discarded() || !patch.is_object()) {
      return Status(res, 400, "BadRequest", "bad patch");
    }
    std::lock_guard lock(mu_);
    auto& m = objects_["pods"];
    auto it = m.find(key);
    if (it == m.end()) return Status(res, 404, "NotFound", key);
    if (patch.contains("metadata") && patch["metadata"].contains("uid")) {
      if (patch["metadata"]["uid"] != it->second["metadata"]["uid"]) {
        return Status(res, 409, "Conflict", "Precondition failed: UID in precondition");
      }
      patch["metadata"].erase("uid");
    }
    json obj = it->second;
    obj.merge_patch(patch);
    Store("pods", key, obj, "MODIFIED");
    res.set_content(m[key].dump(), "application/json");
  }

  void Bind(const httplib::Request& req, httplib::Response& res) {
    const std::string key = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
    json b = json::parse(req.body, nullptr, false);
    std::lock_guard lock(mu_);
    ++bind_attempts_;
    if (fail_binds_ > 0) {
      --fail_binds_;
      return Status(res, 500, "InternalError", "injected binding failure");
    }
    if (b.is_discarded() || !b.contains("target") || !b["target"].contains("name")) {
      return Status(res, 400, "BadRequest", "binding without target.name");
    }
    auto& m = objects_["pods"];
    auto it = m.find(key);
    if (it == m.end()) return Status(res, 404, "NotFound", key);
    if (b["metadata"].contains("uid") && b["metadata"]["uid"] != it->second["metadata"]["uid"]) {
      return Status(res, 409, "Conflict", "uid mismatch");
    }
    if (!it->second["spec"].value("nodeName", "").empty()) {
      return Status(res, 409, "Conflict",
                    "pod " + key + " is already assigned to node " +
                        it->second["spec"]["nodeName"].get<std::string>());
    }
    const std::string node = b["target"]["name"];
    if (!objects_["nodes"].contains(node)) return Status(res, 404, "NotFound", "node " + node);
    json obj = it->second;
    obj["spec"]["nodeName"] = node;
    obj["status"]["phase"] = "Running";  // the kubelet's part, collapsed
    Store("pods", key, obj, "MODIFIED");
    ++bindings_[key];
    res.status = 201;
    Status(res, 201, "", "");
    res.set_content(json{{"kind", "Status"}, {"status", "Success"}, {"code", 201}}.dump(),
                    "application/json");
  }

  // ---- eviction and disruption budgets ----
  static constexpr const char* kPdbs = "poddisruptionbudgets";

  static void Reply(httplib::Response& res, int code, json status) {
    status["apiVersion"] = "v1";
    status["kind"] = "Status";
    status["metadata"] = json::object();
    status["code"] = code;
    res.status = code;
    res.set_content(status.dump(), "application/json");
  }
  static void NotFound(httplib::Response& res, const std::string& resource,
                       const std::string& name) {
    Reply(res, 404,
          {{"status", "Failure"},
           {"reason", "NotFound"},
           {"message", resource + " \"" + name + "\" not found"},
           {"details", {{"name", name}, {"kind", resource}}}});
  }
  static void Invalid(httplib::Response& res, const std::string& name, const std::string& why) {
    Reply(res, 422,
          {{"status", "Failure"},
           {"reason", "Invalid"},
           {"message", "PodDisruptionBudget.policy \"" + name + "\" is invalid: " + why},
           {"details", {{"name", name}, {"group", "policy"}, {"kind", "PodDisruptionBudget"}}}});
  }

  // The value at a JSON pointer, null where there is none.
  static json At(const json& j, const char* pointer) {
    const json::json_pointer p(pointer);
    return j.contains(p) ? j.at(p) : json();
  }
  static std::string Text(const json& j, const char* pointer) {
    const json v = At(j, pointer);
    return v.is_string() ? v.get<std::string>() : "";
  }
  static bool Deleting(const json& pod) {
    return !At(pod, "/metadata/deletionTimestamp").is_null();
  }
  // podutil.IsPodReady: the Ready condition is True (the kubelet sets it only while Running).
  static bool Ready(const json& pod) {
    const json conditions = At(pod, "/status/conditions");
    if (!conditions.is_array()) return false;
    for (const auto& c : conditions) {
      if (c.is_object() && c.value("type", "") == "Ready" && c.value("status", "") == "True") {
        return true;
      }
    }
    return false;
  }
  // "ns/Kind/name" of the pod's controller (its ownerReference with controller: true), or "".
  static std::string ControllerKey(const std::string& ns, const json& pod) {
    const json refs = At(pod, "/metadata/ownerReferences");
    if (!refs.is_array()) return "";
    for (const auto& r : refs) {
      if (r.is_object() && r.value("controller", false)) {
        return ns + "/" + r.value("kind", "") + "/" + r.value("name", "");
      }
    }
    return "";
  }

  // A LabelSelector against a pod's labels: null (no selector) matches nothing, {} every pod; an
  // unknown operator makes the selector invalid, and an invalid selector matches nothing.
  static bool Selects(const json& selector, const json& labels) {
    if (!selector.is_object()) return false;
    auto label = [&](const std::string& k) -> std::optional<std::string> {
      if (labels.is_object() && labels.contains(k) && labels[k].is_string()) {
        return labels[k].get<std::string>();
      }
      return std::nullopt;
    };
    json match_labels = selector.value("matchLabels", json::object());
    if (match_labels.is_null()) match_labels = json::object();
    if (!match_labels.is_object()) return false;
    for (const auto& [k, v] : match_labels.items()) {
      if (!v.is_string() || label(k) != v.get<std::string>()) return false;
    }
    json expressions = selector.value("matchExpressions", json::array());
    if (expressions.is_null()) expressions = json::array();
    if (!expressions.is_array()) return false;
    for (const auto& e : expressions) {
      if (!e.is_object()) return false;
      const auto have = label(e.value("key", ""));
      const json values = e.value("values", json::array());
      const bool listed = have && values.is_array() &&
                          std::find(values.begin(), values.end(), json(*have)) != values.end();
      const std::string op = e.value("operator", "");
      bool holds = false;  // stays false for an unknown operator
      if (op == "In") holds = listed;
      if (op == "NotIn") holds = !listed;
      if (op == "Exists") holds = have.has_value();
      if (op == "DoesNotExist") holds = !have.has_value();
      if (!holds) return false;
    }
    return true;
  }

  // An IntOrString against `total`: the int, or that percentage of `total` rounded up (the
  // disruption controller's rounding); nullopt when it is neither an int nor "NN%".
  static std::optional<int64_t> Scaled(const json& v, int64_t total) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (!v.is_string()) return std::nullopt;
    const std::string s = v.get<std::string>();
    if (s.size() < 2 || s.size() > 10 || s.back() != '%') return std::nullopt;
    int64_t percent = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      percent = percent * 10 + (s[i] - '0');
    }
    return (percent * total + 99) / 100;
  }

  // What the API server's validation says of a PDB spec, "" when it passes.
  static std::string PdbSpecError(const json& spec) {
    if (!spec.is_object()) return "spec: Required value";
    auto set = [&](const char* f) { return spec.contains(f) && !spec[f].is_null(); };
    if (set("minAvailable") && set("maxUnavailable")) {
      return "spec: Invalid value: minAvailable and maxUnavailable cannot be both set";
    }
    for (const char* f : {"minAvailable", "maxUnavailable"}) {
      if (!set(f)) continue;
      const std::string field = std::string("spec.") + f + ": Invalid value: " + spec[f].dump();
      const auto v = Scaled(spec[f], 100);  // a percentage of 100 is its own number
      if (!v) return field + ": must be an integer or a percentage (e.g. \"50%\")";
      if (*v < 0) return field + ": must be greater than or equal to 0";
      if (spec[f].is_string() && *v > 100) return field + ": must not be greater than 100%";
    }
    if (set("unhealthyPodEvictionPolicy")) {
      const json& p = spec["unhealthyPodEvictionPolicy"];
      if (p != "IfHealthyBudget" && p != "AlwaysAllow") {
        return "spec.unhealthyPodEvictionPolicy: Unsupported value: " + p.dump() +
               ": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"";
      }
    }
    return "";
  }

  // Caller holds mu_. The objects of `resource` in namespace `ns`, by key.
  std::vector<std::pair<std::string, json*>> InNamespace(const std::string& resource,
                                                         const std::string& ns) {
    std::vector<std::pair<std::string, json*>> out;
    auto& m = objects_[resource];
    const std::string prefix = ns + "/";
    for (auto it = m.lower_bound(prefix); it != m.end() && it->first.starts_with(prefix); ++it) {
      out.emplace_back(it->first, &it->second);
    }
    return out;
  }

  struct Budget {
    int64_t expected = 0, healthy = 0, desired = 0, allowed = 0;
  };
  // Caller holds mu_. The disruption controller's arithmetic for `pdb` over the pods of `ns`.
  Budget Evaluate(const std::string& ns, const json& pdb) {
    const json spec = pdb.value("spec", json::object());
    const json selector = spec.value("selector", json());
    std::vector<const json*> pods;
    for (const auto& [key, pod] : InNamespace("pods", ns)) {
      if (Selects(selector, At(*pod, "/metadata/labels"))) pods.push_back(pod);
    }
    Budget b;
    for (const json* p : pods) {
      if (!Deleting(*p) && Ready(*p)) ++b.healthy;
    }
    const json min = spec.value("minAvailable", json());
    const json max = spec.value("maxUnavailable", json());
    if (!max.is_null()) {
      b.expected = Scale(ns, pods);
      b.desired = std::max<int64_t>(0, b.expected - Scaled(max, b.expected).value_or(0));
    } else if (min.is_number_integer()) {
      b.expected = static_cast<int64_t>(pods.size());
      b.desired = min.get<int64_t>();
    } else if (!min.is_null()) {
      b.expected = Scale(ns, pods);
      b.desired = Scaled(min, b.expected).value_or(0);
    }
    b.allowed = std::max<int64_t>(0, b.healthy - b.desired);
    return b;
  }
  // Caller holds mu_. The summed scale of the pods' controllers, each once ("desired replicas");
  // pods without a controller add nothing.
  int64_t Scale(const std::string& ns, const std::vector<const json*>& pods) {
    std::map<std::string, int64_t> scales;
    for (const json* p : pods) {
      const std::string c = ControllerKey(ns, *p);
      if (c.empty()) continue;
      auto it = controller_scale_.find(c);
      scales[c] = it != controller_scale_.end() ? it->second : controller_high_water_[c];
    }
    int64_t sum = 0;
    for (const auto& [c, n] : scales) sum += n;
    return sum;
  }
  // Caller holds mu_. The disruption controller caught up at once: each PDB of `ns` gets the
  // status its pods call for, written (a MODIFIED event) only when it changes.
  void SyncPdbs(const std::string& ns) {
    for (const auto& [key, pdb] : InNamespace(kPdbs, ns)) {
      const Budget b = Evaluate(ns, *pdb);
      const json generation =
          At(*pdb, "/metadata/generation").is_null() ? json(1) : At(*pdb, "/metadata/generation");
      const bool allowed = b.allowed > 0;
      const json status = {
          {"observedGeneration", generation},
          {"expectedPods", b.expected},
          {"currentHealthy", b.healthy},
          {"desiredHealthy", b.desired},
          {"disruptionsAllowed", b.allowed},
          {"conditions", json::array({{{"type", "DisruptionAllowed"},
                                       {"status", allowed ? "True" : "False"},
                                       {"reason", allowed ? "SufficientPods" : "InsufficientPods"},
                                       {"message", ""},
                                       {"observedGeneration", generation},
                                       {"lastTransitionTime", "2024-01-01T00:00:00Z"}}})}};
      if (At(*pdb, "/status") == status) continue;
      json obj = *pdb;
      obj["status"] = status;
      Store(kPdbs, key, obj, "MODIFIED");
    }
  }
  // Caller holds mu_ (Store calls it for every pod written): the pod's controller may have
  // reached a new high-water mark of live pods, and the budgets of its namespace may move.
  void PodChanged(const json& pod) {
    const std::string ns = Text(pod, "/metadata/namespace");
    if (const std::string c = ControllerKey(ns, pod); !c.empty()) {
      int64_t alive = 0;
      for (const auto& [key, p] : InNamespace("pods", ns)) {
        if (!Deleting(*p) && ControllerKey(ns, *p) == c) ++alive;
      }
      auto& high = controller_high_water_[c];
      high = std::max(high, alive);
    }
    SyncPdbs(ns);
  }
  // Caller holds mu_. Deletes `key` at once (no grace period): one DELETED event, whose object
  // carries `condition` among its status.conditions when one is given.
  bool RemoveObject(const std::string& resource, const std::string& key,
                    const json& condition = json()) {
    auto& m = objects_[resource];
    auto it = m.find(key);
    if (it == m.end()) return false;
    json obj = std::move(it->second);
    m.erase(it);
    if (!condition.is_null()) obj["status"]["conditions"].push_back(condition);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    log_.push_back({rv_, resource, "DELETED", obj});
    cv_.notify_all();
    if (resource == "pods") SyncPdbs(key.substr(0, key.find('/')));
    return true;
  }

  void Evict(const httplib::Request& req, httplib::Response& res) {
    const std::string ns = req.matches[1], name = req.matches[2], key = ns + "/" + name;
    auto bad = [&](const std::string& why) {
      Reply(res, 400, {{"status", "Failure"}, {"reason", "BadRequest"}, {"message", why}});
    };
    const json e = json::parse(req.body, nullptr, false);
    if (e.is_discarded() || !e.is_object()) return bad("the body is not a JSON object");
    // Missing apiVersion and kind are defaulted from the endpoint, as the API server does.
    const json kind = e.value("kind", json("Eviction"));
    const json version = e.value("apiVersion", json("policy/v1"));
    if (kind != "Eviction" || (version != "policy/v1" && version != "policy/v1beta1")) {
      return bad("the body is a " + version.dump() + " " + kind.dump() +
                 ", not a policy/v1 Eviction");
    }
    if (Text(e, "/metadata/name") != name) {
      return bad("name in URL does not match name in Eviction object");
    }
    if (const json n = At(e, "/metadata/namespace"); !n.is_null() && n != ns) {
      return bad(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    const json options = e.value("deleteOptions", json::object());
    if (!options.is_object()) return bad("deleteOptions is not an object");

    std::lock_guard lock(mu_);
    auto& pods = objects_["pods"];
    auto it = pods.find(key);
    if (it == pods.end()) return NotFound(res, "pods", name);
    const json pod = it->second;
    for (const char* field : {"uid", "resourceVersion"}) {
      const json want = At(options, (std::string("/preconditions/") + field).c_str());
      const json have = pod["metadata"].value(field, json());
      if (!want.is_null() && want != have) {
        return Reply(res, 409,
                     {{"status", "Failure"},
                      {"reason", "Conflict"},
                      {"message", std::string("Precondition failed: ") + field +
                                      " in precondition: " + want.dump() + ", " + field +
                                      " in object meta: " + have.dump()}});
      }
    }
    const bool dry_run = options.value("dryRun", json::array()) == json::array({"All"});
    auto evict = [&] {
      if (!dry_run) {
        RemoveObject("pods", key,
                     {{"type", "DisruptionTarget"},
                      {"status", "True"},
                      {"reason", "EvictionByEvictionAPI"},
                      {"message", "Eviction API: evicting"}});
        evictions_.push_back(key);
      }
      Reply(res, 201, {{"status", "Success"}});
    };

    const std::string phase = Text(pod, "/status/phase");
    if (phase == "Pending" || phase == "Succeeded" || phase == "Failed" || Deleting(pod)) {
      return evict();
    }
    std::vector<const json*> budgets;
    for (const auto& [k, pdb] : InNamespace(kPdbs, ns)) {
      if (Selects(At(*pdb, "/spec/selector"), At(pod, "/metadata/labels"))) budgets.push_back(pdb);
    }
    if (budgets.size() > 1) {
      return Reply(res, 500,
                   {{"status", "Failure"},
                    {"message",
                     "This pod has more than one PodDisruptionBudget, which the eviction "
                     "subresource does not support."}});
    }
    if (budgets.empty()) return evict();
    const json& pdb = *budgets.front();
    const Budget b = Evaluate(ns, pdb);
    if (!Ready(pod)) {
      if (Text(pdb, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow") return evict();
      if (b.healthy >= b.desired && b.desired > 0) return evict();  // IfHealthyBudget
    }
    if (b.allowed > 0) return evict();
    ++eviction_refusals_;
    Reply(res, 429,
          {{"status", "Failure"},
           {"reason", "TooManyRequests"},
           {"message", "Cannot evict pod as it would violate the pod's disruption budget."},
           {"details",
            {{"causes",
              json::array(
                  {{{"reason", "DisruptionBudget"},
                    {"message", "The disruption budget " + Text(pdb, "/metadata/name") + " needs " +
                                    std::to_string(b.desired) + " healthy pods and has " +
                                    std::to_string(b.healthy) + " currently"}}})}}}});
  }

  void ListOrWatchPods(const httplib::Request& req, httplib::Response& res) {
    ListOrWatch("pods", "PodList", req, res);
  }
  void ListOrWatchNodes(const httplib::Request& req, httplib::Response& res) {
    ListOrWatch("nodes", "NodeList", req, res);
  }

  void ListOrWatch(const std::string& resource, const std::string& kind,
                   const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true") {
      return Watch(resource, req, res);
    }
    std::lock_guard lock(mu_);
    const auto& m = objects_[resource];
    const size_t limit =
        req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : m.size() + 1;
    const std::string from = req.get_param_value("continue");
    json items = json::array();
    std::string next;
    for (auto it = from.empty() ? m.begin() : m.upper_bound(from); it != m.end(); ++it) {
      if (items.size() == limit) {
        next = std::prev(it)->first;
        break;
      }
      items.push_back(it->second);
    }
    json list = {{"apiVersion", "v1"},
                 {"kind", kind},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                 {"items", items}};
    if (!next.empty()) list["metadata"]["continue"] = next;
    res.set_content(list.dump(), "application/json");
  }

  void Watch(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
    const std::string rv_text = req.get_param_value("resourceVersion");
    const int timeout_s =
        req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 300;
    const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    int64_t from = 0;
    {
      std::lock_guard lock(mu_);
      from = rv_text.empty() || rv_text == "0" ? rv_ : std::stoll(rv_text);
      if (from < compacted_rv_ || gone_next_watches_ > 0) {
        if (gone_next_watches_ > 0) --gone_next_watches_;
        ++gone_answers_;
        return Status(res, 410, "Expired", "too old resource version: " + rv_text);
      }
      ++watches_started_;
    }
    struct State {
      int64_t last;
      int expire_gen, drop_gen;
      std::chrono::steady_clock::time_point end, next_bookmark;
      bool counted = false;
    };
    auto st = std::make_shared<State>();
    st->last = from;
    {
      std::lock_guard lock(mu_);
      st->expire_gen = expire_generation_;
      st->drop_gen = drop_generation_;
    }
    st->end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    st->next_bookmark = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    res.set_chunked_content_provider(
        "application/json", [this, st, resource, bookmarks](size_t, httplib::DataSink& sink) {
          std::string out;
          bool end = false, drop = false;
          {
            std::unique_lock lock(mu_);
            if (!st->counted) {
              st->counted = true;
              ++open_watches_;
            }
            cv_.wait_for(lock, std::chrono::milliseconds(100), [&] {
              return closing_ || drop_generation_ != st->drop_gen ||
                     expire_generation_ != st->expire_gen ||
                     (!log_.empty() && log_.back().rv > st->last);
            });
            if (closing_ || drop_generation_ != st->drop_gen) {
              drop = true;
            } else if (expire_generation_ != st->expire_gen) {
              json s = {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"status", "Failure"},
                        {"code", 410},
                        {"reason", "Expired"},
                        {"message", "The resourceVersion for the provided watch is too old."}};
              out = json{{"type", "ERROR"}, {"object", s}}.dump() + "\n";
              end = true;
            } else {
              auto it = std::upper_bound(log_.begin(), log_.end(), st->last,
                                         [](int64_t v, const LogEntry& e) { return v < e.rv; });
              for (; it != log_.end(); ++it) {
                st->last = it->rv;
                if (it->resource != resource) continue;
                out += json{{"type", it->type}, {"object", it->object}}.dump() + "\n";
              }
              const auto now = std::chrono::steady_clock::now();
              if (bookmarks && now >= st->next_bookmark) {
                st->next_bookmark = now + std::chrono::milliseconds(500);
                json bm = {{"kind", resource == "pods" ? "Pod" : "Node"},
                           {"apiVersion", "v1"},
                           {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
                st->last = std::max(st->last, rv_);
                out += json{{"type", "BOOKMARK"}, {"object", bm}}.dump() + "\n";
              }
              end = now >= st->end;
            }
            if (drop || end) --open_watches_;
          }
          if (drop) return false;
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            std::lock_guard lock(mu_);
            --open_watches_;
            return false;
          }
          if (end) sink.done();
          return true;
        });
  }

  TestPki pki_;
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::map<std::string, json>> objects_;
  std::vector<LogEntry> log_;
  int64_t rv_ = 100;
  int64_t uid_counter_ = 0;
  int64_t compacted_rv_ = 0;
  int expire_generation_ = 0, drop_generation_ = 0;
  int fail_binds_ = 0;
  int gone_next_watches_ = 0;
  double delay_s_ = 0;
  int open_watches_ = 0;
  int64_t watches_started_ = 0, gone_answers_ = 0;
  int bind_attempts_ = 0;
  std::map<std::string, int> bindings_;
  std::vector<std::string> evictions_;
  int eviction_refusals_ = 0;
  // "ns/Kind/name" of a controller → its scale as set by SetControllerScale, and the most pods
  // it has had alive at once (the scale otherwise).
  std::map<std::string, int64_t> controller_scale_, controller_high_water_;
  bool closing_ = false;
};

FakeApiServer::FakeApiServer() : impl_(std::make_unique<Impl>()) {}
FakeApiServer::~FakeApiServer() = default;

std::string FakeApiServer::url() const { return impl_->url(); }
const TestPki& FakeApiServer::pki() const { return impl_->pki(); }
void FakeApiServer::AddNode(const std::string& name, int64_t cpu_milli, int64_t memory_gib,
                            bool ready) {
  impl_->AddNode(name, cpu_milli, memory_gib, ready);
}
void FakeApiServer::AddPod(const std::string& ns, const std::string& name, const json& requests,
                           const json& annotations, const std::string& scheduler) {
  impl_->AddPod(ns, name, requests, annotations, scheduler);
}
void FakeApiServer::AddPodWith(const std::string& ns, const std::string& name, const json& requests,
                               const json& annotations, const json& labels, const json& owner,
                               const std::string& scheduler) {
  impl_->AddPodWith(ns, name, requests, annotations, labels, owner, scheduler);
}
void FakeApiServer::AddPodWithSpec(const std::string& ns, const std::string& name,
                                   const json& requests, const json& annotations,
                                   const json& spec_patch) {
  impl_->AddPodWith(ns, name, requests, annotations, json::object(), nullptr, "tessera",
                    spec_patch);
}
void FakeApiServer::PatchNode(const std::string& name, const json& merge_patch) {
  impl_->MergePatch("nodes", name, merge_patch);
}
void FakeApiServer::MergePatchPod(const std::string& ns, const std::string& name,
                                  const json& merge_patch) {
  impl_->MergePatch("pods", ns + "/" + name, merge_patch);
}
void FakeApiServer::SetPodRunning(const std::string& ns, const std::string& name, bool ready) {
  impl_->SetPodRunning(ns, name, ready);
}
void FakeApiServer::SetPodDone(const std::string& ns, const std::string& name, bool succeeded) {
  impl_->SetPodDone(ns, name, succeeded);
}
void FakeApiServer::DeletePod(const std::string& ns, const std::string& name) {
  impl_->DeletePod(ns, name);
}
void FakeApiServer::AddPdb(const std::string& ns, const std::string& name, const json& spec) {
  impl_->AddPdb(ns, name, spec);
}
void FakeApiServer::DeletePdb(const std::string& ns, const std::string& name) {
  impl_->DeletePdb(ns, name);
}
void FakeApiServer::SetControllerScale(const std::string& ns, const std::string& kind,
                                       const std::string& name, int replicas) {
  impl_->SetControllerScale(ns, kind, name, replicas);
}
std::vector<std::string> FakeApiServer::evictions() { return impl_->evictions(); }
int FakeApiServer::eviction_refusals() { return impl_->eviction_refusals(); }
std::optional<json> FakeApiServer::Get(const std::string& resource, const std::string& key) {
  return impl_->Get(resource, key);
}
std::vector<json> FakeApiServer::All(const std::string& resource) { return impl_->All(resource); }
std::map<std::string, int> FakeApiServer::bindings() { return impl_->bindings(); }
int FakeApiServer::bind_attempts() { return impl_->bind_attempts(); }
void FakeApiServer::ExpireWatches() { impl_->ExpireWatches(); }
void FakeApiServer::DropWatches() { impl_->DropWatches(); }
void FakeApiServer::GoneOnNextWatches(int n) { impl_->GoneOnNextWatches(n); }
void FakeApiServer::FailNextBinds(int n) { impl_->FailNextBinds(n); }
void FakeApiServer::SetDelay(double seconds) { impl_->SetDelay(seconds); }
int FakeApiServer::open_watches() { return impl_->open_watches(); }
int64_t FakeApiServer::watches_started() { return impl_->watches_started(); }
int64_t FakeApiServer::gone_answers() { return impl_->gone_answers(); }

void WriteKubeconfig(const FakeApiServer& api, const std::string& dir) {
  std::ofstream(dir + "/ca.pem") << api.pki().ca_pem;
  std::ofstream(dir + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
      << "clusters:\n- name: c\n  cluster:\n    server: " << api.url()
      << "\n    certificate-authority: ca.pem\n"
      << "users:\n- name: u\n  user:\n    token: " << FakeApiServer::kToken << "\n"
      << "contexts:\n- name: t\n  context:\n    cluster: c\n    user: u\n";
}

}  // namespace tessera::k8s::testing_support
