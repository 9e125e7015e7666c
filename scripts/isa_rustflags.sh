#!/usr/bin/env bash
# Prints the RUSTFLAGS of one optimized build of the core: `scripts/isa_rustflags.sh v3|v4`.
#
# v3: `-C target-cpu=x86-64-v3` (the generic level: instruction set and scheduling).
# v4: the x86-64-v4 instruction set, scheduled for AMD Zen 5 (`target-cpu=znver5` with every
#     feature the level does not have switched off). Why: stable Rust has no `tune-cpu`, and
#     the generic x86-64-v4 build was 3.6 % slower than a native build on ecpt/gups on a Zen 5
#     host, while this one is within 1 % on radix/ecpt x gups/stream (docs/performance.md,
#     "Builds"). The code it emits uses only x86-64-v4 instructions, so it runs on every CPU
#     xlat._isa loads it on (Intel AVX-512 parts included; there the Zen scheduling is merely
#     not tuned for them).
# What must stay true: the v4 flags enable exactly the features of `target-cpu=x86-64-v4`. The
# script checks that with `rustc --print cfg` and fails otherwise (a newer rustc whose znver5
# gains features is caught here, not on a user's CPU). A rustc that does not know znver5 gets
# the generic level.
set -euo pipefail
level=${1:?usage: scripts/isa_rustflags.sh v3|v4}
RUSTC=${RUSTC:-rustc}

features() { # the target features a set of flags enables, one per line, sorted
  "$RUSTC" --print cfg "$@" | sed -n 's/^target_feature="\(.*\)"$/\1/p' | sort
}

case "$level" in
  v3) echo "-C target-cpu=x86-64-v3" ;;
  v4)
    if ! "$RUSTC" --print target-cpus | grep -qw znver5; then
      echo "-C target-cpu=x86-64-v4"
      exit 0
    fi
    extra=$(comm -23 <(features -C target-cpu=znver5) <(features -C target-cpu=x86-64-v4) \
      | sed 's/^/-/' | paste -sd, -)
    flags="-C target-cpu=znver5${extra:+ -C target-feature=$extra}"
    # shellcheck disable=SC2086 # flags are words on purpose
    if ! diff <(features $flags 2>/dev/null) <(features -C target-cpu=x86-64-v4) >/dev/null; then
      echo "isa_rustflags.sh: '$flags' does not give exactly x86-64-v4's features" >&2
      exit 1
    fi
    echo "$flags"
    ;;
  *) echo "isa_rustflags.sh: unknown level '$level' (v3 or v4)" >&2; exit 2 ;;
esac
