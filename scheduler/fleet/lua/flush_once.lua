-- SCHEDULER_FLUSH_ON_START for a fleet: the first worker of a crawl flushes, the ones that join
-- it do not. "First" is decided in Redis, in one step: when no worker has a fresh heartbeat in
-- <spider>:workers, the queue, its leases, the dupefilter and the stats go, and this worker's line
-- is written, so a second worker starting a moment later finds a live one and flushes nothing.
-- Leases that have not expired (held_leases) refuse the flush, and the worker stops.
-- KEYS fleet_keys() (workers, queue, leased, deadlines first), then the other keys to delete;
-- ARGV this worker, its record, and for the host frontier the prefix of its per-host queues and
-- the two sorted sets that name every host with one. Returns 1 when it flushed, 0 when it joined
-- a live fleet, and held_leases' answer when it refused.
if live_worker(KEYS[1], false) then
  write_worker(KEYS[1], ARGV[1], ARGV[2])
  return 0
end
local held = held_leases(KEYS[4])
if held then return held end
delete_host_queues(ARGV[3], ARGV[4], ARGV[5])
redis.call('DEL', unpack(KEYS))
write_worker(KEYS[1], ARGV[1], ARGV[2])
return 1
