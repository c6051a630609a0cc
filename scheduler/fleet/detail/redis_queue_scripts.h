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
// entry id -> how many times the entry was taken and not settled), <queue>:settled (a signed
// fleet's: which entries were settled, by number; settle_once), <queue>:dead (the dead
// letters: entries taken more than SCHEDULER_MAX_DELIVERIES times, never settled), <queue>:bad
// (what could not be used); both hold records as redis/set_aside.h writes them.
//
// SCHEDULER_QUEUE_CLASS "host" queues per host instead (the host frontier): <queue>:host:<host>
// (a sorted set of that host's entries, scored -priority), <queue>:hosts (host -> the time on
// Redis's clock when it may next be fetched, for every host with entries, and, until that time,
// for one that just ran out), <queue>:busy (the same for hosts at their fleet-wide concurrency
// limit, which takes pass over), <queue>:inflight (host -> its leased entries), <queue>:delays
// (host -> its delay in ms where a worker found one other than DOWNLOAD_DELAY: a robots.txt
// Crawl-delay, AutoThrottle) and <queue>:count (the entries queued in all; it exists exactly
// while some are). Its leases are "<worker>|<score>@<host>|<entry>". With
// CONCURRENT_REQUESTS_PER_IP, hosts of one server share its limit and its delay:
// <queue>:addresses (host -> the address workers reported for it), and <queue>:inflight and
// <queue>:address_due (address -> the time it may next be fetched) count by address for those
// hosts; <queue>:parked ("<address>|<host>", all scored 0) lists the hosts in :busy by the slot
// whose limit put them there, so that the end of any lease of the address wakes them all.
#pragma once

namespace crawler::detail {

// Shared by every script, and run first: the fleet's epoch, the server's clock, and putting a
// leased entry back in the queue where it is taken next.
//
// Every script is called with the epoch's key after its own keys and the epoch this worker read
// at open, the key types and the entries' form ('json': numbered here, 'signed': numbered and
// signed by their writer, or 'pickle': bare) before its own arguments (redis_queue::run_script
// adds them; an epoch of '' checks nothing). A Redis
// that forgot the fleet's state (restarted without persistence, flushed, failed over to a replica
// that lagged) no longer holds that epoch: the script writes nothing and answers an error that
// starts with CRAWLER_EPOCH, and the worker stops rather than call an empty queue finished.
//
// Then the type each of its keys must have, one word per key ('-': not checked): each script
// calls check_types() before its first write. Redis does not undo a script's writes when a later
// command fails, so a key of the wrong type (another program's, or one an operator recreated
// mid-crawl) must stop the script before it writes anything, not halfway. The answer is an error
// that starts with CRAWLER_WRONGTYPE and names the key. Settle, which runs for every page, checks
// only the keys that its pages write (check_types(skipped)): a TYPE costs as much as the write
// it guards, and a key a call leaves alone cannot fail it halfway; the next call that writes the
// key names it.
//
// wrong_type comes first: the scheduler's own scripts (fleet_scheduler.cpp) start with it too.
// Then mark(key, argument), the dupefilter's step (dedup::redis_marking::lua), which
// redis_queue::run_script writes in; then the prelude.
inline constexpr const char* redis_lua_wrong_type = R"lua(
local function wrong_type(key, want)
  local held = redis.call('TYPE', key).ok
  if held == 'none' or held == want then return nil end
  return redis.error_reply('CRAWLER_WRONGTYPE key ' .. key .. ' holds a ' .. held ..
                           ', where the fleet keeps ' .. (want == 'none' and 'nothing' or
                                                          'a ' .. want))
end
)lua";
// remove_start_url(start, start_type, raw): removes one start URL from the start key, a list,
// set or sorted set as start_type says ('list', 'set', 'zset'); 1 when it was there. Every queue
// script has it (redis_queue::run_script), and sharded_queue's feed too.
inline constexpr const char* redis_lua_remove_start_url = R"lua(
local function remove_start_url(start, start_type, raw)
  if start_type == 'set' then return redis.call('SREM', start, raw) end
  if start_type == 'zset' then return redis.call('ZREM', start, raw) end
  return redis.call('LREM', start, 1, raw)
end
)lua";

// settled: what a signed fleet records of the numbered entries that ran (settle_once), in a hash
// such as <queue>:settled, and of the signed start URLs that were read, in <start key>:settled.
// Every queue script has it (redis_queue::run_script), and sharded_queue's feed too.
inline constexpr const char* redis_lua_settled = R"lua(
-- A signed fleet runs each entry once: <queue>:settled records the numbers of the entries
-- settled, a bit each (a hash: the field is a number's first 13 digits, the value a 125-byte
-- bitmap of the 1,000 numbers under it), and under 'from' the number the crawl's counter started
-- at (redis_queue_reserve). An entry settled before, or numbered before the crawl began, is a copy
-- that someone who can write Redis put back: it runs no more. Numbers are 16 digits, compared as
-- text: Lua's numbers are exact to 2^53 only.
local function settled_bit(entry)
  local id = string.match(entry, '^(%d+)|')
  if not id or #id ~= 16 then return nil end
  return id, string.sub(id, 1, 13), tonumber(string.sub(id, 14))
