# shellcheck shell=bash disable=SC2154 # the caller's variables, named below
# Sourced by bench/run.sh: the redis-server masters of one benchmark run, and only those.
# Each is started here on 127.0.0.1, recorded by pid (in servers_started and a pid file
# under $servers_dir), and stopped by that pid; no other process is ever signalled.
# The caller sets servers_dir (a directory of its own) and servers_knob (what to change
# when a port is taken, for the messages).

servers_started=()  # "pid:port"

# servers_check_free PORT...: fails, naming the first port that cannot be bound on
# 127.0.0.1 (a server listens there) and the knob that moves the ports.
servers_check_free() {
  local busy
  busy=$(python3 - "$@" <<'PY'
import socket, sys
for port in sys.argv[1:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server binds
    try:
        s.bind(("127.0.0.1", int(port)))
    except OSError:
        print(port)
        break
    finally:
        s.close()
PY
  )
  [[ -z $busy ]] && return 0
  echo "bench: port $busy is already in use (ports wanted: $*); this run starts its own" \
       "masters and never reuses or stops another's: choose other ports with $servers_knob" >&2
  return 1
}

# servers_ours PID: PID is still a redis-server (not a pid reused since).
servers_ours() {
  [[ -r /proc/$1/cmdline ]] && grep -qa redis-server "/proc/$1/cmdline"
}

# servers_start PORT...: one in-memory redis-server per port, up once each answers with
# its own pid (not a stranger's on the same port).
servers_start() {
  local port pid answering
  mkdir -p "$servers_dir"
  for port in "$@"; do
    mkdir -p "$servers_dir/$port"
    # fd 9 is the caller's lock on its directory: not the server's to keep.
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$servers_dir/$port" --logfile "$servers_dir/$port/redis.log" >/dev/null 2>&1 9>&- &
    pid=$!
    servers_started+=("$pid:$port")
    echo "$pid" >"$servers_dir/redis-$port.pid"
  done
  for port in "$@"; do
    pid=$(<"$servers_dir/redis-$port.pid")
    for _ in $(seq 100); do  # at most 5 s
      answering=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' |
                  sed -n 's/^process_id://p' || true)
      [[ $answering == "$pid" ]] && continue 2
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "bench: the redis-server for port $port exited (is the port in use? choose other" \
             "ports with $servers_knob); its log: $servers_dir/$port/redis.log" >&2
        return 1
      fi
      sleep 0.05
    done
    echo "bench: the redis-server on port $port did not answer within 5 s; its log:" \
         "$servers_dir/$port/redis.log" >&2
    return 1
  done
}

# servers_stop: stops every server servers_start started, by pid, and waits for each.
servers_stop() {
  local entry pid
  for entry in "${servers_started[@]}"; do
    pid=${entry%%:*}
    if servers_ours "$pid"; then kill "$pid" 2>/dev/null || true; fi
  done
  for entry in "${servers_started[@]}"; do
    pid=${entry%%:*}
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if servers_ours "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
    rm -f "$servers_dir/redis-${entry#*:}.pid"
  done
  servers_started=()
}
