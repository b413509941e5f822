#!/usr/bin/env bash
# test-c-api.sh — the C API test by hand: builds varve's C library
# (crates/varve-ffi) in release, compiles crates/varve-ffi/tests/c/test_varve.c
# against include/varve.h with AddressSanitizer + UBSan, and runs it.
#
#   scripts/test-c-api.sh            # release build, ASan + UBSan
#   PROFILE=debug scripts/test-c-api.sh
#   SANITIZE= scripts/test-c-api.sh  # no sanitizers
#   CC=clang scripts/test-c-api.sh
#
# `cargo test -p varve-ffi` runs the same C test (plain and under ASan)
# against the debug build; it also checks that include/varve.h is current.
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE="${PROFILE:-release}"
CC="${CC:-cc}"
SANITIZE="${SANITIZE-address,undefined}"

if ! command -v "$CC" >/dev/null; then
    echo "test-c-api.sh: no C compiler '$CC' (install gcc or set CC)" >&2
    exit 1
fi

if [ "$PROFILE" = release ]; then
    cargo build -p varve-ffi --release
else
    cargo build -p varve-ffi
fi
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
LIB="$TARGET_DIR/$PROFILE/libvarve_ffi.a"
[ -f "$LIB" ] || { echo "test-c-api.sh: $LIB was not built" >&2; exit 1; }

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
FLAGS=(-std=c11 -g -O1 -Wall -Wextra -Werror)
if [ -n "$SANITIZE" ]; then
    FLAGS+=("-fsanitize=$SANITIZE" -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
fi
if ! "$CC" "${FLAGS[@]}" -I include crates/varve-ffi/tests/c/test_varve.c "$LIB" \
    -lpthread -ldl -lm -o "$OUT/test_varve"; then
    echo "test-c-api.sh: compiling failed (with sanitizers '$SANITIZE': are the" \
        "ASan/UBSan runtimes installed? Debian: libasan8 libubsan1)" >&2
    exit 1
fi

echo "test-c-api.sh: running the C test ($PROFILE library, sanitizers: ${SANITIZE:-none})"
RUST_BACKTRACE=0 \
    ASAN_OPTIONS="detect_leaks=1:exitcode=23" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    TMPDIR="$OUT" \
    "$OUT/test_varve"
