#include "agent/pod_resolver.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

namespace tessera::agent {
namespace {

// A pod uid as the kubelet writes it into a cgroup name: a UUID (8-4-4-4-12 hex digits), or
// the 32 hex digits of a static pod's config hash.
bool IsPodUid(std::string_view s) {
  if (s.size() != 36 && s.size() != 32) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash_here = s.size() == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
    if (dash_here ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    if (!seg.empty()) out.push_back(seg);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// The pod uid one cgroup path names, if any.
std::optional<std::string> FromPath(std::string_view path) {
  const std::vector<std::string_view> segs = Segments(path);
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string_view seg = segs[i];
    // systemd: kubepods[-<qos>]-pod<uid_with_underscores>.slice (also kind's kubelet-kubepods-…).
    if (seg.ends_with(".slice") && seg.find("kubepods") != std::string_view::npos) {
      const std::string_view name = seg.substr(0, seg.size() - 6);
      const size_t dash = name.rfind('-');
      if (dash == std::string_view::npos) continue;
      std::string_view last = name.substr(dash + 1);
      if (!last.starts_with("pod")) continue;
      std::string uid(last.substr(3));
      std::replace(uid.begin(), uid.end(), '_', '-');
      if (IsPodUid(uid)) return uid;
      continue;
    }
    // cgroupfs: …/kubepods[/<qos>]/pod<uid>/<container>; ".." when the path is relative to the
    // reader's cgroup namespace.
    if (seg.starts_with("pod") && i > 0 &&
        (segs[i - 1] == "kubepods" || segs[i - 1] == "burstable" || segs[i - 1] == "besteffort" ||
         segs[i - 1] == "..")) {
      const std::string_view uid = seg.substr(3);
      if (IsPodUid(uid)) return std::string(uid);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> PodUidFromCgroup(std::string_view text) {
  // One "hierarchy-id:controllers:path" line per hierarchy (v1) or the single "0::path" (v2);
  // the pod's cgroup shows in every hierarchy, so the first line that names one decides.
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    const size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    if (auto uid = FromPath(line.substr(second + 1))) return uid;
  }
  return std::nullopt;
}

std::optional<std::string> PodUidOfPid(const std::filesystem::path& proc_root, uint32_t pid) {
  std::ifstream in(proc_root / std::to_string(pid) / "cgroup");
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return PodUidFromCgroup(ss.str());
}

}  // namespace tessera::agent
