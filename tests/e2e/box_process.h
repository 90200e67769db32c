#pragma once
// The emulated cluster's child processes (tests/e2e, docs/cluster-box.md): redis-server,
// prometheus, the metrics file exporter, one `tessera agent --fake` per GPU node and the
// `tessera schedule` replicas — each spawned with its output in a log file, stopped with SIGTERM
// (then SIGKILL after 5 s) when its Child is destroyed, and killable on purpose for the faults.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace tessera::e2e {

class Child {
 public:
  Child() = default;
  // Spawns argv[0] (a path, or a name looked up in PATH) with its stdout and stderr in `log`.
  // Throws std::runtime_error when it cannot be spawned.
  Child(std::string name, std::vector<std::string> argv, const std::string& log);
  ~Child();
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  bool Running();
  // SIGTERM, up to 5 s for it to exit, then SIGKILL. Idempotent.
  void Stop();
  // SIGKILL at once (a crash) and reap it.
  void Kill();

 private:
  std::string name_;
  pid_t pid_ = -1;
};

// SIGKILL to every Child alive now; async-signal-safe (for a signal handler: the box's daemons
// must not outlive it).
void KillAllChildren();

// A loopback port free to bind now, in 20000–31999: below the kernel's ephemeral range, where
// outgoing connections would take it from under a daemon about to bind it.
int FreePort();
// Whether GET http://127.0.0.1:port/path answers 200.
bool HttpOk(int port, const std::string& path);
// Polls `check` every 0.1 s for up to `timeout_s`; throws std::runtime_error naming `what` and
// the tail of `log` when it never holds.
void WaitUntil(const std::string& what, const std::string& log, double timeout_s,
               const std::function<bool()>& check);

}  // namespace tessera::e2e
