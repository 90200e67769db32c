#include "store/redis_store.h"

#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include "store/redis_scripts.h"

namespace tessera::store {

struct RedisStore::Script {
  explicit Script(const char* t) : text(t) {
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
    for (unsigned char c : digest) sha += fmt::format("{:02x}", c);
  }
  std::string text;
  std::string sha;  // EVALSHA first; EVAL (which caches it) after a restart emptied the cache
};

namespace {

timeval ToTimeval(double s) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(s);
  tv.tv_usec = static_cast<suseconds_t>((s - std::floor(s)) * 1e6);
  return tv;
}

RedisStore::Reply Convert(const redisReply* r) {
  RedisStore::Reply out;
  out.type = r->type;
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      break;
  }
  return out;
}

bool StartsWith(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

std::string Milliseconds(double s) {
  return std::to_string(std::max<long long>(1, std::llround(s * 1000)));
}

RedisStore::Script& PutInventoryScript() {
  static RedisStore::Script s(lua::kPutInventory);
  return s;
}
RedisStore::Script& PutPlacementScript() {
  static RedisStore::Script s(lua::kPutPlacement);
  return s;
}
RedisStore::Script& RemovePlacementScript() {
  static RedisStore::Script s(lua::kRemovePlacement);
  return s;
}
RedisStore::Script& AcquireLeaseScript() {
  static RedisStore::Script s(lua::kAcquireLease);
  return s;
}
RedisStore::Script& ReleaseLeaseScript() {
  static RedisStore::Script s(lua::kReleaseLease);
  return s;
}

}  // namespace

Expected<RedisOptions> ParseRedisAddress(std::string_view address) {
  RedisOptions o;
  std::string_view rest = address;
  if (rest.starts_with("redis://")) rest.remove_prefix(8);
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    auto [ptr, ec] = std::from_chars(db.data(), db.data() + db.size(), o.db);
    if (ec != std::errc() || ptr != db.data() + db.size() || o.db < 0) {
      return Fail("redis address '{}': bad database index", address);
    }
    rest = rest.substr(0, slash);
  }
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Fail("redis address '{}': want host:port[/db]", address);
  }
  std::string_view host = rest.substr(0, colon);
  if (host.starts_with('[')) {  // IPv6: [addr]:port, as in a URL
    if (!host.ends_with(']') || host.size() < 3) {
      return Fail("redis address '{}': an IPv6 host is written [addr]:port", address);
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Fail("redis address '{}': an IPv6 host goes in brackets, [addr]:port", address);
  }
  o.host = std::string(host);
  const std::string_view port = rest.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), o.port);
  if (ec != std::errc() || ptr != port.data() + port.size() || o.port <= 0 || o.port > 65535) {
    return Fail("redis address '{}': bad port", address);
  }
  return o;
}

Expected<std::unique_ptr<RedisStore>> RedisStore::Connect(RedisOptions options) {
  std::unique_ptr<RedisStore> store(new RedisStore(std::move(options)));
  if (auto ok = store->Command({"PING"}); !ok) return std::unexpected(ok.error());
  return store;
}

std::unique_ptr<RedisStore> RedisStore::Create(RedisOptions options) {
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(options)));
}

RedisStore::~RedisStore() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

std::string RedisStore::endpoint() const {
  const bool v6 = options_.host.find(':') != std::string::npos;  // written back in brackets
  return fmt::format("redis {}{}{}:{}/{}", v6 ? "[" : "", options_.host, v6 ? "]" : "",
                     options_.port, options_.db);
}

std::string RedisStore::Key(std::string_view a, std::string_view b, std::string_view c) const {
  std::string k = options_.prefix;
  k += a;
  k += b;
  k += c;
  return k;
}

