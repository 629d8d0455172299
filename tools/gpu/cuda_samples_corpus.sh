#!/usr/bin/env bash
# NVIDIA's cuda-samples as a corpus of real programs: builds every program listed in
# cuda_samples.txt with nvcc, runs each twice, on NVIDIA's driver alone and with
# LD_PRELOAD=libstreampool.so, and compares the two runs' exit codes and normalised outputs
# (normalise_output.py: line order, measurements, addresses and the last digits of floating point
# numbers are not compared).
#
#   tools/gpu/cuda_samples_corpus.sh [--fake | --build-only] [BUILD_DIR]
#   tools/gpu/cuda_samples_corpus.sh --prepare CUDA_SAMPLES_CHECKOUT DEST
#
# BUILD_DIR (default build-gpu): where libstreampool.so was built (BUILD_DIR/interpose/); the
# corpus is built into BUILD_DIR/cuda-samples/ (kept: a second call rebuilds only what changed).
# The samples' sources come from $CUDA_SAMPLES (default .gl/cuda-samples in the repository): a
# trimmed copy of github.com/NVIDIA/cuda-samples (CUDA 13.0 tree) that --prepare makes from a full
# checkout, with only what the programs of cuda_samples.txt and cudart_samples.txt need. No third-party code is kept in this repository.
#
# Prints one line per program, in the order of cuda_samples.txt:
#   PASS name ...      both runs exited 0 with identical normalised outputs
#   FAIL name <why>    the runs differ (exit codes, outputs, a timeout), or the build failed, or
#                      the sample fails on the driver alone as well; details follow on "  | " lines
#   SKIP name <why>    left out in cuda_samples.txt (two GPUs, a display, OpenGL, NPP ...), a
#                      library missing from this toolkit, or waived by the sample itself on this GPU
#                      (it exited 2, EXIT_WAIVED, in both runs)
# then "cuda-samples: N identical, M differ (...)" and exits 1 if any program failed.
#
# --fake: no GPU. Builds everything, then runs each program twice under streampool over the fake
# driver (the fake runs no kernels: this only exercises the script; the verdicts mean nothing).
# --build-only: builds everything and reports SKIP for every program that built.
#
# Environment: CUDA_SAMPLES, STREAMPOOL_PRELOAD (default BUILD_DIR/interpose/libstreampool.so),
# STREAMPOOL_FAKE_LIB (default BUILD_DIR/fakecuda/libcuda.so.1), NVCC, CUDA_HOME, PYTHON,
# CORPUS_ARCH (default: the GPU's, else sm_90), CORPUS_BUILD_JOBS (default: the number of CPUs),
# CORPUS_RUN_JOBS (programs run at once, default 8), CORPUS_TIMEOUT (seconds for one run, default
# 60; a program's timeout=N in cuda_samples.txt overrides it), CORPUS_BUDGET (seconds for the
# whole script, default 540: programs not started in time are reported as FAIL), CORPUS_ONLY (an
# extended regex: only programs whose name matches), CORPUS_MANIFEST (default cuda_samples.txt).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
manifest=${CORPUS_MANIFEST:-$here/cuda_samples.txt}  # another list of the same format may be named
python=${PYTHON:-python3}

# The manifest, one program a line: NAME|DIR|SOURCES|LIBS|OPTIONS|ARGS (blanks trimmed), or
# -|NAME|DIR|REASON for a sample left out.
manifest_lines() {
  sed -e 's/[[:space:]]*|[[:space:]]*/|/g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$manifest" |
    grep -v -e '^#' -e '^$' | sed -e 's/^-[[:space:]]*/-|/'
}
# manifest_entry NAME: the manifest line of a program.
manifest_entry() { manifest_lines | awk -F'|' -v n="$1" '$1 == n { print; exit }'; }
has_option() { [[ " $1 " == *" $2 "* ]]; }
option_value() { # option_value OPTIONS KEY: the value of KEY=VALUE, empty if absent
  local option
  for option in $1; do
    [[ $option == "$2="* ]] && echo "${option#*=}"
  done
}

