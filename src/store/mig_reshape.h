#pragma once
// MIG reshape requests and their answers, as the scheduler and a node's agent exchange them
// through the store (DESIGN §6): the scheduler puts a request under MigReshapeRequestKey, the
// agent of that node applies it (agent/mig_reshaper.h) and puts its answer under
// MigReshapeStatusKey, first "applying", then "done", "failed" or "planned" (a dry run). The
// answer repeats the request's requested_by and requested_at, so the scheduler can tell an
// answer to its request from one to an older request. Both are JSON profile documents.
// Values; thread-safe.

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace tessera::store {

std::string MigReshapeRequestKey(std::string_view node, std::string_view gpu_uuid);
std::string MigReshapeStatusKey(std::string_view node, std::string_view gpu_uuid);

struct MigReshapeRequest {
  std::string node;
  int gpu_index = 0;
  std::string gpu_uuid;
  std::string mig;           // model::LayoutToString's form; "" for MIG off
  std::string requested_by;  // the scheduler's leader identity
  std::string requested_at;  // RFC 3339 with microseconds
  bool operator==(const MigReshapeRequest&) const = default;
};

struct MigReshapeStatus {
  std::string node;
  std::string gpu_uuid;
  std::string mig;  // the request's
  std::string requested_by, requested_at;
  std::string state;  // "applying" | "done" | "failed" | "planned"
  std::string fault;  // when failed: agent::MigFaultName ("busy", "insufficient-resources", ...)
  std::string error;  // when failed: what NVML or the agent said
  std::vector<std::string> steps;
  bool rolled_back = false;
  bool restored = false;  // after a rollback: the old layout is back
  double elapsed_s = 0;
  std::string agent_id;
  bool operator==(const MigReshapeStatus&) const = default;

  bool final() const { return state == "done" || state == "failed" || state == "planned"; }
  bool Answers(const MigReshapeRequest& r) const {
    return requested_by == r.requested_by && requested_at == r.requested_at;
  }
};

std::string ToJson(const MigReshapeRequest& request);
std::string ToJson(const MigReshapeStatus& status);
// `what` names the document in errors ("mig-reshape/node-1/GPU-..").
[[nodiscard]] Expected<MigReshapeRequest> MigReshapeRequestFromJson(std::string_view json,
                                                                    std::string_view what);
[[nodiscard]] Expected<MigReshapeStatus> MigReshapeStatusFromJson(std::string_view json,
                                                                  std::string_view what);

}  // namespace tessera::store
