#!/usr/bin/env bash
# Measures kvserver against Redis with every write on disk before its reply
# (appendonly yes, appendfsync always), with redis-benchmark, on loopback
# only (issue 29). Needs redis-server and redis-benchmark (Debian:
# apt-get install redis-tools redis-server) and Go.
#
#   server/scripts/bench-redis.sh [kvserver|kvserver3|redis|baseline ...]
#
# kvserver: one node; kvserver3: a three-node cluster in three processes,
# the benchmark against its leader; baseline: one node of another kvserver
# binary, named by BASELINE (an older build, for before/after in the same
# minutes). Each line is one redis-benchmark run, with the load average
# (uptime) taken just before it: the machine is shared. REPEAT (default 1)
# runs each measurement that many times, the targets taking turns; the
# medians per target and measurement follow at the end. TESTS (default
# "set get") picks redis-benchmark's tests. GOMAXPROCS in the environment
# reaches the kvserver processes (Go programs) and not Redis; the first
# line of the output says what was set. SETTLE (seconds, default 0)
# sleeps before each run: a kvserver flushes and compacts for a while
# after a burst of writes, on the cores the next target's run then
# shares.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kvserver redis)
N=${N:-100000}
REPEAT=${REPEAT:-1}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# KVSERVER names another kvserver binary to measure (an older build, say).
if [ -n "${KVSERVER:-}" ]; then cp "$KVSERVER" "$work/kvserver"; else go build -o "$work/kvserver" ./cmd/kvserver; fi

waitport() {
  for _ in $(seq 100); do
    redis-cli -h 127.0.0.1 -p "$1" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "nothing answers on 127.0.0.1:$1" >&2; return 1
}

echo "bench-redis: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, GOMAXPROCS=${GOMAXPROCS:-unset}, REPEAT=$REPEAT, N=$N, SETTLE=${SETTLE:-0}"

declare -A port
for target in "${targets[@]}"; do
  case $target in
  redis)
    mkdir -p "$work/redis"
    redis-server --bind 127.0.0.1 --port 6391 --dir "$work/redis" --appendonly yes --appendfsync always \
      --save '' --daemonize no --logfile "$work/redis/log" &
    pids+=($!); waitport 6391
    port[redis]=6391
    ;;
  kvserver)
    "$work/kvserver" -dir "$work/kv" -addr 127.0.0.1:6392 -raft 127.0.0.1:7392 2>"$work/kv.log" &
    pids+=($!); waitport 6392
    until redis-cli -h 127.0.0.1 -p 6392 SET warm 1 2>/dev/null | grep -q OK; do sleep 0.1; done
    port[kvserver]=6392
    ;;
  baseline)
    cp "${BASELINE:?BASELINE names the binary of the baseline target}" "$work/baseline"
    "$work/baseline" -dir "$work/base" -addr 127.0.0.1:6396 -raft 127.0.0.1:7396 2>"$work/base.log" &
    pids+=($!); waitport 6396
    until redis-cli -h 127.0.0.1 -p 6396 SET warm 1 2>/dev/null | grep -q OK; do sleep 0.1; done
    port[baseline]=6396
    ;;
  kvserver3)
    P=n1=127.0.0.1:7393,n2=127.0.0.1:7394,n3=127.0.0.1:7395
    for i in 1 2 3; do
      "$work/kvserver" -id n$i -dir "$work/kv3-$i" -addr 127.0.0.1:639$((i + 2)) -raft 127.0.0.1:739$((i + 2)) -peers $P 2>"$work/kv3-$i.log" &
      pids+=($!)
    done
    for i in 1 2 3; do waitport 639$((i + 2)); done
    leader=""
    for _ in $(seq 100); do
      for i in 1 2 3; do
        if redis-cli -h 127.0.0.1 -p 639$((i + 2)) INFO replication 2>/dev/null | grep -q 'role:master'; then leader=639$((i + 2)); fi
      done
      [ -n "$leader" ] && redis-cli -h 127.0.0.1 -p "$leader" SET warm 1 2>/dev/null | grep -q OK && break
      sleep 0.1
    done
    port[kvserver3]=$leader
    ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
  esac
done

# Every measurement runs on each target in turn, so that the targets of a
# row share the machine's load of that moment (fsync latency on this
# shared disk moves several-fold within minutes).
for p in "" 16; do
  for t in ${TESTS:-set get}; do
    for _ in $(seq "$REPEAT"); do
      for target in "${targets[@]}"; do
        sleep "${SETTLE:-0}"
        load=$(uptime | sed 's/.*load average: //')
        args=(-h 127.0.0.1 -p "${port[$target]}" -c 50 -r 100000 -n "$N" -t "$t" -q)
        [ -n "$p" ] && args+=(-P "$p")
        out=$(redis-benchmark "${args[@]}" 2>/dev/null | tr '\r' '\n' | grep -E 'requests per second' | tail -1)
        printf '%-9s %-4s P=%-3s %s   load %s\n' "$target" "$t" "${p:-1}" "$out" "$load"
        rate=$(sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' <<<"$out")
        echo "$target $t ${p:-1} ${rate:-0}" >>"$work/rates"
      done
    done
  done
done

echo "medians of $REPEAT (requests per second):"
sort -k1,1 -k2,2 -k3,3n -k4,4n "$work/rates" | awk '
  function flush() { if (n) printf "%-9s %-4s P=%-3s %10.0f   (of %d: %s)\n", k1, k2, k3, v[int((n + 1) / 2)], n, all }
  { key = $1 " " $2 " " $3
    if (key != prev) { flush(); n = 0; all = ""; prev = key; k1 = $1; k2 = $2; k3 = $3 }
    v[++n] = $4; all = all (all == "" ? "" : " ") int($4) }
  END { flush() }'