# --prepare SRC DEST: the trimmed copy of a cuda-samples checkout.
if [[ ${1:-} == --prepare ]]; then
  src=${2:-}
  dest=${3:-}
  if [[ ! -d $src/Samples || ! -d $src/Common || -z $dest ]]; then
    echo "usage: $0 --prepare CUDA_SAMPLES_CHECKOUT DEST" >&2
    exit 2
  fi
  mkdir -p "$dest/Samples" "$dest/Common" || exit 1
  cp "$src/LICENSE" "$dest/" 2>/dev/null
  # Common: the helpers the samples include, without the Windows libraries, GL and NPP headers.
  find "$src/Common" -maxdepth 1 -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.hxx' \) \
    -exec cp {} "$dest/Common/" \;
  count=0
  # Both lists' samples: this corpus's and the runtime's (cudart_samples.sh), each folder once, with
  # the options of the first list that names it.
  lists=("$manifest")
  [[ $manifest != "$here/cudart_samples.txt" ]] && lists+=("$here/cudart_samples.txt")
  declare -A staged=()
  while IFS='|' read -r name dir _ _ options _; do
    [[ $name == - || -n ${staged[$dir]:-} ]] && continue
    staged[$dir]=1
    if [[ ! -d $src/Samples/$dir ]]; then
      echo "prepare: $name: no folder Samples/$dir" >&2
      continue
    fi
    mkdir -p "$dest/Samples/$dir"
    # Everything but the documentation, the sample's own build files and what drop= names.
    excludes=(--exclude=./doc --exclude=./.vscode --exclude=./CMakeLists.txt --exclude=./README.md --exclude='*.sln' --exclude='*.vcxproj*')
    dropped=$(option_value "$options" drop)
    IFS=, read -r -a patterns <<<"$dropped"
    for pattern in "${patterns[@]}"; do
      excludes+=("--exclude=./$pattern")
    done
    tar -C "$src/Samples/$dir" "${excludes[@]}" -cf - . | tar -C "$dest/Samples/$dir" -xf -
    # Files of Common/ the sample looks for in its working folder (its CMake copies them beside the
    # program): common=data/A.raw,data/B.raw.
    shared_files=$(option_value "$options" common)
    IFS=, read -r -a shared_list <<<"$shared_files"
    for file in "${shared_list[@]}"; do
      cp "$src/Common/$file" "$dest/Samples/$dir/" || echo "prepare: $name: no Common/$file" >&2
    done
    count=$((count + 1))
  done < <(for manifest in "${lists[@]}"; do manifest_lines; done)
  echo "prepare: $count samples copied into $dest ($(du -sh "$dest" | cut -f1))"
  exit 0
fi

mode=gpu
case ${1:-} in
  --fake) mode=fake; shift ;;
  --build-only) mode="build-only"; shift ;;
  --one-build | --one-run) ;;
  -*) echo "usage: $0 [--fake | --build-only] [BUILD_DIR] | --prepare SRC DEST" >&2; exit 2 ;;
esac

