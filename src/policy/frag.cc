#include "policy/frag.h"

#include <algorithm>
#include <tuple>

namespace tessera::policy {
namespace {

uint64_t MaskOf(const std::vector<model::GpuModelId>& models) {
  uint64_t mask = 0;
  for (model::GpuModelId m : models) {
    TESSERA_CHECK(m >= 0 && m < 64);
    mask |= uint64_t{1} << m;
  }
  return mask;
}

}  // namespace

PodShape ShapeOf(const model::Workload& w) {
  PodShape s;
  s.cpu_milli = w.cpu_milli;
  s.gpu_count = w.gpu.count;
  s.gpu_milli = w.gpu.count == 0 ? 0 : w.gpu.milli;
  s.model_mask = MaskOf(w.gpu.models);
  return s;
}

ShapeDistribution::ShapeDistribution(std::vector<PodShape> shapes) : shapes_(std::move(shapes)) {
  double total = 0;
  for (const PodShape& s : shapes_) total += s.weight;
  if (total > 0) {
    for (PodShape& s : shapes_) s.weight /= total;
  }
}

ShapeDistribution ShapeDistribution::Typical(std::span<const model::Workload> workloads,
                                             double coverage) {
  std::vector<PodShape> counted;
  for (const model::Workload& w : workloads) {
    const PodShape s = ShapeOf(w);
    auto it = std::find_if(counted.begin(), counted.end(),
                           [&](const PodShape& c) { return c.SameShape(s); });
    if (it == counted.end()) {
      counted.push_back(s);
      counted.back().weight = 1;
    } else {
      it->weight += 1;
    }
  }
  return TypicalFromCounts(std::move(counted), coverage);
}

ShapeDistribution ShapeDistribution::TypicalFromCounts(std::vector<PodShape> counted,
                                                       double coverage) {
  double total = 0;
  for (const PodShape& s : counted) total += s.weight;
  // Most frequent first; ties as the reference simulator's sort.Reverse over (count, cpu,
  // share, count of GPUs, model) — larger first.
  std::sort(counted.begin(), counted.end(), [](const PodShape& a, const PodShape& b) {
    return std::tie(a.weight, a.cpu_milli, a.gpu_milli, a.gpu_count, a.model_mask) >
           std::tie(b.weight, b.cpu_milli, b.gpu_milli, b.gpu_count, b.model_mask);
  });
  const double wanted = coverage * total;
  double covered = 0;
  size_t taken = 0;
  while (taken < counted.size() && covered < wanted) covered += counted[taken++].weight;
  counted.resize(taken);
  return ShapeDistribution(std::move(counted));
}

Expected<ShapeDistribution> ShapeDistribution::FromJson(const nlohmann::json& j) {
  if (!j.is_array()) return Fail("typical pods: expected an array of shapes");
  std::vector<PodShape> shapes;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& e = j[i];
    if (!e.is_object()) return Fail("typical pods[{}]: expected an object", i);
    PodShape s;
    try {
      s.cpu_milli = e.value("cpu_milli", int64_t{0});
      s.gpu_count = e.value("gpu_count", 0);
      s.gpu_milli = e.value("gpu_milli", s.gpu_count > 0 ? 1000 : 0);
      s.weight = e.at("weight").get<double>();
      std::vector<model::GpuModelId> models;
      for (const auto& name : e.value("gpu_models", std::vector<std::string>{})) {
        auto m = model::FindGpuModel(name);
        if (!m) return Fail("typical pods[{}]: unknown GPU model '{}'", i, name);
        models.push_back(*m);
      }
      s.model_mask = MaskOf(models);
    } catch (const nlohmann::json::exception& ex) {
      return Fail("typical pods[{}]: {}", i, ex.what());
    }
    if (s.cpu_milli < 0 || s.gpu_count < 0 || s.weight < 0 ||
        (s.gpu_count > 0 && (s.gpu_milli < 1 || s.gpu_milli > 1000))) {
      return Fail("typical pods[{}]: negative or out-of-range value", i);
    }
    if (s.gpu_count == 0) s.gpu_milli = 0;
    shapes.push_back(s);
  }
  return ShapeDistribution(std::move(shapes));
}

nlohmann::json ShapeDistribution::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const PodShape& s : shapes_) {
    std::vector<std::string> models;
    for (int m = 0; m < 64; ++m) {
      if ((s.model_mask >> m) & 1) models.push_back(model::GetGpuModel(m).name);
    }
    out.push_back({{"cpu_milli", s.cpu_milli},
                   {"gpu_count", s.gpu_count},
                   {"gpu_milli", s.gpu_milli},
                   {"gpu_models", models},
                   {"weight", s.weight}});
  }
  return out;
}

int64_t NodeFree::TotalFree() const {
  int64_t total = 0;
  for (int g = 0; g < gpus; ++g) total += free_milli[g];
  return total;
}

NodeFree NodeFreeOf(const model::ClusterState& c, model::NodeIndex n) {
  const model::Node& node = c.node(n);
  NodeFree f;
  f.cpu_milli = node.free_cpu_milli();
  f.gpus = std::min(node.gpu_count, kMaxFragGpus);
  for (int i = 0; i < f.gpus; ++i) {
    const model::Gpu& gpu = c.gpu(node.first_gpu + i);
    f.free_milli[i] = node.ready && gpu.available ? gpu.free_milli : 0;
    f.model[i] = gpu.model;
  }
  return f;
}

double ShapeFragmentMilli(const NodeFree& node, const PodShape& shape) {
  int64_t total = 0, unusable = 0;
  int usable = 0;
  for (int g = 0; g < node.gpus; ++g) {
    const int32_t free = node.free_milli[g];
    total += free;
    if (shape.gpu_count > 0 && shape.Allows(node.model[g]) && free >= shape.gpu_milli) {
      ++usable;
    } else {
      unusable += free;
    }
  }
  if (shape.gpu_count == 0) return static_cast<double>(total);
  if (usable < shape.gpu_count || node.cpu_milli < shape.cpu_milli) {
    return static_cast<double>(total);
  }
  return static_cast<double>(unusable);
}

double FragmentMilli(const NodeFree& node, const ShapeDistribution& typical) {
  double frag = 0;
  for (const PodShape& s : typical.shapes()) frag += s.weight * ShapeFragmentMilli(node, s);
  return frag;
}

}  // namespace tessera::policy
