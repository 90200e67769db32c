#pragma once
// Health: what a daemon answers on /healthz and /readyz (docs/runtime.md "Probes"), shared by
// `tessera agent`, `tessera schedule` and `tessera extender`.
//
// Liveness (/healthz) says the process's loops still turn: each loop calls Beat(loop, stall_s)
// once per turn, and the daemon is live while every loop has beaten within its own stall_s. A
// live daemon whose dependencies are down is still live: restarting it would not bring them
// back.
// Readiness (/readyz) says the dependencies it needs answer. Each is Declared with a name that
// carries its address ("redis 127.0.0.1:6379/0", "api server https://10.0.0.1:443") and then
// Set to "" (it answers) or to a short reason that names it ("redis 127.0.0.1:1/0: Connection
// refused"); the daemon is ready when every declared dependency answers. A role line ("leader",
// "standby") may be added for the operator; it does not decide readiness.
// A dependency's state is reported to `on_change` only when it changes (answers → fails, fails →
// answers, or a different reason), never on every retry: the daemons log from it.
// Thread-safe; on_change runs on the caller of Set, outside the lock.

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"

namespace tessera {

class Health {
 public:
  // ok: the dependency answers again (line "NAME: answers"); else line is its reason.
  using OnChange = std::function<void(bool ok, const std::string& line)>;
  explicit Health(const Clock& clock, OnChange on_change = {});

  void Beat(const std::string& loop, double stall_s);
  // Starts a dependency as "not checked yet" (not ready, nothing reported).
  void Declare(const std::string& dependency);
  void Set(const std::string& dependency, const std::string& reason);
  void SetRole(const std::string& role);
  std::string role() const;

  struct Report {
    bool ok = false;
    std::string text;  // one line per loop or dependency, failures first
  };
  Report Liveness() const;
  Report Readiness() const;

 private:
  struct Loop {
    double beat = 0;
    double stall_s = 0;
  };
  struct Dependency {
    std::string reason;  // "" = answers
    bool checked = false;
  };
  const Clock& clock_;
  OnChange on_change_;
  mutable std::mutex mu_;
  std::map<std::string, Loop> loops_;
  std::map<std::string, Dependency> dependencies_;
  std::string role_;
};

// The daemons' OnChange: a failure logged as a warning, a recovery as info (spdlog).
void LogHealthChange(bool ok, const std::string& line);

}  // namespace tessera
