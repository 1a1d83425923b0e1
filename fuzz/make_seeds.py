#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/. Run it again when the handshake
changes (lib/sansio/node_handshake.cpp) or scripts are added (lib/sansio/scripts.cpp:
all_scripts); the fuzzers find their way from close seeds too."""
import os
import shutil

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
SCRIPTS = 11  # len(all_scripts())


def write(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode("latin-1") if isinstance(data, str) else data)


def bulk(s):
    return "$%d\r\n%s\r\n" % (len(s), s)


def array(*elements):
    return "*%d\r\n" % len(elements) + "".join(elements)


def info(run_id, aof):
    return bulk("# Server\r\nredis_version:7.0.15\r\nrun_id:%s\r\n\r\n"
                "# Persistence\r\nloading:0\r\naof_enabled:%s\r\n" % (run_id, aof))


def handshake(run_id="a" * 40, aof="0", fsync="everysec", auth=False, cached=True):
    """The answers to AUTH, SCRIPT EXISTS and INFO server persistence, then to the second
    round when there is one: SCRIPT LOAD of each missing script, CONFIG GET with AOF on."""
    out = "+OK\r\n" if auth else ""
    out += array(*([":1\r\n" if cached else ":0\r\n"] * SCRIPTS))
    out += info(run_id, aof)
    if not cached:
        out += bulk("f" * 40) * SCRIPTS
    if aof == "1":
        out += array(bulk("appendfsync"), bulk(fsync))
    return out


# Answers to the four requests fuzz_reply queues: SET NX PX, EVALSHA release, EVAL acquire
# script (fenced: {granted, counter}), GET.
granted = "+OK\r\n" + ":1\r\n" + array(":1\r\n", ":5\r\n") + bulk("0123456789abcdef0123456789abcdef")
refused = "$-1\r\n:0\r\n*2\r\n:0\r\n:7\r\n$-1\r\n"
noscript = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
loading = "-LOADING Redis is loading the dataset in memory\r\n"
errors = [
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    "-READONLY You can't write against a read only replica.\r\n",
    "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    "-ERR unknown command 'EVALSHA', with args beginning with: \r\n",
]

reply = "fuzz_reply"
# byte 0: mode (1 connect, 2 AUTH, 4 expire), byte 1: split point (0..255 of the rest)
write(reply, "idle-granted", "\x00\x80" + granted)
write(reply, "idle-refused", "\x00\x80" + refused)
write(reply, "idle-noscript", "\x00\x80+OK\r\n" + noscript + noscript + "$-1\r\n")
write(reply, "idle-loading", "\x00\x80" + loading * 4)
write(reply, "idle-errors", "\x00\x80" + "".join(errors))
write(reply, "idle-too-many", "\x00\x80" + granted + "+OK\r\n")
write(reply, "idle-nested", "\x00\x80+OK\r\n:1\r\n*2\r\n*1\r\n:1\r\n$-1\r\n*-1\r\n")
write(reply, "idle-big-bulk", "\x00\x80$1000000000\r\nxxxxxxxx")
write(reply, "idle-garbage", "\x00\x80\x00\x17garbage\xff\r\n")
hs = handshake()
write(reply, "connected-granted", "\x01" + chr(len(hs) * 255 // (len(hs) + len(granted))) + hs + granted)
write(reply, "connected-auth", "\x03\x80" + handshake(auth=True) + refused)
write(reply, "connected-auth-refused", "\x03\x80-WRONGPASS invalid username-password pair\r\n")
write(reply, "connected-persisting", "\x01\x80" + handshake(aof="1", fsync="always") + granted)
write(reply, "connected-loading", "\x01\x20" + loading + hs + granted)
write(reply, "connected-scripts-missing", "\x01\x80" + handshake(cached=False) + granted)
# Before Redis 7: INFO with two sections is a syntax error, then plain INFO and CONFIG GET.
exists = array(*([":1\r\n"] * SCRIPTS))
write(reply, "connected-old-server",
      "\x01\x80" + exists + "-ERR syntax error\r\n" + info("a" * 40, "1") +
      array(bulk("appendfsync"), bulk("always")) + granted)
write(reply, "connected-info-error",
      "\x01\x80" + exists + "-ERR unknown command 'INFO'\r\n" * 2 +
      "-ERR unknown command 'CONFIG'\r\n" + granted)
# A restart: the first handshake, a protocol error that drops the connection, then a second
# handshake with another run_id (the split falls right after the garbage).
first = hs + "\x00garbage\r\n"
second = handshake(run_id="b" * 40)
write(reply, "connected-restart",
      "\x01" + chr(len(first) * 255 // (len(first) + len(second)) + 1) + first + second + granted)
write(reply, "connected-expired", "\x05\x80" + hs + granted + granted)
channel = "redlock:wake:fuzz"
message = array(bulk("message"), bulk(channel), bulk("0123456789abcdef"))
subscribed = array(bulk("subscribe"), bulk(channel), ":1\r\n")
write(reply, "subscriber", "\x09\x80" + subscribed + message + "+OK\r\n" + message + granted[5:])
write(reply, "subscriber-refused", "\x09\x80-NOPERM this user has no permissions\r\n" + message)
write(reply, "idle-message", "\x08\x80" + message + granted)

config = "fuzz_config"
os.makedirs(os.path.join(here, "corpus", config), exist_ok=True)
for name in ("local.json", "docker.json", "single-node.json"):
    shutil.copy(os.path.join(root, "configs", name), os.path.join(here, "corpus", config, name))
write(config, "full.json", """{
  "nodes": [{"host": "a.example", "port": 7001}, {"unix": "/run/redis/r.sock"},
            {"host": "::1", "port": 6379}],
  "key_prefix": "locks:", "fence_prefix": "fences:",
  "connect_timeout_ms": 200, "request_timeout_ms": 50,
  "clock_drift_factor": 0.01, "clock_drift_floor_ms": 2, "restart_quarantine_ms": 0,
  "lock": {"ttl_ms": 10000, "min_validity_ms": 1, "auto_renew": true,
           "renew_fraction": 0.5, "fencing": true},
  "retry": {"attempts": 3, "delay_ms": 200, "jitter_ms": 100},
  "reconnect": {"min_delay_ms": 50, "max_delay_ms": 2000},
  "auth": {"username": "locker", "password_env": "REDLOCK_FUZZ_PASSWORD"}
}
""")
write(config, "bad-port.json", '{"nodes": [{"host": "127.0.0.1", "port": 70000}]}')
write(config, "duplicate.json", '{"nodes": [{"host": "h"}], "nodes": []}')
write(config, "float-ms.json", '{"nodes": [{"host": "h"}], "request_timeout_ms": 100.0}')
write(config, "unknown.json", '{"nodes": [{"host": "h"}], "ttl_msec": 5}')
write(config, "nested.json", '{"nodes": [{"host": "h"}], "lock": {"ttl_ms": [[[[1]]]]}}')
write(config, "tls.json", '{"nodes": [{"host": "h"}, {"host": "p", "tls": false}], '
      '"tls": {"server_name": "redis.internal", "verify": false}}')
write(config, "unicode.json", '{"nodes": [{"host": "h\\u00e9\\ud83d\\ude00"}], "key_prefix": "\\u0000"}')

quorum = "fuzz_quorum"
# 24 bytes of validity parameters (ttl, floor, factor, elapsed, later), then tallies:
# a node count byte and one outcome byte per node (0 yes, 1 refused, 2 failed).
params = bytes([0x10, 0x27, 0, 0, 2, 0, 0, 0, 0x8f, 0xc2, 0xf5, 0x04]) + bytes(8) + bytes([0x40, 0x42, 0x0f, 0])
write(quorum, "five-nodes", params + bytes([4, 0, 0, 1, 2, 0]))
write(quorum, "three-failed", params + bytes([4, 2, 2, 2, 0, 0]))
write(quorum, "many", params + bytes([254]) + bytes(i % 3 for i in range(255)))
