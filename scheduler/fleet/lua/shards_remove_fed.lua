-- Removes start URLs once they are in their shards' queues; those that could not be read go to
-- the start key's :bad with their reason, as a feed of one shard sets them aside, and a signed
-- one's number is recorded as read. KEYS start, bad, the start key's settled; ARGV the start
-- key's type, then per entry its raw value, the reason ('' when pushed) and its number ('' for
-- none). Returns how many went to :bad.
local start, bad, start_type = KEYS[1], KEYS[2], ARGV[1]
local bads = 0
for at = 2, #ARGV, 3 do
  local raw, reason, number = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  if remove_start_url(start, start_type, raw) == 1 then
    if reason ~= '' then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = reason}, raw))
      bads = bads + 1
    elseif number ~= '' then
      settle_once(KEYS[3], number .. '|')
    end
  end
end
return bads