# ---------------------------------------------------------------------------------------------
# One build (called through xargs): --one-build NAME VARIANT. Writes $CORPUS_WORK/bin/ID/, where
# ID is NAME or NAME@shared, holding the program, the kernel files it loads, build.log and
# status: "ok", "skip <why>" or "fail <why>".
if [[ ${1:-} == --one-build ]]; then
  name=$2
  variant=$3
  id=$name
  [[ $variant == shared ]] && id=$name@shared
  out=$CORPUS_WORK/bin/$id
  mkdir -p "$out"
  IFS='|' read -r _ dir sources libs options _args < <(manifest_entry "$name")
  src=$CORPUS_SAMPLES/Samples/$dir
  if [[ ! -d $src ]]; then
    echo "fail no folder Samples/$dir in $CORPUS_SAMPLES" >"$out/status"
    exit 0
  fi
  # A library the toolkit does not have: not a failure of the build, the sample cannot be made here.
  link=()
  for lib in $libs; do
    case $lib in
      cuda) link+=(-L"$CORPUS_CUDA/lib64/stubs" -lcuda) ;;
      gomp) link+=(-Xcompiler -fopenmp -lgomp) ;;
      pthread | dl | rt) link+=("-l$lib") ;;
      *)
        if ! compgen -G "$CORPUS_CUDA/lib64/lib$lib.so*" >/dev/null; then
          echo "skip needs lib$lib.so, which this CUDA toolkit ($CORPUS_CUDA) lacks" >"$out/status"
          exit 0
        fi
        link+=("-l$lib")
        ;;
    esac
  done
  flags=(-O2 -std=c++17 "-arch=$CORPUS_ARCH" --extended-lambda -Wno-deprecated-gpu-targets -w
    -I"$CORPUS_SAMPLES/Common" -I"$src" -L"$CORPUS_CUDA/lib64" -Xlinker -rpath -Xlinker "$CORPUS_CUDA/lib64")
  [[ -d $src/inc ]] && flags+=(-I"$src/inc")
  has_option "$options" nordc || flags+=(-rdc=true)
  [[ $variant == shared ]] && flags+=(-cudart shared)
  read -r -a source_files <<<"$sources"
  command=("$CORPUS_NVCC" "${flags[@]}" "${source_files[@]}" -o "$out/$name" "${link[@]}")
  # Kernel files the program loads at run time (the sample's CMake builds them with custom commands).
  extra=()
  for option in $options; do
    case $option in
      fatbin:*:*) IFS=: read -r _ kernel file <<<"$option"
        extra+=("$CORPUS_NVCC -arch=$CORPUS_ARCH -Wno-deprecated-gpu-targets -I$CORPUS_SAMPLES/Common -fatbin $kernel -o $out/$file") ;;
      ptx:*:*) IFS=: read -r _ kernel file <<<"$option"
        extra+=("$CORPUS_NVCC -arch=$CORPUS_ARCH -Wno-deprecated-gpu-targets -I$CORPUS_SAMPLES/Common -ptx $kernel -o $out/$file") ;;
    esac
  done
  # Up to date: same commands, nothing in the sample's folder or Common newer than the program.
  stamp=$(printf '%s\n' "${command[*]}" "${extra[@]}")
  if [[ -x $out/$name && -f $out/command && $(cat "$out/command") == "$stamp" && -f $out/status ]] &&
    [[ $(cat "$out/status") == ok ]] &&
    [[ -z $(find "$src" "$CORPUS_SAMPLES/Common" -newer "$out/$name" -type f -print -quit 2>/dev/null) ]]; then
    exit 0
  fi
  rm -f "$out/$name" "$out/status"
  if (($(date +%s) + 30 > CORPUS_DEADLINE)); then
    echo "fail not built: the time budget (CORPUS_BUDGET) was spent" >"$out/status"
    exit 0
  fi
  (
    cd "$src" || exit 1
    echo "+ ${command[*]}"
    timeout -k 10 "$CORPUS_BUILD_TIMEOUT" "${command[@]}" || exit $?
    for step in "${extra[@]}"; do
      echo "+ $step"
      # shellcheck disable=SC2086 # the step is a command line of plain words
      timeout -k 10 "$CORPUS_BUILD_TIMEOUT" $step || exit $?
    done
  ) >"$out/build.log" 2>&1
  rc=$?
  if [[ $rc -eq 0 && -x $out/$name ]]; then
    printf '%s\n' "$stamp" >"$out/command"
    echo ok >"$out/status"
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "fail build timed out (${CORPUS_BUILD_TIMEOUT}s)" >"$out/status"
  else
    echo "fail build failed (exit $rc)" >"$out/status"
  fi
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# One program's two runs (called through xargs): --one-run ID. Writes $CORPUS_WORK/results/ID:
# the verdict line, then detail lines, then a line "identical" or "differ" (read by the summary).
if [[ ${1:-} == --one-run ]]; then
  id=$2
  name=${id%@shared}
  IFS='|' read -r _ dir _sources _libs options args < <(manifest_entry "$name")
  bin=$CORPUS_WORK/bin/$id
  result=$CORPUS_WORK/results/$id
  runs=$CORPUS_WORK/run/$id
  limit=$(option_value "$options" timeout)
  limit=${limit:-$CORPUS_TIMEOUT}
  compare=full
  has_option "$options" result && compare=result
  has_option "$options" nonumbers && compare=nonumbers
  left=$((CORPUS_DEADLINE - $(date +%s)))
  if ((left < 10)); then
    printf '%s\n' "FAIL $id not run: the time budget (CORPUS_BUDGET) was spent" differ >"$result"
    exit 0
  fi
  # Both runs must fit in what is left.
  ((limit * 2 > left)) && limit=$((left / 2))
  rm -rf "$runs"
  label_ref=driver-alone
  env_ref=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA -u STREAMPOOL_STATS)
  env_sp=(-u STREAMPOOL_LIBCUDA "LD_PRELOAD=$CORPUS_PRELOAD" "STREAMPOOL_STATS=$runs/stats.json")
  if [[ $CORPUS_MODE == fake ]]; then
    label_ref=reference
    env_ref=(-u STREAMPOOL_STATS "LD_PRELOAD=$CORPUS_PRELOAD" "STREAMPOOL_LIBCUDA=$CORPUS_FAKE_LIB")
    env_sp=("LD_PRELOAD=$CORPUS_PRELOAD" "STREAMPOOL_LIBCUDA=$CORPUS_FAKE_LIB" "STREAMPOOL_STATS=$runs/stats.json")
  fi
  rcs=()
  for which in ref sp; do
    # Each run in a fresh copy of the sample's folder: the programs find their data, kernel
    # sources and kernel files in the current folder, and some write their results there.
    dir_run=$runs/$which
    mkdir -p "$dir_run"
    cp -r "$CORPUS_SAMPLES/Samples/$dir/." "$dir_run/"
    for file in "$bin"/*; do
      case ${file##*/} in "$name" | build.log | status | command) continue ;; esac
      ln -sf "$file" "$dir_run/"
    done
    if has_option "$options" cgheaders; then
      ln -sf "$CORPUS_CUDA/include/cooperative_groups.h" "$CORPUS_CUDA/include/cooperative_groups" "$dir_run/"
      ln -sf "$CORPUS_CUDA/include/cccl/nv" "$CORPUS_CUDA/include/cccl/cuda" "$dir_run/"
    fi
    if [[ $which == ref ]]; then
      environment=("${env_ref[@]}")
    else
      environment=("${env_sp[@]}")
    fi
    # shellcheck disable=SC2086 # the arguments are plain words from the manifest
    # CUDA_CACHE_DISABLE: a JIT cache filled by the first run would change what the second prints.
    (cd "$dir_run" && exec timeout -k 5 "$limit" env "${environment[@]}" CUDA_CACHE_DISABLE=1 "$bin/$name" $args \
      >"$runs/$which.out" 2>"$runs/$which.err" </dev/null)
    rcs+=($?)
    "$CORPUS_PYTHON" "$CORPUS_HERE/normalise_output.py" --mode "$compare" --replace "$dir_run=RUNDIR" \
      "$runs/$which.out" "$runs/$which.err" >"$runs/$which.norm" 2>>"$runs/normalise.log"
  done
  ref_rc=${rcs[0]}
  sp_rc=${rcs[1]}
  lines=$(wc -l <"$runs/ref.norm")
  diff -u "$runs/ref.norm" "$runs/sp.norm" >"$runs/diff" 2>&1
  same_output=$?
  timed_out() { [[ $1 -eq 124 || $1 -eq 137 ]]; }
  counters=""
  if [[ -f $runs/stats.json ]]; then
    counters=$("$CORPUS_PYTHON" "$CORPUS_HERE/stats_counters.py" "$runs/stats.json" 2>/dev/null | head -n 1)
    [[ $counters == alloc=* ]] || counters=""
  fi
  details() { tail -n "${2:-6}" "$1" 2>/dev/null | sed 's/^/  | /'; }
  {
    if timed_out "$ref_rc" || timed_out "$sp_rc"; then
      if timed_out "$ref_rc" && timed_out "$sp_rc"; then
        echo "FAIL $id both runs timed out (${limit}s)"
        echo identical-failure
      else
        if timed_out "$sp_rc"; then
          echo "FAIL $id the streampool run timed out (${limit}s); the $label_ref run exited $ref_rc"
          details "$runs/sp.err"
        else
          echo "FAIL $id the $label_ref run timed out (${limit}s); the streampool run exited $sp_rc"
          details "$runs/ref.err"
        fi
        echo differ
      fi
    elif [[ $ref_rc -ne $sp_rc ]]; then
      echo "FAIL $id exit codes differ: $label_ref $ref_rc, streampool $sp_rc"
      [[ $sp_rc -ne 0 ]] && { details "$runs/sp.err"; details "$runs/sp.out"; }
      [[ $ref_rc -ne 0 ]] && { details "$runs/ref.err"; details "$runs/ref.out"; }
      echo differ
    elif [[ $same_output -ne 0 ]]; then
      echo "FAIL $id outputs differ ($(grep -c '^[-+][^-+]' "$runs/diff") of $lines normalised lines; exit $ref_rc in both)"
      grep '^[-+][^-+]' "$runs/diff" | head -n 12 | sed 's/^/  | /'
      echo differ
    elif [[ $ref_rc -eq 2 ]]; then
      echo "SKIP $id waived by the sample on this GPU (exit 2 in both runs): $(grep -i -m 1 -h 'waiv\|not supported\|requires\|does not support' "$runs/ref.out" "$runs/ref.err" | cut -c1-120)"
      echo identical
    elif [[ $ref_rc -ne 0 ]]; then
      echo "FAIL $id fails on the driver alone too (exit $ref_rc in both runs, identical outputs)"
      details "$runs/ref.err" 4
      details "$runs/ref.out" 4
      echo identical-failure
    elif [[ $lines -eq 0 ]]; then
      echo "FAIL $id printed nothing to compare"
      echo identical-failure
    else
      echo "PASS $id exit 0, $lines normalised lines identical${counters:+ (streampool: $counters)}"
      echo identical
    fi
  } >"$result"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# The whole corpus.
