-- feed: KEYS start_urls, queue, seq, dupefilter, bad, the queue's bad, the start key's settled;
-- ARGV order, the start key's type ('list', 'set' or 'zset'), filtering ('1' or ''), then per
-- start URL: the entry as stored, request JSON ('' when it does not decode), priority,
-- dont_filter, marking argument, reason it is bad, host, and a signed start URL's number ('' for
-- none): a number read before (settle_once on the start key's settled) is a copy, set aside.
-- Each entry still in the start key is removed from it and, in the same step, queued through the
-- dupefilter (or moved to `bad`): a worker that read it but died before this step leaves it for
-- the others; two workers never queue it twice. Returns {queued, duplicates, bad}.
local start, queue, seq, filter, bad = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order, start_type, filtering = ARGV[1], ARGV[2], ARGV[3]
local queued, duplicates, bads = 0, 0, 0
local refused = check_types()
if refused then return refused end
check_seq(seq, KEYS[6])
check_count(KEYS[6])
for at = 4, #ARGV, 8 do
  local raw, body, number = ARGV[at], ARGV[at + 1], ARGV[at + 7]
  if remove_start_url(start, start_type, raw) == 1 then
    if body == '' then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = ARGV[at + 5]}, raw))
      bads = bads + 1
    elseif number ~= '' and not settle_once(KEYS[7], number .. '|') then
      redis.call('RPUSH', bad, set_aside_record({key = start, reason = 'a copy of start URL ' ..
        number .. ', which was read already: a signed start URL is read once'}, raw))
      bads = bads + 1
    elseif queue_new(queue, order, seq, filtering, filter, body, ARGV[at + 2], ARGV[at + 3],
                     ARGV[at + 4], ARGV[at + 6]) then
      queued = queued + 1
    else
      duplicates = duplicates + 1
    end
  end
end
count_added()
return {queued, duplicates, bads}
