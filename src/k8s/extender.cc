// Before anything that includes <resolv.h> (cpp-httplib does), whose `_res` macro breaks Eigen.
#include "predict/predictor.h"
//
#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cctype>
#include <cmath>
#include <set>

#include "base/daemon_http.h"
#include "k8s/cluster_view.h"
#include "k8s/extender.h"
#include "policy/registry.h"

namespace tessera::k8s {

using nlohmann::json;

namespace {
constexpr const char* kLoop = "refresher";

// SHA-256 of `text`: tokens of any length compare in the same time through their digests.
std::array<unsigned char, 32> Sha256(std::string_view text) {
  std::array<unsigned char, 32> digest{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_sha256(), nullptr);
  return digest;
}

// Whether `req` carries "Authorization: Bearer <token>"; in constant time in the token.
bool HasBearerToken(const httplib::Request& req, const std::array<unsigned char, 32>& want) {
  constexpr std::string_view kScheme = "Bearer ";
  const std::string header = req.get_header_value("Authorization");
  if (!std::string_view(header).starts_with(kScheme)) return false;
  const auto got = Sha256(std::string_view(header).substr(kScheme.size()));
  return CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

// Whether the TLS client presented a certificate that the configured CA verified (a
// certificate that fails verification ends the handshake before any request).
bool HasVerifiedClientCertificate(const httplib::Request& req) {
  if (req.ssl == nullptr) return false;
  X509* cert = SSL_get_peer_certificate(req.ssl);
  if (cert == nullptr) return false;
  X509_free(cert);
  return SSL_get_verify_result(req.ssl) == X509_V_OK;
}

// Asks TLS clients for a certificate chaining to `ca_file`. A client without one still
// completes the handshake (the kubelet's probes have none) and is refused per request.
Expected<void> RequestClientCertificates(SSL_CTX* ctx, const std::string& ca_file) {
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return Fail("client CA {}: not a readable PEM certificate bundle", ca_file);
  }
  if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str())) {
    SSL_CTX_set_client_CA_list(ctx, names);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return {};
}

// Calls `visit(c)` for each character of `body` outside JSON strings until it returns false;
// whether the scan reached the end. The one string-aware scan behind every shape limit below:
// linear, allocates nothing, and leaves malformed JSON to the parser that follows.
template <typename Visit>
bool ScanOutsideStrings(std::string_view body, Visit visit) {
  bool in_string = false, escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (!visit(c)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool JsonDepthWithin(std::string_view body, int max_depth) {
  int depth = 0;
  return ScanOutsideStrings(body, [&](char c) {
    if (c == '[' || c == '{') return ++depth <= max_depth;
    if (c == ']' || c == '}') --depth;
    return true;
  });
}

bool JsonValuesWithin(std::string_view body, size_t max_values) {
  size_t values = 1;
  return ScanOutsideStrings(
      body, [&](char c) { return !(c == '[' || c == '{' || c == ',') || ++values <= max_values; });
}

std::string JsonShapeProblem(std::string_view body) {
  if (!JsonDepthWithin(body, ExtenderConfig::kMaxJsonDepth)) {
    return fmt::format("body nests arrays or objects deeper than {} levels",
                       ExtenderConfig::kMaxJsonDepth);
  }
  if (!JsonValuesWithin(body, ExtenderConfig::kMaxJsonValues)) {
    return fmt::format("body has more than {} JSON values", ExtenderConfig::kMaxJsonValues);
  }
  return {};
}

Extender::Extender(store::Store& store, const Clock& clock, ExtenderConfig config, ApiClient* api)
    : store_(store),
      clock_(clock),
      config_(std::move(config)),
      api_(api),
      health_(clock, LogHealthChange),
      rng_(config_.seed) {
  health_.Declare(store_.Name());
  if (api_) {
    binder_ = std::make_unique<Binder>(*api_, store_, config_.component);
    api_name_ = "api server " + api_->credentials().server;
    health_.Declare(api_name_);
  }
}

Extender::~Extender() { Stop(); }

Expected<void> Extender::Start() {
  {
    std::lock_guard lock(mu_);
    policy::PolicyContext ctx{&rng_, &clock_, config_.predictor, config_.telemetry};
    auto p = policy::MakePolicy(config_.policy, ctx, config_.policy_options);
    if (!p) return std::unexpected(p.error());
    policy_ = std::move(*p);
  }
  if (auto ok = Refresh(); !ok) return ok;
  health_.Set(store_.Name(), "");
  health_.Beat(kLoop, config_.stall_s);
  if (api_) {
    InformerOptions o;
    o.path = "/api/v1/pods";
    // Placements of pods that are gone or done are released, as the scheduler's are.
    pods_informer_ = std::make_unique<Informer>(*api_, o, [this](EventType type, const json& obj) {
      auto pod = PodFromJson(obj);
      if (!pod || (type != EventType::kDeleted && !pod->Terminal())) return;
      if (!pod->annotations.contains(std::string(kAnnotationPlacement))) return;
      if (auto r = store_.RemovePlacement(pod->uid); r && *r) {
        std::lock_guard lock(mu_);
        std::optional<model::WorkloadId> id = ids_.Find(pod->uid);
        if (id && cluster_->Find(*id)) (void)cluster_->Remove(*id);
      }
    });
    pods_informer_->Start();
  }
  // The pods informer exists before the refresher thread that reads it starts.
  stop_ = false;
  refresher_ = std::thread([this] {
    std::unique_lock lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::duration<double>(config_.refresh_s),
                              [this] { return stop_; })) {
      lock.unlock();
      CheckApiServer();
      CollectGarbage();
      RefreshAndReport();
      health_.Beat(kLoop, config_.stall_s);
      lock.lock();
    }
  });
  return {};
}

void Extender::Stop() {
  if (server_thread_.joinable()) {
    server_->stop();
    server_thread_.join();
  }
  if (refresher_.joinable()) {
    {
      std::lock_guard lock(stop_mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    refresher_.join();
  }
  if (pods_informer_) pods_informer_->Stop();
}

void Extender::RefreshAndReport() {
  auto ok = Refresh();
  health_.Set(store_.Name(), ok ? "" : ok.error().message);
}

void Extender::CheckApiServer() {
  if (!api_ || !pods_informer_) return;
  const InformerStats s = pods_informer_->stats();
  std::string reason;
  if (!s.last_error.empty()) {
    reason = fmt::format("{}: pods: {}", api_name_, s.last_error);
  } else if (!pods_informer_->synced()) {
    reason = api_name_ + ": pods not listed yet";
  }
  health_.Set(api_name_, reason);
}

void Extender::CollectGarbage() {
  if (!api_ || !pods_informer_ || !pods_informer_->synced()) return;
  auto recs = store_.ListPlacements();
  if (!recs) return;
  std::set<std::string> live;
  for (const auto& [key, obj] : pods_informer_->Cache()) {
    if (auto pod = PodFromJson(obj); pod && !pod->Terminal()) live.insert(pod->uid);
  }
  for (const store::PlacementRecord& r : *recs) {
    if (live.contains(r.workload)) continue;
    // Not in the cache: a pod deleted while nobody watched, or one the watch has not shown
    // yet. Ask the API server before letting its slice go.
    auto got = api_->Get(PodPath(r.namespace_, r.pod));
    if (!got) continue;
    bool gone = got->status == 404;
    if (got->ok()) {
      auto pod = PodFromJson(nlohmann::json::parse(got->body, nullptr, false));
      gone = pod && (pod->uid != r.workload || pod->Terminal());
    }
    if (gone && store_.RemovePlacement(r.workload).value_or(false)) {
      spdlog::info("extender: released the slices of {}/{} (pod gone)", r.namespace_, r.pod);
    }
    health_.Beat(kLoop, config_.stall_s);  // one API call per record: progress
  }
}

int Extender::nodes() const {
  std::lock_guard lock(mu_);
  return cluster_ ? cluster_->node_count() : 0;
}

Expected<void> Extender::Refresh() {
  auto names = store_.ListNodes();
  if (!names) return std::unexpected(names.error());
  auto cluster = std::make_unique<model::ClusterState>();
  cluster->set_mig_mode_fixed(true);  // the agents never change MIG mode
  std::set<std::string> stuck;        // GPUs whose agent judges their MPS server stuck
  for (const std::string& name : *names) {
    auto inv = store_.GetInventory(name);
    if (!inv) return std::unexpected(inv.error());
    if (!*inv) continue;
    for (const store::GpuInventory& g : (**inv).gpus) {
      if (g.mps_stuck) stuck.insert(g.uuid);
    }
    auto spec = store::ToNodeSpec(**inv);
    if (!spec) {
      spdlog::warn("extender: node {}: {}", name, spec.error().message);
      continue;
    }
    if (auto added = cluster->AddNode(*spec); !added) {
      spdlog::warn("extender: node {}: {}", name, added.error().message);
    }
  }
  auto placements = store_.ListPlacements();
  if (!placements) return std::unexpected(placements.error());
  std::lock_guard lock(mu_);
  for (const store::PlacementRecord& r : *placements) {
    // A record on a node without an inventory (or one that lost a partition) holds nothing
    // this view could give away.
    model::Workload w;
    w.id = ids_.IdOf(r.workload);
    w.name = r.namespace_ + "/" + r.pod;
    auto p = PlacementFromRecord(r, *cluster, w);
    if (!p) {
      spdlog::debug("extender: pod {}: {}", w.name, p.error().message);
      continue;
    }
    if (auto placed = cluster->Place(w, *p); !placed) {
      spdlog::warn("extender: placement of {}: {}", w.name, placed.error().message);
    }
  }
  // As the scheduler does (scheduler.h): a new client would hang on a stuck MPS server; the
  // pods already there keep their slices (placed above).
  for (model::GpuIndex g = 0; g < cluster->gpu_count(); ++g) {
    if (stuck.contains(cluster->gpu(g).uuid)) cluster->SetGpuAvailable(g, false);
  }
  // The policy outlives this rebuild and keys its caches on node versions: hand out new ones.
  if (cluster_) cluster->ContinueVersionsOf(*cluster_);
  cluster_ = std::move(cluster);
  return {};
}

Expected<json> Extender::ParseBody(std::string_view body) {
  if (std::string why = JsonShapeProblem(body); !why.empty()) return Fail("{}", why);
  parses_.acquire();
  json parsed = json::parse(body, nullptr, false);
  parses_.release();
  if (parsed.is_discarded() || !parsed.is_object()) return Fail("body is not a JSON object");
  return parsed;
}

Expected<Extender::Args> Extender::ParseArgs(std::string_view body) {
  auto parsed = ParseBody(body);
  if (!parsed) return Fail("request {}", parsed.error().message);
  json& args = *parsed;
  if (!args.contains("Pod") || !args["Pod"].is_object()) return Fail("request has no Pod");
  auto pod = PodFromJson(args["Pod"]);
  if (!pod) return std::unexpected(pod.error());
  Args a;
  a.pod = std::move(*pod);
  if (args.contains("NodeNames") && args["NodeNames"].is_array()) {
    for (const json& n : args["NodeNames"]) {
      if (!n.is_string()) return Fail("pod {}: NodeNames holds a non-string", a.pod.Key());
      a.names.push_back(n.get<std::string>());
    }
  } else if (args.contains("Nodes") && args["Nodes"].is_object() &&
             args["Nodes"].contains("items") && args["Nodes"]["items"].is_array()) {
    a.node_cache = false;
    a.node_objects = args["Nodes"]["items"];
    for (const json& n : a.node_objects) {
      const std::string name = Informer::KeyOf(n);
      if (name.empty()) return Fail("pod {}: a node in Nodes has no metadata.name", a.pod.Key());
      a.names.push_back(name);
    }
  } else {
    return Fail("pod {}: request has neither NodeNames nor Nodes.items", a.pod.Key());
  }
  auto w = WorkloadFromPod(a.pod, 0);
  if (!w) return std::unexpected(w.error());
  a.workload = std::move(*w);
  // kube-scheduler checks CPU and memory itself; Tessera judges the GPUs.
  a.workload.cpu_milli = 0;
  a.workload.memory_mib = 0;
  return a;
}

std::string Extender::DeclareFeatures(const Pod& pod, const model::Workload& w) {
  if (config_.learner == nullptr || w.features.empty()) return "";
  Expected<bool> changed = config_.learner->SetFeatures(w.app, w.features);
  if (!changed) {
    // Judged all the same, on what the predictor already knows of the application.
    if (features_warned_.size() > 10000) features_warned_.clear();
    if (!features_warned_.insert(pod.uid).second) return "";  // kube-scheduler asks again
    spdlog::warn("extender: pod {}: features not used: {}", pod.Key(), changed.error().message);
    return changed.error().message;
  }
  if (*changed) {
    if (auto ok = config_.learner->Refit(); !ok) {
      spdlog::warn("extender: pod {}: refit after its features: {}", pod.Key(), ok.error().message);
    }
  }
  return "";
}

void Extender::WarnFeaturesIgnored(const Pod& pod, const std::string& why) {
  if (why.empty() || !binder_) return;
  binder_->PostEvent({pod.namespace_, pod.name, pod.uid}, "Warning", "FeaturesIgnored", why);
}

ExtenderReply Extender::Filter(std::string_view body) {
  auto args = ParseArgs(body);
  if (!args) {
    json r = {{"Nodes", nullptr},
              {"NodeNames", nullptr},
              {"FailedNodes", json::object()},
              {"FailedAndUnresolvableNodes", json::object()},
              {"Error", args.error().message}};
    return {200, r.dump()};
  }
  json failed = json::object(), unresolvable = json::object();
  std::vector<size_t> pass;
  std::string features_ignored;
  {
    std::lock_guard lock(mu_);
    if (!args->pod.uid.empty()) {
      if (recent_pods_.size() > 10000) recent_pods_.clear();
      recent_pods_[args->pod.uid] = args->pod;
    }
    args->workload.id = args->pod.uid.empty() ? -1 : ids_.IdOf(args->pod.uid);
    features_ignored = DeclareFeatures(args->pod, args->workload);
    for (size_t i = 0; i < args->names.size(); ++i) {
      const std::string& name = args->names[i];
      std::optional<model::NodeIndex> n = cluster_->FindNode(name);
      if (!n) {
        if (args->workload.gpu.count == 0) {
          pass.push_back(i);
        } else {
          unresolvable[name] = "no GPU inventory from a Tessera agent on this node";
        }
        continue;
      }
      const policy::Feasibility f = policy_->Filter(args->workload, *n, *cluster_);
      if (!f.ok()) {
        failed[name] = std::string(f.reason);
      } else if (!policy_->Score(args->workload, *n, *cluster_)) {
        failed[name] = "no offer from the policy";
      } else {
        pass.push_back(i);
      }
    }
  }
  WarnFeaturesIgnored(args->pod, features_ignored);  // an API call: outside the mutex
  json r = {{"FailedNodes", failed}, {"FailedAndUnresolvableNodes", unresolvable}, {"Error", ""}};
  if (args->node_cache) {
    json names = json::array();
    for (size_t i : pass) names.push_back(args->names[i]);
    r["NodeNames"] = names;
    r["Nodes"] = nullptr;
  } else {
    json items = json::array();
    for (size_t i : pass) items.push_back(args->node_objects[i]);
    r["Nodes"] = {
        {"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", json::object()}, {"items", items}};
    r["NodeNames"] = nullptr;
  }
  return {200, r.dump()};
}

ExtenderReply Extender::Prioritize(std::string_view body) {
  auto args = ParseArgs(body);
  if (!args) return {400, json{{"Error", args.error().message}}.dump()};
  json list = json::array();
  std::string features_ignored;
  {
    std::lock_guard lock(mu_);
    args->workload.id = args->pod.uid.empty() ? -1 : ids_.IdOf(args->pod.uid);
    features_ignored = DeclareFeatures(args->pod, args->workload);
    for (const std::string& name : args->names) {
      int64_t score = 0;
      if (std::optional<model::NodeIndex> n = cluster_->FindNode(name)) {
        if (policy_->Filter(args->workload, *n, *cluster_).ok()) {
          if (auto cand = policy_->Score(args->workload, *n, *cluster_)) {
            // Policies score 0..100; the extender protocol's MaxExtenderPriority is 10.
            score = std::clamp<int64_t>(std::llround(cand->score / 10.0), 0, 10);
          }
        }
      }
      list.push_back({{"Host", name}, {"Score", score}});
    }
  }
  WarnFeaturesIgnored(args->pod, features_ignored);
  return {200, list.dump()};
}

ExtenderReply Extender::Bind(std::string_view body) {
  auto answer = [](const std::string& error) {
    return ExtenderReply{200, json{{"Error", error}}.dump()};
  };
  auto parsed = ParseBody(body);
  if (!parsed) return answer("bind: " + parsed.error().message);
  json& args = *parsed;
  // ExtenderBindingArgs' members are strings; json::value would throw on another type.
  for (const char* key : {"PodNamespace", "PodName", "PodUID", "Node"}) {
    if (args.contains(key) && !args[key].is_string()) {
      return answer(fmt::format("bind: {} must be a string", key));
    }
  }
  PodRef ref{args.value("PodNamespace", ""), args.value("PodName", ""), args.value("PodUID", "")};
  const std::string node = args.value("Node", "");
  const std::string who = ref.namespace_ + "/" + ref.name;
  if (ref.name.empty() || node.empty()) return answer("bind: PodName and Node are required");
  if (!binder_) return answer("bind: this extender has no API server connection");
  std::optional<Pod> pod;
  {
    std::lock_guard lock(mu_);
    if (auto it = recent_pods_.find(ref.uid); it != recent_pods_.end()) pod = it->second;
  }
  if (!pod) {
    auto got = api_->Get(PodPath(ref.namespace_, ref.name));
    if (!got || !got->ok()) return answer(fmt::format("bind: pod {} not found", who));
    auto parsed = PodFromJson(json::parse(got->body, nullptr, false));
    if (!parsed) return answer(parsed.error().message);
    pod = *parsed;
  }
  if (ref.uid.empty()) ref.uid = pod->uid;
  store::PlacementRecord rec;
  model::Environment env;
  model::WorkloadId id = 0;
  {
    std::lock_guard lock(mu_);
    auto w = WorkloadFromPod(*pod, ids_.IdOf(ref.uid));
    if (!w) return answer(w.error().message);
    w->cpu_milli = 0;
    w->memory_mib = 0;
    id = w->id;
    std::optional<model::NodeIndex> n = cluster_->FindNode(node);
    if (!n) return answer(fmt::format("bind {}: node {} has no Tessera inventory", who, node));
    if (cluster_->Find(id)) (void)cluster_->Remove(id);  // a retried bind
    std::optional<policy::Candidate> cand;
    if (policy_->Filter(*w, *n, *cluster_).ok()) cand = policy_->Score(*w, *n, *cluster_);
    if (!cand) return answer(fmt::format("bind {}: node {} cannot take it any more", who, node));
    if (cand->reshape || !cand->resizes.empty()) {
      return answer(
          fmt::format("bind {}: node {} needs a MIG reshape or resizes, which the "
                      "extender does not do; use tessera schedule",
                      who, node));
    }
    if (auto ok = cluster_->Place(*w, cand->placement); !ok) {
      return answer(fmt::format("bind {}: {}", who, ok.error().message));
    }
    env = cluster_->EnvironmentOf(cand->placement);
    rec = RecordOf(ref, cand->placement, *cluster_);
  }
  if (auto ok = binder_->Bind(ref, rec, env); !ok) {
    std::lock_guard lock(mu_);
    if (cluster_->Find(id)) (void)cluster_->Remove(id);
    return answer(ok.error().message);
  }
  const std::string slices = SlicesText(rec.slices);
  binder_->PostEvent(ref, "Normal", "Scheduled",
                     fmt::format("Tessera extender bound {} to {}{}{}; policy {}", who, node,
                                 slices.empty() ? "" : ": ", slices, config_.policy));
  return answer("");
}

std::string UrlPrefixProblem(std::string_view prefix) {
  if (prefix.empty()) return {};
  if (prefix.size() > kMaxUrlPrefix) {
    return fmt::format("is {} characters long; a path prefix is at most {}", prefix.size(),
                       kMaxUrlPrefix);
  }
  if (prefix.front() != '/') return "must start with '/' (a path such as /tessera)";
  if (prefix.back() == '/') return "must not end with '/' (the verbs' '/filter' follows it)";
  for (char c : prefix) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                    c == '_' || c == '~' || c == '/';
    if (!ok) {
      const auto byte = static_cast<unsigned char>(c);
      return fmt::format(
          "holds {}; a path prefix holds letters, digits, '-', '.', '_', '~' and '/'",
          std::isprint(byte) ? fmt::format("'{}'", c) : fmt::format("the byte 0x{:02x}", byte));
    }
  }
  return {};
}

Expected<std::unique_ptr<httplib::Server>> Extender::MakeServer() const {
  if (config_.tls_cert_file.empty() && config_.tls_key_file.empty()) {
    if (!config_.client_ca_file.empty()) {
      return Fail("client CA {}: client certificates need HTTPS (a TLS certificate and key)",
                  config_.client_ca_file);
    }
    return std::make_unique<httplib::Server>();
  }
  auto ssl = std::make_unique<httplib::SSLServer>(config_.tls_cert_file.c_str(),
                                                  config_.tls_key_file.c_str());
  if (!ssl->is_valid()) {
    return Fail("cannot use TLS certificate {} and key {}", config_.tls_cert_file,
                config_.tls_key_file);
  }
  if (!config_.client_ca_file.empty()) {
    if (auto ok = RequestClientCertificates(ssl->ssl_context(), config_.client_ca_file); !ok) {
      return std::unexpected(ok.error());
    }
  }
  return std::unique_ptr<httplib::Server>(std::move(ssl));
}

RequestGate Extender::AuthGate() {
  if (config_.client_ca_file.empty() && config_.bearer_token.empty()) return {};
  return [this, by_cert = !config_.client_ca_file.empty(), by_token = !config_.bearer_token.empty(),
          want = Sha256(config_.bearer_token)](const httplib::Request& req,
                                               httplib::Response& res) {
    if (req.method == "GET" && (req.path == "/healthz" || req.path == "/readyz")) return false;
    if ((by_cert && HasVerifiedClientCertificate(req)) || (by_token && HasBearerToken(req, want))) {
      return false;
    }
    spdlog::warn("{}: refused {} {} from {}: no valid client certificate or bearer token",
                 config_.component, req.method, req.path, req.remote_addr);
    res.status = 401;
    if (by_token) res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(json{{"Error",
                          "unauthenticated: this extender needs a client certificate "
                          "its CA signed or its bearer token"}}
                        .dump(),
                    "application/json");
    return true;
  };
}

void Extender::AddVerbRoutes() {
  auto route = [this](ExtenderReply (Extender::*fn)(std::string_view)) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      // Status 400 (not the verb's Error field) for a body nested or wide past the limits: it
      // was refused unparsed, as a body over the size limit is refused unread (413).
      if (std::string why = JsonShapeProblem(req.body); !why.empty()) {
        res.status = 400;
        res.set_content(json{{"Error", "request " + why}}.dump(), "application/json");
        return;
      }
      ExtenderReply r = (this->*fn)(req.body);
      res.status = r.status;
      res.set_content(r.body, "application/json");
    };
  };
  // The routes are regular expressions: the prefix's '.' (the one metacharacter it may hold)
  // is escaped to match only itself.
  std::string prefix;
  for (char c : config_.url_prefix) {
    if (c == '.') prefix += '\\';
    prefix += c;
  }
  server_->Post(prefix + "/filter", route(&Extender::Filter));
  server_->Post(prefix + "/prioritize", route(&Extender::Prioritize));
  server_->Post(prefix + "/bind", route(&Extender::Bind));
}

Expected<int> Extender::Serve(const std::string& host, int port) {
  if (std::string why = UrlPrefixProblem(config_.url_prefix); !why.empty()) {
    return Fail("URL prefix {}", why);
  }
  auto server = MakeServer();
  if (!server) return std::unexpected(server.error());
  server_ = std::move(*server);
  server_->set_tcp_nodelay(true);
  HttpLimits limits;
  limits.max_body_bytes = config_.max_request_bytes;
  // The gate runs after the headers and before the body is read: an unauthenticated client
  // gets 401 without the extender reading (or parsing) what it sent.
  ApplyHttpLimits(*server_, limits, config_.component, AuthGate());
  AddVerbRoutes();
  ServeHealth(*server_, health_);
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) return Fail("cannot listen on {}", JoinHostPort(host, port));
  server_thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

}  // namespace tessera::k8s
