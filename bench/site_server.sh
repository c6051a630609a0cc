# Sourced by the crawl benchmarks: generates the benchmark site and serves it with nginx on a
# free loopback port (config, pid and logs in WORK, which the caller removes).
#
#   source "$here/site_server.sh"; serve_site "$work" "$pages"   # sets $port and $start
#   stop_site "$work"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

serve_site() {
  local work=$1 pages=$2
  command -v nginx >/dev/null || { echo "needs nginx: apt-get install nginx-light" >&2; exit 1; }
  chmod 755 "$work"  # nginx workers drop root and must read the site
  python3 "$(dirname "${BASH_SOURCE[0]}")/make_site.py" "$work/site" "$pages"
  port=$(free_port)
  mkdir -p "$work/nginx"
  cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx/error.log;
daemon on;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  keepalive_requests 1000000;
  sendfile on;
  types { text/html html; }
  server { listen 127.0.0.1:$port; root $work/site; }
}
CONF
  nginx -c "$work/nginx.conf" -p "$work"
  start="http://127.0.0.1:$port/0.html"
}

stop_site() {
  kill "$(cat "$1/nginx.pid" 2>/dev/null)" 2>/dev/null || true
}
