#!/usr/bin/env bash
# Measures one redis-benchmark run against a fresh server and prints its
# rate with the server's CPU time per request (utime + stime from
# /proc/PID/stat, Linux), a figure the machine's load moves far less than
# the rate (issue 29).
#
#   server/scripts/cpu-per-op.sh BIN|redis PORT set|get [PIPELINE]
#
# BIN is a kvserver binary (one node on a new directory); redis starts
# Redis with appendonly yes, appendfsync always. get first fills 100,000
# keys with pipelined SETs. N (default 100000) requests; WARM=1 also fills
# before a set run and reads every key once before it (a warm string
# cache).
set -u
bin=$1; port=$2; t=$3; P=${4:-1}; n=${N:-100000}
d=$(mktemp -d)
if [ "$bin" = redis ]; then
  redis-server --bind 127.0.0.1 --port "$port" --dir "$d" --appendonly yes --appendfsync always --save '' --daemonize no --logfile "$d/log" &
else
  "$bin" -dir "$d/kv" -addr "127.0.0.1:$port" -raft "127.0.0.1:$((port + 1000))" 2>"$d/log" &
fi
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
until redis-cli -p "$port" SET warm 1 2>/dev/null | grep -q OK; do sleep 0.1; done
if [ "$t" = get ] || [ -n "${WARM:-}" ]; then redis-benchmark -p "$port" -c 50 -r 100000 -n 100000 -t set -P 16 -q >/dev/null 2>&1; fi
if [ -n "${WARM:-}" ]; then redis-benchmark -p "$port" -c 50 -r 100000 -n 300000 -t get -P 16 -q >/dev/null 2>&1; fi
ticks=$(getconf CLK_TCK)
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
out=$(redis-benchmark -p "$port" -c 50 -r 100000 -n "$n" -t "$t" -P "$P" -q 2>/dev/null | tr '\r' '\n' | grep 'per second' | tail -1)
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
echo "$(basename "$bin") $t P=$P $out cpu $(((cpu1 - cpu0) * 1000000000 / ticks / n))ns/op load $(uptime | sed 's/.*average: //')"
