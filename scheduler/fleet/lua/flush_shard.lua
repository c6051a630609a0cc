-- Then each shard, in its own slot: KEYS its deadlines, then its keys to delete; ARGV as
-- flush_once_script's third to fifth. Returns 1, or held_leases' answer when it refused.
local held = held_leases(KEYS[1])
if held then return held end
delete_host_queues(ARGV[1], ARGV[2], ARGV[3])
redis.call('DEL', unpack(KEYS))
return 1
