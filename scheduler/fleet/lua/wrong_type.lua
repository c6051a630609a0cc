-- wrong_type(key, want): nil when `key` holds nothing or a `want` (a Redis type name: 'hash',
-- 'list', ... or 'none', for a key where the fleet keeps nothing), else an error that starts
-- with CRAWLER_WRONGTYPE and names the key. Every queue script has it first
-- (redis_queue::run_script), and so do the scheduler's own (fleet_scheduler.cpp).
local function wrong_type(key, want)
  local held = redis.call('TYPE', key).ok
  if held == 'none' or held == want then return nil end
  return redis.error_reply('CRAWLER_WRONGTYPE key ' .. key .. ' holds a ' .. held ..
                           ', where the fleet keeps ' .. (want == 'none' and 'nothing' or
                                                          'a ' .. want))
end
