// The Lua scripts behind redis_queue: one script per transition of a request, each atomic, with
// its keys listed at the top (BullMQ's shape). Entries in our own form are "<16-digit id>|<request
// JSON>": in the sorted set, the id orders equal priorities first in, first out. Entries in
// scrapy-redis's form are its pickles, bare, in the same places its queues put them: a sorted
// set scored -priority, or a list pushed at its head (LPUSH) and popped at its tail (fifo,
// RPOP) or head (lifo, LPOP).
//
// Keys: the queue (sorted set scored -priority, or a list), <queue>:leased (hash lease id ->
// "<worker>|<score>|<entry>"), <queue>:deadlines (sorted set lease id -> deadline in ms, on
// Redis's clock), <queue>:seq (the counter behind entry and lease ids), <queue>:deliveries (hash
// entry id -> how many times the entry was taken and not settled), <queue>:dead (the dead
// letters: entries taken more than SCHEDULER_MAX_DELIVERIES times, never settled), <queue>:bad
// (what could not be used); both hold records as redis/set_aside.h writes them.
#pragma once

namespace crawler::detail {

// Shared by every script, and run first: the fleet's epoch, the server's clock, and putting a
// leased entry back in the queue where it is taken next.
//
// Every script is called with the epoch's key after its own keys and the epoch this worker read
// at open, the key types and the entries' form ('json': numbered, or 'pickle': bare) before its
// own arguments (redis_queue::run_script adds them; an epoch of '' checks nothing). A Redis
// that forgot the fleet's state (restarted without persistence, flushed, failed over to a replica
// that lagged) no longer holds that epoch: the script writes nothing and answers an error that
// starts with CRAWLER_EPOCH, and the worker stops rather than call an empty queue finished.
//
// Then the type each of its keys must have, one word per key ('-': not checked): each script
// calls check_types() before its first write. Redis does not undo a script's writes when a later
// command fails, so a key of the wrong type (another program's, or one an operator recreated
// mid-crawl) must stop the script before it writes anything, not halfway. The answer is an error
// that starts with CRAWLER_WRONGTYPE and names the key.
//
// wrong_type comes first: the scheduler's own scripts (fleet_scheduler.cpp) start with it too.
// Then mark(key, argument), the dupefilter's step (dedup::redis_marking::lua), which
// redis_queue::run_script writes in; then the prelude.
inline constexpr const char* redis_lua_wrong_type = R"lua(
local function wrong_type(key, want)
  local held = redis.call('TYPE', key).ok
  if held == 'none' or held == want then return nil end
  return redis.error_reply('CRAWLER_WRONGTYPE key ' .. key .. ' holds a ' .. held ..
                           ', where the fleet keeps a ' .. want)
end
)lua";
inline constexpr const char* redis_queue_prelude = R"lua(
local epoch_key = table.remove(KEYS)
local expected_epoch = table.remove(ARGV, 1)
local expected_types = table.remove(ARGV, 1)
local numbered = table.remove(ARGV, 1) == 'json'
if expected_epoch ~= '' then
  local current = redis.call('GET', epoch_key)
  if current ~= expected_epoch then
    return redis.error_reply('CRAWLER_EPOCH ' .. (current and ('is now ' .. current) or 'is gone'))
  end
end
local function check_types()
  local i = 0
  for want in string.gmatch(expected_types, '%S+') do
    i = i + 1
    local refused = want ~= '-' and wrong_type(KEYS[i], want)
    if refused then return refused end
  end
  return nil
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A lease record is "<worker>|<score>|<entry>"; anything else (another program wrote it) is nil,
-- never a Lua error: one bad record must not stop every script that passes it.
local function parse_lease(lease)
  local bar1 = string.find(lease, '|', 1, true)
  local bar2 = bar1 and string.find(lease, '|', bar1 + 1, true)
  if not bar2 or bar1 == 1 then return nil end
  local score = string.sub(lease, bar1 + 1, bar2 - 1)
  if not tonumber(score) then return nil end
  return string.sub(lease, 1, bar1 - 1), score, string.sub(lease, bar2 + 1)
end
-- What a worker cannot use goes aside in <queue>:bad, byte for byte, with where it was and why
-- (redis/set_aside.h).
local function set_aside(bad, key, value, reason)
  redis.call('RPUSH', bad, set_aside_record({key = key, reason = reason}, value))
