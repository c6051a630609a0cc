-- The reasons of a list's first ARGV[1] records (redis/set_aside.h), counted in Redis so that
-- the records, up to SCHEDULER_MAX_ENTRY_SIZE each, stay there: {reason, count, ...}.
local counts, order = {}, {}
for _, record in ipairs(redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local ok, header = pcall(cjson.decode, string.match(record, '^[^\n]*'))
  local reason = ok and type(header) == 'table' and type(header.reason) == 'string' and
                 header.reason or 'a record no worker wrote'
  reason = string.sub(string.gsub(reason, '%d+', 'N'), 1, 200)
  if not counts[reason] then
    counts[reason] = 0
    order[#order + 1] = reason
  end
  counts[reason] = counts[reason] + 1
end
local out = {}
for _, reason in ipairs(order) do
  out[#out + 1] = reason
  out[#out + 1] = counts[reason]
end
return out
