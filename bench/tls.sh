#!/usr/bin/env bash
# TLS beside plain TCP: redlock_load --mode lib at 1 and 64 locks in flight on
# three local masters that listen on both a plain and a TLS port, with
# certificates made here by openssl (verification on, by IP address).
#
#   bench/tls.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#       # defaults: build/bench-release, 5 s per phase, 3 rounds
#
# Each round runs plain then TLS at 1 in flight, then at 64, so that the pairs
# compared ran back to back. Prints one summary line per phase (throughput,
# p50, p99, client CPU and allocations per lock) and leaves the JSON in
# $BUILD_DIR/bench-tls/ (<transport>-c<in flight>-r<round>.json). Last, it
# counts the client's heap allocations per TLS round trip without sockets
# (redlock_tls_records), the part of a lock's allocations that is OpenSSL's. The masters (ports 7301-7303
# plain, 7311-7313 TLS) are stopped by pid when it ends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build/bench-release}
seconds=${2:-5}
rounds=${3:-3}
load=$build/bench/redlock_load
records=$build/bench/redlock_tls_records
for tool in "$load" "$records"; do
  [[ -x $tool ]] || { echo "bench/tls.sh: $tool is not built" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "bench/tls.sh: redis-server is not on PATH" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench/tls.sh: openssl is not on PATH" >&2; exit 1; }

out=$build/bench-tls
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$out"

ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -days 2 -subj /CN=redlock-bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req "${ec[@]}" -subj /CN=redlock-bench-server \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$work/server.ext"
openssl x509 -req -days 2 -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -CAcreateserial -extfile "$work/server.ext" -out "$work/server.crt" 2>/dev/null

for i in 1 2 3; do
  redis-server --port "730$i" --tls-port "731$i" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize no --logfile "$work/redis-$i.log" --tls-cert-file "$work/server.crt" \
    --tls-key-file "$work/server.key" --tls-ca-cert-file "$work/ca.crt" \
    --tls-auth-clients no &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 100); do
    redis-cli -p "730$i" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
done

# config PORT-PREFIX [TLS-OBJECT]: the bench's three-node settings on 73x1..73x3.
config() {
  local prefix=$1 tls=${2:-}
  printf '{"nodes": [{"host": "127.0.0.1", "port": %s1}, {"host": "127.0.0.1", "port": %s2},
             {"host": "127.0.0.1", "port": %s3}],
  "connect_timeout_ms": 200, "request_timeout_ms": 50,
  "lock": {"ttl_ms": 10000}, "retry": {"attempts": 3, "delay_ms": 200, "jitter_ms": 100}%s}\n' \
    "$prefix" "$prefix" "$prefix" "$tls"
}
config 730 >"$work/plain.json"
config 731 ", \"tls\": {\"ca_file\": \"$work/ca.crt\"}" >"$work/tls.json"

for round in $(seq "$rounds"); do
  for inflight in 1 64; do
    for transport in plain tls; do
      timeout $((seconds * 2 + 60)) "$load" --config "$work/$transport.json" \
        --stats-config "$work/plain.json" --mode lib --concurrency "$inflight" \
        --duration-s "$seconds" --warmup-s 1 --progress never \
        --label "$transport-c$inflight-r$round" --json "$out/$transport-c$inflight-r$round.json"
    done
  done
done
"$records" "$work/server.crt" "$work/server.key" "$work/ca.crt"
