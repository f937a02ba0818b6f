#!/usr/bin/env bash
# The plain C tests on the platforms this machine is not: built with MinGW-w64 for Windows
# (the Win32 thread layer) and run under wine, and built for AArch64 (the NEON path) and run
# under qemu-user.  Installs what it lacks from Debian's packages.  For each run it prints
# the target, the thread layer, the vector path, how many tests passed and whether the
# golden run hash (tests/test_threads.c: the same bits on every build) matched.
#
#   csrc/tests/cross.sh            both targets
#   csrc/tests/cross.sh windows    one of them (windows, aarch64)
set -euo pipefail
csrc="$(cd "$(dirname "$0")/.." && pwd)"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(windows aarch64); fi

# ---- tools ------------------------------------------------------------------------------
missing=()
for target in "${targets[@]}"; do
    case "$target" in
    windows)
        command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
        command -v wine >/dev/null || missing+=(wine wine64)
        ;;
    aarch64)
        command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
        command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
        ;;
    *)
        echo "unknown target '$target' (windows, aarch64)" >&2
        exit 2
        ;;
    esac
done
if [ ${#missing[@]} -gt 0 ]; then
    as_root=""
    if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
    echo "installing from Debian: ${missing[*]}"
    started=$SECONDS
    $as_root apt-get update -qq
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "installed in $((SECONDS - started)) s"
fi

# ---- runs -------------------------------------------------------------------------------
work="$(mktemp -d)"
export WINEPREFIX="$work/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() {
    if [ -d "$WINEPREFIX" ]; then wineserver -k 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# the recorded hashes, in the order the test prints them (plain, ranked, xpbd, start energy)
golden="$(sed -n 's/^#define GOLDEN_[A-Z_]*HASH[A-Z_]* \(0x[0-9a-f]*\)ULL$/\1/p' "$csrc/tests/test_threads.c" | paste -sd' ')"
tables="$(cd "$csrc/tests" && ls test_*.c | sed 's/^test_\(.*\)\.c$/\1/' | paste -sd' ')"
failures=0

# run NAME COMPILER PROGRAM RUNNER...: builds csrc/tests into PROGRAM with COMPILER (the
# Makefile's rule for it), runs it with RUNNER and prints what the run covered.
run() {
    local name="$1" compiler="$2" program="$3"
    shift 3
    local started=$SECONDS
    make -s -C "$csrc" CC="$compiler" BUILD="$work/$name" "$work/$name/$program" >/dev/null
    local log="$work/$name.log" status=0
    "$@" "$work/$name/$program" 2>&1 | tr -d '\r' >"$log" || status=$?
    local line path layer hash summary match
    line="$(grep 'golden run hash' "$log" || true)"
    hash="$(grep -o '0x[0-9a-f]\{16\}' <<<"$line" | paste -sd' ' || true)"
    path="$(sed -n 's/.*vector path \([a-z0-9]*\).*/\1/p' <<<"$line")"
    layer="$(sed -n 's/.*thread layer \([a-z0-9]*\).*/\1/p' <<<"$line")"
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" || echo "no summary")"
    match="differs from $golden"
    if [ "$hash" = "$golden" ]; then match="matches"; fi
    echo "== $name: $compiler, run with: $* ($((SECONDS - started)) s with the build)"
    echo "   tests: $summary (tables: $tables)"
    echo "   thread layer: ${layer:-?}, vector path: ${path:-?}, golden run hash ${hash:-missing}: $match"
    if [ "$status" -ne 0 ] || [ "$hash" != "$golden" ] || ! grep -Eq '^[0-9]+ passed, 0 failed$' <<<"$summary"; then
        echo "   FAILED (exit status $status):"
        sed 's/^/   | /' "$log"
        failures=$((failures + 1))
    fi
}

for target in "${targets[@]}"; do
    case "$target" in
    windows)
        # the optimised build picks AVX2 or SSE2 at run time, the sse2 build has no AVX2 path
        # and the plain build no vector path
        run windows-x86_64 x86_64-w64-mingw32-gcc test_core.exe wine
        run windows-x86_64-sse2 x86_64-w64-mingw32-gcc test_core_sse2.exe wine
        run windows-x86_64-plain x86_64-w64-mingw32-gcc test_core_plain.exe wine
        ;;
    aarch64)
        run linux-aarch64 aarch64-linux-gnu-gcc test_core qemu-aarch64 -L /usr/aarch64-linux-gnu
        ;;
    esac
done
if [ "$failures" -ne 0 ]; then
    echo "$failures cross run(s) failed" >&2
    exit 1
fi
