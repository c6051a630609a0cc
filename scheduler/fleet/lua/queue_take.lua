-- take: KEYS queue, leased, deadlines, seq, bad, deliveries, dead, settled; ARGV order, worker,
-- count, lease_ms, max_entry, max_deliveries. Leases past their deadline go back to the queue first
-- (their worker stopped renewing), then up to `count` entries move from the queue to the worker's
-- leases, each under a new lease id (not the entry's own, which a poisoned entry could forge). A
-- lease record that is not one and an entry over max_entry bytes (SCHEDULER_MAX_ENTRY_SIZE) go to
-- `bad` instead, never to a worker. Each take of an entry is counted in `deliveries` until it is
-- settled; one taken max_deliveries times already (SCHEDULER_MAX_DELIVERIES; 0: no limit) is a page
-- that every worker taking it dies on: it goes to `dead`, with its score, not to a worker. The host
-- frontier (order 'host'; ARGV then also limit, delay_ms, seed; with by_address, the prelude's, the
-- limit and the delay hold per server address for the hosts whose address is known) takes from the
-- hosts that are due, longest due first: one entry per host when its delay (<queue>:delays, else
-- delay_ms) is not 0, else as many as its fleet-wide limit (CONCURRENT_REQUESTS_PER_DOMAIN; 0:
-- none) leaves; each take puts the host's time off by its delay, times 0.5 to 1.5 drawn from `seed`
-- (RANDOMIZE_DOWNLOAD_DELAY; '': times 1), and a host that reaches its limit waits in <queue>:busy
-- until one of its leases ends (of its address's, for a host parked by address). Its scores come
-- back as "<score>@<host>".
-- Returns {reclaimed, set aside, dead, entries left in the queue, ms until the next host is due
-- (-1: the other orders, or none), a letter for each leased entry: in a signed fleet '1' when it
-- ran already (ran_already), '2' when another lease holds its number now (a copy taken while its
-- entry runs), else '0' (the worker sets copies aside once it has checked their signature, so that
-- a forged entry is called forged), then id, score, entry, ...}.
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
