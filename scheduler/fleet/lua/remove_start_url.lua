-- remove_start_url(start, start_type, raw): removes one start URL from the start key, a list,
-- set or sorted set as start_type says ('list', 'set', 'zset'); 1 when it was there. Every queue
-- script has it (redis_queue::run_script), and sharded_queue's feed too.
local function remove_start_url(start, start_type, raw)
  if start_type == 'set' then return redis.call('SREM', start, raw) end
  if start_type == 'zset' then return redis.call('ZREM', start, raw) end
  return redis.call('LREM', start, 1, raw)
end
