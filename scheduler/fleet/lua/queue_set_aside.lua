-- set_aside: KEYS leased, deadlines, deliveries, bad, settled; ARGV order, worker, then per
-- entry: lease id, record. Each entry the worker still holds and will not run (it did not
-- decode, or may not run) leaves its lease for `bad`, as the record, and its delivery count goes.
local leased, deadlines, deliveries, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, worker = ARGV[1], ARGV[2]
local refused = check_types()
if refused then return refused end
for at = 3, #ARGV, 2 do
  local lease = redis.call('HGET', leased, ARGV[at])
  local owner, _, entry, host = parse_lease(lease or '')
  if owner == worker then
    redis.call('RPUSH', bad, ARGV[at + 1])
    redis.call('HDEL', leased, ARGV[at])
    redis.call('ZREM', deadlines, ARGV[at])
    redis.call('HDEL', deliveries, delivery_id(entry))
    forget_running(KEYS[5], entry, ARGV[at])
    if order == 'host' then host_done(host) end
  end
end
return 0
