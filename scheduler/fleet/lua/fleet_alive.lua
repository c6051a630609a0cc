-- With shards, whether a worker of the fleet is alive is asked in the fleet's slot first, and then
-- each shard deletes its keys (shard_done.lua). A worker starting between the two steps finds
-- the shards gone and begins a new crawl. KEYS <spider>:workers. Returns 1 when a worker is
-- alive, else 0; the lines of dead workers are dropped.
return live_worker(KEYS[1], true) and 1 or 0
