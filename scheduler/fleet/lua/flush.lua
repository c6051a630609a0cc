-- What a flush checks and deletes in a queue's keys. held_leases(deadlines): nil, or {leases
-- whose deadline has not passed, seconds until the last one}: a worker alive but not heard from
-- (paused, or its line deleted) holds them, and nothing may be flushed. delete_host_queues: the
-- host frontier's per-host queues, named by the two sorted sets that list every host with one.
local function held_leases(deadlines)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  local held = redis.call('ZCOUNT', deadlines, '(' .. string.format('%d', now * 1000), '+inf')
  if held == 0 then return nil end
  local last = redis.call('ZRANGE', deadlines, -1, -1, 'WITHSCORES')
  return {held, math.ceil((tonumber(last[2]) - now * 1000) / 1000)}
end
local function delete_host_queues(prefix, hosts, busy)
  if not prefix then return end
  for _, listed in ipairs({hosts, busy}) do
    for _, host in ipairs(redis.call('ZRANGE', listed, 0, -1)) do
      redis.call('DEL', prefix .. host)
    end
  end
end
