// The shipped catalogue (data/apps.yaml) encodes the targets docs/simulator.md documents.
#include <gtest/gtest.h>

#include "sim/apps.h"

namespace tessera::sim {
namespace {

// Roofline time per query on a whole V100-32GB: relative compute 125/312, bandwidth 900/1555.
double V100WholeQps(const AppSpec& a) {
  return 1.0 / (a.compute_s * 312.0 / 125.0 + a.memory_s * 1555.0 / 900.0 + a.fixed_s);
}

TEST(ShippedCatalogTest, ThesisEnginesHitTheirDocumentedV100Throughput) {
  auto catalog = LoadAppCatalog(TESSERA_SOURCE_DIR "/data/apps.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  const std::pair<const char*, double> targets[] = {
      {"onnx/resnet50", 22}, {"onnx/mobilenet", 26}, {"onnx/ssd-mobilenet", 18},
      {"tf/resnet50", 17},   {"tf/mobilenet", 21},   {"tf/ssd-mobilenet", 14}};
  for (const auto& [key, qps] : targets) {
    const AppSpec* a = catalog->Find(key);
    ASSERT_NE(a, nullptr) << key;
    EXPECT_NEAR(V100WholeQps(*a), qps, 0.05 * qps) << key;
  }
  // Thesis Ch. 6.2: small models lose little on a fraction of the GPU. MobileNet at 25% MPS of
  // a V100 (compute share 1/4) keeps more than 90% of its whole-GPU throughput.
  const AppSpec* m = catalog->Find("onnx/mobilenet");
  const double quarter =
      1.0 / (m->compute_s * 4 * 312.0 / 125.0 + m->memory_s * 1555.0 / 900.0 + m->fixed_s);
  EXPECT_GT(quarter / V100WholeQps(*m), 0.9);
}

}  // namespace
}  // namespace tessera::sim
