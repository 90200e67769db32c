#pragma once
// Extender: Tessera behind the default kube-scheduler, through the scheduler-extender HTTP
// protocol (k8s.io/kube-scheduler/extender/v1; DESIGN §1, §6). kube-scheduler POSTs JSON
// whose keys are the Go field names:
//   filter      ExtenderArgs{Pod, Nodes | NodeNames} → ExtenderFilterResult{Nodes | NodeNames,
//               FailedNodes, FailedAndUnresolvableNodes, Error}
//   prioritize  ExtenderArgs                        → HostPriorityList [{Host, Score 0..10}]
//   bind        ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}
//               → ExtenderBindingResult{Error}
// nodeCacheCapable both ways: a request with NodeNames is answered with NodeNames, one with a
// NodeList with the passing Node objects. Filter and prioritize ask the same policy::Policy as
// the simulator, on a ClusterState built from the store (agents' inventories, placements),
// refreshed every refresh_s in the background. Bind reserves the slice the policy picks on the
// chosen node and carries it out through Binder (ConfigMap, store, annotations, binding); it
// needs an ApiClient, with which a pod watch (and a periodic check of the store's placements
// against the API server) also releases the slices of deleted pods. A malformed body or pod gets
// one error naming the object (the Error field, or HTTP 400 for prioritize), never a crash.
// A pod's tessera.io/feature.* declarations reach the predictor (config.learner) before the
// policy judges it, as under `tessera schedule`.
// Thread-safe: the handlers serialise on one mutex around the policy and the predictor
// (neither is thread-safe); the network half of a bind runs outside it.
//
// Serve bounds what one client can take (base/daemon_http.h): a body over config.max_request_bytes
// is answered 413 unread, reads and writes time out after 5 s (the shipped kube-scheduler
// configuration's httpTimeout), 16 workers serve the connections, so slow or idle clients leave the
// others served. A body nested deeper than kMaxJsonDepth is refused before it is parsed (400), as
// is one of more than kMaxJsonValues values, and at most kMaxConcurrentParses bodies are parsed at
// once: eight hostile 4 MiB bodies at once stay under 256 MB (median peak 51 MB nested,
// docs/benchmarks.md), where parsing them unbounded took 1.2 GB.
//
// Authentication (docs/kubernetes.md "Extender"): the verbs answer 401, unread, unless the client
// proves itself by a certificate chaining to config.client_ca_file (HTTPS only; kube-scheduler's
// extenders[].tlsConfig.certFile/keyFile, the one credential it can send an extender) or by
// "Authorization: Bearer <config.bearer_token>" (compared in constant time); either suffices. With
// neither configured every client is served (the daemon warns at start). /healthz and /readyz stay
// open to the kubelet's probes. health() is what /healthz (the refresher turns) and /readyz (the
// store answered the last refresh; the pod informer lists and watches the API server) answer; each
// dependency's failure is logged once per change.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/daemon_http.h"
#include "base/health.h"
#include "base/rng.h"
#include "k8s/api_client.h"
#include "k8s/binder.h"
#include "k8s/cluster_view.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "store/store.h"

namespace tessera::predict {
class Predictor;
}
namespace tessera::telemetry {
class Telemetry;
}

namespace tessera::k8s {

struct ExtenderConfig {
  std::string policy = "first-fit";
  nlohmann::json policy_options = nlohmann::json::object();
  uint64_t seed = 1;
  // For predicting policies (`predictive`); not owned, must outlive the daemon.
  const predict::Predictor* predictor = nullptr;
  // The same predictor, writable: a pod's tessera.io/feature.* declarations are folded in (and
  // the predictor refitted when they are new) before filter or prioritize asks the policy, as
  // `tessera schedule` does; touched only under the handlers' mutex.
  predict::Predictor* learner = nullptr;
  const telemetry::Telemetry* telemetry = nullptr;
  double refresh_s = 1;  // how often the cluster view is rebuilt from the store
  std::string component = "tessera-extender";
  std::string url_prefix;                   // "" serves /filter, /prioritize, /bind
  std::string tls_cert_file, tls_key_file;  // both set: HTTPS
  // ExtenderArgs are a v1.Pod (at most 1.5 MiB: etcd's request limit) and, with
  // nodeCacheCapable (as shipped), up to 5,000 node names of at most 253 characters (1.3 MB).
  // The NodeList form carries whole v1.Node objects (typically 10-20 KiB each): raise it then.
  uint64_t max_request_bytes = kDefaultMaxRequestBytes;
  double stall_s = 120;        // /healthz fails when the refresher has not turned for this long
  std::string client_ca_file;  // PEM CA bundle of the client certificates admitted
  std::string bearer_token;    // admitted as "Authorization: Bearer <token>"