end
-- The counter behind entry and lease ids, checked before a script writes anything: INCR on
-- anything but an integer would fail halfway through, after the dupefilter was marked. A bad
-- value is set aside and the counter restarts from Redis's clock in microseconds, above every id
-- a counter that started at 0 has given, so no id is given twice.
local function check_seq(seq, bad)
  local value = redis.call('GET', seq)
  if value and (not string.match(value, '^%d+$') or #value > 16) then
    set_aside(bad, seq, value, 'not a counter (a whole number): restarted from the clock')
    local t = redis.call('TIME')
    redis.call('SET', seq, t[1] .. string.format('%06d', tonumber(t[2])))
    return 1
  end
  return 0
end
-- Marks `argument` in the dupefilter (unless dont_filter, or `filtering` is '') with the
-- dupefilter's own mark(), and queues `body` when it was new.
local function queue_new(queue, order, seq, filtering, filter, body, priority, dont_filter,
                         argument)
  local new = true
  if dont_filter ~= '1' and filtering ~= '' then new = mark(filter, argument) end
  if new then
    local entry = body
    if numbered then entry = string.format('%016d', redis.call('INCR', seq)) .. '|' .. body end
    if order == 'priority' then
      redis.call('ZADD', queue, -tonumber(priority), entry)
    else
      redis.call('LPUSH', queue, entry)
    end
  end
  return new
end
-- The field of an entry in <queue>:deliveries: its id (the digits before its '|'), or the SHA-1
-- of an entry some other program wrote without one.
local function delivery_id(entry)
  return string.match(entry, '^(%d+)|') or redis.sha1hex(entry)
end
-- Where it is taken next: the end of the list that takes pop from.
local function put_back(queue, order, score, entry)
  if order == 'priority' then
    redis.call('ZADD', queue, score, entry)
  elseif order == 'fifo' then
    redis.call('RPUSH', queue, entry)
  else
    redis.call('LPUSH', queue, entry)
  end
end
)lua";

