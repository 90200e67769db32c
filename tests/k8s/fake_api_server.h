#pragma once
// FakeApiServer: an in-process Kubernetes API server for exactly the resources Tessera uses
// (pods, pods/binding, pods/eviction, nodes, configmaps, events, coordination.k8s.io leases,
// policy/v1 poddisruptionbudgets), built from the documented REST and watch protocol
// (https://kubernetes.io/docs/reference/using-api/api-concepts/) because no real API server can
// run here (STYLE.md: fakes only where the real thing cannot).
//
// HTTPS on a free loopback port with a CA and a server certificate (SAN IP:127.0.0.1) made at
// start by the `openssl` command; bearer-token authentication (401 otherwise).
// Semantics kept: one global resourceVersion; create → 409 AlreadyExists; update with a stale
// metadata.resourceVersion → 409 Conflict; JSON merge patch with a metadata.uid precondition;
// binding an already-bound pod → 409; list with limit/continue; watch with resourceVersion,
// allowWatchBookmarks and timeoutSeconds streaming newline-delimited events; a watch from a
// compacted resourceVersion → 410 Gone. Fault injection for the client's recovery paths:
// ExpireWatches (in-stream ERROR 410), DropWatches (connections cut), failing binds, delays.
//
// Eviction and PodDisruptionBudgets, after the API-initiated eviction and PDB documentation
// (https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/,
// https://kubernetes.io/docs/tasks/run-application/configure-pdb/) and the API server's eviction
// handler, with the disruption controller folded in: every PDB's status (expectedPods,
// currentHealthy, desiredHealthy, disruptionsAllowed) is recomputed whenever a pod or the PDB
// changes, so it is never stale.
// - PDBs: create/get/list/update/delete; a spec with both minAvailable and maxUnavailable, a
//   negative count, a percentage over 100% or an unknown unhealthyPodEvictionPolicy → 422;
//   generation follows spec changes; status is the server's (a PUT cannot set it).
// - POST pods/{name}/eviction takes a policy/v1 (or v1beta1) Eviction: a body that is not one, or
//   names another pod or namespace → 400 BadRequest; no such pod → 404; a deleteOptions
//   precondition (uid, resourceVersion) not met → 409; deleteOptions.dryRun ["All"] decides
//   without deleting.
// - A Pending, Succeeded or Failed pod, or one already being deleted, is evicted without looking
//   at budgets ("always considered for eviction"). Otherwise the PDBs of its namespace whose
//   selector matches its labels apply (matchLabels and matchExpressions; no selector matches
//   nothing, `{}` every pod): two or more → 500 "This pod has more than one
//   PodDisruptionBudget, which the eviction subresource does not support."; none → evicted.
// - One PDB: currentHealthy = selected pods not being deleted whose Ready condition is True;
//   desiredHealthy = an int minAvailable, a percentage minAvailable of expectedPods rounded up,
//   or expectedPods − maxUnavailable (a percentage rounded up), at least 0; disruptionsAllowed =
//   max(0, currentHealthy − desiredHealthy). expectedPods counts the selected pods for an int
//   minAvailable, and otherwise sums the scale of the selected pods' controllers ("desired
//   replicas"; the ownerReference with controller: true; pods with none are left out, as the
//   controller does). The fake serves no workload controllers: a controller's scale is the most
//   pods it has had alive at once — evicted replicas are never replaced — unless
//   SetControllerScale says otherwise.
// - A Ready pod is evicted if disruptionsAllowed > 0. An unready Running pod is evicted under
//   unhealthyPodEvictionPolicy AlwaysAllow, or under the default IfHealthyBudget when
//   currentHealthy >= desiredHealthy > 0, and otherwise only as a Ready one would be. Refused →
//   429 TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget." with
//   details.causes [{reason DisruptionBudget, message "The disruption budget NAME needs D healthy
//   pods and has H currently"}].
// - An eviction deletes the pod at once, as DeletePod does (one DELETED watch event; its object
//   carries the DisruptionTarget condition the API server adds), and answers 201 with a Success
//   Status: the page says "200 OK", but the API server answers this create with 201 Created;
//   clients should take any 2xx.
//
// The server's code lives in fake_api_server.cc, compiled once into k8s_test_support, not in
// every test that includes this header.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tessera::k8s::testing_support {

using nlohmann::json;

