-- Per worker, the leases it holds in a shard and when the last of them expires (ms on Redis's
-- clock): {worker, count, deadline, ...}. Counted in Redis: the leases' entries stay there. KEYS
-- <queue>:leased, <queue>:deadlines.
local by_worker, order = {}, {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local owner = string.match(all[i + 1], '^([^|]*)|')
  if owner then
    local due = tonumber(redis.call('ZSCORE', KEYS[2], all[i])) or 0
    local held = by_worker[owner]
    if not held then
      held = {0, 0}
      by_worker[owner] = held
      order[#order + 1] = owner
    end
    held[1] = held[1] + 1
    held[2] = math.max(held[2], due)
  end
end
local out = {}
for _, owner in ipairs(order) do
  out[#out + 1] = owner
  out[#out + 1] = by_worker[owner][1]
  out[#out + 1] = by_worker[owner][2]
end
return out
