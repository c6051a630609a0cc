-- requeue: KEYS queue, from (<queue>:dead or :bad), deliveries, start URLs; ARGV order, the
-- start key's type ('list', 'set' or 'zset'), then per record: the record as stored, where its
-- value goes ('queue' or 'start'), the value, its score, its host (the host frontier's). Each
-- record still in `from` is removed and its value put back byte for byte, an entry's delivery
-- count started again (`crawler requeue`). Returns how many.
local queue, from, deliveries, start = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, start_type = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
local requeued = 0
check_count(queue .. ':bad')
for at = 3, #ARGV, 5 do
  local record, destination, value, score = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  if tonumber(score) and redis.call('LREM', from, 1, record) == 1 then
    if destination == 'start' then
      if start_type == 'set' then redis.call('SADD', start, value)
      elseif start_type == 'zset' then redis.call('ZADD', start, score, value)
      else redis.call('RPUSH', start, value) end
    else
      put_back(queue, order, score, value, ARGV[at + 4])
      redis.call('HDEL', deliveries, delivery_id(value))
    end
    requeued = requeued + 1
  end
end
count_added()
return requeued
