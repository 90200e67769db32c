#pragma once
// Informer: a local, eventually consistent copy of one kind of object (pods or nodes), kept
// by the list-then-watch protocol (DESIGN §6; client-go's Reflector + Store):
//  - list (paged with limit/continue), remember the list's resourceVersion;
//  - watch from it (allowWatchBookmarks=true, timeoutSeconds) and apply the newline-delimited
//    events ADDED / MODIFIED / DELETED, advancing the resourceVersion, BOOKMARK included;
//  - a watch that ends or breaks is re-opened from the last resourceVersion, with backoff
//    (initial doubling to max) while it keeps failing;
//  - 410 Gone (as the watch's HTTP status or an in-stream ERROR event) means the history was
//    compacted: re-list, and hand the handler the difference (objects that vanished meanwhile
//    arrive as Deleted) so consumers never miss a deletion.
// The handler runs on the informer's thread, one event at a time. Cache(), synced() and the
// counters may be read from any thread. Start/Stop from the owner's thread.
// A failing list or watch is retried without end; its error is logged once when the failures
// start (and once more if the error changes), "listed again" once when a list succeeds after
// them, and stats().last_error holds it meanwhile for the owner's readiness (base/health.h).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "k8s/api_client.h"

namespace tessera::k8s {

enum class EventType { kAdded, kModified, kDeleted };

// One line of a watch stream, decoded (the informer's only parser of server data there).
struct WatchEvent {
  enum class Kind { kAdded, kModified, kDeleted, kBookmark, kError, kOther };
  Kind kind = Kind::kOther;
  nlohmann::json object;         // the event's object
  std::string resource_version;  // its metadata.resourceVersion when a string, else ""
  int error_code = 0;            // kError: the Status object's code (0 when absent or not a number)
  std::string error_message;     // kError: its message when a string
};
// nullopt for a line that is not a JSON object with an "object" member; never throws, whatever
// the types inside (a "type", "code" or "resourceVersion" of the wrong type reads as absent).
std::optional<WatchEvent> DecodeWatchEvent(std::string_view line);

struct InformerOptions {
  std::string path = "/api/v1/pods";  // a collection; the watch uses the same path
  int page_size = 500;
  int watch_timeout_s = 300;  // asked of the server; the client waits 30 s longer
  double backoff_initial_s = 0.1;
  double backoff_max_s = 5;
};

struct InformerStats {
  int64_t lists = 0;
  int64_t watches = 0;
  int64_t gone = 0;      // 410s seen (HTTP or in-stream)
  int64_t failures = 0;  // lists or watches that failed (connection, 5xx, bad JSON)
  int64_t events = 0;
  // The error of the last list or watch if it failed; "" once a list succeeds, a watch
  // delivers a line or ends cleanly.
  std::string last_error;
};

class Informer {
 public:
  using Handler = std::function<void(EventType, const nlohmann::json& object)>;
  Informer(ApiClient& api, InformerOptions options, Handler handler);
  ~Informer();

  void Start();
  void Stop();

  // True once the first list has been delivered to the handler.
  bool synced() const { return synced_.load(); }
  // Blocks until synced or `timeout_s` passes.
  bool WaitForSync(double timeout_s) const;
  // A snapshot of the cache, keyed "namespace/name" (or "name" for cluster objects).
  std::map<std::string, nlohmann::json> Cache() const;
  InformerStats stats() const;
  std::string resource_version() const;

  static std::string KeyOf(const nlohmann::json& object);

 private:
  void Run();
  // Lists and diffs against the cache; false on failure.
  bool List();
  // Watches until the stream ends; returns false when a re-list is needed (410).
  bool Watch(bool& failed);
  void Apply(EventType type, const nlohmann::json& object);
  // Records the outcome of a list or watch ("" = it worked); logs only a change.
  void Note(const std::string& error);
  void Sleep(double seconds);

  ApiClient& api_;
  InformerOptions options_;
  Handler handler_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, nlohmann::json> cache_;
  std::string resource_version_;
  InformerStats stats_;
};

// One consistent, paged LIST of a collection (no cache): what a new leader reads so that no
// binding its predecessor made is missed because a watch event is still in flight.
[[nodiscard]] Expected<std::vector<nlohmann::json>> ListObjects(ApiClient& api,
                                                                const std::string& path,
                                                                int page_size = 500);

}  // namespace tessera::k8s
