-- release: KEYS queue, leased, deadlines, deliveries, settled; ARGV order, worker, id... Puts
-- the worker's leased entries back in the queue, not crawled (a stop), and takes back their
-- delivery: a worker stopped with Ctrl-C did not die on them. Returns how many.
local queue, leased, deadlines, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, worker = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
local released = 0
for i = 3, #ARGV do
  local lease = redis.call('HGET', leased, ARGV[i])
  if lease then
    local owner, score, entry, host = parse_lease(lease)
    if owner == worker then
      put_back(queue, order, score, entry, host)
      if order == 'host' then host_done(host) end
      redis.call('HDEL', leased, ARGV[i])
      redis.call('ZREM', deadlines, ARGV[i])
      forget_running(KEYS[5], entry, ARGV[i])
      local id = delivery_id(entry)
      local left = redis.pcall('HINCRBY', deliveries, id, -1)
      if type(left) ~= 'number' or left <= 0 then redis.call('HDEL', deliveries, id) end
      released = released + 1
    end
  end
end
count_added()
return released