end
local function settled_bits(settled, chunk)
  local bits = redis.call('HGET', settled, chunk)
  if bits and #bits == 125 then return bits end
  return string.rep('\0', 125)
end
-- 'from', read once a script (false: none).
local settled_from = {}
local function from_of(settled)
  if settled_from[settled] == nil then
    local from = redis.call('HGET', settled, 'from')
    settled_from[settled] = (from and #from == 16) and from or false
  end
  return settled_from[settled]
end
-- Whether `entry` ran already, and the bitmap of its thousand (nil when it has no number).
local function ran_already(settled, entry)
  local id, chunk, n = settled_bit(entry)
  if not id then return false end
  local from = from_of(settled)
  if from and id < from then return true end
  local bits = settled_bits(settled, chunk)
  return bit.band(string.byte(bits, math.floor(n / 8) + 1), bit.lshift(1, n % 8)) ~= 0, bits
end
-- Records `entry` as settled; false, recording nothing, when it ran already.
local function settle_once(settled, entry)
  local ran, bits = ran_already(settled, entry)
  if ran then return false end
  if not bits then return true end
  local _, chunk, n = settled_bit(entry)
  local at = math.floor(n / 8) + 1
  local byte = bit.bor(string.byte(bits, at), bit.lshift(1, n % 8))
  redis.call('HSET', settled, chunk,
             string.sub(bits, 1, at - 1) .. string.char(byte) .. string.sub(bits, at + 1))
  return true
end
)lua";

inline constexpr const char* redis_queue_prelude = R"lua(
local epoch_key = table.remove(KEYS)
local expected_epoch = table.remove(ARGV, 1)
local expected_types = table.remove(ARGV, 1)
local form = table.remove(ARGV, 1)
local numbered = form == 'json'
-- A signed fleet's entries come numbered by their writer, who signs the number with the entry.
local signed = form == 'signed'
-- The host frontier's keys follow the script's own (see the top of this file), and its
-- per-host sorted sets start with host_prefix; '' for the other orders.
local host_prefix = table.remove(ARGV, 1)
-- '1' when the host frontier's limit and delay hold per server address for the hosts whose
-- address a worker reported (CONCURRENT_REQUESTS_PER_IP); otherwise no script asks for one.
local by_address = table.remove(ARGV, 1) == '1'
local host_keys = {}
if host_prefix ~= '' then
  local n = #KEYS
  host_keys = {hosts = KEYS[n - 7], busy = KEYS[n - 6], inflight = KEYS[n - 5],
               delays = KEYS[n - 4], addresses = KEYS[n - 3], address_due = KEYS[n - 2],
               parked = KEYS[n - 1], count = KEYS[n]}
end
if expected_epoch ~= '' then
  local current = redis.call('GET', epoch_key)
  if current ~= expected_epoch then
    return redis.error_reply('CRAWLER_EPOCH ' .. (current and ('is now ' .. current) or 'is gone'))
  end
end
-- skipped: the indexes in KEYS of keys this call does not write (nil: none).
local function check_types(skipped)
  local i = 0
  for want in string.gmatch(expected_types, '%S+') do
    i = i + 1
    local refused = want ~= '-' and not (skipped and skipped[i]) and wrong_type(KEYS[i], want)
    if refused then return refused end
  end
  return nil
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A lease record is "<worker>|<score>|<entry>", or "<worker>|<score>@<host>|<entry>" in the
-- host frontier; anything else (another program wrote it) is nil, never a Lua error: one bad
-- record must not stop every script that passes it. Returns the worker, score, entry and host.
local function parse_lease(lease)
  local bar1 = string.find(lease, '|', 1, true)
  local bar2 = bar1 and string.find(lease, '|', bar1 + 1, true)
  if not bar2 or bar1 == 1 then return nil end
  local score = string.sub(lease, bar1 + 1, bar2 - 1)
  local host = ''
  local at = string.find(score, '@', 1, true)
  if at then
    host = string.sub(score, at + 1)
    score = string.sub(score, 1, at - 1)
  end
  if not tonumber(score) then return nil end
  return string.sub(lease, 1, bar1 - 1), score, string.sub(lease, bar2 + 1), host
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
-- The entries leased now, by number: field 'r<number>' of <queue>:settled holds the lease, so
-- that a copy taken while its entry runs is told from the entry taken again after its worker
-- stopped. A field whose lease is gone (not cleared by whoever removed it) holds nothing.
local function running_field(entry)
  local id = string.match(entry, '^(%d+)|')
  return id and ('r' .. id) or nil
end
local function forget_running(settled, entry, lease_id)
  if not signed then return end
  local field = running_field(entry)
  if field and redis.call('HGET', settled, field) == lease_id then
    redis.call('HDEL', settled, field)
  end
