#include "k8s/informer.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "k8s/objects.h"

namespace tessera::k8s {

using nlohmann::json;

std::optional<WatchEvent> DecodeWatchEvent(std::string_view line) {
  json ev = json::parse(line, nullptr, false);
  if (ev.is_discarded() || !ev.is_object() || !ev.contains("object")) return std::nullopt;
  WatchEvent out;
  const json& type = ev["type"];
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  out.kind = t == "ADDED"      ? WatchEvent::Kind::kAdded
             : t == "MODIFIED" ? WatchEvent::Kind::kModified
             : t == "DELETED"  ? WatchEvent::Kind::kDeleted
             : t == "BOOKMARK" ? WatchEvent::Kind::kBookmark
             : t == "ERROR"    ? WatchEvent::Kind::kError
                               : WatchEvent::Kind::kOther;
  out.object = std::move(ev["object"]);
  const json& obj = out.object;
  if (out.kind == WatchEvent::Kind::kError && obj.is_object()) {
    if (auto it = obj.find("code"); it != obj.end() && it->is_number_integer()) {
      out.error_code = it->get<int>();
    }
    if (auto it = obj.find("message"); it != obj.end() && it->is_string()) {
      out.error_message = it->get<std::string>();
    }
  }
  if (obj.is_object()) {
    if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) {
      if (auto rv = m->find("resourceVersion"); rv != m->end() && rv->is_string()) {
        out.resource_version = rv->get<std::string>();
      }
    }
  }
  return out;
}

Expected<std::vector<json>> ListObjects(ApiClient& api, const std::string& path, int page_size) {
  std::vector<json> out;
  std::string cont;
  do {
    std::string p = path + "?limit=" + std::to_string(page_size);
    if (!cont.empty()) p += "&continue=" + UrlEscape(cont);
    auto r = api.Get(p);
    if (!r) return std::unexpected(r.error());
    if (r->status == 410) {  // continue token expired
      cont.clear();
      out.clear();
      continue;
    }
    if (!r->ok()) return Fail("list {}: status {}", path, r->status);
    json list = json::parse(r->body, nullptr, false);
    if (list.is_discarded() || !list.contains("items") || !list["items"].is_array()) {
      return Fail("list {}: not a list object", path);
    }
    cont = list.contains("metadata") ? StringMember(list["metadata"], "continue") : "";
    for (json& item : list["items"]) out.push_back(std::move(item));
  } while (!cont.empty());
  return out;
}

Informer::Informer(ApiClient& api, InformerOptions options, Handler handler)
    : api_(api), options_(std::move(options)), handler_(std::move(handler)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  api_.CancelStreams(this);
  thread_.join();
  api_.ResumeStreams(this);
}

bool Informer::WaitForSync(double timeout_s) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] {
    return synced_.load() || stop_.load();
  }) && synced_.load();
}

std::map<std::string, json> Informer::Cache() const {
  std::lock_guard lock(mu_);
  return cache_;
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

std::string Informer::KeyOf(const json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return "";
  }
  const json& m = object["metadata"];
  const std::string name = StringMember(m, "name");
  const std::string ns = StringMember(m, "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

void Informer::Sleep(double seconds) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_.load(); });
}

void Informer::Apply(EventType type, const json& object) {
  const std::string key = KeyOf(object);
  if (key.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (type == EventType::kDeleted) {
      cache_.erase(key);
    } else {
      cache_[key] = object;
    }
    ++stats_.events;
  }
  handler_(type, object);
}

void Informer::Note(const std::string& error) {
  std::string was;
  {
    std::lock_guard lock(mu_);
    if (stats_.last_error == error) return;
    was = stats_.last_error;
    stats_.last_error = error;
  }
  if (!error.empty()) {
    spdlog::warn("informer {}: {} (retrying with backoff)", options_.path, error);
  } else if (!was.empty()) {
    spdlog::info("informer {}: listing and watching again", options_.path);
  }
}

