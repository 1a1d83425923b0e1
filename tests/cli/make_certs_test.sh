#!/usr/bin/env bash
# README "TLS from nothing": scripts/make-certs.sh's files are accepted by redis-server
# (TLS only, client certificates required) and by the redlock client, which verifies the
# servers' names: `check` reaches every node and shows each one's TLS verified, and `run`
# takes a lock over TLS. Three real servers on loopback, stopped by pid. Fails loudly without
# redis-server or openssl.
# Usage: make_certs_test.sh REDLOCK MAKE_CERTS
set -euo pipefail
redlock=$1 make_certs=$2
command -v redis-server >/dev/null || { echo "make_certs_test: redis-server is missing" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  local status=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done  # gone before their dir is
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
fail() { echo "make_certs_test: $*" >&2; exit 1; }

"$make_certs" "$work/tls" localhost 127.0.0.1 2>/dev/null
# The script never overwrites: a second run into the same directory is refused.
if "$make_certs" "$work/tls" localhost 2>/dev/null; then fail "make-certs.sh overwrote its files"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
nodes=""
for i in 1 2 3; do
  port=$(free_port)
  redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --tls-cert-file "$work/tls/server.crt" --tls-key-file "$work/tls/server.key" \
    --tls-ca-cert-file "$work/tls/ca.crt" --tls-auth-clients yes --dir "$work" \
    --logfile "$work/redis-$i.log" &
  pids+=($!)
  nodes+="${nodes:+, }{\"host\": \"127.0.0.1\", \"port\": $port}"
done
cat >"$work/cluster.json" <<JSON
{"nodes": [$nodes], "connect_timeout_ms": 2000, "request_timeout_ms": 500,
 "tls": {"ca_file": "$work/tls/ca.crt", "cert_file": "$work/tls/client.crt",
         "key_file": "$work/tls/client.key"}}
JSON
for _ in $(seq 50); do
  "$redlock" --config "$work/cluster.json" check >/dev/null 2>&1 && break
  sleep 0.1
done
table=$("$redlock" --config "$work/cluster.json" check 2>&1) || fail "check over TLS failed: $table"
# Each node's line says how it was reached: the protocol, the cipher, the certificate verified.
verified=$(grep -cE '^  127\.0\.0\.1:[0-9]+ .*  TLSv1\.[23] [A-Z0-9_-]+ verified$' <<<"$table" || true)
[[ $verified == 3 ]] || fail "check does not show 3 verified TLS nodes: $table"
tls=$("$redlock" --json --config "$work/cluster.json" check |
  python3 -c 'import json, sys; print(" ".join(str(n["tls"]["verified"]) for n in json.load(sys.stdin)["nodes"]))')
[[ $tls == "True True True" ]] || fail "check --json does not show 3 verified TLS nodes: $tls"
out=$("$redlock" --config "$work/cluster.json" run --resource tls-walkthrough -- sh -c 'echo "held $REDLOCK_RESOURCE"')
[[ $out == "held tls-walkthrough" ]] || fail "run over TLS printed '$out'"
# Without the client certificate the servers refuse us: the files are what makes it work.
cat >"$work/no-client-cert.json" <<JSON
{"nodes": [$nodes], "connect_timeout_ms": 2000, "request_timeout_ms": 500,
 "tls": {"ca_file": "$work/tls/ca.crt"}}
JSON
if "$redlock" --config "$work/no-client-cert.json" check >/dev/null 2>&1; then
  fail "check succeeded without the client certificate"
fi
echo "make_certs_test: ok"
