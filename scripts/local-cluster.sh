#!/usr/bin/env bash
# Starts or stops the independent Redis masters named in a config file
# (default configs/local.json: 127.0.0.1:7001-7005). Each runs as a plain
# redis-server process in the foreground of its own background job; pids and
# logs live under .run/ and stop kills exactly those pids.
#   scripts/local-cluster.sh start [CONFIG]
#   scripts/local-cluster.sh stop  [CONFIG]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
action=${1:-}
config=${2:-$root/configs/local.json}
run_dir=$root/.run

[[ -f $config ]] || { echo "local-cluster: no such config: $config" >&2; exit 78; }
ports=$(grep -o '"port"[[:space:]]*:[[:space:]]*[0-9]*' "$config" | grep -o '[0-9]*$')
[[ -n $ports ]] || { echo "local-cluster: no TCP ports in $config" >&2; exit 78; }

start() {
  command -v redis-server >/dev/null || { echo "local-cluster: redis-server is not installed" >&2; exit 69; }
  mkdir -p "$run_dir"
  for port in $ports; do
    pidfile=$run_dir/redis-$port.pid
    if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      continue  # already ours and running
    fi
    # In-memory nodes for a local demo; production settings are in docker-compose.yml.
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$run_dir" --logfile "$run_dir/redis-$port.log" >/dev/null 2>&1 &
    echo $! >"$pidfile"
  done
  for port in $ports; do
    pid=$(cat "$run_dir/redis-$port.pid")
    for _ in $(seq 100); do
      # The server answering must be the one we started, not a stranger on the port.
      # Not up yet is not an error: the pipeline fails until the port is bound.
      answering=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true)
      if [[ $answering == "$pid" ]]; then continue 2; fi
      if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$run_dir/redis-$port.pid"
        echo "local-cluster: redis-server for port $port exited (is the port in use by another" \
             "process?); see $run_dir/redis-$port.log" >&2
        stop  # leave nothing of ours running
        exit 69
      fi
      sleep 0.05
    done
    echo "local-cluster: redis on port $port did not answer; see $run_dir/redis-$port.log" >&2
    stop
    exit 69
  done
  echo "local-cluster: masters up on ports" $ports
}

stop() {
  for port in $ports; do
    pidfile=$run_dir/redis-$port.pid
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case $action in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop [CONFIG]" >&2; exit 64 ;;
esac
