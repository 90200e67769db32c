#include "base/health.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace tessera {

Health::Health(const Clock& clock, OnChange on_change)
    : clock_(clock), on_change_(std::move(on_change)) {}

void Health::Beat(const std::string& loop, double stall_s) {
  const double now = clock_.Now();
  std::lock_guard lock(mu_);
  loops_[loop] = {now, stall_s};
}

void Health::Declare(const std::string& dependency) {
  std::lock_guard lock(mu_);
  dependencies_.try_emplace(dependency);
}

void Health::Set(const std::string& dependency, const std::string& reason) {
  bool report = false;
  {
    std::lock_guard lock(mu_);
    Dependency& d = dependencies_[dependency];
    // The first answer of a dependency that answers is news; the first failure always is.
    report = !d.checked || d.reason != reason;
    d.checked = true;
    d.reason = reason;
  }
  if (report && on_change_) {
    on_change_(reason.empty(), reason.empty() ? dependency + ": answers" : reason);
  }
}

void Health::SetRole(const std::string& role) {
  std::lock_guard lock(mu_);
  role_ = role;
}

Health::Report Health::Liveness() const {
  const double now = clock_.Now();
  std::lock_guard lock(mu_);
  std::vector<std::string> stalled, turning;
  for (const auto& [name, loop] : loops_) {
    const double idle = now - loop.beat;
    if (idle > loop.stall_s) {
      stalled.push_back(fmt::format("{}: stalled, no turn for {:.0f} s (limit {:.0f} s)", name,
                                    idle, loop.stall_s));
    } else {
      turning.push_back(fmt::format("{}: ok", name));
    }
  }
  Report r{stalled.empty(), ""};
  for (const auto* lines : {&stalled, &turning}) {
    for (const std::string& l : *lines) r.text += l + "\n";
  }
  if (loops_.empty()) r.text = "ok\n";
  return r;
}

Health::Report Health::Readiness() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> failing, answering;
  for (const auto& [name, d] : dependencies_) {
    if (!d.checked) {
      failing.push_back(name + ": not checked yet");
    } else if (!d.reason.empty()) {
      failing.push_back(d.reason);
    } else {
      answering.push_back(name + ": ok");
    }
  }
  Report r{failing.empty(), ""};
  for (const auto* lines : {&failing, &answering}) {
    for (const std::string& l : *lines) r.text += l + "\n";
  }
  if (!role_.empty()) r.text += "role: " + role_ + "\n";
  if (r.text.empty()) r.text = "ok\n";
  return r;
}

void LogHealthChange(bool ok, const std::string& line) {
  if (ok) {
    spdlog::info("{}", line);
  } else {
    spdlog::warn("{}", line);
  }
}

std::string Health::role() const {
  std::lock_guard lock(mu_);
  return role_;
}

}  // namespace tessera
