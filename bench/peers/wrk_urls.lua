-- bench/run.sh's ceiling: wrk requests every page of the site in turn (paths from URLS_FILE, one
-- per line), so nginx serves the same files a crawl fetches.
local paths = {}
for line in io.lines(os.getenv("URLS_FILE")) do paths[#paths + 1] = line end
local next_path = 0

request = function()
  next_path = next_path % #paths + 1
  return wrk.format("GET", paths[next_path])
end
