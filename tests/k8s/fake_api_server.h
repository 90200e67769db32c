#pragma once
// FakeApiServer: an in-process Kubernetes API server for exactly the resources Tessera uses
// (pods, pods/binding, nodes, configmaps, events, coordination.k8s.io leases), built from the
// documented REST and watch protocol (https://kubernetes.io/docs/reference/using-api/api-concepts/)
// because no real API server can run here (STYLE.md: fakes only where the real thing cannot).
//
// HTTPS on a free loopback port with a CA and a server certificate (SAN IP:127.0.0.1) made at
// start by the `openssl` command; bearer-token authentication (401 otherwise).
// Semantics kept: one global resourceVersion; create → 409 AlreadyExists; update with a stale
// metadata.resourceVersion → 409 Conflict; JSON merge patch with a metadata.uid precondition;
// binding an already-bound pod → 409; list with limit/continue; watch with resourceVersion,
// allowWatchBookmarks and timeoutSeconds streaming newline-delimited events; a watch from a
// compacted resourceVersion → 410 Gone. Fault injection for the client's recovery paths:
// ExpireWatches (in-stream ERROR 410), DropWatches (connections cut), failing binds, delays.

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::k8s::testing_support {

using nlohmann::json;

// A throwaway CA and a server certificate for 127.0.0.1, made with the openssl command.
struct TestPki {
  std::string dir;
  std::string ca_pem, other_ca_pem;  // other_ca_pem signed nothing we serve
  std::string cert_path, key_path;

  TestPki() {
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
  ~TestPki() { std::filesystem::remove_all(dir); }
  static std::string Read(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

class FakeApiServer {
 public:
  static constexpr const char* kToken = "test-token-5up3r-s3cret";

  FakeApiServer() : server_(pki_.cert_path.c_str(), pki_.key_path.c_str()) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(48); };
    server_.set_keep_alive_max_count(100000);
    server_.set_tcp_nodelay(true);
    const std::string ns = "/api/v1/namespaces/([^/]+)";
    const std::string lease = "/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases";
    auto h = [this](auto fn) {
      return [this, fn](const httplib::Request& req, httplib::Response& res) {
        if (!Admit(req, res)) return;
        (this->*fn)(req, res);
      };
    };
    server_.Get("/api/v1/pods", h(&FakeApiServer::ListOrWatchPods));
    server_.Get("/api/v1/nodes", h(&FakeApiServer::ListOrWatchNodes));
    server_.Get(ns + "/pods/([^/]+)", h(&FakeApiServer::GetObject));
    server_.Patch(ns + "/pods/([^/]+)", h(&FakeApiServer::PatchPod));
    server_.Post(ns + "/pods/([^/]+)/binding", h(&FakeApiServer::Bind));
    server_.Post(ns + "/configmaps", h(&FakeApiServer::Create));
    server_.Get(ns + "/configmaps/([^/]+)", h(&FakeApiServer::GetObject));
    server_.Put(ns + "/configmaps/([^/]+)", h(&FakeApiServer::Update));
    server_.Post(ns + "/events", h(&FakeApiServer::Create));
    server_.Post(lease, h(&FakeApiServer::Create));
    server_.Get(lease + "/([^/]+)", h(&FakeApiServer::GetObject));
    server_.Put(lease + "/([^/]+)", h(&FakeApiServer::Update));
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
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
    std::lock_guard lock(mu_);
    Store("pods", ns + "/" + name, p, "ADDED");
  }
  void DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    auto& pods = objects_["pods"];
    auto it = pods.find(ns + "/" + name);
    if (it == pods.end()) return;
    json obj = it->second;
    pods.erase(it);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    log_.push_back({rv_, "pods", "DELETED", obj});
    cv_.notify_all();
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
  }
  static std::string fmt_uid(int64_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012lld", static_cast<long long>(n));
    return buf;
  }

  // Resource and key of a namespaced request path, from its regex matches.
  static std::pair<std::string, std::string> Target(const httplib::Request& req) {
    std::string resource = "pods";
    if (req.path.find("/configmaps") != std::string::npos) resource = "configmaps";
    if (req.path.find("/events") != std::string::npos) resource = "events";
    if (req.path.find("/leases") != std::string::npos) resource = "leases";
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
    std::lock_guard lock(mu_);
    if (objects_[resource].contains(key)) {
      return Status(res, 409, "AlreadyExists", resource + " " + key + " already exists");
    }
    obj["metadata"]["namespace"] = std::string(req.matches[1]);
    obj["metadata"].erase("resourceVersion");
    Store(resource, key, obj, "ADDED");
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
    Store(resource, key, obj, "MODIFIED");
    res.set_content(m[key].dump(), "application/json");
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
  bool closing_ = false;
};

}  // namespace tessera::k8s::testing_support