// Connection errors are retried by Call; an authentication or SELECT refusal is final.
Expected<void> RedisStore::EnsureConnected() {
  if (ctx_ != nullptr) return {};
  redisContext* c = redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                            ToTimeval(options_.connect_timeout_s));
  if (c == nullptr) return Fail("{}: cannot allocate a connection", endpoint());
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    return Fail("{}: {}", endpoint(), why);
  }
  redisSetTimeout(c, ToTimeval(options_.command_timeout_s));
  redisEnableKeepAlive(c);
  auto handshake = [&](std::vector<std::string> argv) -> std::string {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
    if (r == nullptr) return fmt::format("{} failed: {}", argv[0], c->errstr);
    std::string err = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "";
    freeReplyObject(r);
    return err;
  };
  std::string err;
  if (!options_.password.empty()) {
    err = options_.username.empty() ? handshake({"AUTH", options_.password})
                                    : handshake({"AUTH", options_.username, options_.password});
    if (!err.empty()) {
      redisFree(c);
      return Fail("{}: AUTH refused: {}", endpoint(), err);
    }
  }
  if (options_.db != 0) {
    err = handshake({"SELECT", std::to_string(options_.db)});
    if (!err.empty()) {
      redisFree(c);
      return Fail("{}: SELECT refused: {}", endpoint(), err);
    }
  }
  ctx_ = c;
  if (ever_connected_) {
    ++reconnects_;
    spdlog::info("{}: reconnected", endpoint());
  }
  ever_connected_ = true;
  return {};
}

Expected<RedisStore::Reply> RedisStore::Call(const std::vector<std::string>& argv) {
  std::lock_guard lock(mu_);
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.retry_budget_s);
  double backoff = options_.backoff_initial_s;
  std::string last_error;
  for (;;) {
    if (ctx_ == nullptr) {
      auto ok = EnsureConnected();
      if (!ok) {
        last_error = ok.error().message;
        if (StartsWith(last_error, endpoint() + ": AUTH") ||
            StartsWith(last_error, endpoint() + ": SELECT")) {
          return std::unexpected(ok.error());
        }
      }
    }
    if (ctx_ != nullptr) {
      auto* r = static_cast<redisReply*>(
          redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
      if (r != nullptr) {
        Reply reply = Convert(r);
        freeReplyObject(r);
        // A server still loading its AOF/RDB after a restart answers LOADING: wait for it.
        if (reply.type != REDIS_REPLY_ERROR || !StartsWith(reply.str, "LOADING")) return reply;
        last_error = reply.str;
      } else {
        last_error = fmt::format("{}: {}", endpoint(), ctx_->errstr);
        redisFree(ctx_);
        ctx_ = nullptr;
      }
    }
    if (std::chrono::steady_clock::now() + std::chrono::duration<double>(backoff) > deadline) {
      // "redis H:P/DB: SET failed after retrying for 10.0s: Connection refused": the cause
      // without the server named twice.
      const std::string self = endpoint() + ": ";
      if (StartsWith(last_error, self)) last_error.erase(0, self.size());
      return Fail("{}: {} failed after retrying for {:.1f}s: {}", endpoint(), argv[0],
                  options_.retry_budget_s, last_error);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, options_.backoff_max_s);
  }
}

Expected<void> RedisStore::Ping() {
  std::lock_guard lock(mu_);
  if (ctx_ == nullptr) {
    if (auto ok = EnsureConnected(); !ok) return ok;
  }
  auto* r = static_cast<redisReply*>(redisCommand(ctx_, "PING"));
  if (r == nullptr) {
    const std::string why = ctx_->errstr;
    redisFree(ctx_);
    ctx_ = nullptr;
    return Fail("{}: {}", endpoint(), why);
  }
  const std::string err = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  if (!err.empty()) return Fail("{}: PING: {}", endpoint(), err);
  return {};
}

Expected<RedisStore::Reply> RedisStore::Command(const std::vector<std::string>& argv) {
  auto r = Call(argv);
  if (!r) return r;
  if (r->type == REDIS_REPLY_ERROR) return Fail("{}: {}: {}", endpoint(), argv[0], r->str);
  return r;
}

Expected<RedisStore::Reply> RedisStore::Eval(Script& script, const std::vector<std::string>& keys,
                                             const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"EVALSHA", script.sha, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = Call(argv);
  if (r && r->type == REDIS_REPLY_ERROR && StartsWith(r->str, "NOSCRIPT")) {
    argv[0] = "EVAL";
    argv[1] = script.text;
    r = Call(argv);
  }
  if (!r) return r;
  if (r->type == REDIS_REPLY_ERROR) return Fail("{}: script: {}", endpoint(), r->str);
  return r;
}

