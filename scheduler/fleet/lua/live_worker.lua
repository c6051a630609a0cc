-- Whether <spider>:workers (`workers`) holds a live worker: a heartbeat younger than three of
-- its intervals. With drop_dead, the lines of the dead workers it passes are deleted. And
-- write_worker, which writes a worker's line: its record (a JSON object) with "started" (kept from
-- its last line) and "heartbeat" on Redis's clock, the one clock every worker and `crawler
-- status` share, so a worker whose own clock is off is never taken for dead. The fleet scripts
-- below start with both.
local function redis_now()
  local t = redis.call('TIME')
  return t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
end
local function write_worker(workers, worker, record)
  local now = redis_now()
  local prior = redis.call('HGET', workers, worker)
  local started = prior and string.match(prior, '"started":(%d+%.?%d*)') or now
  redis.call('HSET', workers, worker,
             string.sub(record, 1, -2) .. ',"started":' .. started .. ',"heartbeat":' .. now .. '}')
end
local function live_worker(workers, drop_dead)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  local entries = redis.call('HGETALL', workers)
  for i = 1, #entries, 2 do
    local ok, worker = pcall(cjson.decode, entries[i + 1])
    if ok and type(worker) == 'table' and worker.heartbeat and worker.interval and
       now - worker.heartbeat < 3 * worker.interval then
      return true
    end
    if drop_dead then redis.call('HDEL', workers, entries[i]) end
  end
  return false
end
