-- The number of entries of `key` whatever its type (a priority queue is a sorted set, fifo and
-- lifo are lists, start URLs a list or a set); for a queue that is not there, the count a host
-- frontier keeps beside it (KEYS[2], <queue>:count), if any.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' and KEYS[2] and redis.call('TYPE', KEYS[2]).ok == 'string' then
  return tonumber(redis.call('GET', KEYS[2])) or 0
end
if kind == 'zset' then return redis.call('ZCARD', KEYS[1]) end
if kind == 'list' then return redis.call('LLEN', KEYS[1]) end
if kind == 'set' then return redis.call('SCARD', KEYS[1]) end
if kind == 'hash' then return redis.call('HLEN', KEYS[1]) end
return 0