Expected<void> RedisStore::PutInventory(const NodeInventory& inv) {
  if (auto ok = Validate(inv); !ok) return std::unexpected(ok.error());
  std::vector<std::string> args = {ToJson(inv), inv.node, options_.prefix};
  for (const auto& g : inv.gpus) {
    for (const auto& p : g.partitions) {
      args.push_back(p.uuid);
      args.push_back(std::to_string(p.memory_mib));
      args.push_back(g.lost ? "0" : "1");
    }
  }
  auto r = Eval(
      PutInventoryScript(),
      {Key("node:", inv.node, ":inventory"), Key("node:", inv.node, ":partitions"), Key("nodes")},
      args);
  if (!r) return std::unexpected(r.error());
  return {};
}

Expected<std::optional<NodeInventory>> RedisStore::GetInventory(std::string_view node) {
  const std::string key = Key("node:", node, ":inventory");
  auto r = Command({"GET", key});
  if (!r) return std::unexpected(r.error());
  if (r->type == REDIS_REPLY_NIL) return std::nullopt;
  auto inv = InventoryFromJson(r->str, key);
  if (!inv) return std::unexpected(inv.error());
  return *inv;
}

Expected<std::vector<std::string>> RedisStore::ListNodes() {
  auto r = Command({"SMEMBERS", Key("nodes")});
  if (!r) return std::unexpected(r.error());
  std::vector<std::string> out;
  for (const auto& e : r->elements) out.push_back(e.str);
  std::sort(out.begin(), out.end());
  return out;
}

Expected<void> RedisStore::Heartbeat(std::string_view node, double ttl_s) {
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto r = Command(
      {"SET", Key("node:", node, ":heartbeat"), std::to_string(now_ms), "PX", Milliseconds(ttl_s)});
  if (!r) return std::unexpected(r.error());
  return {};
}

Expected<bool> RedisStore::IsAlive(std::string_view node) {
  auto r = Command({"EXISTS", Key("node:", node, ":heartbeat")});
  if (!r) return std::unexpected(r.error());
  return r->integer == 1;
}

Expected<PutOutcome> RedisStore::PutPlacement(const PlacementRecord& p) {
  if (auto ok = Validate(p); !ok) return std::unexpected(ok.error());
  std::vector<std::string> keys = {Key("placement:", p.workload), Key("placements")};
  std::vector<std::string> args = {ToJson(p), p.workload};
  for (const auto& s : p.slices) {
    keys.push_back(Key("partition:", s.partition_uuid));
    args.push_back(s.partition_uuid);
    args.push_back(std::to_string(s.reserved_milli()));
    args.push_back(std::to_string(s.memory_mib));
  }
  auto r = Eval(PutPlacementScript(), keys, args);
  if (!r) return std::unexpected(r.error());
  if (r->type != REDIS_REPLY_ARRAY || r->elements.size() != 2) {
    return Fail("{}: unexpected reply to a placement write", endpoint());
  }
  if (r->elements[0].integer == 1) {
    return PutOutcome{.applied = true, .already = r->elements[1].integer == 1};
  }
  return PutOutcome{.refusal = r->elements[1].str};
}

Expected<bool> RedisStore::RemovePlacement(std::string_view workload) {
  const std::string key = Key("placement:", workload);
  // Read, then compare-and-delete; another writer in between makes us read again.
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto got = Command({"GET", key});
    if (!got) return std::unexpected(got.error());
    if (got->type == REDIS_REPLY_NIL) return false;
    auto p = PlacementFromJson(got->str, key);
    if (!p) return std::unexpected(p.error());
    std::vector<std::string> keys = {key, Key("placements")};
    std::vector<std::string> args = {got->str, std::string(workload)};
    for (const auto& s : p->slices) {
      keys.push_back(Key("partition:", s.partition_uuid));
      args.push_back(std::to_string(s.reserved_milli()));
      args.push_back(std::to_string(s.memory_mib));
    }
    auto r = Eval(RemovePlacementScript(), keys, args);
    if (!r) return std::unexpected(r.error());
    if (r->integer >= 0) return r->integer == 1;
  }
  return Fail("{}: placement {} keeps changing under removal", endpoint(), workload);
}

