-- Adds what this worker's counters gained to <spider>:stats. A field that does not hold a whole
-- number (another program wrote it) would fail HINCRBY, and the gains with it, at every flush:
-- its value goes aside to <queue>:bad and the field counts again from 0. Every field is checked
-- before the first write. KEYS stats, bad; ARGV field, gain, ... Returns how many went aside.
local refused = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'list')
if refused then return refused end
local bad = 0
for i = 1, #ARGV, 2 do
  local value = redis.call('HGET', KEYS[1], ARGV[i])
  if value and (not string.match(value, '^-?%d+$') or #value > 18) then
    redis.call('RPUSH', KEYS[2], set_aside_record({key = KEYS[1], field = ARGV[i],
      reason = 'not a count (a whole number of at most 18 digits): counted again from 0'}, value))
    redis.call('HDEL', KEYS[1], ARGV[i])
    bad = bad + 1
  end
end
for i = 1, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return bad
