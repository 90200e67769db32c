// The extender's request bodies (k8s/extender.h): ExtenderArgs to filter and prioritize,
// ExtenderBindingArgs to bind, on one GPU node in the store; no API server (bind answers an
// error), so nothing leaves the process.
#include <spdlog/spdlog.h>

#include "base/clock.h"
#include "fuzz.h"
#include "k8s/extender.h"
#include "store/memory_store.h"

namespace {

struct Fixture {
  tessera::ManualClock clock{100};
  tessera::store::MemoryStore store{clock};
  std::unique_ptr<tessera::k8s::Extender> extender;
  Fixture() {
    tessera::store::NodeInventory n;
    n.node = "gpu-0";
    n.cpu_milli = 32000;
    n.memory_mib = 131072;
    tessera::store::GpuInventory g;
    g.uuid = "GPU-0";
    g.model = "A100-40GB";
    g.memory_mib = 40960;
    tessera::store::PartitionInventory p;
    p.uuid = "GPU-0";
    p.memory_mib = 40960;
    g.partitions.push_back(p);
    n.gpus.push_back(g);
    (void)store.PutInventory(n);
    (void)store.Heartbeat("gpu-0", 1e9);
    extender = std::make_unique<tessera::k8s::Extender>(store, clock,
                                                        tessera::k8s::ExtenderConfig{}, nullptr);
    spdlog::set_level(spdlog::level::off);  // bad bodies are logged: thousands per second here
    if (!extender->Start()) std::abort();
  }
};

}  // namespace

void tessera::fuzz::FuzzOne(const std::string&, std::string_view data) {
  static Fixture f;
  (void)f.extender->Filter(data);
  (void)f.extender->Prioritize(data);
  (void)f.extender->Bind(data);
}
