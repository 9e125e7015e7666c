#!/usr/bin/env bash
# Record a small corpus of real programs as native xlat traces (docs/trace-format.md).
#
#   scripts/record-corpus.sh [--install] [--scale N] OUTDIR [NAME...]
#
# NAMEs (default: all): gups, python-dict, sqlite, redis, jellyfish. A program whose
# Debian package is missing is skipped with a message, unless --install (root: apt-get install
# sqlite3 redis-server redis-tools jellyfish gcc). --scale multiplies the work (1). memcached is
# not included: under valgrind its setrlimit(RLIMIT_NOFILE) fails and it refuses to start.
# Servers are started by this script under the recorder, bound to 127.0.0.1 only, driven by a
# bounded load, and stopped by it. Each trace is followed by its `xlat trace info` summary in
# OUTDIR/NAME.txt. Needs `xlat` on PATH (make build; . .venv/bin/activate).
set -euo pipefail
install=0
scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --install) install=1; shift ;;
    --scale) scale="$2"; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { sed -n 2,12p "$0" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(gups python-dict sqlite redis jellyfish)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
command -v xlat >/dev/null || { echo "xlat not on PATH (make build; . .venv/bin/activate)" >&2; exit 2; }

need() { # need COMMAND PACKAGE: 0 when COMMAND is available (installing PACKAGE if asked)
  command -v "$1" >/dev/null && return 0
  if [ "$install" = 1 ]; then apt-get install -y -qq "$2" >/dev/null && command -v "$1" >/dev/null && return 0; fi
  echo "skip: $1 not installed (Debian package $2; rerun with --install)" >&2
  return 1
}

rec() { # rec NAME -- PROGRAM ARGS...
  local name="$1"; shift; shift
  echo "== $name: $*" >&2
  xlat trace record -o "$out/$name.xlat" -- "$@"
  xlat trace info "$out/$name.xlat" > "$out/$name.txt"
}

wait_port() { # wait_port PORT: until something listens on 127.0.0.1:PORT (60 s at most)
  for _ in $(seq 600); do
    python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $1)))" && return 0
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1" >&2; return 1
}

for name in "${names[@]}"; do
  case "$name" in
    gups)
      need gcc gcc || continue
      cat > "$work/gups.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* HPCC RandomAccess: random read-modify-write updates of a table of 2^logn u64. */
int main(int argc, char **argv) {
    int logn = argc > 1 ? atoi(argv[1]) : 22;
    long updates = argc > 2 ? atol(argv[2]) : 4L << logn;
    uint64_t n = 1ULL << logn, *t = malloc(n * sizeof *t), x = 1;
    for (uint64_t i = 0; i < n; i++) t[i] = i;
    for (long i = 0; i < updates; i++) {
        x = (x << 1) ^ ((int64_t)x < 0 ? 7 : 0);
        t[x & (n - 1)] ^= x;
    }
    printf("%llu\n", (unsigned long long)t[1]);
    return 0;
}
C
      gcc -O2 -o "$work/gups" "$work/gups.c"
      rec gups -- "$work/gups" 22 $((8000000 * scale))
      ;;
    python-dict)
      need python3 python3 || continue
      rec python-dict -- python3 -c "d = {i: str(i) for i in range($((200000 * scale)))}; print(len(d))"
      ;;
    sqlite)
      need sqlite3 sqlite3 || continue
      python3 - "$work/db.sql" "$scale" <<'PY'
import random, sys
random.seed(1)
n = 50000 * int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);\nBEGIN;\n")
    for i in range(n):
        f.write(f"INSERT INTO t VALUES({i},{random.randrange(1000)},'{random.random():.12f}');\n")
    f.write("COMMIT;\nCREATE INDEX tk ON t(k);\n")
PY
      sqlite3 "$work/db.sqlite" < "$work/db.sql"
      rec sqlite -- sqlite3 "$work/db.sqlite" "SELECT k, count(*), max(v) FROM t GROUP BY k ORDER BY 2 DESC LIMIT 5;"
      ;;
    redis)
      need redis-server redis-server || continue
      need redis-benchmark redis-tools || continue
      port=16379
      xlat trace record -o "$out/redis.xlat" -- redis-server --port $port --bind 127.0.0.1 \
        --save '' --appendonly no --daemonize no > "$work/redis.log" 2>&1 &
      pid=$!
      wait_port $port || { cat "$work/redis.log" >&2; exit 1; }
      redis-benchmark -h 127.0.0.1 -p $port -n $((20000 * scale)) -c 4 -t set,get -q
      redis-cli -h 127.0.0.1 -p $port shutdown nosave || true
      wait $pid
      xlat trace info "$out/redis.xlat" > "$out/redis.txt"
      ;;
    jellyfish)
      need jellyfish jellyfish || continue
      python3 - "$work/reads.fa" "$scale" <<'PY'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(2000 * int(sys.argv[2])):
        f.write(f">r{i}\n{''.join(random.choice('ACGT') for _ in range(100))}\n")
PY
      rec jellyfish -- jellyfish count -m 21 -s 4M -t 1 -C -o "$work/mers.jf" "$work/reads.fa"
      ;;
    *) echo "unknown corpus program '$name'" >&2; exit 2 ;;
  esac
done
ls -la "$out"