end
-- The host frontier's count of queued entries, checked before a script writes anything, as
-- check_seq checks the counter: one that is not a whole number is set aside and counted again.
local function check_count(bad)
  if host_prefix == '' then return 0 end
  local value = redis.call('GET', host_keys.count)
  if not value or string.match(value, '^%d+$') then return 0 end
  set_aside(bad, host_keys.count, value, 'not a count (a whole number): counted again')
  local total = 0
  for _, key in ipairs({host_keys.hosts, host_keys.busy}) do
    for _, host in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      local size = redis.pcall('ZCARD', host_prefix .. host)
      if type(size) == 'number' then total = total + size end
    end
  end
  redis.call('SET', host_keys.count, total)
  return 1
end
-- A page's links mostly share its host: each host is looked up once per script, and the count
-- goes up once, by count_added(), which every script that adds calls before it returns.
local listed_here = {}
local added_here = 0
-- Queues `entry` in its host's sorted set, and lists the host (due now) unless it is listed
-- already: a host that ran out keeps its time until then, so its delay holds across the gap.
-- False, writing nothing, when that key holds something else (another program's).
local function add_to_host(host, score, entry)
  local added = redis.pcall('ZADD', host_prefix .. host, score, entry)
  if type(added) ~= 'number' then return false end
  added_here = added_here + 1
  if not listed_here[host] then
    listed_here[host] = true
    if not redis.call('ZSCORE', host_keys.hosts, host) and
       not redis.call('ZSCORE', host_keys.busy, host) then
      redis.call('ZADD', host_keys.hosts, now_ms(), host)
    end
  end
  return true
end
local function count_added()
  if added_here > 0 then redis.call('INCRBY', host_keys.count, added_here) end
  added_here = 0
end
local function host_refused(queue, host, entry)
  redis.call('RPUSH', queue .. ':bad', set_aside_record({key = queue, host = host,
    reason = 'the key ' .. host_prefix .. host .. ' holds a ' ..
             redis.call('TYPE', host_prefix .. host).ok .. ', not the host\'s queue'}, entry))
end
-- The slot a host's fetches count in (CONCURRENT_REQUESTS_PER_IP): its server's address once a
-- worker reported one with a settle, else the host's own name; and whether it was reported.
local function slot_of(host)
  local address = redis.call('HGET', host_keys.addresses, host)
  if address then return address, true end
  return host, false
end
-- A host at its limit waits in :busy; due again, at its time.
local function wake(host)
  local due = redis.call('ZSCORE', host_keys.busy, host)
  if due then
    redis.call('ZREM', host_keys.busy, host)
    redis.call('ZADD', host_keys.hosts, due, host)
  end
end
-- A leased entry of `host` is done with (settled, released, or its lease expired): one fewer in
-- flight in its slot, so a host that was at its limit is due again at its time, and so are the
-- hosts parked because their address was (:parked holds "<address>|<host>"; a take parks them
-- again if it still is).
local function host_done(host)
  local slot = by_address and slot_of(host) or host
  local left = redis.pcall('HINCRBY', host_keys.inflight, slot, -1)
  if type(left) ~= 'number' or left <= 0 then redis.call('HDEL', host_keys.inflight, slot) end
  wake(host)
  if not by_address then return end
  local low, high = '[' .. slot .. '|', '[' .. slot .. '|\255'
  local parked = redis.call('ZRANGEBYLEX', host_keys.parked, low, high)
  if #parked == 0 then return end
  for _, member in ipairs(parked) do wake(string.sub(member, #slot + 2)) end
  redis.call('ZREMRANGEBYLEX', host_keys.parked, low, high)
end
-- The server address a worker's download found for `host` ('' : none reported). The first time,
-- the host's leases under way move from its name's count to the address's, where their ends
-- will be counted.
local function set_address(host, address)
  if not by_address or address == '' or host == '' then return end
  local known = redis.call('HGET', host_keys.addresses, host)
  if known == address then return end
  redis.call('HSET', host_keys.addresses, host, address)
  if known then return end
  local own = tonumber(redis.call('HGET', host_keys.inflight, host))
  if own then
    redis.call('HDEL', host_keys.inflight, host)
    if own > 0 then redis.call('HINCRBY', host_keys.inflight, address, own) end
  end
end
-- What a worker's download of `host` said of its pace: the delay its downloader keeps for it
-- ('': DOWNLOAD_DELAY's), and how long the host asked to be left alone (a 429 or 503 with
-- Retry-After; '' or 0: not at all), which puts its time off for the whole fleet.
local function set_pace(host, delay_ms, hold_ms)
  if delay_ms == '' then redis.call('HDEL', host_keys.delays, host)
  elseif tonumber(delay_ms) then redis.call('HSET', host_keys.delays, host, delay_ms) end
  local hold = tonumber(hold_ms) or 0
  if hold <= 0 then return end
  local until_ms = now_ms() + math.floor(hold)
  for _, key in ipairs({host_keys.hosts, host_keys.busy}) do
    local due = redis.call('ZSCORE', key, host)
    if due then
      if tonumber(due) < until_ms then redis.call('ZADD', key, until_ms, host) end
      return
    end
  end
  redis.call('ZADD', host_keys.hosts, until_ms, host)
end
-- Marks `argument` in the dupefilter (unless dont_filter, or `filtering` is '') with the
-- dupefilter's own mark(), and queues `body` when it was new.
local function queue_new(queue, order, seq, filtering, filter, body, priority, dont_filter,
                         argument, host)
  local new = true
  if dont_filter ~= '1' and filtering ~= '' then new = mark(filter, argument) end
  if new then
    local entry = body
    if numbered then entry = string.format('%016d', redis.call('INCR', seq)) .. '|' .. body end
    if order == 'priority' then
      redis.call('ZADD', queue, -tonumber(priority), entry)
    elseif order == 'host' then
      if not add_to_host(host, -tonumber(priority), entry) then host_refused(queue, host, entry) end
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
local function put_back(queue, order, score, entry, host)
  if order == 'priority' then
    redis.call('ZADD', queue, score, entry)
  elseif order == 'host' then
    if not add_to_host(host, score, entry) then host_refused(queue, host, entry) end
  elseif order == 'fifo' then
    redis.call('RPUSH', queue, entry)
  else
    redis.call('LPUSH', queue, entry)
  end
end
)lua";

// take: KEYS queue, leased, deadlines, seq, bad, deliveries, dead, settled; ARGV order, worker,
// count, lease_ms, max_entry, max_deliveries. Leases past their deadline go back to the queue first
// (their worker stopped renewing), then up to `count` entries move from the queue to the worker's
// leases, each under a new lease id (not the entry's own, which a poisoned entry could forge). A
// lease record that is not one and an entry over max_entry bytes (SCHEDULER_MAX_ENTRY_SIZE) go to
// `bad` instead, never to a worker. Each take of an entry is counted in `deliveries` until it is
// settled; one taken max_deliveries times already (SCHEDULER_MAX_DELIVERIES; 0: no limit) is a page
// that every worker taking it dies on: it goes to `dead`, with its score, not to a worker. The host
// frontier (order 'host'; ARGV then also limit, delay_ms, seed; with by_address, the prelude's, the
// limit and the delay hold per server address for the hosts whose address is known) takes from the
// hosts that are due, longest due first: one entry per host when its delay (<queue>:delays, else
// delay_ms) is not 0, else as many as its fleet-wide limit (CONCURRENT_REQUESTS_PER_DOMAIN; 0:
// none) leaves; each take puts the host's time off by its delay, times 0.5 to 1.5 drawn from `seed`
// (RANDOMIZE_DOWNLOAD_DELAY; '': times 1), and a host that reaches its limit waits in <queue>:busy
// until one of its leases ends (of its address's, for a host parked by address). Its scores come
// back as "<score>@<host>".
// Returns {reclaimed, set aside, dead, entries left in the queue, ms until the next host is due
// (-1: the other orders, or none), a letter for each leased entry: in a signed fleet '1' when it
// ran already (ran_already), '2' when another lease holds its number now (a copy taken while its
// entry runs), else '0' (the worker sets copies aside once it has checked their signature, so that
// a forged entry is called forged), then id, score, entry, ...}.
inline constexpr const char* redis_queue_take = R"lua(
local queue, leased, deadlines, seq, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local deliveries, dead, settled = KEYS[6], KEYS[7], KEYS[8]
local order, worker, count, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local max_entry, max_deliveries = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()
-- The workers of an idle fleet poll here every two seconds: finding nothing to do, it writes
-- nothing and checks nothing more. A read that fails is named by check_types().
local waiting
if order == 'host' then waiting = redis.pcall('ZCOUNT', host_keys.hosts, '-inf', now)
else waiting = redis.pcall(order == 'priority' and 'ZCARD' or 'LLEN', queue) end
local expired = redis.pcall('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, 1000)
if type(waiting) ~= 'number' or expired.err then
  return check_types() or (type(waiting) == 'table' and waiting or expired)
end
-- The host frontier: in how many ms the next host is due (-1: none waits for its time).
local function next_due_in()
  if order ~= 'host' then return -1 end
  local first = redis.pcall('ZRANGE', host_keys.hosts, 0, 0, 'WITHSCORES')
  if first.err or #first == 0 then return -1 end
  return math.max(0, tonumber(first[2]) - now)
end
if waiting == 0 and #expired == 0 then
  local queued = order == 'host' and tonumber(redis.pcall('GET', host_keys.count)) or 0
  return {0, 0, 0, queued or 0, next_due_in(), ''}
end
local refused = check_types()
if refused then return refused end
local bads = check_seq(seq, bad) + check_count(bad)
for _, id in ipairs(expired) do
  local lease = redis.call('HGET', leased, id)
  if lease then
    local owner, score, entry, host = parse_lease(lease)
    if owner then
      put_back(queue, order, score, entry, host)
      forget_running(settled, entry, id)
      if order == 'host' then host_done(host) end
    else
      set_aside(bad, leased, lease, 'lease ' .. id .. ' is not "<worker>|<score>|<entry>"')
      bads = bads + 1
    end
    redis.call('HDEL', leased, id)
  end
  redis.call('ZREM', deadlines, id)
end
count_added()  -- before the takes below count down
local taken = {}
if order == 'host' then
  local limit, base_delay, seed = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
  if seed ~= '' then math.randomseed(tonumber(seed)) end
  local due = redis.call('ZRANGEBYSCORE', host_keys.hosts, '-inf', now, 'LIMIT', 0, count)
  for _, host in ipairs(due) do
    if #taken >= count then break end
    local slot, grouped = host, false
    if by_address then slot, grouped = slot_of(host) end
    local running = tonumber(redis.call('HGET', host_keys.inflight, slot)) or 0
    local delay = tonumber(redis.call('HGET', host_keys.delays, host)) or base_delay
    local room = count - #taken
    if limit > 0 then room = math.min(room, limit - running) end
    if delay > 0 then room = math.min(room, 1) end
    -- Another host of its address was fetched less than a delay ago: its turn is the address's.
    local address_due = grouped and tonumber(redis.call('HGET', host_keys.address_due, slot))
    local put_off = address_due and address_due > now
    if put_off then
      room = 0
      redis.call('ZADD', host_keys.hosts, address_due, host)
    end
    local popped = {}
    if room > 0 then
      popped = redis.pcall('ZPOPMIN', host_prefix .. host, room)
      -- Another program's key under the host's name: the host is dropped, the key left alone.
      if popped.err then popped = {} end
    end
    local n = #popped / 2
    for i = 1, #popped, 2 do taken[#taken + 1] = {popped[i], popped[i + 1], host} end
    if put_off then
      -- Until its address is due, above.
    elseif room > 0 and n == 0 then
      -- Ran out, and its time has come: nothing more to remember.
      redis.call('ZREM', host_keys.hosts, host)
    else
      local next_due = redis.call('ZSCORE', host_keys.hosts, host)
      if n > 0 then
        running = running + n
        redis.call('HSET', host_keys.inflight, slot, running)
        -- Gone at 0, so that it exists exactly while entries are queued, as the other orders'
        -- queue does.
        if redis.call('DECRBY', host_keys.count, n) <= 0 then redis.call('DEL', host_keys.count) end
        local wait = delay
        if seed ~= '' then wait = delay * (0.5 + math.random()) end
        next_due = now + math.floor(wait)
        if grouped and delay > 0 then
          redis.call('HSET', host_keys.address_due, slot, next_due)
        end
      end
      if limit > 0 and running >= limit then
        redis.call('ZREM', host_keys.hosts, host)
        redis.call('ZADD', host_keys.busy, next_due, host)
        -- Woken by the end of any lease of its address, not only of its own (it may hold none).
        if by_address then redis.call('ZADD', host_keys.parked, 0, slot .. '|' .. host) end
      else
        redis.call('ZADD', host_keys.hosts, next_due, host)
      end
    end
  end
elseif order == 'priority' then
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
local out = {#expired, 0, 0, 0, 0, ''}
-- The entries' delivery counts are read in one command and written in one, and their leases in
-- one each: a take of CONCURRENT_REQUESTS entries is a handful of commands, not four per entry.
-- An entry taken twice in one take (equal entries of a list) counts twice, as it would one by one.
local ids, counted = {}, {}
for i, item in ipairs(taken) do
  if #item[1] <= max_entry then
    ids[i] = delivery_id(item[1])
    counted[#counted + 1] = ids[i]
  end
end
local held = {}
for first = 1, #counted, 1000 do
  local part = redis.call('HMGET', deliveries, unpack(counted, first, math.min(first + 999,
                                                                             #counted)))
  for _, value in ipairs(part) do held[#held + 1] = value end
end
local deliveries_of = {}  -- id -> its count, this take's included; false: gone to the dead letters
local delivered = {}      -- entry's place in `taken` -> its count
local read = 0
for i in ipairs(taken) do
  local id = ids[i]
  if id then
    read = read + 1
    local count = deliveries_of[id]
    if not count then
      local value = held[read]
      if not value then
        count = 0
      elseif string.match(value, '^%d+$') and #value <= 15 then
        count = tonumber(value)
      else
        set_aside(bad, deliveries, value,
                  'the delivery count of entry ' .. id .. ' is not a whole number: restarted')
        bads = bads + 1
        count = 0
      end
    end
    delivered[i] = count + 1
    deliveries_of[id] = count + 1
  end
end
local leasing = {}
for i, item in ipairs(taken) do
  local entry, score, host = item[1], item[2], item[3]
  local leased_now = false
  if not ids[i] then
    redis.call('RPUSH', bad, set_aside_record({key = queue, host = host, reason = 'an entry of ' ..
      #entry .. ' bytes, over SCHEDULER_MAX_ENTRY_SIZE (' .. max_entry .. ')'}, entry))
    bads = bads + 1
  elseif max_deliveries > 0 and delivered[i] > max_deliveries then
    redis.call('RPUSH', dead, set_aside_record({key = queue, score = score, host = host,
      deliveries = delivered[i] - 1, reason = 'taken ' .. (delivered[i] - 1) ..
      ' times by workers that stopped before settling it (SCHEDULER_MAX_DELIVERIES)'}, entry))
    deliveries_of[ids[i]] = false
    out[3] = out[3] + 1
  else
    leased_now = true
  end
  if host and order == 'host' then score = score .. '@' .. host end
  if leased_now then
    leasing[#leasing + 1] = {score, entry}
  elseif order == 'host' then
    host_done(host)  -- set aside, not leased: it holds none of the host's room
  end
end
local counts, dead_ids = {}, {}
for id, count in pairs(deliveries_of) do
  if count then
    counts[#counts + 1] = id
    counts[#counts + 1] = count
  else
    dead_ids[#dead_ids + 1] = id
  end
end
local function in_parts(command, key, list)
  for first = 1, #list, 1000 do
    redis.call(command, key, unpack(list, first, math.min(first + 999, #list)))
  end
end
in_parts('HSET', deliveries, counts)
in_parts('HDEL', deliveries, dead_ids)
if #leasing > 0 then
  local last = redis.call('INCRBY', seq, #leasing)
  local records, due, ran, running_here = {}, {}, {}, {}
  for j, lease in ipairs(leasing) do
    -- %d: Lua's own number-to-string is %.14g, which past 10^14 gives two leases one id.
    local id = 'L' .. string.format('%d', last - #leasing + j)
    ran[j] = '0'
    if signed and ran_already(settled, lease[2]) then
      ran[j] = '1'
    elseif signed then
      local field = running_field(lease[2])
      local holder = field and redis.call('HGET', settled, field)
      if field and (running_here[field] or
                    (holder and redis.call('HEXISTS', leased, holder) == 1)) then
        ran[j] = '2'
      elseif field then
        running_here[field] = true
        redis.call('HSET', settled, field, id)
      end
    end
    records[#records + 1] = id
    records[#records + 1] = worker .. '|' .. lease[1] .. '|' .. lease[2]
    due[#due + 1] = now + lease_ms
    due[#due + 1] = id
    out[#out + 1] = id
    out[#out + 1] = lease[1]
    out[#out + 1] = lease[2]
  end
  in_parts('HSET', leased, records)
  in_parts('ZADD', deadlines, due)
  out[6] = table.concat(ran)
end
out[2] = bads
out[5] = next_due_in()
if order == 'priority' then out[4] = redis.call('ZCARD', queue)
elseif order == 'host' then out[4] = tonumber(redis.call('GET', host_keys.count)) or 0
else out[4] = redis.call('LLEN', queue) end
return out
)lua";

// set_aside: KEYS leased, deadlines, deliveries, bad, settled; ARGV order, worker, then per
// entry: lease
// id, record. Each entry the worker still holds and will not run (it did not decode, or may not
// run) leaves its lease for `bad`, as the record, and its delivery count goes.
inline constexpr const char* redis_queue_set_aside = R"lua(
local leased, deadlines, deliveries, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, worker = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
for at = 3, #ARGV, 2 do
  local lease = redis.call('HGET', leased, ARGV[at])
  local owner, _, entry, host = parse_lease(lease or '')
  if owner == worker then
    redis.call('RPUSH', bad, ARGV[at + 1])
    redis.call('HDEL', leased, ARGV[at])
    redis.call('ZREM', deadlines, ARGV[at])
    redis.call('HDEL', deliveries, delivery_id(entry))
    forget_running(KEYS[5], entry, ARGV[at])
    if order == 'host' then host_done(host) end
  end
end
return 0
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

// release: KEYS queue, leased, deadlines, deliveries, settled; ARGV order, worker, id... Puts
// the worker's
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
    local owner, score, entry, host = parse_lease(lease)
    if owner == worker then
      put_back(queue, order, score, entry, host)
      if order == 'host' then host_done(host) end
      redis.call('HDEL', leased, ARGV[i])
      redis.call('ZREM', deadlines, ARGV[i])
      forget_running(KEYS[5], entry, ARGV[i])
      local id = delivery_id(entry)
      local left = redis.pcall('HINCRBY', deliveries, id, -1)
      if type(left) ~= 'number' or left <= 0 then redis.call('HDEL', deliveries, id) end
      released = released + 1
    end
  end
end
count_added()
return released
)lua";

// settle: KEYS queue, leased, deadlines, seq, dupefilter, items, bad, deliveries, settled, stats;
// ARGV order, worker, filtering ('1', or '' for no dupefilter), page count, then per page: lease
// id ('' for none), child count, item count, the page's host's delay and hold in ms (set_pace;
// the host frontier's), its server's address (set_address; '' for none), its responses and
// items to count (page_counts), then per child: request JSON, priority, dont_filter ('1' or
// '0'), marking argument, host; then the items.
// For each page in turn, in one step: each child is marked seen and queued unless the dupefilter
// has seen it, the items are appended, the page's counts are added to the stats hash
// (response_received_count, item_scraped_count; a field that holds no count goes aside to `bad`
// first and counts again from 0, as the heartbeat's), and the parent's lease is settled. So no
// URL is ever seen without being queued, leased or crawled. A lease the worker no longer holds
// (it expired and went back to the queue, or this same outcome was stored by an earlier try
// whose answer was lost) stores nothing: the request's outcome is stored once, by whoever holds
// its lease, so no item is written or counted twice; in a signed fleet, nor does the lease of an
// entry that ran already (settle_once: a copy taken before the first settled). A worker settles
// the pages that finished together in one call (see redis_queue::add_to_settles): each call
// costs Redis as much as a page's own work.
// Returns, per page: queued, duplicates, settled (1, or 0 when the lease was not held), one '1'
// (duplicate) or '0' (queued) per child, or '' when nothing was stored.
inline constexpr const char* redis_queue_settle = R"lua(
local queue, leased, deadlines, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local filter, items = KEYS[5], KEYS[6]
local order, worker, filtering, pages = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
-- Most pages of a crawl bring no new link (their links were known) and no item: their settle
-- writes only the leases' keys (and the host frontier's), and checks only those.
local leases, children, stored_items, counted = false, false, false, false
local at = 5
for _ = 1, pages do
  if ARGV[at] ~= '' then leases = true end
  local child_count, item_count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  if child_count > 0 then children = true end
  if item_count > 0 then stored_items = true end
  if ARGV[at + 6] ~= '0' or ARGV[at + 7] ~= '0' then counted = true end
  at = at + 8 + 5 * child_count + item_count
end
local skipped = {}
if not leases then skipped[2], skipped[3], skipped[8], skipped[9] = true, true, true, true end
if not children then skipped[1], skipped[4], skipped[5], skipped[7] = true, true, true, true end
if not stored_items then skipped[6] = true end
if not counted then skipped[10] = true end
local refused = check_types(skipped)
if refused then return refused end
if children then
  check_seq(seq, KEYS[7])
  check_count(KEYS[7])
end
local stats = KEYS[10]
if counted then
  for _, field in ipairs({'response_received_count', 'item_scraped_count'}) do
    local value = redis.call('HGET', stats, field)
    if value and (not string.match(value, '^-?%d+$') or #value > 18) then
      redis.call('RPUSH', KEYS[7], set_aside_record({key = stats, field = field,
        reason = 'not a count (a whole number of at most 18 digits): counted again from 0'},
        value))
      redis.call('HDEL', stats, field)
    end
  end
end
local answers = {}
-- The counts of the pages stored, added once for the call.
local responses_here, items_here = 0, 0
at = 5
for _ = 1, pages do
  local lease_id = ARGV[at]
  local child_count, item_count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local delay_ms, hold_ms, address = ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]
  local responses, items_counted = tonumber(ARGV[at + 6]), tonumber(ARGV[at + 7])
  local first_child = at + 8
  local first_item = first_child + 5 * child_count
  at = first_item + item_count
  local held, settled = true, 0
  if lease_id ~= '' then
    local lease = redis.call('HGET', leased, lease_id)
    local owner, _, entry, host = parse_lease(lease or '')
    if owner ~= worker then
      held = false
    else
      redis.call('HDEL', KEYS[8], delivery_id(entry))
      redis.call('HDEL', leased, lease_id)
      redis.call('ZREM', deadlines, lease_id)
      forget_running(KEYS[9], entry, lease_id)
      if order == 'host' then
        set_address(host, address)
        host_done(host)
        set_pace(host, delay_ms, hold_ms)
      end
      if signed and not settle_once(KEYS[9], entry) then
        held = false
      else
        settled = 1
      end
    end
  end
  if held then
    local queued, duplicates = 0, 0
    local flags = {}
    for child = first_child, first_item - 1, 5 do
      if queue_new(queue, order, seq, filtering, filter, ARGV[child], ARGV[child + 1],
                   ARGV[child + 2], ARGV[child + 3], ARGV[child + 4]) then
        queued = queued + 1
        flags[#flags + 1] = '0'
      else
        duplicates = duplicates + 1
        flags[#flags + 1] = '1'
      end
    end
    for i = first_item, at - 1 do redis.call('RPUSH', items, ARGV[i]) end
    responses_here = responses_here + responses
    items_here = items_here + items_counted
    answers[#answers + 1] = queued
    answers[#answers + 1] = duplicates
    answers[#answers + 1] = settled
    answers[#answers + 1] = table.concat(flags)
  else
    answers[#answers + 1] = 0
    answers[#answers + 1] = 0
    answers[#answers + 1] = 0
    answers[#answers + 1] = ''
  end
end
if responses_here > 0 then
  redis.call('HINCRBY', stats, 'response_received_count', responses_here)
end
if items_here > 0 then redis.call('HINCRBY', stats, 'item_scraped_count', items_here) end
count_added()
return answers
)lua";

// reserve: KEYS seq, settled, bad; ARGV how many. A signed fleet's worker numbers the entries it
// writes itself, since it signs each number with its entry, and takes the numbers from the
// counter in blocks. A crawl's counter starts from Redis's clock in microseconds (16 digits),
// above every number of the crawls before it on these keys, and that start is kept in
// <queue>:settled ('from'): an entry numbered below it is from an earlier crawl. Returns the
// block's last number.
inline constexpr const char* redis_queue_reserve = R"lua(
local seq, settled, bad = KEYS[1], KEYS[2], KEYS[3]
local refused = check_types()
if refused then return refused end
check_seq(seq, bad)
if redis.call('EXISTS', seq) == 0 then
  local t = redis.call('TIME')
  local from = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('SET', seq, from)
  redis.call('HSET', settled, 'from', from)
end
return redis.call('INCRBY', seq, tonumber(ARGV[1]))
)lua";

// read start URLs: KEYS start_urls, its bad list; ARGV the start key's type ('list', 'set' or
// 'zset'), how many, the largest entry (SCHEDULER_MAX_ENTRY_SIZE). Up to that many start URLs,
// as scrapy-redis's RedisSpider reads them (any members of a set, a sorted set's highest scores,
// a list's head), measured where they are: one larger than the largest entry is moved to the
// bad list with its reason and never sent, so a worker's memory is bounded before the read, not
// after. Returns {how many were moved aside, the start URLs...}. It stands alone (with
// set_aside_record and remove_start_url before it): a sharded fleet's start key is no shard's.
inline constexpr const char* redis_queue_read_start_urls = R"lua(
local start, bad = KEYS[1], KEYS[2]
local start_type, count, largest = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local read
if start_type == 'set' then read = redis.call('SRANDMEMBER', start, count)
elseif start_type == 'zset' then read = redis.call('ZREVRANGE', start, 0, count - 1)
else read = redis.call('LRANGE', start, 0, count - 1) end
local out = {0}
for _, raw in ipairs(read) do
  if #raw <= largest then
    out[#out + 1] = raw
  elseif remove_start_url(start, start_type, raw) == 1 then
    local reason = 'an entry of ' .. #raw .. ' bytes, over SCHEDULER_MAX_ENTRY_SIZE (' ..
                   largest .. ')'
    redis.call('RPUSH', bad, set_aside_record({key = start, reason = reason}, raw))
    out[1] = out[1] + 1
  end
end
return out
)lua";

// feed: KEYS start_urls, queue, seq, dupefilter, bad, the queue's bad, the start key's settled;
// ARGV order, the start key's type ('list', 'set' or 'zset'), filtering ('1' or ''), then per
// start URL: the entry as stored, request JSON ('' when it does not decode), priority,
// dont_filter, marking argument, reason it is bad, host, and a signed start URL's number ('' for
// none): a number read before (settle_once on the start key's settled) is a copy, set aside.
// Each entry still in the start key is removed from it and, in the same step, queued through the
// dupefilter (or moved to `bad`): a worker that read it but died before this step leaves it for
// the others; two workers never queue it twice. Returns {queued, duplicates, bad}.
inline constexpr const char* redis_queue_feed = R"lua(
local start, queue, seq, filter, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order, start_type, filtering = ARGV[1], ARGV[2], ARGV[3]
local queued, duplicates, bads = 0, 0, 0
local refused = check_types()
if refused then return refused end
check_seq(seq, KEYS[6])
check_count(KEYS[6])
for at = 4, #ARGV, 8 do
  local raw, body, number = ARGV[at], ARGV[at + 1], ARGV[at + 7]
  if remove_start_url(start, start_type, raw) == 1 then
    if body == '' then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = ARGV[at + 5]}, raw))
      bads = bads + 1
    elseif number ~= '' and not settle_once(KEYS[7], number .. '|') then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = 'a copy of start URL ' ..
        number .. ', which was read already: a signed start URL is read once'}, raw))
      bads = bads + 1
    elseif queue_new(queue, order, seq, filtering, filter, body, ARGV[at + 2], ARGV[at + 3],
                     ARGV[at + 4], ARGV[at + 6]) then
      queued = queued + 1
    else
      duplicates = duplicates + 1
    end
  end
end
count_added()
return {queued, duplicates, bads}
)lua";

// requeue: KEYS queue, from (<queue>:dead or :bad), deliveries, start URLs; ARGV order, the
// start key's type ('list', 'set' or 'zset'), then per record: the record as stored, where its
// value goes ('queue' or 'start'), the value, its score, its host (the host frontier's). Each
// record still in `from` is removed and its value put back byte for byte, an entry's delivery
// count started again (`crawler requeue`). Returns how many.
inline constexpr const char* redis_queue_requeue = R"lua(
local queue, from, deliveries, start = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, start_type = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
local requeued = 0
check_count(queue .. ':bad')
for at = 3, #ARGV, 5 do
  local record, destination, value, score = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  if tonumber(score) and redis.call('LREM', from, 1, record) == 1 then
    if destination == 'start' then
      if start_type == 'set' then redis.call('SADD', start, value)
      elseif start_type == 'zset' then redis.call('ZADD', start, score, value)
      else redis.call('RPUSH', start, value) end
    else
      put_back(queue, order, score, value, ARGV[at + 4])
      redis.call('HDEL', deliveries, delivery_id(value))
    end
    requeued = requeued + 1
  end
end
count_added()
return requeued
)lua";

}  // namespace crawler::detail