// A throwaway CA and a server certificate for 127.0.0.1, made with the openssl command (aborts
// if it fails); the directory is removed with it.
struct TestPki {
  std::string dir;
  std::string ca_pem, other_ca_pem;  // other_ca_pem signed nothing we serve
  std::string cert_path, key_path;

  TestPki();
  ~TestPki();
  static std::string Read(const std::string& p);
};

class FakeApiServer {
 public:
  static constexpr const char* kToken = "test-token-5up3r-s3cret";

  // Serves on a free loopback port once constructed; stops (ending every watch) when destroyed.
  FakeApiServer();
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  std::string url() const;
  const TestPki& pki() const;

  // ---- test-side object manipulation (as kubectl or a kubelet would) ----
  void AddNode(const std::string& name, int64_t cpu_milli = 64000, int64_t memory_gib = 512,
               bool ready = true);
  // A pod with one container; `resources` are its requests, `annotations` its metadata's.
  void AddPod(const std::string& ns, const std::string& name, const json& requests,
              const json& annotations = json::object(), const std::string& scheduler = "tessera");
  // AddPod with metadata.labels and an owner: one ownerReference object (the pod's controller
  // unless it says "controller": false), an array of them, or null for a bare pod.
  void AddPodWith(const std::string& ns, const std::string& name, const json& requests,
                  const json& annotations, const json& labels, const json& owner,
                  const std::string& scheduler = "tessera");
  // AddPod (scheduler "tessera") with `spec_patch` merged into its spec (RFC 7386): a
  // nodeSelector, affinity, tolerations.
  void AddPodWithSpec(const std::string& ns, const std::string& name, const json& requests,
                      const json& annotations, const json& spec_patch);
  // `kubectl patch node <name> --type merge -p <merge_patch>`: labels, taints, … (MODIFIED).
  void PatchNode(const std::string& name, const json& merge_patch);
  // The same on a pod (as the API server allows: tolerations added, a gated pod's selector).
  void MergePatchPod(const std::string& ns, const std::string& name, const json& merge_patch);
  // The kubelet's part: phase Running and the Ready condition True (or False: running, not yet
  // healthy). Aborts if there is no such pod (a broken test).
  void SetPodRunning(const std::string& ns, const std::string& name, bool ready = true);
  // The kubelet's part when the container ends: phase Succeeded (or Failed), Ready False.
  void SetPodDone(const std::string& ns, const std::string& name, bool succeeded = true);
  void DeletePod(const std::string& ns, const std::string& name);
  // A policy/v1 PodDisruptionBudget as `kubectl apply` would make it (a second call replaces the
  // spec). `spec`: selector, one of minAvailable/maxUnavailable (int or "NN%"), optionally
  // unhealthyPodEvictionPolicy. Aborts on a spec the API server would refuse (a broken test).
  void AddPdb(const std::string& ns, const std::string& name, const json& spec);
  void DeletePdb(const std::string& ns, const std::string& name);
  // The scale (spec.replicas) of the controller `kind`/`name` in `ns`, for PDBs that count
  // desired replicas; without it, the most pods that controller has had alive at once.
  void SetControllerScale(const std::string& ns, const std::string& kind, const std::string& name,
                          int replicas);
  // Pods evicted through the eviction subresource, "ns/name" in order (dry runs left out).
  std::vector<std::string> evictions();
  // Evictions refused with 429 because of a disruption budget.
  int eviction_refusals();
  std::optional<json> Get(const std::string& resource, const std::string& key);
  std::vector<json> All(const std::string& resource);
  // Successful bindings per pod key (a double bind would show as 2; the server refuses it).
  std::map<std::string, int> bindings();
  int bind_attempts();

  // ---- fault injection ----
  // Drops the history: watches from older resourceVersions get 410 Gone at once (HTTP status),
  // and every open watch gets an in-stream ERROR event with code 410 and ends.
  void ExpireWatches();
  // Cuts every open watch connection without a word.
  void DropWatches();
  // The next `n` watch requests answer HTTP 410 Gone, as for a compacted resourceVersion.
  void GoneOnNextWatches(int n);
  void FailNextBinds(int n);
  // Every request waits this long before it is answered.
  void SetDelay(double seconds);
  int open_watches();
  int64_t watches_started();
  int64_t gone_answers();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A kubeconfig for `api` written to dir/kubeconfig, its CA beside it (dir/ca.pem): what a
// `tessera schedule` process is given to reach it.
void WriteKubeconfig(const FakeApiServer& api, const std::string& dir);

}  // namespace tessera::k8s::testing_support
