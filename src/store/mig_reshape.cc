#include "store/mig_reshape.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tessera::store {

using nlohmann::json;

std::string MigReshapeRequestKey(std::string_view node, std::string_view gpu_uuid) {
  return fmt::format("mig-reshape/{}/{}", node, gpu_uuid);
}

std::string MigReshapeStatusKey(std::string_view node, std::string_view gpu_uuid) {
  return fmt::format("mig-reshape-status/{}/{}", node, gpu_uuid);
}

std::string ToJson(const MigReshapeRequest& r) {
  return json{{"node", r.node}, {"gpu_index", r.gpu_index},       {"gpu_uuid", r.gpu_uuid},
              {"mig", r.mig},   {"requested_by", r.requested_by}, {"requested_at", r.requested_at}}
      .dump();
}

std::string ToJson(const MigReshapeStatus& s) {
  return json{{"node", s.node},
              {"gpu_uuid", s.gpu_uuid},
              {"mig", s.mig},
              {"requested_by", s.requested_by},
              {"requested_at", s.requested_at},
              {"state", s.state},
              {"fault", s.fault},
              {"error", s.error},
              {"steps", s.steps},
              {"rolled_back", s.rolled_back},
              {"restored", s.restored},
              {"elapsed_s", s.elapsed_s},
              {"agent_id", s.agent_id}}
      .dump();
}

namespace {

// Members are read strictly: a member of the wrong type is an error naming it, never a
// default (a typo in a hand-written request must not become "MIG off").
template <typename T>
T Member(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) throw std::runtime_error(fmt::format("'{}' is missing", name));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(fmt::format("'{}' is a {}", name, it->type_name()));
  }
}

}  // namespace

Expected<MigReshapeRequest> MigReshapeRequestFromJson(std::string_view text,
                                                      std::string_view what) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) return Fail("{}: malformed MIG reshape request: not an object", what);
    MigReshapeRequest r;
    r.node = Member<std::string>(j, "node");
    r.gpu_index = Member<int>(j, "gpu_index");
    r.gpu_uuid = Member<std::string>(j, "gpu_uuid");
    r.mig = Member<std::string>(j, "mig");
    r.requested_by = Member<std::string>(j, "requested_by");
    r.requested_at = Member<std::string>(j, "requested_at");
    return r;
  } catch (const std::exception& e) {
    return Fail("{}: malformed MIG reshape request: {}", what, e.what());
  }
}

Expected<MigReshapeStatus> MigReshapeStatusFromJson(std::string_view text, std::string_view what) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) return Fail("{}: malformed MIG reshape status: not an object", what);
    MigReshapeStatus s;
    s.node = Member<std::string>(j, "node");
    s.gpu_uuid = Member<std::string>(j, "gpu_uuid");
    s.mig = Member<std::string>(j, "mig");
    s.requested_by = Member<std::string>(j, "requested_by");
    s.requested_at = Member<std::string>(j, "requested_at");
    s.state = Member<std::string>(j, "state");
    s.fault = Member<std::string>(j, "fault");
    s.error = Member<std::string>(j, "error");
    s.steps = Member<std::vector<std::string>>(j, "steps");
    s.rolled_back = Member<bool>(j, "rolled_back");
    s.restored = Member<bool>(j, "restored");
    s.elapsed_s = Member<double>(j, "elapsed_s");
    s.agent_id = Member<std::string>(j, "agent_id");
    return s;
  } catch (const std::exception& e) {
    return Fail("{}: malformed MIG reshape status: {}", what, e.what());
  }
}

}  // namespace tessera::store