bool Informer::List() {
  std::map<std::string, json> fresh;
  std::string cont, rv;
  do {
    std::string path = options_.path + "?limit=" + std::to_string(options_.page_size);
    if (!cont.empty()) path += "&continue=" + UrlEscape(cont);
    auto r = api_.Get(path);
    if (!r) {
      Note("list failed: " + r.error().message);
      return false;
    }
    if (r->status == 410) {  // the continue token expired: start the list again
      cont.clear();
      fresh.clear();
      continue;
    }
    if (!r->ok()) {
      Note(fmt::format("list answered {}: {}", r->status, r->body.substr(0, 200)));
      return false;
    }
    json list = json::parse(r->body, nullptr, false);
    if (list.is_discarded() || !list.is_object() || !list.contains("items") ||
        !list["items"].is_array()) {
      Note("list answer is not a list object");
      return false;
    }
    const json& meta = list.contains("metadata") ? list["metadata"] : json::object();
    rv = StringMember(meta, "resourceVersion");
    cont = StringMember(meta, "continue");
    for (json& item : list["items"]) {
      const std::string key = KeyOf(item);
      if (!key.empty()) fresh[key] = std::move(item);
    }
  } while (!cont.empty() && !stop_);
  if (stop_) return false;

  // Deliver the difference: vanished objects are deletions, the rest adds or changes.
  std::map<std::string, json> old;
  {
    std::lock_guard lock(mu_);
    old = cache_;
    ++stats_.lists;
  }
  for (const auto& [key, obj] : old) {
    if (!fresh.contains(key)) Apply(EventType::kDeleted, obj);
  }
  for (const auto& [key, obj] : fresh) {
    auto it = old.find(key);
    if (it == old.end()) {
      Apply(EventType::kAdded, obj);
    } else if (it->second != obj) {
      Apply(EventType::kModified, obj);
    }
  }
  {
    std::lock_guard lock(mu_);
    resource_version_ = rv;
    synced_ = true;
  }
  cv_.notify_all();
  Note("");
  return true;
}

bool Informer::Watch(bool& failed) {
  failed = false;
  const std::string path = options_.path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                           UrlEscape(resource_version()) +
                           "&timeoutSeconds=" + std::to_string(options_.watch_timeout_s);
  {
    std::lock_guard lock(mu_);
    ++stats_.watches;
  }
  bool gone = false;
  bool streaming = false;
  int bad_lines = 0;
  auto r = api_.Stream(
      path,
      [&](std::string_view line) {
        if (stop_) return false;
        if (!streaming) {  // the watch is open and delivering
          streaming = true;
          Note("");
        }
        std::optional<WatchEvent> ev = DecodeWatchEvent(line);
        if (!ev) {
          // One undecodable line is skipped; the stream stays in use.
          if (++bad_lines <= 3) {
            spdlog::warn("informer {}: skipping a malformed watch event", options_.path);
          }
          return true;
        }
        if (ev->kind == WatchEvent::Kind::kError) {
          spdlog::info("informer {}: watch ERROR {}: {}", options_.path, ev->error_code,
                       ev->error_message);
          gone = ev->error_code == 410;
          failed = !gone;
          return false;
        }
        const std::string& rv = ev->resource_version;
        switch (ev->kind) {
          case WatchEvent::Kind::kAdded:
            Apply(EventType::kAdded, ev->object);
            break;
          case WatchEvent::Kind::kModified:
            Apply(EventType::kModified, ev->object);
            break;
          case WatchEvent::Kind::kDeleted:
            Apply(EventType::kDeleted, ev->object);
            break;
          case WatchEvent::Kind::kBookmark:
            break;
          default:
            return true;
        }
        if (!rv.empty()) {
          std::lock_guard lock(mu_);
          resource_version_ = rv;
        }
        return true;
      },
      options_.watch_timeout_s + 30, this);
  if (!r) {
    if (!stop_) Note("watch: " + r.error().message);
    failed = true;
    return true;
  }
  if (r->status == 410) gone = true;
  if (!gone && r->status != 200) {
    Note(fmt::format("watch answered {}", r->status));
    failed = true;
  } else if (!gone && !failed) {
    Note("");
  }
  if (gone) {
    std::lock_guard lock(mu_);
    ++stats_.gone;
  }
  return !gone;
}

void Informer::Run() {
  double backoff = options_.backoff_initial_s;
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      if (!List()) {
        if (stop_) break;
        {
          std::lock_guard lock(mu_);
          ++stats_.failures;
        }
        Sleep(backoff);
        backoff = std::min(backoff * 2, options_.backoff_max_s);
        continue;
      }
      need_list = false;
      backoff = options_.backoff_initial_s;
    }
    bool failed = false;
    need_list = !Watch(failed);
    if (stop_) break;
    if (failed) {
      {
        std::lock_guard lock(mu_);
        ++stats_.failures;
      }
      Sleep(backoff);
      backoff = std::min(backoff * 2, options_.backoff_max_s);
    } else {
      backoff = options_.backoff_initial_s;
    }
  }
}

}  // namespace tessera::k8s