  static constexpr uint64_t kDefaultMaxRequestBytes = uint64_t{4} << 20;
  // A v1.Pod nests about 10 levels (spec.affinity's terms about 12); 64 leaves room.
  static constexpr int kMaxJsonDepth = 64;
  // A body's JSON values (an upper bound: its brackets, braces and commas outside strings). A
  // parsed value costs about 50 bytes whatever its text, so a 4 MiB body of "[]," items (1.4 M
  // values) parsed into ~80 MB, and eight of them took the extender to 510 MB. A v1.Pod has a
  // few hundred values, a NodeNames list one per node, a full Node about 150: 250,000 is
  // ample for 1,000 full nodes or 100,000 names, and keeps a parse near 12 MB.
  static constexpr size_t kMaxJsonValues = 250'000;
  static constexpr int kMaxConcurrentParses = 2;
};

// Whether `body` nests arrays and objects no deeper than max_depth (brackets inside JSON
// strings do not count). A linear scan that allocates nothing: malformed JSON is left to the
// parser that follows.
[[nodiscard]] bool JsonDepthWithin(std::string_view body, int max_depth);
// At most `max_values` JSON values, counted from above as one plus the brackets, braces and
// commas outside strings (a linear scan that allocates nothing).
[[nodiscard]] bool JsonValuesWithin(std::string_view body, size_t max_values);
// Why the extender refuses `body` unparsed (too deep, too many values), or empty: the one
// check both the HTTP route (400) and ParseBody make.
std::string JsonShapeProblem(std::string_view body);

// Why `prefix` cannot be the verbs' path prefix (--url-prefix), or empty when it can: "" or a
// path of at most kMaxUrlPrefix characters that starts with '/', does not end with one, and
// holds only RFC 3986's unreserved characters and '/'. (kube-scheduler sends urlPrefix's path
// followed by "/filter"; the routes are regular expressions, so the prefix is kept to
// characters that cannot change one, and short: a 128 KiB one overflowed the regex's stack.)
inline constexpr size_t kMaxUrlPrefix = 1024;
std::string UrlPrefixProblem(std::string_view prefix);

// One handler's answer: the HTTP status and the JSON body.
struct ExtenderReply {
  int status = 200;
  std::string body;
};

class Extender {
 public:
  // `api` may be null: then bind answers an Error and deleted pods are not garbage-collected.
  Extender(store::Store& store, const Clock& clock, ExtenderConfig config, ApiClient* api);
  ~Extender();

  // Checks the policy and builds the first view; starts the refresher (and the pod informer
  // that releases placements of deleted pods, with an ApiClient).
  [[nodiscard]] Expected<void> Start();
  void Stop();

  ExtenderReply Filter(std::string_view body);
  ExtenderReply Prioritize(std::string_view body);
  ExtenderReply Bind(std::string_view body);
  // Rebuilds the view from the store now.
  [[nodiscard]] Expected<void> Refresh();

  // Serves the protocol on host:port (0: any free port); returns the bound port.
  [[nodiscard]] Expected<int> Serve(const std::string& host, int port);
  int nodes() const;
  const Health& health() const { return health_; }

 private:
  struct Args {
    Pod pod;
    model::Workload workload;
    std::vector<std::string> names;
    bool node_cache = true;  // NodeNames given (else a NodeList)
    nlohmann::json node_objects;
  };
  Expected<Args> ParseArgs(std::string_view body);
  // The body as JSON, at most kMaxJsonDepth deep, parsed by at most kMaxConcurrentParses
  // threads at once; an Error saying why not.
  Expected<nlohmann::json> ParseBody(std::string_view body);
  // Folds the pod's declared features into config_.learner (refitting when they are new). A
  // declaration the feature table refuses leaves the pod judged on what the predictor knows;
  // the first time for a pod it is logged and returned (else ""). Under mu_.
  std::string DeclareFeatures(const Pod& pod, const model::Workload& w);
  // Posts `why` (if any) as the pod's FeaturesIgnored Warning event; outside mu_.
  void WarnFeaturesIgnored(const Pod& pod, const std::string& why);
  // Releases store placements whose pod no longer exists (deleted while nobody watched).
  void CollectGarbage();
  // Refresh, recording whether the store answered.
  void RefreshAndReport();
  // The API server's state as the pod informer sees it.
  void CheckApiServer();
  // Serve's phases: the HTTP or HTTPS server the config asks for; the gate that answers 401
  // before a body is read (empty without a client CA or token); the verbs' routes.
  Expected<std::unique_ptr<httplib::Server>> MakeServer() const;
  RequestGate AuthGate();
  void AddVerbRoutes();

  store::Store& store_;
  const Clock& clock_;
  ExtenderConfig config_;
  ApiClient* api_;
  Health health_;
  std::string api_name_;  // "api server https://..."
  std::unique_ptr<Binder> binder_;
  std::unique_ptr<Informer> pods_informer_;

  mutable std::mutex mu_;  // guards everything below
  Rng rng_;
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<model::ClusterState> cluster_;
  WorkloadIds ids_;
  std::map<std::string, Pod> recent_pods_;  // uid -> pod, from filter/prioritize, for bind
  std::set<std::string> features_warned_;   // pod uids whose declaration was refused

  std::thread refresher_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::counting_semaphore<ExtenderConfig::kMaxConcurrentParses> parses_{
      ExtenderConfig::kMaxConcurrentParses};
  std::unique_ptr<httplib::Server> server_;
  std::thread server_thread_;
};

}  // namespace tessera::k8s
