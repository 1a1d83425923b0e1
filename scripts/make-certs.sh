#!/usr/bin/env bash
# Makes what TLS to the nodes needs, with openssl: a CA, a server certificate for the
# given names and IP addresses (its subjectAltName, which the client verifies), and a
# client certificate (for servers that ask for one: --tls-auth-clients yes).
#
# Usage: scripts/make-certs.sh DIR NAME_OR_IP...
#   scripts/make-certs.sh /etc/redlock/tls redis-a.internal 10.0.0.12 127.0.0.1
# Writes into DIR (created, never overwritten):
#   ca.crt ca.key          the CA: give ca.crt to clients ("tls": {"ca_file"}) and servers
#   server.crt server.key  for every redis-server (--tls-cert-file, --tls-key-file)
#   client.crt client.key  for clients ("tls": {"cert_file", "key_file"})
# Keys are EC P-256, certificates valid for 825 days. Keep the *.key files private (0600).
set -euo pipefail

usage() { echo "usage: $0 DIR NAME_OR_IP..." >&2; exit 64; }
[[ $# -ge 2 ]] || usage
dir=$1
shift
command -v openssl >/dev/null || { echo "make-certs: openssl is missing (apt-get install openssl)" >&2; exit 69; }
for f in ca.crt ca.key server.crt server.key client.crt client.key; do
  [[ ! -e $dir/$f ]] || { echo "make-certs: $dir/$f exists; not overwriting it" >&2; exit 73; }
done
mkdir -p "$dir"
umask 077

san=""
for name in "$@"; do
  if [[ $name =~ ^[0-9.]+$ || $name == *:* ]]; then
    san+="${san:+,}IP:$name"
  else
    san+="${san:+,}DNS:$name"
  fi
done

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key "$dir/ca.key"
openssl req -x509 -new -key "$dir/ca.key" -days 825 -subj "/CN=redlock CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$dir/ca.crt"

sign() {  # sign NAME CN EXTENSIONS
  key "$dir/$1.key"
  openssl req -new -key "$dir/$1.key" -subj "/CN=$2" -out "$dir/$1.csr"
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 825 -extfile <(printf '%s\n' "$3") -out "$dir/$1.crt" 2>/dev/null
  rm -f "$dir/$1.csr"
}
sign server "$1" "subjectAltName=$san
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature"
sign client "redlock client" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature"
rm -f "$dir/ca.srl"
chmod 0644 "$dir"/*.crt

echo "make-certs: in $dir: ca.crt, server.crt/.key for $san, client.crt/.key" >&2
