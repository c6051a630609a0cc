# Sourced by the crawl benchmarks: generates the benchmark site (site_generator.py) and serves it
# with nginx on a free loopback port; config, pid, site and logs live in WORK, which the caller
# removes.
#
#   source "$here/site_server.sh"
#   serve_site "$work" "$pages"       # sets $port and $start; WORK/expected.txt lists the pages
#   serve_site "$work" "$pages" --shape heavy   # further arguments go to site_generator.py
#   serve_dir "$work" /usr/share/doc/python3.11/html   # a directory as it is
#   SITE_HOSTS=8 serve_site "$work" "$pages"     # the same site on 127.0.0.1 ... 127.0.0.8 too:
#                                                # $starts lists each host's start URL
#   ... crawl ...
#   take_access_log "$work" NAME      # moves what nginx logged since the last call to WORK/logs/NAME.log
#   stop_site "$work"
#
# The access log has one line per request, "<epoch seconds.millis> <status> <request URI>", so
# every crawler's pages, duplicates and pages/s over time are read the same way, off the server.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_port PORT WHAT: returns once something listens on 127.0.0.1:PORT; exits after 30 s.
wait_for_port() {
  local port=$1 what=$2 try
  for try in $(seq 300); do
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && return 0
    sleep 0.1
  done
  echo "$what did not listen on port $port in 30 s" >&2
  exit 1
}

serve_site() {
  local work=$1 pages=$2; shift 2
  command -v nginx >/dev/null || { echo "needs nginx: apt-get install nginx-light" >&2; exit 1; }
  chmod 755 "$work"  # nginx workers drop root and must read the site
  port=$(free_port)
  python3 "$(dirname "${BASH_SOURCE[0]}")/site_generator.py" "$work" "$pages" \
    --base "http://127.0.0.1:$port" "$@" >&2
  start_nginx "$work" "$work/site"
}

# serve_dir WORK DIR: DIR as it is (python3-doc's HTML), as serve_site serves a generated site.
serve_dir() {
  local work=$1 dir=$2
  command -v nginx >/dev/null || { echo "needs nginx: apt-get install nginx-light" >&2; exit 1; }
  chmod 755 "$work"
  port=$(free_port)
  start_nginx "$work" "$dir"
}

# start_nginx WORK ROOT: nginx on $port (and SITE_HOSTS' addresses), serving ROOT, logging to
# WORK; sets $start and $starts.
start_nginx() {
  local work=$1 root=$2
  mkdir -p "$work/nginx" "$work/logs"
  cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx/error.log;
daemon on;
events { worker_connections 4096; }
http {
  log_format bench '\$msec \$status \$request_uri';
  access_log $work/access.log bench buffer=256k flush=1s;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  keepalive_requests 1000000;
  sendfile on;
  types { text/html html; text/css css; text/plain txt; application/xml xml; }
  server {
$(for host in $(seq "${SITE_HOSTS:-1}"); do echo "    listen 127.0.0.$host:$port;"; done)
    root $root;
    # A list page is one file whatever the order of its query arguments.
    location = /list { default_type text/html; try_files /list/\$arg_cat-\$arg_page.html =404; }
  }
}
CONF
  nginx -c "$work/nginx.conf" -p "$work"
  start="http://127.0.0.1:$port/"
  starts=$(for host in $(seq "${SITE_HOSTS:-1}"); do printf 'http://127.0.0.%s:%s/ ' "$host" "$port"; done)
  starts=${starts% }
}

take_access_log() {
  local work=$1 name=$2
  mv "$work/access.log" "$work/logs/$name.log"
  kill -USR1 "$(cat "$work/nginx.pid")"  # nginx flushes and reopens its log
  local waited=0
  while [ ! -e "$work/access.log" ] && [ $waited -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
}

stop_site() {
  kill "$(cat "$1/nginx.pid" 2>/dev/null)" 2>/dev/null || true
}

# serve_redis WORK NAME [ARGS...]: a redis-server on a free loopback port, with no persistence,
# its files in WORK/NAME; prints the port once it answers PING. ARGS go to redis-server.
serve_redis() {
  local work=$1 name=$2; shift 2
  local port
  port=$(free_port)
  mkdir -p "$work/$name"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/$name" "$@" \
    > "$work/$name/redis.log" 2>&1 &
  echo $! >> "$work/redis.pids"
  for _ in $(seq 50); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done
  echo "$port"
}

# stop_redis WORK: stops every server serve_redis started for WORK.
stop_redis() {
  [ -f "$1/redis.pids" ] && xargs -r kill < "$1/redis.pids" 2>/dev/null || true
}
