-- renew: KEYS leased, deadlines; ARGV worker, lease_ms, id... Moves the deadline of each lease
-- the worker still holds. Returns the ids it no longer holds (expired and taken back while the
-- worker stalled, or settled meanwhile).
local leased, deadlines = KEYS[1], KEYS[2]
local worker, lease_ms = ARGV[1], tonumber(ARGV[2])
local refused = check_types()
if refused then return refused end
local deadline = now_ms() + lease_ms
local lost = {}
for i = 3, #ARGV do
  local lease = redis.call('HGET', leased, ARGV[i])
  if lease and parse_lease(lease) == worker then
    redis.call('ZADD', deadlines, deadline, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
