-- The number of shards a fleet shares its requests out among, written by the first worker of
-- more than one shard (one shard leaves it unset: the keys of releases before shards). KEYS the
-- number's key, the epoch of the one-shard queue on the same keys; ARGV this worker's number.
-- Returns 'one' when a fleet of one shard is there, else the number the fleet has (its first 256
-- bytes: whatever another program wrote there is not read whole).
if redis.call('EXISTS', KEYS[2]) == 1 then return 'one' end
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GETRANGE', KEYS[1], 0, 255)
