-- Which of the numbers in ARGV were read before: KEYS the start key's settled. A '1' or '0' for
-- each. Read before the shards' queues get the start URLs; recorded once they have them.
local out = {}
for i = 1, #ARGV do out[i] = ran_already(KEYS[1], ARGV[i] .. '|') and '1' or '0' end
return table.concat(out)
