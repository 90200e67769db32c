#include "store/records.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "model/mig.h"

namespace tessera::store {
namespace {

using nlohmann::json;

json PartitionJson(const PartitionInventory& p) {
  return {{"uuid", p.uuid},
          {"profile", p.profile},
          {"gi_id", p.gi_id},
          {"start", p.start},
          {"memory_mib", p.memory_mib}};
}

json GpuJson(const GpuInventory& g) {
  json parts = json::array();
  for (const auto& p : g.partitions) parts.push_back(PartitionJson(p));
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"product_name", g.product_name},
          {"model", g.model},
          {"memory_mib", g.memory_mib},
          {"mig_enabled", g.mig_enabled},
          {"lost", g.lost},
          {"mps_stuck", g.mps_stuck},
          {"partitions", std::move(parts)}};
}

}  // namespace

std::string ToJson(const NodeInventory& inv) {
  json gpus = json::array();
  for (const auto& g : inv.gpus) gpus.push_back(GpuJson(g));
  const json j = {{"node", inv.node},           {"backend", inv.backend},
                  {"agent_id", inv.agent_id},   {"generation", inv.generation},
                  {"cpu_milli", inv.cpu_milli}, {"memory_mib", inv.memory_mib},
                  {"gpus", std::move(gpus)}};
  return j.dump();
}

std::string ToJson(const PlacementRecord& p) {
  json slices = json::array();
  for (const auto& s : p.slices) {
    json slice = {
        {"partition_uuid", s.partition_uuid}, {"milli", s.milli}, {"memory_mib", s.memory_mib}};
    if (s.best_effort) slice["best_effort"] = true;  // absent: guaranteed (older records too)
    if (!s.remote_node.empty()) slice["remote_node"] = s.remote_node;  // absent: local
    slices.push_back(std::move(slice));
  }
  const json j = {{"workload", p.workload},
                  {"node", p.node},
                  {"pod", p.pod},
                  {"namespace", p.namespace_},
                  {"slices", std::move(slices)}};
  return j.dump();
}

// nlohmann throws on a type mismatch; this is the module edge where that stops.
Expected<NodeInventory> InventoryFromJson(std::string_view text, std::string_view what) {
  try {
    const json j = json::parse(text);
    NodeInventory inv;
    inv.node = j.at("node").get<std::string>();
    inv.backend = j.value("backend", "");
    inv.agent_id = j.value("agent_id", "");
    inv.generation = j.value("generation", int64_t{0});
    inv.cpu_milli = j.value("cpu_milli", int64_t{0});
    inv.memory_mib = j.value("memory_mib", int64_t{0});
    for (const json& jg : j.at("gpus")) {
      GpuInventory g;
      g.index = jg.at("index").get<int>();
      g.uuid = jg.at("uuid").get<std::string>();
      g.product_name = jg.value("product_name", "");
      g.model = jg.value("model", "");
      g.memory_mib = jg.value("memory_mib", int64_t{0});
      g.mig_enabled = jg.value("mig_enabled", false);
      g.lost = jg.value("lost", false);
      g.mps_stuck = jg.value("mps_stuck", false);  // absent from older agents' inventories
      for (const json& jp : jg.at("partitions")) {
        PartitionInventory p;
        p.uuid = jp.at("uuid").get<std::string>();
        p.profile = jp.value("profile", "");
        p.gi_id = jp.value("gi_id", -1);
        p.start = jp.value("start", 0);
        p.memory_mib = jp.value("memory_mib", int64_t{0});
        g.partitions.push_back(std::move(p));
      }
      inv.gpus.push_back(std::move(g));
    }
    return inv;
  } catch (const std::exception& e) {
    return Fail("{}: malformed inventory: {}", what, e.what());
  }
}

