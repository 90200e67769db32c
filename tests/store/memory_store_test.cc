#include "store/memory_store.h"

#include "store/store_contract.h"

namespace tessera::store {
namespace {

class MemoryHarness : public contract::Harness {
 public:
  Store& store() override { return store_; }
  void Advance(double s) override { clock_.Advance(s); }

 private:
  ManualClock clock_{100};
  MemoryStore store_{clock_};
};

using contract::StoreContract;
INSTANTIATE_TEST_SUITE_P(Memory, StoreContract,
                         testing::Values(contract::Param{
                             "memory", [] { return std::make_unique<MemoryHarness>(); }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::store
