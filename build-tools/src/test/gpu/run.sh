#!/usr/bin/env bash
# Runs the OpenMP corpus compiled for @ARCH@ against rustomp's libomptarget (lib/), and beside it
# against LLVM's libomptarget.so.22.1 when that is on this machine (same binaries, our device
# runtime in both). Each program under OMP_TARGET_OFFLOAD=mandatory unless its header sets
# another policy. Needs the GPU's driver, bash, coreutils and glibc >= 2.34 (no clang, no Rust).
#
# Usage: ./run.sh [-j N] [--no-llvm] [NAME-SUBSTRING...]
#   -j N       run N programs at a time (default RUSTOMP_GPU_JOBS, else 4)
#   --no-llvm  only ours, even where LLVM's library is found
# Environment: RUSTOMP_GPU_TIMEOUT (seconds per program, default 60); RUSTOMP_LLVM_LIB (LLVM's
# libomptarget.so.22.1 or its directory; default /usr/lib/llvm-22/lib).
# Programs marked HOST-ONLY (CPU-plugin fault injection, leak checks) are listed and skipped;
# those tests/programs/KNOWN_FAILURES lists for GPUs count as known, not as failures.
# Writes results.tsv (program, ours, seconds, LLVM, seconds) and logs/<program>.<runtime>.log.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
limit="${RUSTOMP_GPU_TIMEOUT:-60}"
jobs="${RUSTOMP_GPU_JOBS:-4}"
use_llvm=yes
patterns=()
while [ $# -gt 0 ]; do
    case "$1" in
        -j) jobs="$2"; shift 2 ;;
        -j*) jobs="${1#-j}"; shift ;;
        --no-llvm) use_llvm=""; shift ;;
        *) patterns+=("$1"); shift ;;
    esac
done

@DRIVER_CHECK@

llvm_lib=""
if [ -n "$use_llvm" ]; then
    candidate="${RUSTOMP_LLVM_LIB:-/usr/lib/llvm-22/lib}"
    [ -d "$candidate" ] && candidate="$candidate/libomptarget.so.22.1"
    [ -f "$candidate" ] && llvm_lib="$candidate"
fi

mkdir -p "$here/logs" "$here/results"
rm -f "$here/results/"*

# run_one NAME EXPECT RUNTIME ENV...: one program under one runtime; writes results/NAME.RUNTIME
# as "verdict<TAB>seconds<TAB>ok" (ok: yes or empty).
run_one() {
    local name="$1" expect="$2" runtime="$3"
    shift 3
    local exe="$here/bin/${name%.*}" log="$here/logs/${name%.*}.$runtime.log"
    local result ok="" start end rc
    local preload=()
    # LLVM's library takes the place of ours: the loader finds a library of that soname
    # loaded already and does not look for ours.
    [ "$runtime" = llvm ] && preload=(LD_PRELOAD="$llvm_lib")
    start=$(date +%s%N)
    (cd "$here/bin" && env OMP_TARGET_OFFLOAD=mandatory "$@" "${preload[@]}" timeout -k 5 "$limit" "$exe") \
        </dev/null >"$log" 2>&1
    rc=$?
    end=$(date +%s%N)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        result="FAIL (timeout ${limit}s)"
    elif [ "$rc" -eq 134 ] && { [ "$expect" = abort ] || [ "$expect" = fail ]; }; then
        result="ok (SIGABRT, expected)"; ok=yes
    elif [ "$rc" -gt 128 ]; then
        result="FAIL (signal $((rc - 128)))"
    elif [ "$expect" = fail ] || [ "$expect" = abort ]; then
        if [ "$rc" -eq 0 ]; then result="FAIL (exit 0, expected failure)"; else result="ok (exit $rc, expected)"; ok=yes; fi
    elif [ "$rc" -eq 0 ]; then
        result="ok"; ok=yes
    else
        result="FAIL (exit $rc)"
    fi
    printf '%s\t%s\t%s\n' "$result" "$(( (end - start) / 1000000 ))" "$ok" > "$here/results/${name%.*}.$runtime"
}

