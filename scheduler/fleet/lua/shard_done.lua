-- With shards, each shard deletes its keys at the fleet's close once nothing of it is queued or
-- leased (after fleet_alive.lua found no live worker). KEYS shard_keys(): the queue first, its
-- leases second, then the rest. Returns -1 when it keeps them, else how many keys it deleted.
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HLEN', KEYS[2]) > 0 then return -1 end
return redis.call('DEL', unpack(KEYS))