start=$(date +%s)
build=${1:-$repo/build-gpu}
if [[ $mode != build-only && ! -d $build ]]; then
  echo "FAIL setup no build folder $build"
  exit 1
fi
mkdir -p "$build" && build=$(cd "$build" && pwd)
samples=${CUDA_SAMPLES:-$repo/.gl/cuda-samples}
if [[ ! -d $samples/Samples || ! -d $samples/Common ]]; then
  echo "FAIL setup no cuda-samples tree at $samples (set CUDA_SAMPLES; make one with --prepare)"
  exit 1
fi
samples=$(cd "$samples" && pwd)
work=$build/cuda-samples
mkdir -p "$work/bin"
rm -rf "$work/results" "$work/run"
mkdir -p "$work/results" "$work/run"

cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-}
if [[ -z $nvcc ]]; then
  nvcc=$(command -v nvcc 2>/dev/null || true)
  [[ -z $nvcc && -x $cuda_home/bin/nvcc ]] && nvcc=$cuda_home/bin/nvcc
fi
if [[ -z $nvcc ]]; then
  echo "FAIL setup no nvcc (set NVCC or CUDA_HOME)"
  exit 1
fi
cuda_home=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
arch=${CORPUS_ARCH:-}
if [[ -z $arch && $mode == gpu ]]; then
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=sm_$cap
fi
arch=${arch:-sm_90}
preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
if [[ ! -f $preload ]]; then
  found=$(find "$build" -name libstreampool.so -type f 2>/dev/null | head -n 1)
  [[ -n $found ]] && preload=$found
