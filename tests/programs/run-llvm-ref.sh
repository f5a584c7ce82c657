#!/bin/bash
# Build and run the test programs against LLVM's reference libomptarget (host plugin).
# usage: ./run-llvm-ref.sh [file...]      (default: every NN_*.c / NN_*.cpp here)
# Honours the header conventions described in README.md. Exit status 0 iff every
# program behaved as expected (programs marked "LLVM-REF: fails" are reported, not counted).
cd "$(dirname "$0")"
LLVMLIB=/usr/lib/llvm-22/lib
REF=${REF:-/tmp/llvmref}
OUT=${OUT:-/tmp/rustomp-progs-llvm}
mkdir -p "$REF" "$OUT"
[ -e "$REF/libomptarget.so" ] || ln -sf "$LLVMLIB/libomptarget.so.22.1" "$REF/libomptarget.so"
files=("$@"); [ ${#files[@]} -eq 0 ] && files=([0-9][0-9]_*.c [0-9][0-9]_*.cpp [0-9][0-9][0-9]_*.c [0-9][0-9][0-9]_*.cpp)
bad=0
for f in "${files[@]}"; do
  n=$(basename "${f%.*}")
  case $f in *.cpp) cc=clang++-22 ;; *) cc=clang-22 ;; esac
  cflags=$(sed -n 's#^// CFLAGS: ##p' "$f" | head -1)
  srcs=$(sed -n 's#^// SOURCES: ##p' "$f")
  libs=()
  for lib in $(sed -n 's#^// SHARED: ##p' "$f"); do
    so="$OUT/$n.$(basename "${lib%.*}").so"
    $cc $cflags -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 -fPIC -shared \
        -Wl,-soname,"$(basename "$so")" "$lib" -o "$so" -L"$REF" 2>>"$OUT/$n.cerr"
    libs+=("$so" '-Wl,-rpath,$ORIGIN')
  done
  if ! $cc $cflags -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 "$f" $srcs "${libs[@]}" -o "$OUT/$n" \
       -L"$REF" -Wl,-rpath,$LLVMLIB -lm -lpthread 2>"$OUT/$n.cerr"; then
    echo "COMPILE-FAIL $f"; bad=1; continue
  fi
  envs=(OMP_TARGET_OFFLOAD=mandatory)
  while read -r l; do envs+=("$l"); done < <(sed -n 's#^// ENV: ##p' "$f")
  expect=pass; head -1 "$f" | grep -q '^// EXPECT: fail' && expect=fail
  # (inner bash: keeps the shell's "Aborted" job message out of the output)
  bash -c 'o=$1; shift; env "$@" timeout 10 "$o" >"$o.out" 2>"$o.err"; exit $?' _ "$OUT/$n" "${envs[@]}" 2>/dev/null
  rc=$?
  if [ $rc -eq 124 ]; then r=TIMEOUT
  elif [ $expect = pass ] && [ $rc -eq 0 ]; then r=PASS
  elif [ $expect = fail ] && [ $rc -ne 0 ]; then r=PASS
  else r=FAIL; fi
  note=; grep -q '^// LLVM-REF: fails' "$f" && note=" (known LLVM-REF failure)"
  echo "$r $f rc=$rc$note"
  if [ $r != PASS ]; then head -c 300 "$OUT/$n.err"; [ -z "$note" ] && bad=1; fi
done
exit $bad
