-- KEYS the layout key; ARGV this worker's layout version. Returns the fleet's version (its first
-- 256 bytes: whatever another program wrote there is not read whole), writing this worker's when
-- the fleet has none yet.
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GETRANGE', KEYS[1], 0, 255)
