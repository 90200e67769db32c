#pragma once
// The Lua scripts RedisStore runs server-side, so each multi-key update is atomic. Every script
// checks everything before it writes anything: Redis does not roll back a script that fails
// half-way, so a refusal must be decided before the first write.

namespace tessera::store::lua {

// KEYS: inventory, node's partition set, nodes set.
// ARGV: json, node, prefix, then (uuid, memory_mib, present) per partition.
inline constexpr const char* kPutInventory = R"lua(
local prefix = ARGV[3]
local now = {}
for i = 4, #ARGV, 3 do now[ARGV[i]] = true end
for _, uuid in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if not now[uuid] then
    local k = prefix .. 'partition:' .. uuid
    local h = redis.call('HMGET', k, 'used_milli', 'used_memory_mib')
    if (tonumber(h[1]) or 0) == 0 and (tonumber(h[2]) or 0) == 0 then
      redis.call('DEL', k)
    else
      redis.call('HSET', k, 'present', '0')
    end
  end
end
redis.call('DEL', KEYS[2])
for i = 4, #ARGV, 3 do
  local k = prefix .. 'partition:' .. ARGV[i]
  redis.call('HSET', k, 'node', ARGV[2], 'memory_mib', ARGV[i + 1], 'present', ARGV[i + 2])
  redis.call('HSETNX', k, 'used_milli', '0')
  redis.call('HSETNX', k, 'used_memory_mib', '0')
  redis.call('SADD', KEYS[2], ARGV[i])
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
)lua";

// KEYS: placement, placements set, then one partition hash per slice.
// ARGV: json, workload, then (uuid, milli, memory_mib) per slice.
// Returns {1, 0} applied, {1, 1} already there identical, {0, reason} refused.
inline constexpr const char* kPutPlacement = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur then
  if cur == ARGV[1] then return {1, 1} end
  return {0, 'workload ' .. ARGV[2] .. ' already holds another placement'}
end
for i = 3, #KEYS do
  local a = 3 + (i - 3) * 3
  local uuid, milli, mem = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local h = redis.call('HMGET', KEYS[i], 'present', 'memory_mib', 'used_milli', 'used_memory_mib')
  if h[1] ~= '1' then return {0, 'partition ' .. uuid .. ' is unknown or not present'} end
  local cap, um, umem = tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  if um + milli > 1000 then
    return {0, 'partition ' .. uuid .. ': ' .. um .. ' + ' .. milli .. ' milli > 1000'}
  end
  if umem + mem > cap then
    return {0, 'partition ' .. uuid .. ': ' .. umem .. ' + ' .. mem .. ' MiB > ' .. cap .. ' MiB'}
  end
end
for i = 3, #KEYS do
  local a = 3 + (i - 3) * 3
  redis.call('HINCRBY', KEYS[i], 'used_milli', ARGV[a + 1])
  redis.call('HINCRBY', KEYS[i], 'used_memory_mib', ARGV[a + 2])
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
return {1, 0}
)lua";

// KEYS: placement, placements set, then one partition hash per slice.
// ARGV: the json the caller read, workload, then (milli, memory_mib) per slice.
// Returns 1 removed, 0 absent, -1 changed since the caller read it (read again).
inline constexpr const char* kRemovePlacement = R"lua(
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
for i = 3, #KEYS do
  local a = 3 + (i - 3) * 2
  if redis.call('EXISTS', KEYS[i]) == 1 then
    -- 0 - x, not -x: Lua's -0 reaches Redis as "-0", which HINCRBY refuses as no integer (a
    -- best-effort slice reserves 0 milli).
    local um = redis.call('HINCRBY', KEYS[i], 'used_milli', 0 - tonumber(ARGV[a]))
    local umem = redis.call('HINCRBY', KEYS[i], 'used_memory_mib', 0 - tonumber(ARGV[a + 1]))
    if redis.call('HGET', KEYS[i], 'present') == '0' and um == 0 and umem == 0 then
      redis.call('DEL', KEYS[i])
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 1
)lua";

// KEYS: lease. ARGV: holder, ttl ms. 1 when held by `holder` afterwards.
inline constexpr const char* kAcquireLease = R"lua(
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
)lua";

// KEYS: lease. ARGV: holder. 1 when released.
inline constexpr const char* kReleaseLease = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
)lua";

}  // namespace tessera::store::lua
