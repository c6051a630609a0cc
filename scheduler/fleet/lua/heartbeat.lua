-- A worker's heartbeat: its line in <spider>:workers (write_worker). A line that is not a
-- worker's record (another program wrote it) would read as a dead worker forever, in `crawler
-- status` and in every judgement of the fleet's liveness: it goes aside to <queue>:bad. KEYS
-- workers, bad; ARGV worker, record. Returns how many lines went aside.
local refused = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'list')
if refused then return refused end
write_worker(KEYS[1], ARGV[1], ARGV[2])
local entries = redis.call('HGETALL', KEYS[1])
local bad = 0
for i = 1, #entries, 2 do
  local ok, worker = pcall(cjson.decode, entries[i + 1])
  if not ok or type(worker) ~= 'table' or type(worker.heartbeat) ~= 'number' or
     type(worker.interval) ~= 'number' then
    redis.call('RPUSH', KEYS[2], set_aside_record({key = KEYS[1], field = entries[i],
      reason = 'not a worker\'s record (JSON with heartbeat and interval)'}, entries[i + 1]))
    redis.call('HDEL', KEYS[1], entries[i])
    bad = bad + 1
  end
end
return bad