// take: KEYS queue, leased, deadlines, seq, bad, deliveries, dead; ARGV order, worker, count,
// lease_ms, max_entry, max_deliveries. Leases past their deadline go back to the queue first
// (their worker stopped renewing), then up to `count` entries move from the queue to the worker's
// leases, each under a new lease id (not the entry's own, which a poisoned entry could forge). A
// lease record that is not one and an entry over max_entry bytes (SCHEDULER_MAX_ENTRY_SIZE) go
// to `bad` instead, never to a worker. Each take of an entry is counted in `deliveries` until it
// is settled; one taken max_deliveries times already (SCHEDULER_MAX_DELIVERIES; 0: no limit) is a
// page that every worker taking it dies on: it goes to `dead`, with its score, not to a worker.
// Returns {reclaimed, set aside, dead, entries left in the queue, id, score, entry, ...}.
inline constexpr const char* redis_queue_take = R"lua(
local queue, leased, deadlines, seq, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local deliveries, dead = KEYS[6], KEYS[7]
local order, worker, count, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local max_entry, max_deliveries = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()
-- The workers of an idle fleet poll here every two seconds: finding nothing to do, it writes
-- nothing and checks nothing more. A read that fails is named by check_types().
local waiting = redis.pcall(order == 'priority' and 'ZCARD' or 'LLEN', queue)
local expired = redis.pcall('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, 1000)
if type(waiting) ~= 'number' or expired.err then
  return check_types() or (type(waiting) == 'table' and waiting or expired)
end
if waiting == 0 and #expired == 0 then return {0, 0, 0, 0} end
local refused = check_types()
if refused then return refused end
local bads = check_seq(seq, bad)
for _, id in ipairs(expired) do
  local lease = redis.call('HGET', leased, id)
  if lease then
    local owner, score, entry = parse_lease(lease)
    if owner then
      put_back(queue, order, score, entry)
    else
      set_aside(bad, leased, lease, 'lease ' .. id .. ' is not "<worker>|<score>|<entry>"')
      bads = bads + 1
    end
    redis.call('HDEL', leased, id)
  end
  redis.call('ZREM', deadlines, id)
end
local taken = {}
if order == 'priority' then
  local popped = redis.call('ZPOPMIN', queue, count)
  for i = 1, #popped, 2 do taken[#taken + 1] = {popped[i], popped[i + 1]} end
else
  local popped
  if order == 'fifo' then popped = redis.call('RPOP', queue, count)
  else popped = redis.call('LPOP', queue, count) end
  if popped then
    for _, entry in ipairs(popped) do taken[#taken + 1] = {entry, '0'} end
  end
end
local out = {#expired, 0, 0, 0}
for _, item in ipairs(taken) do
  local entry, score = item[1], item[2]
  local delivered = 0
  if #entry > max_entry then
    set_aside(bad, queue, entry, 'an entry of ' .. #entry ..
              ' bytes, over SCHEDULER_MAX_ENTRY_SIZE (' .. max_entry .. ')')
    bads = bads + 1
  else
    local id = delivery_id(entry)
    -- pcall: a count another program overwrote with text fails HINCRBY without writing.
    delivered = redis.pcall('HINCRBY', deliveries, id, 1)
    if type(delivered) ~= 'number' then
      set_aside(bad, deliveries, redis.call('HGET', deliveries, id),
                'the delivery count of entry ' .. id .. ' is not a whole number: restarted')
      bads = bads + 1
      redis.call('HSET', deliveries, id, 1)
      delivered = 1
    end
    if max_deliveries > 0 and delivered > max_deliveries then
      redis.call('RPUSH', dead, set_aside_record({key = queue, score = score,
        deliveries = delivered - 1, reason = 'taken ' .. (delivered - 1) ..
        ' times by workers that stopped before settling it (SCHEDULER_MAX_DELIVERIES)'}, entry))
      redis.call('HDEL', deliveries, id)
      out[3] = out[3] + 1
      delivered = 0
    end
  end
  if delivered > 0 then
    -- %d: Lua's own number-to-string is %.14g, which past 10^14 gives two leases one id.
    local id = 'L' .. string.format('%d', redis.call('INCR', seq))
    redis.call('HSET', leased, id, worker .. '|' .. score .. '|' .. entry)
    redis.call('ZADD', deadlines, now + lease_ms, id)
    out[#out + 1] = id
    out[#out + 1] = score
    out[#out + 1] = entry
  end
end
out[2] = bads
if order == 'priority' then out[4] = redis.call('ZCARD', queue)
else out[4] = redis.call('LLEN', queue) end
return out
)lua";

// renew: KEYS leased, deadlines; ARGV worker, lease_ms, id... Moves the deadline of each lease
// the worker still holds. Returns the ids it no longer holds (expired and taken back while the
// worker stalled, or settled meanwhile).
inline constexpr const char* redis_queue_renew = R"lua(
local leased, deadlines = KEYS[1], KEYS[2]
local worker, lease_ms = ARGV[1], tonumber(ARGV[2])
local refused = check_types()
if refused then return refused end
local deadline = now_ms() + lease_ms
local lost = {}
for i = 3, #ARGV do
  local lease = redis.call('HGET', leased, ARGV[i])
  if lease and parse_lease(lease) == worker then
    redis.call('ZADD', deadlines, deadline, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
)lua";

// release: KEYS queue, leased, deadlines, deliveries; ARGV order, worker, id... Puts the worker's
// leased entries back in the queue, not crawled (a stop), and takes back their delivery: a
// worker stopped with Ctrl-C did not die on them. Returns how many.
inline constexpr const char* redis_queue_release = R"lua(
local queue, leased, deadlines, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, worker = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
local released = 0
for i = 3, #ARGV do
  local lease = redis.call('HGET', leased, ARGV[i])
  if lease then
    local owner, score, entry = parse_lease(lease)
    if owner == worker then
      put_back(queue, order, score, entry)
      redis.call('HDEL', leased, ARGV[i])
      redis.call('ZREM', deadlines, ARGV[i])
      local id = delivery_id(entry)
      local left = redis.pcall('HINCRBY', deliveries, id, -1)
      if type(left) ~= 'number' or left <= 0 then redis.call('HDEL', deliveries, id) end
      released = released + 1
    end
  end
end
return released
)lua";

// settle: KEYS queue, leased, deadlines, seq, dupefilter, items, bad, deliveries;
// ARGV order, worker, lease id ('' for none), filtering ('1', or '' for no dupefilter), child
// count, then per child: request JSON, priority, dont_filter ('1' or '0'), marking argument; then
// the items.
// In one step: each child is marked seen and queued unless the dupefilter has seen it, the items
// are appended, and the parent's lease is settled. So no URL is ever seen without being queued,
// leased or crawled. A lease the worker no longer holds (it expired and went back to the queue,
// or this same outcome was stored by an earlier try whose answer was lost) stores nothing: the
// request's outcome is stored once, by whoever holds its lease, so no item is written twice.
// Returns {queued, duplicates, settled (1, or 0 when the lease was not held), one '1'
// (duplicate) or '0' (queued) per child, or '' when nothing was stored}.
inline constexpr const char* redis_queue_settle = R"lua(
local queue, leased, deadlines, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local filter, items = KEYS[5], KEYS[6]
local order, worker, lease_id, filtering = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local children = tonumber(ARGV[5])
local settled = 0
local refused = check_types()
if refused then return refused end
check_seq(seq, KEYS[7])
if lease_id ~= '' then
  local lease = redis.call('HGET', leased, lease_id)
  local owner, _, entry = parse_lease(lease or '')
  if owner ~= worker then return {0, 0, 0, ''} end
  redis.call('HDEL', KEYS[8], delivery_id(entry))
  redis.call('HDEL', leased, lease_id)
  redis.call('ZREM', deadlines, lease_id)
  settled = 1
end
local queued, duplicates = 0, 0
local flags = {}
local at = 6
for _ = 1, children do
  if queue_new(queue, order, seq, filtering, filter, ARGV[at], ARGV[at + 1], ARGV[at + 2],
               ARGV[at + 3]) then
    queued = queued + 1
    flags[#flags + 1] = '0'
  else
    duplicates = duplicates + 1
    flags[#flags + 1] = '1'
  end
  at = at + 4
end
for i = at, #ARGV do redis.call('RPUSH', items, ARGV[i]) end
return {queued, duplicates, settled, table.concat(flags)}
)lua";

// feed: KEYS start_urls, queue, seq, dupefilter, bad, the queue's bad; ARGV order, the start
// key's type ('list', 'set' or 'zset'), filtering ('1' or ''), then per start URL: the entry as stored, request JSON ('' when
// it does not decode), priority, dont_filter, marking argument, reason it is bad. Each entry still
// in the
// start key is removed from it and, in the same step, queued through the dupefilter (or moved to
// `bad`): a worker that read it but died before this step leaves it for the others; two workers
// never queue it twice. Returns {queued, duplicates, bad}.
inline constexpr const char* redis_queue_feed = R"lua(
local start, queue, seq, filter, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order, start_type, filtering = ARGV[1], ARGV[2], ARGV[3]
local queued, duplicates, bads = 0, 0, 0
local refused = check_types()
if refused then return refused end
check_seq(seq, KEYS[6])
for at = 4, #ARGV, 6 do
  local raw, body = ARGV[at], ARGV[at + 1]
  local removed
  if start_type == 'set' then removed = redis.call('SREM', start, raw)
  elseif start_type == 'zset' then removed = redis.call('ZREM', start, raw)
  else removed = redis.call('LREM', start, 1, raw) end
  if removed == 1 then
    if body == '' then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = ARGV[at + 5]}, raw))
      bads = bads + 1
    elseif queue_new(queue, order, seq, filtering, filter, body, ARGV[at + 2], ARGV[at + 3],
                     ARGV[at + 4]) then
      queued = queued + 1
    else
      duplicates = duplicates + 1
    end
  end
end
return {queued, duplicates, bads}
)lua";

// requeue: KEYS queue, from (<queue>:dead or :bad), deliveries, start URLs; ARGV order, the
// start key's type ('list', 'set' or 'zset'), then per record: the record as stored, where its value goes
// ('queue' or 'start'), the value, its score. Each record still in `from` is removed and its value
// put back byte for byte, an entry's delivery count started again (`crawler requeue`). Returns
// how many.
inline constexpr const char* redis_queue_requeue = R"lua(
local queue, from, deliveries, start = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, start_type = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
local requeued = 0
for at = 3, #ARGV, 4 do
  local record, destination, value, score = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  if tonumber(score) and redis.call('LREM', from, 1, record) == 1 then
    if destination == 'start' then
      if start_type == 'set' then redis.call('SADD', start, value)
      elseif start_type == 'zset' then redis.call('ZADD', start, score, value)
      else redis.call('RPUSH', start, value) end
    else
      put_back(queue, order, score, value)
      redis.call('HDEL', deliveries, delivery_id(value))
    end
    requeued = requeued + 1
  end
end
return requeued
)lua";

}  // namespace crawler::detail
