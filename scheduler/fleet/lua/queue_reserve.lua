-- reserve: KEYS seq, settled, bad; ARGV how many. A signed fleet's worker numbers the entries it
-- writes itself, since it signs each number with its entry, and takes the numbers from the
-- counter in blocks. A crawl's counter starts from Redis's clock in microseconds (16 digits),
-- above every number of the crawls before it on these keys, and that start is kept in
-- <queue>:settled ('from'): an entry numbered below it is from an earlier crawl. Returns the
-- block's last number.
local seq, settled, bad = KEYS[1], KEYS[2], KEYS[3]
local refused = check_types()
if refused then return refused end
check_seq(seq, bad)
if redis.call('EXISTS', seq) == 0 then
  local t = redis.call('TIME')
  local from = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('SET', seq, from)
  redis.call('HSET', settled, 'from', from)
end
return redis.call('INCRBY', seq, tonumber(ARGV[1]))
