#!/usr/bin/env bash
# Build the xlat Valgrind tool against Debian's valgrind package (static core and VEX libraries,
# pub_tool_*.h headers, valgrind.pc). Usage: build.sh OUT_DIR. Output: OUT_DIR/lib/, a
# VALGRIND_LIB directory holding the stock tools (symlinks) plus ours as `xlat-amd64-linux`.
# `xlat trace setup` (or the first `xlat trace record`) runs it with OUT_DIR in the user's cache
# folder, so that the source can sit in a read-only installation. Exits non-zero, with the
# reason, when the tool cannot be built; `xlat trace record` then falls back to lackey.
#
# Copyright (C) 2026 the xlat authors. GPL-2.0-or-later (see xl_main.c).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out="$1"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "pkg-config is not installed" >&2; exit 1; }
pkg-config --exists valgrind || { echo "valgrind.pc not found: the valgrind package lacks the tool libraries" >&2; exit 1; }
platform="$(pkg-config --variable=platform valgrind)"
[ "$platform" = amd64-linux ] || { echo "only amd64-linux is supported, valgrind reports $platform" >&2; exit 1; }
libdir="$(pkg-config --variable=libdir valgrind)/valgrind"
incdir="$(pkg-config --variable=includedir valgrind)"
load="$(pkg-config --variable=valt_load_address valgrind)"
stock="$(dirname "$(readlink -f "$(command -v valgrind)")")/../libexec/valgrind"
[ -x "$stock/lackey-amd64-linux" ] || stock=/usr/libexec/valgrind
[ -e "$stock/vgpreload_core-amd64-linux.so" ] || { echo "cannot find valgrind's libexec directory" >&2; exit 1; }

mkdir -p "$out/lib"
CC="${CC:-gcc}"
"$CC" -O2 -g -m64 -std=gnu99 -Wall -Wno-unused-parameter \
  -fno-stack-protector -fno-builtin -fno-strict-aliasing -fomit-frame-pointer -fno-pie \
  -DVGA_amd64=1 -DVGO_linux=1 -DVGP_amd64_linux=1 -DVGPV_amd64_linux_vanilla=1 \
  -I"$incdir" -c "$here/xl_main.c" -o "$out/xl_main.o"
"$CC" -o "$out/xlat-amd64-linux.tmp" -m64 -static -nodefaultlibs -nostartfiles -u _start -no-pie \
  -Wl,--build-id=none "-Wl,-Ttext-segment=$load" \
  "$out/xl_main.o" -L"$libdir" -lcoregrind-amd64-linux -lvex-amd64-linux -lgcc
for f in "$stock"/*; do
  ln -sfn "$f" "$out/lib/$(basename "$f")"
done
mv "$out/xlat-amd64-linux.tmp" "$out/lib/xlat-amd64-linux"
# Check that valgrind accepts it.
VALGRIND_LIB="$out/lib" valgrind --tool=xlat -q /bin/true >/dev/null 2>&1 || { echo "valgrind cannot run the built tool" >&2; exit 1; }
echo "built $out/lib/xlat-amd64-linux"
