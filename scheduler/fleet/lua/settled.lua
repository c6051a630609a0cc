-- settled: what a signed fleet records of the numbered entries that ran (settle_once), in a hash
-- such as <queue>:settled, and of the signed start URLs that were read, in <start key>:settled.
-- Every queue script has it (redis_queue::run_script), and sharded_queue's feed too.
-- A signed fleet runs each entry once: <queue>:settled records the numbers of the entries
-- settled, a bit each (a hash: the field is a number's first 13 digits, the value a 125-byte
-- bitmap of the 1,000 numbers under it), and under 'from' the number the crawl's counter started
-- at (redis_queue_reserve). An entry settled before, or numbered before the crawl began, is a copy
-- that someone who can write Redis put back: it runs no more. Numbers are 16 digits, compared as
-- text: Lua's numbers are exact to 2^53 only.
local function settled_bit(entry)
  local id = string.match(entry, '^(%d+)|')
  if not id or #id ~= 16 then return nil end
  return id, string.sub(id, 1, 13), tonumber(string.sub(id, 14))
end
local function settled_bits(settled, chunk)
  local bits = redis.call('HGET', settled, chunk)
  if bits and #bits == 125 then return bits end
  return string.rep('\0', 125)
end
-- 'from', read once a script (false: none).
local settled_from = {}
local function from_of(settled)
  if settled_from[settled] == nil then
    local from = redis.call('HGET', settled, 'from')
    settled_from[settled] = (from and #from == 16) and from or false
  end
  return settled_from[settled]
end
-- Whether `entry` ran already, and the bitmap of its thousand (nil when it has no number).
local function ran_already(settled, entry)
  local id, chunk, n = settled_bit(entry)
  if not id then return false end
  local from = from_of(settled)
  if from and id < from then return true end
  local bits = settled_bits(settled, chunk)
  return bit.band(string.byte(bits, math.floor(n / 8) + 1), bit.lshift(1, n % 8)) ~= 0, bits
end
-- Records `entry` as settled; false, recording nothing, when it ran already.
local function settle_once(settled, entry)
  local ran, bits = ran_already(settled, entry)
  if ran then return false end
  if not bits then return true end
  local _, chunk, n = settled_bit(entry)
  local at = math.floor(n / 8) + 1
  local byte = bit.bor(string.byte(bits, at), bit.lshift(1, n % 8))
  redis.call('HSET', settled, chunk,
             string.sub(bits, 1, at - 1) .. string.char(byte) .. string.sub(bits, at + 1))
  return true
end
