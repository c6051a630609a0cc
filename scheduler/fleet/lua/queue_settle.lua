-- settle: KEYS queue, leased, deadlines, seq, dupefilter, items, bad, deliveries, settled, stats;
-- ARGV order, worker, filtering ('1', or '' for no dupefilter), page count, then per page: lease
-- id ('' for none), child count, item count, the page's host's delay and hold in ms (set_pace;
-- the host frontier's), its server's address (set_address; '' for none), its responses and
-- items to count (page_counts), then per child: request JSON, priority, dont_filter ('1' or
-- '0'), marking argument, host; then the items.
-- For each page in turn, in one step: each child is marked seen and queued unless the dupefilter
-- has seen it, the items are appended, the page's counts are added to the stats hash
-- (response_received_count, item_scraped_count; a field that holds no count goes aside to `bad`
-- first and counts again from 0, as the heartbeat's), and the parent's lease is settled. So no
-- URL is ever seen without being queued, leased or crawled. A lease the worker no longer holds
-- (it expired and went back to the queue, or this same outcome was stored by an earlier try
-- whose answer was lost) stores nothing: the request's outcome is stored once, by whoever holds
-- its lease, so no item is written or counted twice; in a signed fleet, nor does the lease of an
-- entry that ran already (settle_once: a copy taken before the first settled). A worker settles
-- the pages that finished together in one call (see redis_queue::add_to_settles): each call
-- costs Redis as much as a page's own work.
-- Returns, per page: queued, duplicates, settled (1, or 0 when the lease was not held), one '1'
-- (duplicate) or '0' (queued) per child, or '' when nothing was stored.
local queue, leased, deadlines, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local filter, items = KEYS[5], KEYS[6]
local order, worker, filtering, pages = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
-- Most pages of a crawl bring no new link (their links were known) and no item: their settle
-- writes only the leases' keys (and the host frontier's), and checks only those.
local leases, children, stored_items, counted = false, false, false, false
local at = 5
for _ = 1, pages do
  if ARGV[at] ~= '' then leases = true end
  local child_count, item_count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  if child_count > 0 then children = true end
  if item_count > 0 then stored_items = true end
  if ARGV[at + 6] ~= '0' or ARGV[at + 7] ~= '0' then counted = true end
  at = at + 8 + 5 * child_count + item_count
end
local skipped = {}
if not leases then skipped[2], skipped[3], skipped[8], skipped[9] = true, true, true, true end
if not children then skipped[1], skipped[4], skipped[5], skipped[7] = true, true, true, true end
if not stored_items then skipped[6] = true end
if not counted then skipped[10] = true end
local refused = check_types(skipped)
if refused then return refused end
if children then
  check_seq(seq, KEYS[7])
  check_count(KEYS[7])
end
local stats = KEYS[10]
if counted then
  for _, field in ipairs({'response_received_count', 'item_scraped_count'}) do
    local value = redis.call('HGET', stats, field)
    if value and (not string.match(value, '^-?%d+$') or #value > 18) then
      redis.call('RPUSH', KEYS[7], set_aside_record({key = stats, field = field,
        reason = 'not a count (a whole number of at most 18 digits): counted again from 0'},
        value))
      redis.call('HDEL', stats, field)
    end
  end
end
local answers = {}
-- The counts of the pages stored, added once for the call.
local responses_here, items_here = 0, 0
at = 5
for _ = 1, pages do
  local lease_id = ARGV[at]
  local child_count, item_count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local delay_ms, hold_ms, address = ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]
  local responses, items_counted = tonumber(ARGV[at + 6]), tonumber(ARGV[at + 7])
  local first_child = at + 8
  local first_item = first_child + 5 * child_count
  at = first_item + item_count
  local held, settled = true, 0
  if lease_id ~= '' then
    local lease = redis.call('HGET', leased, lease_id)
    local owner, _, entry, host = parse_lease(lease or '')
    if owner ~= worker then
      held = false
    else
      redis.call('HDEL', KEYS[8], delivery_id(entry))
      redis.call('HDEL', leased, lease_id)
      redis.call('ZREM', deadlines, lease_id)
      forget_running(KEYS[9], entry, lease_id)
      if order == 'host' then
        set_address(host, address)
        host_done(host)
        set_pace(host, delay_ms, hold_ms)
      end
      if signed and not settle_once(KEYS[9], entry) then
        held = false
      else
        settled = 1
      end
    end
  end
  if held then
    local queued, duplicates = 0, 0
    local flags = {}
    for child = first_child, first_item - 1, 5 do
      if queue_new(queue, order, seq, filtering, filter, ARGV[child], ARGV[child + 1],
                   ARGV[child + 2], ARGV[child + 3], ARGV[child + 4]) then
        queued = queued + 1
        flags[#flags + 1] = '0'
      else
        duplicates = duplicates + 1
        flags[#flags + 1] = '1'
      end
    end
    for i = first_item, at - 1 do redis.call('RPUSH', items, ARGV[i]) end
    responses_here = responses_here + responses
    items_here = items_here + items_counted
    answers[#answers + 1] = queued
    answers[#answers + 1] = duplicates
    answers[#answers + 1] = settled
    answers[#answers + 1] = table.concat(flags)
  else
    answers[#answers + 1] = 0
    answers[#answers + 1] = 0
    answers[#answers + 1] = 0
    answers[#answers + 1] = ''
  end
end
if responses_here > 0 then
  redis.call('HINCRBY', stats, 'response_received_count', responses_here)
end
if items_here > 0 then redis.call('HINCRBY', stats, 'item_scraped_count', items_here) end
count_added()
return answers
