#include "agent/pod_resolver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera::agent {
namespace {

constexpr const char* kUid = "7e57a30a-0000-4000-8000-000000000001";

// /proc/<pid>/cgroup as each kubelet cgroup driver and cgroup version writes it (the kubelet's
// pkg/kubelet/cm naming: cgroupfs "pod<uid>", systemd "kubepods-<qos>-pod<uid, _ for ->.slice").
TEST(PodUidFromCgroupTest, KubeletCgroupNamesOfEachDriverAndVersion) {
  struct Case {
    const char* name;
    std::string text;
    std::optional<std::string> want;
  } cases[] = {
      {"cgroupfs v2 burstable",
       "0::/kubepods/burstable/pod7e57a30a-0000-4000-8000-000000000001/"
       "3f0c1e2d4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff\n",
       kUid},
      {"cgroupfs v2 guaranteed", "0::/kubepods/pod7e57a30a-0000-4000-8000-000000000001/abc\n",
       kUid},
      {"cgroupfs v1, several hierarchies",
       "12:pids:/kubepods/besteffort/pod7e57a30a-0000-4000-8000-000000000001/abc\n"
       "11:memory:/kubepods/besteffort/pod7e57a30a-0000-4000-8000-000000000001/abc\n"
       "1:name=systemd:/kubepods/besteffort/pod7e57a30a-0000-4000-8000-000000000001/abc\n",
       kUid},
      {"systemd v2 burstable",
       "0::/kubepods.slice/kubepods-burstable.slice/"
       "kubepods-burstable-pod7e57a30a_0000_4000_8000_000000000001.slice/"
       "cri-containerd-3f0c1e2d4b5a.scope\n",
       kUid},
      {"systemd v2 guaranteed",
       "0::/kubepods.slice/kubepods-pod7e57a30a_0000_4000_8000_000000000001.slice/"
       "cri-containerd-3f0c.scope\n",
       kUid},
      {"systemd v1: the cpuset line names no pod, the memory line does",
       "5:cpuset:/\n"
       "4:memory:/kubepods.slice/kubepods-besteffort.slice/"
       "kubepods-besteffort-pod7e57a30a_0000_4000_8000_000000000001.slice/docker-abc.scope\n",
       kUid},
      {"systemd v2 relative to the agent's cgroup namespace",
       "0::/../../kubepods-besteffort-pod7e57a30a_0000_4000_8000_000000000001.slice/"
       "cri-containerd-abc.scope\n",
       kUid},
      {"no trailing newline", "0::/kubepods/pod7e57a30a-0000-4000-8000-000000000001/abc", kUid},
      {"a system service", "0::/system.slice/containerd.service\n", std::nullopt},
      {"a login shell", "0::/user.slice/user-1000.slice/session-3.scope\n", std::nullopt},
      {"the root cgroup", "0::/\n", std::nullopt},
      {"empty", "", std::nullopt},
      {"the kubepods slice itself, no pod yet", "0::/kubepods.slice/kubepods-burstable.slice\n",
       std::nullopt},
      {"'pod' not under kubepods", "0::/system.slice/pod7e57a30a-0000-4000-8000-000000000001\n",
       std::nullopt},
      {"a uid that is not one", "0::/kubepods/burstable/podnotauid/abc\n", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PodUidFromCgroup(c.text), c.want) << c.name;
  }
}

TEST(PodUidOfPidTest, ReadsTheCgroupFileUnderTheProcRoot) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("tessera-proc-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "4242");
  std::filesystem::create_directories(root / "77");
  std::ofstream(root / "4242" / "cgroup")
      << "0::/kubepods/burstable/pod7e57a30a-0000-4000-8000-000000000001/abc\n";
  std::ofstream(root / "77" / "cgroup") << "0::/system.slice/containerd.service\n";
  EXPECT_EQ(PodUidOfPid(root, 4242), kUid);
  EXPECT_EQ(PodUidOfPid(root, 77), std::nullopt);
  EXPECT_EQ(PodUidOfPid(root, 5), std::nullopt);  // no such process (it ended)
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace tessera::agent