Expected<PlacementRecord> PlacementFromJson(std::string_view text, std::string_view what) {
  try {
    const json j = json::parse(text);
    PlacementRecord p;
    p.workload = j.at("workload").get<std::string>();
    p.node = j.value("node", "");
    p.pod = j.value("pod", "");
    p.namespace_ = j.value("namespace", "");
    for (const json& js : j.at("slices")) {
      SliceRecord s;
      s.partition_uuid = js.at("partition_uuid").get<std::string>();
      s.milli = js.at("milli").get<int32_t>();
      s.memory_mib = js.at("memory_mib").get<int64_t>();
      s.best_effort = js.value("best_effort", false);
      s.remote_node = js.value("remote_node", "");
      p.slices.push_back(std::move(s));
    }
    return p;
  } catch (const std::exception& e) {
    return Fail("{}: malformed placement: {}", what, e.what());
  }
}

Expected<void> Validate(const PlacementRecord& p) {
  if (p.workload.empty()) return Fail("placement without a workload id");
  std::set<std::string_view> seen;
  for (const auto& s : p.slices) {
    if (s.partition_uuid.empty())
      return Fail("placement {}: slice without a partition", p.workload);
    if (s.milli < 1 || s.milli > 1000) {
      return Fail("placement {}: slice on {} has {} milli (1..1000)", p.workload, s.partition_uuid,
                  s.milli);
    }
    if (s.memory_mib < 0) {
      return Fail("placement {}: slice on {} has negative memory", p.workload, s.partition_uuid);
    }
    if (!s.remote_node.empty() && s.remote_node == p.node) {
      return Fail("placement {}: slice on {} is remote on its own node {}", p.workload,
                  s.partition_uuid, p.node);
    }
    if (!seen.insert(s.partition_uuid).second) {
      return Fail("placement {}: two slices on partition {}", p.workload, s.partition_uuid);
    }
  }
  return {};
}

Expected<void> Validate(const NodeInventory& inv) {
  if (inv.node.empty()) return Fail("inventory without a node name");
  std::set<std::string_view> seen;
  for (const auto& g : inv.gpus) {
    if (g.uuid.empty()) return Fail("node {}: GPU {} without a uuid", inv.node, g.index);
    for (const auto& p : g.partitions) {
      if (p.uuid.empty() || !seen.insert(p.uuid).second) {
        return Fail("node {}: GPU {}: partition uuid '{}' empty or repeated", inv.node, g.index,
                    p.uuid);
      }
      if (p.memory_mib < 0)
        return Fail("node {}: partition {} has negative memory", inv.node, p.uuid);
    }
  }
  return {};
}

Expected<model::NodeSpec> ToNodeSpec(const NodeInventory& inv) {
  model::NodeSpec spec;
  spec.name = inv.node;
  spec.cpu_milli = inv.cpu_milli;
  spec.memory_mib = inv.memory_mib;
  for (const auto& g : inv.gpus) {
    if (g.lost) continue;
    const auto id = model::FindGpuModel(g.model.empty() ? g.product_name : g.model);
    if (!id) return Fail("node {}: GPU {} ({}): not in the GPU catalog", inv.node, g.index, g.uuid);
    model::GpuSpec gs;
    gs.model = *id;
    gs.uuid = g.uuid;
    if (g.mig_enabled) {
      const model::GpuModel& m = model::GetGpuModel(*id);
      std::vector<PartitionInventory> parts = g.partitions;
      std::sort(parts.begin(), parts.end(),
                [](const auto& a, const auto& b) { return a.start < b.start; });
      model::MigLayout layout;
      for (const auto& p : parts) {
        const auto prof = m.FindProfile(p.profile);
        if (!prof)
          return Fail("node {}: GPU {}: unknown MIG profile '{}'", inv.node, g.index, p.profile);
        layout.instances.push_back({*prof, p.start});
        gs.partition_uuids.push_back(p.uuid);
      }
      if (auto ok = model::ValidateLayout(m, layout); !ok) {
        return Fail("node {}: GPU {}: {}", inv.node, g.index, ok.error().message);
      }
      gs.mig = std::move(layout);
    }
    spec.gpus.push_back(std::move(gs));
  }
  return spec;
}

}  // namespace tessera::store