fi
fake_lib=${STREAMPOOL_FAKE_LIB:-$build/fakecuda/libcuda.so.1}
if [[ $mode != build-only && ! -f $preload ]]; then
  echo "FAIL setup no libstreampool.so (looked for $preload; set STREAMPOOL_PRELOAD)"
  exit 1
fi
if [[ $mode == fake && ! -f $fake_lib ]]; then
  echo "FAIL setup no fake driver at $fake_lib (set STREAMPOOL_FAKE_LIB)"
  exit 1
fi
cpus=$(nproc 2>/dev/null || echo 2)
budget=${CORPUS_BUDGET:-540}
export CORPUS_HERE=$here CORPUS_WORK=$work CORPUS_SAMPLES=$samples CORPUS_NVCC=$nvcc CORPUS_CUDA=$cuda_home
export CORPUS_ARCH=$arch CORPUS_PRELOAD=$preload CORPUS_FAKE_LIB=$fake_lib CORPUS_MODE=$mode
export CORPUS_PYTHON=$python CORPUS_DEADLINE=$((start + budget))
export CORPUS_TIMEOUT=${CORPUS_TIMEOUT:-60} CORPUS_BUILD_TIMEOUT=${CORPUS_BUILD_TIMEOUT:-240}
[[ $mode == fake ]] && CORPUS_TIMEOUT=${CORPUS_FAKE_TIMEOUT:-10}
build_jobs=${CORPUS_BUILD_JOBS:-$cpus}
run_jobs=${CORPUS_RUN_JOBS:-8}
only=${CORPUS_ONLY:-}