Expected<std::optional<PlacementRecord>> RedisStore::GetPlacement(std::string_view workload) {
  const std::string key = Key("placement:", workload);
  auto r = Command({"GET", key});
  if (!r) return std::unexpected(r.error());
  if (r->type == REDIS_REPLY_NIL) return std::nullopt;
  auto p = PlacementFromJson(r->str, key);
  if (!p) return std::unexpected(p.error());
  return *p;
}

Expected<std::vector<PlacementRecord>> RedisStore::ListPlacements() {
  auto ids = Command({"SMEMBERS", Key("placements")});
  if (!ids) return std::unexpected(ids.error());
  std::vector<std::string> names;
  for (const auto& e : ids->elements) names.push_back(e.str);
  std::sort(names.begin(), names.end());
  std::vector<PlacementRecord> out;
  constexpr size_t kChunk = 512;
  for (size_t i = 0; i < names.size(); i += kChunk) {
    std::vector<std::string> argv = {"MGET"};
    for (size_t j = i; j < std::min(names.size(), i + kChunk); ++j) {
      argv.push_back(Key("placement:", names[j]));
    }
    auto r = Command(argv);
    if (!r) return std::unexpected(r.error());
    for (size_t j = 0; j < r->elements.size(); ++j) {
      if (r->elements[j].type == REDIS_REPLY_NIL) continue;  // removed since SMEMBERS
      auto p = PlacementFromJson(r->elements[j].str, argv[j + 1]);
      if (!p) return std::unexpected(p.error());
      out.push_back(std::move(*p));
    }
  }
  return out;
}

Expected<std::optional<PartitionUsage>> RedisStore::GetPartition(std::string_view uuid) {
  auto r = Command({"HMGET", Key("partition:", uuid), "node", "memory_mib", "used_milli",
                    "used_memory_mib", "present"});
  if (!r) return std::unexpected(r.error());
  if (r->elements.size() != 5 || r->elements[4].type == REDIS_REPLY_NIL) return std::nullopt;
  PartitionUsage u;
  u.uuid = std::string(uuid);
  u.node = r->elements[0].str;
  try {
    u.memory_mib = std::stoll(r->elements[1].str);
    u.used_milli = std::stoi(r->elements[2].str);
    u.used_memory_mib = std::stoll(r->elements[3].str);
  } catch (const std::exception&) {
    return Fail("{}: partition {}: malformed accounting", endpoint(), uuid);
  }
  u.present = r->elements[4].str == "1";
  return u;
}

Expected<void> RedisStore::PutProfile(std::string_view name, std::string_view document) {
  auto r = Command({"SET", Key("profile:", name), std::string(document)});
  if (!r) return std::unexpected(r.error());
  return {};
}

Expected<std::optional<std::string>> RedisStore::GetProfile(std::string_view name) {
  auto r = Command({"GET", Key("profile:", name)});
  if (!r) return std::unexpected(r.error());
  if (r->type == REDIS_REPLY_NIL) return std::nullopt;
  return r->str;
}

Expected<bool> RedisStore::TryAcquireLease(std::string_view name, std::string_view holder,
                                           double ttl_s) {
  auto r =
      Eval(AcquireLeaseScript(), {Key("lease:", name)}, {std::string(holder), Milliseconds(ttl_s)});
  if (!r) return std::unexpected(r.error());
  return r->integer == 1;
}

Expected<bool> RedisStore::ReleaseLease(std::string_view name, std::string_view holder) {
  auto r = Eval(ReleaseLeaseScript(), {Key("lease:", name)}, {std::string(holder)});
  if (!r) return std::unexpected(r.error());
  return r->integer == 1;
}

Expected<std::optional<std::string>> RedisStore::LeaseHolder(std::string_view name) {
  auto r = Command({"GET", Key("lease:", name)});
  if (!r) return std::unexpected(r.error());
  if (r->type == REDIS_REPLY_NIL) return std::nullopt;
  return r->str;
}

}  // namespace tessera::store