selected=()
while IFS=$'\t' read -r name expect host_only known envs; do
    [ -z "$name" ] && continue
    if [ ${#patterns[@]} -gt 0 ]; then
        wanted=""
        for pattern in "${patterns[@]}"; do
            case "$name" in *"$pattern"*) wanted=yes ;; esac
        done
        [ -z "$wanted" ] && continue
    fi
    selected+=("$name")
    [ "$host_only" != "-" ] && continue
    if [ ! -x "$here/bin/${name%.*}" ]; then
        printf 'FAIL (not compiled, see compile-failures.txt)\t0\t\n' > "$here/results/${name%.*}.ours"
        continue
    fi
    read -r -a extra <<< "$envs"
    for runtime in ours ${llvm_lib:+llvm}; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        run_one "$name" "$expect" "$runtime" "${extra[@]}" &
    done
done < "$here/tests.tsv"
wait

passed=0; failed=0; known_count=0; skipped=0; failing=(); fixed=()
llvm_title="LLVM's library"
[ -z "$llvm_lib" ] && llvm_title="LLVM's library (not found)"
printf '%-36s | %-32s | %8s | %-28s | %8s\n' "program ($(basename "$here"), @ARCH@)" "rustomp" "ms" "$llvm_title" "ms"
: > "$here/results.tsv"
while IFS=$'\t' read -r name expect host_only known envs; do
    wanted=""
    for s in "${selected[@]}"; do [ "$s" = "$name" ] && wanted=yes; done
    [ -z "$wanted" ] && continue
    if [ "$host_only" != "-" ]; then
        skipped=$((skipped + 1))
        printf '%-36s | %s\n' "$name" "skipped (host-only: $host_only)"
        printf '%s\tskipped\t0\t-\t0\n' "$name" >> "$here/results.tsv"
        continue
    fi
    IFS=$'\t' read -r ours ours_ms ours_ok < "$here/results/${name%.*}.ours"
    llvm="-"; llvm_ms=""
    if [ -n "$llvm_lib" ] && [ -f "$here/results/${name%.*}.llvm" ]; then
        IFS=$'\t' read -r llvm llvm_ms _ < "$here/results/${name%.*}.llvm"
    fi
    if [ -n "$ours_ok" ]; then
        passed=$((passed + 1))
        [ "$known" != "-" ] && { ours="$ours (listed as known: remove it)"; fixed+=("${name%.*}"); }
    elif [ "$known" != "-" ]; then
        known_count=$((known_count + 1))
        ours="known: $ours"
    else
        failed=$((failed + 1)); failing+=("${name%.*}")
    fi
    printf '%-36s | %-32s | %8s | %-28s | %8s\n' "$name" "$ours" "$ours_ms" "$llvm" "$llvm_ms"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$ours" "$ours_ms" "$llvm" "$llvm_ms" >> "$here/results.tsv"
done < "$here/tests.tsv"
if [ ${#failing[@]} -gt 0 ]; then
    echo "failing (logs in $here/logs/<name>.<runtime>.log): ${failing[*]}"
fi
if [ ${#fixed[@]} -gt 0 ]; then
    echo "now passing, remove from tests/programs/KNOWN_FAILURES: ${fixed[*]}"
fi
echo "$passed passed, $failed failed, $known_count known failures, $skipped host-only skipped"

# The same programs on the virtual GPU, as the build machine's `cargo xtask test` ran them
# (vgpu-results.tsv, carried with the suite): one line per program, both verdicts, and whether
# they agree (both passed, or both failed); gpu-vs-vgpu.tsv holds the same.
if [ -f "$here/vgpu-results.tsv" ]; then
    agree=0; differ=0; differing=()
    : > "$here/gpu-vs-vgpu.tsv"
    printf '\n%-36s | %-32s | %-32s | %s\n' "program" "GPU (rustomp)" "virtual GPU" "agree"
    while IFS=$'\t' read -r name ours _ _ _; do
        [ "$ours" = "skipped" ] && continue
        vgpu=$(awk -F'\t' -v n="${name%.*}" '$1 == n { print $2; exit }' "$here/vgpu-results.tsv")
        vgpu=${vgpu:-not run}
        gpu_ok=no; vgpu_ok=no
        case "$ours" in ok*) gpu_ok=yes ;; esac
        case "$vgpu" in ok*) vgpu_ok=yes ;; esac
        if [ "$gpu_ok" = "$vgpu_ok" ]; then
            same=yes; agree=$((agree + 1))
        else
            same=NO; differ=$((differ + 1)); differing+=("${name%.*}")
        fi
        printf '%-36s | %-32.32s | %-32.32s | %s\n' "$name" "$ours" "$vgpu" "$same"
        printf '%s\t%s\t%s\t%s\n' "$name" "$ours" "$vgpu" "$same" >> "$here/gpu-vs-vgpu.tsv"
    done < "$here/results.tsv"
    [ ${#differing[@]} -gt 0 ] && echo "GPU and virtual GPU differ on: ${differing[*]}"
    echo "GPU and virtual GPU: $agree agree, $differ differ (gpu-vs-vgpu.tsv)"
fi
[ "$failed" -eq 0 ]