# The programs (NAME or NAME@shared), in manifest order, and the samples left out.
programs=()
declare -A left_out=()
while IFS='|' read -r first second _ fourth fifth _; do
  if [[ $first == - ]]; then
    # -|NAME|FOLDER|REASON
    [[ -n $only && ! $second =~ $only ]] && continue
    left_out[$second]=$fourth
    programs+=("-$second")
    continue
  fi
  # NAME|FOLDER|SOURCES|LIBS|OPTIONS|ARGS
  [[ -n $only && ! $first =~ $only ]] && continue
  programs+=("$first")
  has_option "$fifth" shared && programs+=("$first@shared")
done < <(manifest_lines)

echo "# cuda-samples from $samples, $arch, nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), $build_jobs build jobs, $run_jobs programs at once, ${CORPUS_TIMEOUT}s a run, ${budget}s in all"

# 1. Build, in parallel; every program gets a status.
build_list=()
for id in "${programs[@]}"; do
  [[ $id == -* ]] && continue
  if [[ $id == *@shared ]]; then build_list+=("${id%@shared} shared"); else build_list+=("$id static"); fi
done
build_start=$(date +%s)
printf '%s\n' "${build_list[@]}" | xargs -P "$build_jobs" -L 1 "$0" --one-build
built=0
for id in "${programs[@]}"; do
  [[ $id == -* ]] && continue
  [[ $(cat "$work/bin/$id/status" 2>/dev/null) == ok ]] && built=$((built + 1))
done
echo "# built $built of $((${#build_list[@]})) programs in $(($(date +%s) - build_start))s"

# 2. Run: first the programs that may share the GPU, several at once, then those that must run alone.
if [[ $mode != build-only ]]; then
  together=()
  alone=()
  for id in "${programs[@]}"; do
    [[ $id == -* ]] && continue
    [[ $(cat "$work/bin/$id/status" 2>/dev/null) == ok ]] || continue
    IFS='|' read -r _ _ _ _ options _ < <(manifest_entry "${id%@shared}")
    if has_option "$options" alone; then alone+=("$id"); else together+=("$id"); fi
  done
  run_start=$(date +%s)
  ((${#together[@]} > 0)) && printf '%s\n' "${together[@]}" | xargs -P "$run_jobs" -n 1 "$0" --one-run
  ((${#alone[@]} > 0)) && printf '%s\n' "${alone[@]}" | xargs -P 1 -n 1 "$0" --one-run
  echo "# ran $((${#together[@]} + ${#alone[@]})) programs twice in $(($(date +%s) - run_start))s"
fi

# 3. The verdicts, in manifest order.
pass=0 fail=0 skip=0 identical=0 differ=0
for id in "${programs[@]}"; do
  if [[ $id == -* ]]; then
    echo "SKIP ${id#-} ${left_out[${id#-}]}"
    skip=$((skip + 1))
    continue
  fi
  status=$(cat "$work/bin/$id/status" 2>/dev/null || echo "fail not built")
  verdict=""
  case $status in
    ok)
      if [[ $mode == build-only ]]; then
        verdict="SKIP $id built for $arch; not run (--build-only)"
      elif [[ -f $work/results/$id ]]; then
        sed '$d' "$work/results/$id"
        case $(tail -n 1 "$work/results/$id") in
          identical) identical=$((identical + 1)) ;;
          identical-failure) identical=$((identical + 1)) ;;
          *) differ=$((differ + 1)) ;;
        esac
        verdict=$(head -n 1 "$work/results/$id")
        case $verdict in PASS*) pass=$((pass + 1)) ;; FAIL*) fail=$((fail + 1)) ;; *) skip=$((skip + 1)) ;; esac
        continue
      else
        verdict="FAIL $id no result (the run was cut short)"
        differ=$((differ + 1))
      fi
      ;;
    skip\ *) verdict="SKIP $id ${status#skip }" ;;
    *) verdict="FAIL $id ${status#fail }" ;;
  esac
  echo "$verdict"
  case $verdict in
    FAIL*)
      fail=$((fail + 1))
      [[ -f $work/bin/$id/build.log ]] && grep -m 6 -i 'error' "$work/bin/$id/build.log" | sed 's/^/  | /'
      ;;
    *) skip=$((skip + 1)) ;;
  esac
done
echo "cuda-samples: $identical identical, $differ differ ($pass PASS, $fail FAIL, $skip SKIP; $(($(date +%s) - start))s; outputs in $work/run)"
[[ $fail -eq 0 ]]
