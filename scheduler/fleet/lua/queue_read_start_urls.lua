-- read start URLs: KEYS start_urls, its bad list; ARGV the start key's type ('list', 'set' or
-- 'zset'), how many, the largest entry (SCHEDULER_MAX_ENTRY_SIZE). Up to that many start URLs,
-- as scrapy-redis's RedisSpider reads them (any members of a set, a sorted set's highest scores,
-- a list's head), measured where they are: one larger than the largest entry is moved to the
-- bad list with its reason and never sent, so a worker's memory is bounded before the read, not
-- after. Returns {how many were moved aside, the start URLs...}. It stands alone (with
-- set_aside_record and remove_start_url before it): a sharded fleet's start key is no shard's.
local start, bad = KEYS[1], KEYS[2]
local start_type, count, largest = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local read
if start_type == 'set' then read = redis.call('SRANDMEMBER', start, count)
elseif start_type == 'zset' then read = redis.call('ZREVRANGE', start, 0, count - 1)
else read = redis.call('LRANGE', start, 0, count - 1) end
local out = {0}
for _, raw in ipairs(read) do
  if #raw <= largest then
    out[#out + 1] = raw
  elseif remove_start_url(start, start_type, raw) == 1 then
    local reason = 'an entry of ' .. #raw .. ' bytes, over SCHEDULER_MAX_ENTRY_SIZE (' ..
                   largest .. ')'
    redis.call('RPUSH', bad, set_aside_record({key = start, reason = reason}, raw))
    out[1] = out[1] + 1
  end
end
return out
