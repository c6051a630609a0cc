-- At close a worker removes its line in <spider>:workers. SCHEDULER_PERSIST=false also deletes
-- the fleet's queue and dupefilter, but only once the crawl is over for everyone: no live worker
-- (heartbeats older than three intervals are dropped as dead), nothing queued, nothing leased. A
-- worker that stops early leaves them. KEYS: fleet_keys(), then the layout version (nothing is
-- left for another release to misread). What a person reads after the crawl stays: the stats,
-- the :bad and :dead records, and the epoch, whose absence beside the stats says that Redis
-- forgot the fleet rather than that its crawl ended (`crawler stats`).
if live_worker(KEYS[1], true) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('HLEN', KEYS[3]) > 0 then return -1 end
return redis.call('DEL', unpack(KEYS))
