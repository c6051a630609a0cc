-- The prelude of the scripts behind redis_queue (queue_*.lua): one script per transition of a
-- request, each atomic, with its keys listed at the top (BullMQ's shape). Entries in our own form are "<16-digit id>|<request
-- JSON>": in the sorted set, the id orders equal priorities first in, first out. Entries in
-- scrapy-redis's form are its pickles, bare, in the same places its queues put them: a sorted
-- set scored -priority, or a list pushed at its head (LPUSH) and popped at its tail (fifo,
-- RPOP) or head (lifo, LPOP).
--
-- Keys: the queue (sorted set scored -priority, or a list), <queue>:leased (hash lease id ->
-- "<worker>|<score>|<entry>"), <queue>:deadlines (sorted set lease id -> deadline in ms, on
-- Redis's clock), <queue>:seq (the counter behind entry and lease ids), <queue>:deliveries (hash
-- entry id -> how many times the entry was taken and not settled), <queue>:settled (a signed
-- fleet's: which entries were settled, by number; settle_once), <queue>:dead (the dead
-- letters: entries taken more than SCHEDULER_MAX_DELIVERIES times, never settled), <queue>:bad
-- (what could not be used); both hold records as redis/set_aside.h writes them.
--
-- SCHEDULER_QUEUE_CLASS "host" queues per host instead (the host frontier): <queue>:host:<host>
-- (a sorted set of that host's entries, scored -priority), <queue>:hosts (host -> the time on
-- Redis's clock when it may next be fetched, for every host with entries, and, until that time,
-- for one that just ran out), <queue>:busy (the same for hosts at their fleet-wide concurrency
-- limit, which takes pass over), <queue>:inflight (host -> its leased entries), <queue>:delays
-- (host -> its delay in ms where a worker found one other than DOWNLOAD_DELAY: a robots.txt
-- Crawl-delay, AutoThrottle) and <queue>:count (the entries queued in all; it exists exactly
-- while some are). Its leases are "<worker>|<score>@<host>|<entry>". With
-- CONCURRENT_REQUESTS_PER_IP, hosts of one server share its limit and its delay:
-- <queue>:addresses (host -> the address workers reported for it), and <queue>:inflight and
-- <queue>:address_due (address -> the time it may next be fetched) count by address for those
-- hosts; <queue>:parked ("<address>|<host>", all scored 0) lists the hosts in :busy by the slot
-- whose limit put them there, so that the end of any lease of the address wakes them all.
--
-- Shared by every script, and run first: the fleet's epoch, the server's clock, and putting a
-- leased entry back in the queue where it is taken next.
--
-- Every script is called with the epoch's key after its own keys and the epoch this worker read
-- at open, the key types and the entries' form ('json': numbered here, 'signed': numbered and
-- signed by their writer, or 'pickle': bare) before its own arguments (redis_queue::run_script
-- adds them; an epoch of '' checks nothing). A Redis that forgot the fleet's state (restarted without persistence, flushed, failed over to a replica
-- that lagged) no longer holds that epoch: the script writes nothing and answers an error that
-- starts with CRAWLER_EPOCH, and the worker stops rather than call an empty queue finished.
--
-- Then the type each of its keys must have, one word per key ('-': not checked): each script
-- calls check_types() before its first write. Redis does not undo a script's writes when a later
-- command fails, so a key of the wrong type (another program's, or one an operator recreated
-- mid-crawl) must stop the script before it writes anything, not halfway. The answer is an error
-- that starts with CRAWLER_WRONGTYPE and names the key. Settle, which runs for every page, checks
-- only the keys that its pages write (check_types(skipped)): a TYPE costs as much as the write
-- it guards, and a key a call leaves alone cannot fail it halfway; the next call that writes the
-- key names it.
--
-- A queue script is, in this order: wrong_type.lua, redis::lua_set_aside_record,
-- remove_start_url.lua, settled.lua, mark(key, argument) (the dupefilter's step,
-- dedup::redis_marking::lua), this prelude, and the script's own file (redis_queue::run_script).
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
