-- With shards no script may reach every key on a cluster, so the first step decides alone, in
-- the fleet's own slot: KEYS workers, then the fleet's keys beside it to delete (stats, the
-- fleet's :bad and :dead); ARGV this worker, its record. Returns 1 when this worker is first (its
-- line written, those keys gone), 0 when it joined a live fleet.
if live_worker(KEYS[1], false) then
  write_worker(KEYS[1], ARGV[1], ARGV[2])
  return 0
end
redis.call('DEL', unpack(KEYS, 2))
write_worker(KEYS[1], ARGV[1], ARGV[2])
return 1
