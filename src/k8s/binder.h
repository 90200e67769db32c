#pragma once
// Binder: carries one scheduling decision out against the API server and the store — the
// thesis's PostBind (seed 000, Ch. 8.4) plus the bind itself — for both drivers (the
// standalone Scheduler and the Extender's bind verb). In order:
//   1. a ConfigMap named after the pod (same namespace, owned by the pod so it is garbage
//      collected with it) holding CUDA_VISIBLE_DEVICES and, for a shared slice,
//      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, and for remote GPU
//      slices (seed 002) the remote-GPU middleware's variables (model::Environment) (create, or
//      update on 409 AlreadyExists);
//   2. the placement in the store (all-or-nothing partition accounting; a refusal stops here);
//   3. the placement as pod annotations (tessera.io/placement, the three variables and
//      tessera.io/remote-gpus, which a container can read through the downward API when it
//      cannot name its ConfigMap);
//   4. POST pods/<name>/binding. A 409 whose pod is already on that node counts as done (a
//      retry whose first answer was lost).
// When 2–4 fail, what 2–3 wrote is undone (store placement removed, annotations cleared) and
// the Error says which step failed. `may_bind` is asked before the binding (leader election).
// Thread-safe (the ApiClient and Store are).

#include <functional>
#include <string>

#include "base/error.h"
#include "k8s/api_client.h"
#include "model/placement.h"
#include "store/records.h"
#include "store/store.h"

namespace tessera::k8s {

struct PodRef {
  std::string namespace_;
  std::string name;
  std::string uid;
};

class Binder {
 public:
  Binder(ApiClient& api, store::Store& store, std::string component);

  [[nodiscard]] Expected<void> Bind(const PodRef& pod, const store::PlacementRecord& record,
                                    const model::Environment& env,
                                    const std::function<bool()>& may_bind = {});
  // Best effort (logged when it fails): an Event on the pod; type Normal or Warning.
  void PostEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                 std::string_view message);

  ApiClient& api() { return api_; }

 private:
  Expected<void> PutConfigMap(const PodRef& pod, const model::Environment& env);
  void ClearAnnotations(const PodRef& pod);

  ApiClient& api_;
  store::Store& store_;
  std::string component_;
};

std::string PodPath(std::string_view ns, std::string_view name);

}  // namespace tessera::k8s
