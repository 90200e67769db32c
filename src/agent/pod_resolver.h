#pragma once
// Which Kubernetes pod a process belongs to, from the cgroup the kubelet put it in: NVML and the
// fake backend name GPU processes by pid, and the per-pod usage series (tessera_pod_*,
// docs/runtime.md) need the pod. The kubelet names each pod's cgroup after the pod's uid:
//   cgroupfs driver  /kubepods/burstable/pod<uid>/<container>     (Guaranteed: /kubepods/pod<uid>)
//   systemd driver   /kubepods.slice/kubepods-burstable.slice/
//                      kubepods-burstable-pod<uid with '_' for '-'>.slice/cri-containerd-<id>.scope
// in cgroup v1 (one "N:controllers:/path" line per hierarchy) and v2 ("0::/path") alike. The
// path may be relative to the reader's cgroup namespace ("/../../kubepods-…-pod<uid>.slice/…").
// Pure functions plus one file reader; thread-safe.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::agent {

// The pod uid (with dashes, as the API server spells it) named by /proc/<pid>/cgroup's text;
// nullopt for a process outside any pod's cgroup (a system service, the host's shell).
std::optional<std::string> PodUidFromCgroup(std::string_view proc_pid_cgroup_text);

// PodUidFromCgroup of `proc_root`/<pid>/cgroup; nullopt when the file cannot be read (the
// process ended, or the agent does not see the host's PID namespace: docs/runtime.md).
std::optional<std::string> PodUidOfPid(const std::filesystem::path& proc_root, uint32_t pid);

}  // namespace tessera::agent
