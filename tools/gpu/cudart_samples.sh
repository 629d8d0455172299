#!/usr/bin/env bash
# NVIDIA's cuda-samples linked to streampool's CUDA runtime: builds every program listed in
# cudart_samples.txt twice with nvcc, once with NVIDIA's cudart (`-cudart shared`) and once with
# `-cudart none` linked to BUILD_DIR/runtime/libstreampool_cudart.so (DT_RUNPATH to its folder, so no
# LD_LIBRARY_PATH is needed), runs both on NVIDIA's driver, and compares their exit codes and
# normalised outputs (normalise_output.py). For the streampool build it records which CUDA libraries
# the process loaded, dlopen'ed ones included (the dynamic loader's own report, LD_DEBUG=libs, written
# to a file of its own so the program's output is untouched; nothing is preloaded and the samples are
# unchanged), and what `ldd` says; "NVIDIA cudart mapped" must be "no".
#
# The CUDA libraries (cuBLAS, cuFFT, cuRAND, cuSPARSE, cuSOLVER, NPP, nvJPEG: the samples of
# 4_CUDA_Libraries) come from the toolkit (CUDA_HOME/lib64). How one of them would find a
# libcudart.so.13: the program names libcudart.so.13 in its own DT_NEEDED (the SONAME of
# streampool's runtime, found through the program's RUNPATH), and the loader maps a program's
# direct dependencies before theirs and matches a library's DT_NEEDED against the SONAMEs already
# mapped before it searches any RUNPATH, so such a library gets streampool's runtime without
# LD_LIBRARY_PATH or a preload (a dlopen too). The script shows it first, as "loader-probe": two
# libraries of its own (cudart_needed_probe.c) linked to NVIDIA's libcudart with a RUNPATH to the
# toolkit, one linked into a program ahead of streampool's runtime and one dlopen'ed by it, must
# have their cudaGetDeviceCount bound to streampool's runtime, with no other libcudart loaded.
# (A process whose program does not name libcudart, Python, gets the runtime a library's RUNPATH
# finds unless LD_LIBRARY_PATH, searched first, names streampool's folder: torch_cudart_trial.sh.)
# The loader's symbol bindings
# (LD_DEBUG=bindings, streampool run) show where each library's cuda* calls went, and readelf
# whether it names libcudart at all: CUDA 13.0's math libraries do not (each carries its own
# runtime and reaches NVIDIA's driver itself), so what these samples test is the interplay: the
# device pointers, streams, events and captures of streampool's runtime handed to a library whose
# runtime is NVIDIA's, on one primary context. A library with a cuda* call bound to another
# runtime than streampool's FAILs the program like a mapped NVIDIA cudart.
#
# Samples the machine cannot build or run SKIP with the reason: a library the toolkit lacks, EGL's
# headers, libEGL.so.1, a libcuda exporting the driver's EGL functions (x86-64 toolkits' stub has
# none; the driver's own library is linked then) or NVIDIA's EGL driver (libEGL_nvidia.so.0, made the
# only EGL vendor of the run); and the manifest's "-" lines (Vulkan, OpenGL, FreeImage, two GPUs ...).
#
#   tools/gpu/cudart_samples.sh [--fake] [--samples DIR] [BUILD_DIR]
#   tools/gpu/cudart_samples.sh --prepare CUDA_SAMPLES_CHECKOUT DEST   (cuda_samples_corpus.sh's)
#
# BUILD_DIR (default build-gpu): a streampool build folder; the runtime and the fake driver are built
# there first when missing (tools/setup.sh configures the folder if it has no build files). The
# programs are built into BUILD_DIR/cudart-samples/. The samples' sources: --samples DIR, else
# $CUDA_SAMPLES, else .gl/cuda-samples of the repository (see cuda_samples_corpus.sh --prepare).
#
# --fake: no GPU. Both builds run over the fake driver (NVIDIA's cudart finds it through
# LD_LIBRARY_PATH, streampool's through STREAMPOOL_LIBCUDA). The fake records kernels without running
# them, so results differ and the verdicts mean nothing: the dry run shows that every program links,
# starts and gets through the runtime's initialisation, and that the script works. (NVIDIA's cudart
# stops at its first call over the fake, cudaErrorNotSupported: it needs the driver's private export
# tables, cuGetExportTable, which the fake does not have.)
#
# Writes $OUT/cudart_samples.log (OUT defaults to BUILD_DIR) and $OUT/cudart_samples_runs.tar.gz (both
# runs' outputs, their normalised forms, the diffs and the loader's reports): one line per program, PASS (both exit 0
# with identical normalised outputs, no NVIDIA cudart in the streampool run), FAIL <why> with details
# on "  | " lines, or SKIP <why> (waived by the sample in both runs, exit 2; cannot be built or run
# here; left out); then a table
#   sample | built | NVIDIA exit | streampool exit | identical | NVIDIA cudart mapped | driver
# the streampool build's loaded CUDA libraries per program with, for each CUDA library, its
# DT_NEEDED libcudart and the files its cuda* calls bound to, and those lines summed over programs. Exits 1 if any program failed (in
# --fake mode only when a program failed to build).
#
# Environment: CUDA_SAMPLES, NVCC, CUDA_HOME, PYTHON, SAMPLES_ARCH (default: the GPU's, else sm_90),
# SAMPLES_BUILD_JOBS (default: CPUs), SAMPLES_RUN_JOBS (programs at once, default 8), SAMPLES_TIMEOUT
# (seconds a run, default 60; timeout=N in the list overrides it), SAMPLES_BUDGET (seconds for the
# whole script, default 540), SAMPLES_ONLY (extended regex of names), SAMPLES_MANIFEST.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
manifest=${SAMPLES_MANIFEST:-$here/cudart_samples.txt}
python=${PYTHON:-python3}

# The manifest, one program a line: NAME|DIR|SOURCES|LIBS|OPTIONS|ARGS (blanks trimmed), or
# -|NAME|DIR|REASON for a sample left out.
manifest_lines() {
  sed -e 's/[[:space:]]*|[[:space:]]*/|/g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$manifest" |
    grep -v -e '^#' -e '^$' | sed -e 's/^-[[:space:]]*/-|/'
}
manifest_entry() { manifest_lines | awk -F'|' -v n="$1" '$1 == n { print; exit }'; }
has_option() { [[ " $1 " == *" $2 "* ]]; }
option_value() {
  local option
  for option in $1; do
    [[ $option == "$2="* ]] && echo "${option#*=}"
  done
}

# --prepare SRC DEST: the trimmed cuda-samples tree of both lists (cuda_samples_corpus.sh's).
if [[ ${1:-} == --prepare ]]; then
  exec "$here/cuda_samples_corpus.sh" --prepare "${@:2}"
fi

# ---------------------------------------------------------------------------------------------
# One build (through xargs): --one-build NAME VARIANT, VARIANT nvidia or streampool. Writes
# $SAMPLES_WORK/bin/NAME/VARIANT/: the program, the kernel files it loads, build.log, and status:
# "ok" or "fail <why>" (for the streampool build: the cuda* symbols the linker could not resolve).
if [[ ${1:-} == --one-build ]]; then
  name=$2
  variant=$3
  out=$SAMPLES_WORK/bin/$name/$variant
  rm -rf "$out"
  mkdir -p "$out"
  IFS='|' read -r _ dir sources libs options _args < <(manifest_entry "$name")
  src=$SAMPLES_SRC/Samples/$dir
  if [[ ! -d $src ]]; then
    echo "fail no folder Samples/$dir in $SAMPLES_SRC" >"$out/status"
    exit 0
  fi
  # A library that is not here: not a failure of the build, the sample cannot be made here.
  link=()
  for lib in $libs; do
    case $lib in
      cuda) link+=(-L"$SAMPLES_CUDA/lib64/stubs" -lcuda) ;;
      gomp) link+=(-Xcompiler -fopenmp -lgomp) ;;
      pthread | dl | rt) link+=("-l$lib") ;;
      egl)
        if [[ $SAMPLES_EGL != ok:* ]]; then
          echo "skip $SAMPLES_EGL" >"$out/status"
          exit 0
        fi
        # The driver's cuEGL* functions: x86-64 toolkits' stub libcuda.so has none, so the program
        # links against the driver library that exports them.
        link+=(-Xlinker "${SAMPLES_EGL#ok:}" -Xlinker "$SAMPLES_EGL_LIBCUDA")
        ;;
      *)
        if ! compgen -G "$SAMPLES_CUDA/lib64/lib$lib.so*" >/dev/null; then
          echo "skip needs lib$lib.so, which this CUDA toolkit ($SAMPLES_CUDA) lacks" >"$out/status"
          exit 0
        fi
        link+=("-l$lib")
        ;;
    esac
  done
  flags=(-O2 -std=c++17 "-arch=$SAMPLES_ARCH" --extended-lambda -Wno-deprecated-gpu-targets -w
    -I"$SAMPLES_SRC/Common" -I"$src")
  [[ -d $src/inc ]] && flags+=(-I"$src/inc")
  has_option "$libs" egl && flags+=(-I"$SAMPLES_EGL_INCLUDE")
  if [[ $variant == nvidia ]]; then
    flags+=(-cudart shared -L"$SAMPLES_CUDA/lib64" -Xlinker -rpath -Xlinker "$SAMPLES_CUDA/lib64")
  else
    flags+=(-cudart none -L"$SAMPLES_RUNTIME_DIR" -lstreampool_cudart -Xlinker -rpath -Xlinker "$SAMPLES_RUNTIME_DIR")
  fi
  read -r -a source_files <<<"$sources"
  step() { echo "+ $*"; timeout -k 10 "$SAMPLES_BUILD_TIMEOUT" "$@"; }
  (
    cd "$src" || exit 1
    if has_option "$options" rdc && [[ $variant == streampool ]]; then
      # Relocatable device code: `-cudart none` also turns nvcc's device link off, so the device link
      # (with the device runtime) is a step of its own, then the host link.
      objects=()
      for source in "${source_files[@]}"; do
        object=$out/obj/$(basename "${source%.*}").o
        mkdir -p "$out/obj"
        step "$SAMPLES_NVCC" "${flags[@]}" -dc "$source" -o "$object" || exit $?
        objects+=("$object")
      done
      step "$SAMPLES_NVCC" "-arch=$SAMPLES_ARCH" -Wno-deprecated-gpu-targets -dlink "${objects[@]}" -o "$out/obj/dlink.o" \
        -L"$SAMPLES_CUDA/lib64" -lcudadevrt || exit $?
      step "$SAMPLES_NVCC" "${flags[@]}" "${objects[@]}" "$out/obj/dlink.o" -o "$out/$name" -L"$SAMPLES_CUDA/lib64" \
        -lcudadevrt "${link[@]}" || exit $?
    elif has_option "$options" rdc; then
      step "$SAMPLES_NVCC" "${flags[@]}" -rdc=true "${source_files[@]}" -o "$out/$name" -lcudadevrt "${link[@]}" || exit $?
    else
      step "$SAMPLES_NVCC" "${flags[@]}" "${source_files[@]}" -o "$out/$name" "${link[@]}" || exit $?
    fi
    for option in $options; do
      case $option in
        fatbin:*:*)
          IFS=: read -r _ kernel file <<<"$option"
          echo "+ $SAMPLES_NVCC -arch=$SAMPLES_ARCH -fatbin $kernel -o $out/$file"
          timeout -k 10 "$SAMPLES_BUILD_TIMEOUT" "$SAMPLES_NVCC" "-arch=$SAMPLES_ARCH" -Wno-deprecated-gpu-targets \
            -I"$SAMPLES_SRC/Common" -fatbin "$kernel" -o "$out/$file" || exit $?
          ;;
      esac
    done
  ) >"$out/build.log" 2>&1
  rc=$?
  if [[ $rc -eq 0 && -x $out/$name ]]; then
    echo ok >"$out/status"
  else
    missing=$(grep -o "undefined reference to \`[^']*'" "$out/build.log" | sed "s/.*\`//; s/'\$//" | sort -u | tr '\n' ' ')
    if [[ -n $missing ]]; then
      echo "fail unresolved: $missing" >"$out/status"
    else
      echo "fail build failed (exit $rc)" >"$out/status"
    fi
  fi
  exit 0
fi

# The CUDA libraries a run loaded, from the loader's LD_DEBUG=libs files ("calling init: PATH" is
# printed for every object initialised, dlopen'ed ones included), one path a line.
loaded_cuda_libraries() {
  cat "$@" 2>/dev/null | sed -n 's/.*calling init: //p' | grep -E "libcuda|cudart|$SAMPLES_LIBRARY_NAMES" | sort -u
}

# library_report LOADED BINDINGS: for each CUDA library (cuBLAS, cuFFT, NPP ...) a run loaded, one
# line: whether it names libcudart.so.13 in its DT_NEEDED, and the file each of its cuda* imports
# bound to (BINDINGS: the loader's "binding file A to B: normal symbol `cudaX'" lines).
library_report() {
  local path needed targets
  while read -r path; do
    [[ $path =~ $SAMPLES_LIBRARY_NAMES ]] || continue
    needed="no DT_NEEDED libcudart (no shared CUDA runtime)"
    readelf -d "$path" 2>/dev/null | grep -q 'NEEDED.*\[libcudart' && needed="DT_NEEDED libcudart.so.13"
    targets=$(grep -F "binding file $path " "$2" 2>/dev/null | grep "symbol \`cuda" |
      sed -n 's/.* to \([^ ]*\) \[.*/\1/p' | sort | uniq -c | awk '{ printf "%s%s (%d symbols)", sep, $2, $1; sep = ", " }')
    echo "${path##*/}: $needed; its cuda* calls bound to: ${targets:-none}"
  done <"$1"
}

# ---------------------------------------------------------------------------------------------
# One program's two runs (through xargs): --one-run NAME. Writes $SAMPLES_WORK/results/NAME: a line
# "verdict|nvidia_rc|sp_rc|identical|cudart_mapped|driver", then the verdict line and its details.
if [[ ${1:-} == --one-run ]]; then
  name=$2
  IFS='|' read -r _ dir _sources libs options args < <(manifest_entry "$name")
  result=$SAMPLES_WORK/results/$name
  runs=$SAMPLES_WORK/run/$name
  limit=$(option_value "$options" timeout)
  limit=${limit:-$SAMPLES_TIMEOUT}
  [[ $SAMPLES_MODE == fake ]] && limit=$SAMPLES_TIMEOUT
  compare=full
  has_option "$options" result && compare=result
  has_option "$options" nonumbers && compare=nonumbers
  left=$((SAMPLES_DEADLINE - $(date +%s)))
  if ((left < 10)); then
    printf '%s\n' "FAIL|-|-|-|-|-" "FAIL $name not run: the time budget (SAMPLES_BUDGET) was spent" >"$result"
    exit 0
  fi
  ((limit * 2 > left)) && limit=$((left / 2))
  rm -rf "$runs"
  mkdir -p "$runs"
  uses_egl=no
  has_option "$libs" egl && uses_egl=yes
  if [[ $uses_egl == yes && $SAMPLES_MODE == gpu && -z $SAMPLES_EGL_DRIVER ]]; then
    printf '%s\n' "SKIP|-|-|-|-|-" "SKIP $name needs NVIDIA's EGL driver (libEGL_nvidia.so.0), which this machine lacks: EGL has no CUDA device here" >"$result"
    exit 0
  fi
  # Neither run is preloaded; over the fake, NVIDIA's cudart loads libcuda.so.1 by name.
  env_nvidia=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA)
  env_sp=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA)
  if [[ $SAMPLES_MODE == fake ]]; then
    env_nvidia=(-u LD_PRELOAD "LD_LIBRARY_PATH=$SAMPLES_FAKE_DIR" "STREAMPOOL_LIBCUDA=$SAMPLES_FAKE_LIB")
    env_sp=(-u LD_PRELOAD "LD_LIBRARY_PATH=$SAMPLES_FAKE_DIR" "STREAMPOOL_LIBCUDA=$SAMPLES_FAKE_LIB")
  fi
  # EGL programs get NVIDIA's EGL driver as the only vendor (libglvnd), in both runs.
  if [[ $uses_egl == yes && -n $SAMPLES_EGL_DRIVER ]]; then
    env_nvidia+=("__EGL_VENDOR_LIBRARY_FILENAMES=$SAMPLES_EGL_VENDOR")
    env_sp+=("__EGL_VENDOR_LIBRARY_FILENAMES=$SAMPLES_EGL_VENDOR")
  fi
  rcs=()
  for which in nvidia sp; do
    variant=$which
    [[ $which == sp ]] && variant=streampool
    bin=$SAMPLES_WORK/bin/$name/$variant
    # A fresh copy of the sample's folder for each run: programs read their data there and some write.
    dir_run=$runs/$which
    mkdir -p "$dir_run"
    cp -r "$SAMPLES_SRC/Samples/$dir/." "$dir_run/"
    for file in "$bin"/*; do
      case ${file##*/} in "$name" | build.log | status | obj) continue ;; esac
      ln -sf "$file" "$dir_run/"
    done
    if [[ $which == sp ]]; then environment=("${env_sp[@]}"); else environment=("${env_nvidia[@]}"); fi
    # The streampool run also reports the loader's symbol bindings: which runtime the CUDA
    # libraries' cuda* calls reach.
    ld_debug=libs
    [[ $which == sp ]] && ld_debug=libs,bindings
    # CUDA_CACHE_DISABLE: a JIT cache filled by the first run would change what the second prints.
    # shellcheck disable=SC2086 # the arguments are plain words from the manifest
    (cd "$dir_run" && exec timeout -k 5 "$limit" env "${environment[@]}" CUDA_CACHE_DISABLE=1 \
      "LD_DEBUG=$ld_debug" "LD_DEBUG_OUTPUT=$runs/$which.ld" "$bin/$name" $args \
      >"$runs/$which.out" 2>"$runs/$which.err" </dev/null)
    rcs+=($?)
    # The two builds live in different folders; programs that print their own path print both.
    "$SAMPLES_PYTHON" "$SAMPLES_HERE/normalise_output.py" --mode "$compare" --replace "$dir_run=RUNDIR" \
      --replace "$bin/$name=PROGRAM" "$runs/$which.out" "$runs/$which.err" >"$runs/$which.norm" 2>>"$runs/normalise.log"
  done
  nvidia_rc=${rcs[0]}
  sp_rc=${rcs[1]}
  # The bindings into a file of their own, cuda*/cu* symbols only (the rest is the C++ library's).
  for file in "$runs"/sp.ld.*; do
    [[ -f $file ]] || continue
    grep ' binding file ' "$file" | grep "symbol \`cu" >>"$runs/sp.bindings"
    grep -v ' binding file ' "$file" >"$file.libs" && mv "$file.libs" "$file"
  done
  loaded_cuda_libraries "$runs"/sp.ld.* >"$runs/sp.loaded"
  library_report "$runs/sp.loaded" "$runs/sp.bindings" >"$runs/sp.libraries"
  loaded_cuda_libraries "$runs"/nvidia.ld.* >"$runs/nvidia.loaded"
  ldd "$SAMPLES_WORK/bin/$name/streampool/$name" 2>&1 | grep -E 'cudart|libcuda' | tr -s ' \t' ' ' >"$runs/sp.ldd"
  # NVIDIA's cudart: any libcudart the streampool run loaded that is not streampool's runtime.
  mapped=no
  while read -r path; do
    [[ -z $path ]] && continue
    [[ $(readlink -f "$path") == "$(readlink -f "$SAMPLES_RUNTIME_LIB")" ]] && continue
    [[ $path == *cudart* ]] && mapped=yes
  done <"$runs/sp.loaded"
  # and any CUDA library whose cuda* calls bound to another file than streampool's runtime.
  while read -r target; do
    [[ $(readlink -f "$target") == "$(readlink -f "$SAMPLES_RUNTIME_LIB")" ]] || mapped=yes
  done < <(grep "symbol \`cuda" "$runs/sp.bindings" 2>/dev/null | grep -E "binding file [^ ]*($SAMPLES_LIBRARY_NAMES)" |
    sed -n 's/.* to \([^ ]*\) \[.*/\1/p' | sort -u)
  # and any libcudart ldd resolves to another file.
  while read -r soname arrow path _; do
    [[ $soname == *cudart* && $arrow == "=>" && -e $path ]] || continue
    [[ $(readlink -f "$path") == "$(readlink -f "$SAMPLES_RUNTIME_LIB")" ]] || mapped=yes
  done <"$runs/sp.ldd"
  [[ -s $runs/sp.loaded ]] || mapped="unknown (no loader report)"
  driver=$(grep -E 'libcuda\.so' "$runs/sp.loaded" | head -n 1)
  driver=${driver:-none loaded}
  lines=$(wc -l <"$runs/nvidia.norm")
  diff -u "$runs/nvidia.norm" "$runs/sp.norm" >"$runs/diff" 2>&1
  same_output=$?
  identical=no
  [[ $same_output -eq 0 && $nvidia_rc -eq $sp_rc ]] && identical=yes
  timed_out() { [[ $1 -eq 124 || $1 -eq 137 ]]; }
  details() { tail -n "${2:-6}" "$1" 2>/dev/null | sed 's/^/  | /'; }
  {
    if [[ $mapped == yes ]]; then
      verdict="FAIL $name NVIDIA's cudart is loaded or called in the streampool run: $(tr '\n' ' ' <"$runs/sp.loaded")$(tr '\n' ' ' <"$runs/sp.libraries")"
    elif timed_out "$sp_rc" || timed_out "$nvidia_rc"; then
      verdict="FAIL $name a run timed out (${limit}s): NVIDIA exit $nvidia_rc, streampool exit $sp_rc"
    elif [[ $nvidia_rc -ne $sp_rc ]]; then
      verdict="FAIL $name exit codes differ: NVIDIA $nvidia_rc, streampool $sp_rc"
    elif [[ $same_output -ne 0 ]]; then
      verdict="FAIL $name outputs differ ($(grep -c '^[-+][^-+]' "$runs/diff") of $lines normalised lines; exit $nvidia_rc in both)"
    elif [[ $nvidia_rc -eq 2 ]]; then
      verdict="SKIP $name waived by the sample (exit 2 in both runs)"
    elif [[ $nvidia_rc -ne 0 ]]; then
      verdict="FAIL $name fails with NVIDIA's cudart too (exit $nvidia_rc in both runs, identical outputs)"
    elif [[ $lines -eq 0 ]]; then
      verdict="FAIL $name printed nothing to compare"
    else
      verdict="PASS $name exit 0, $lines normalised lines identical"
    fi
    echo "${verdict%% *}|$nvidia_rc|$sp_rc|$identical|$mapped|$driver"
    echo "$verdict"
    case $verdict in
      PASS* | SKIP*) ;;
      *)
        grep '^[-+][^-+]' "$runs/diff" | head -n 10 | sed 's/^/  | diff: /'
        [[ $sp_rc -ne 0 ]] && { details "$runs/sp.err" 4 | sed 's/^  | /  | streampool stderr: /'; details "$runs/sp.out" 4 | sed 's/^  | /  | streampool stdout: /'; }
        [[ $nvidia_rc -ne 0 ]] && { details "$runs/nvidia.err" 4 | sed 's/^  | /  | NVIDIA stderr: /'; details "$runs/nvidia.out" 4 | sed 's/^  | /  | NVIDIA stdout: /'; }
        ;;
    esac
  } >"$result"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# The whole list.
start=$(date +%s)
mode=gpu
samples=${CUDA_SAMPLES:-$repo/.gl/cuda-samples}
while [[ $# -gt 0 ]]; do
  case $1 in
    --fake) mode=fake; shift ;;
    --samples) samples=${2:-}; shift 2 ;;
    -*) echo "usage: $0 [--fake] [--samples DIR] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
build=${1:-$repo/build-gpu}
[[ $build == /* ]] || build=$repo/$build
out=${OUT:-$build}
mkdir -p "$out" "$build"
log=$out/cudart_samples.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

if [[ ! -d $samples/Samples || ! -d $samples/Common ]]; then
  say "FAIL setup no cuda-samples tree at $samples (--samples, CUDA_SAMPLES; cuda_samples_corpus.sh --prepare makes one)"
  exit 1
fi
samples=$(cd "$samples" && pwd)
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$(command -v nvcc 2>/dev/null || echo "$cuda_home/bin/nvcc")}
if [[ ! -x $nvcc ]]; then
  say "FAIL setup no nvcc (set NVCC or CUDA_HOME)"
  exit 1
fi
cuda_home=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)

# The runtime (and the fake driver) from the tree, built where missing or out of date.
source "$here/build_targets.sh"
build_targets "$build" "the runtime" streampool_cudart streampool_fakecuda || exit 1
runtime_lib=$build/runtime/libstreampool_cudart.so
fake_lib=$build/fakecuda/libcuda.so.1
if [[ ! -f $runtime_lib ]]; then
  say "FAIL setup no $runtime_lib"
  exit 1
fi

arch=${SAMPLES_ARCH:-}
if [[ -z $arch && $mode == gpu ]]; then
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=sm_$cap
fi
arch=${arch:-sm_90}
cpus=$(nproc 2>/dev/null || echo 2)
budget=${SAMPLES_BUDGET:-540}

# EGL: its headers and libEGL.so.1 (libglvnd) to build the EGL programs, NVIDIA's EGL driver
# (libEGL_nvidia.so.0, which gives EGL the CUDA devices) to run them.
egl_include=${SAMPLES_EGL_INCLUDE:-/usr/include}
egl_lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libEGL.so.1" { print $NF; exit }')
if [[ ! -f $egl_include/EGL/egl.h || ! -f $egl_include/EGL/eglext.h ]]; then
  egl="needs EGL's headers (EGL/egl.h and EGL/eglext.h under $egl_include, SAMPLES_EGL_INCLUDE; Debian: libegl-dev), which this machine lacks"
elif [[ -z $egl_lib ]]; then
  egl="needs libEGL.so.1 (libglvnd; Debian: libegl1), which this machine lacks"
else
  egl="ok:$egl_lib"
fi
egl_libcuda=""
for candidate in "$cuda_home/lib64/stubs/libcuda.so" "$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" { print $NF; exit }')" \
  /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1; do
  [[ -n $candidate && -f $candidate ]] || continue
  nm -D "$candidate" 2>/dev/null | grep -q ' T cuEGLStreamConsumerConnect$' && { egl_libcuda=$candidate; break; }
done
if [[ $egl == ok:* && -z $egl_libcuda ]]; then
  egl="needs a libcuda that exports the driver's EGL functions (cuEGLStreamConsumerConnect ...): neither the toolkit's stub nor the driver here does"
fi
egl_driver=$(ldconfig -p 2>/dev/null | awk '$1 == "libEGL_nvidia.so.0" { print $NF; exit }')
if [[ -z $egl_driver ]]; then
  IFS=: read -r -a egl_dirs <<<"${LD_LIBRARY_PATH:-}"
  for folder in "${egl_dirs[@]}" /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [[ -n $folder && -e $folder/libEGL_nvidia.so.0 ]] && { egl_driver=$folder/libEGL_nvidia.so.0; break; }
  done
fi
mkdir -p "$build/cudart-samples"
egl_vendor=$build/cudart-samples/egl_vendor_nvidia.json
[[ -n $egl_driver ]] && printf '{ "file_format_version": "1.0.0", "ICD": { "library_path": "%s" } }\n' "$egl_driver" >"$egl_vendor"
export SAMPLES_EGL=$egl SAMPLES_EGL_LIBCUDA=$egl_libcuda SAMPLES_EGL_INCLUDE=$egl_include SAMPLES_EGL_DRIVER=$egl_driver SAMPLES_EGL_VENDOR=$egl_vendor
# The CUDA libraries whose loading and bindings are reported.
export SAMPLES_LIBRARY_NAMES='libcublas|libcufft|libcurand|libcusparse|libcusolver|libnpp|libnvjpeg|libnvrtc|libnvJitLink'
export SAMPLES_HERE=$here SAMPLES_WORK=$build/cudart-samples SAMPLES_SRC=$samples SAMPLES_NVCC=$nvcc
export SAMPLES_CUDA=$cuda_home SAMPLES_ARCH=$arch SAMPLES_MODE=$mode SAMPLES_PYTHON=$python
export SAMPLES_RUNTIME_DIR=$build/runtime SAMPLES_RUNTIME_LIB=$runtime_lib
export SAMPLES_FAKE_LIB=$fake_lib SAMPLES_FAKE_DIR=$build/fakecuda
export SAMPLES_DEADLINE=$((start + budget)) SAMPLES_BUILD_TIMEOUT=${SAMPLES_BUILD_TIMEOUT:-300}
export SAMPLES_TIMEOUT=${SAMPLES_TIMEOUT:-60}
[[ $mode == fake ]] && SAMPLES_TIMEOUT=${SAMPLES_FAKE_TIMEOUT:-10}
mkdir -p "$SAMPLES_WORK/bin"
rm -rf "$SAMPLES_WORK/results" "$SAMPLES_WORK/run"
mkdir -p "$SAMPLES_WORK/results" "$SAMPLES_WORK/run"
only=${SAMPLES_ONLY:-}

programs=()
left_out=()
while IFS='|' read -r name rest; do
  if [[ $name == - ]]; then
    IFS='|' read -r name _ reason <<<"$rest"
    [[ -n $only && ! $name =~ $only ]] && continue
    left_out+=("$name|$reason")
    continue
  fi
  [[ -n $only && ! $name =~ $only ]] && continue
  programs+=("$name")
done < <(manifest_lines)

if [[ $mode == fake ]]; then
  driver_line="fake ($fake_lib)"
else
  driver_line="NVIDIA's ($(timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1))"
fi
say "# cudart samples: ${#programs[@]} programs from $samples, $arch, nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), driver: $driver_line"
egl_functions=""
[[ -n $egl_libcuda ]] && egl_functions=", the driver's EGL functions from $egl_libcuda"
say "# EGL: build: ${egl/#ok:/libEGL.so.1 at }$egl_functions; NVIDIA's EGL driver: ${egl_driver:-none}"
say "# streampool runtime: $runtime_lib ($(readelf -d "$runtime_lib" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/SONAME \1/p'))"

# 0. The loader's choice for a library that names libcudart.so.13 (cudart_needed_probe.c): both
# probe libraries' cudaGetDeviceCount must bind to streampool's runtime, and no other libcudart load.
loader_probe() {
  local dir=$SAMPLES_WORK/loader-probe cc=${CC:-cc} variant target targets mapped_files
  rm -rf "$dir"
  mkdir -p "$dir"
  for variant in linked opened; do
    "$cc" -O2 -shared -fPIC -DPROBE_LIBRARY -I"$cuda_home/include" "$here/cudart_needed_probe.c" -o "$dir/libprobe_$variant.so" \
      -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64" >>"$dir/build.log" 2>&1 || return 1
  done
  "$cc" -O2 -I"$cuda_home/include" "$here/cudart_needed_probe.c" -o "$dir/probe" -L"$dir" -lprobe_linked \
    -L"$build/runtime" -lstreampool_cudart -Wl,-rpath,"$dir:$build/runtime" -ldl >>"$dir/build.log" 2>&1 || return 1
  local environment=(-u LD_PRELOAD -u STREAMPOOL_LIBCUDA)
  [[ $mode == fake ]] && environment=(-u LD_PRELOAD "LD_LIBRARY_PATH=$SAMPLES_FAKE_DIR" "STREAMPOOL_LIBCUDA=$SAMPLES_FAKE_LIB")
  timeout -k 5 30 env "${environment[@]}" LD_DEBUG=libs,bindings "LD_DEBUG_OUTPUT=$dir/ld" "$dir/probe" "$dir/libprobe_opened.so" \
    >"$dir/out" 2>&1
  local rc=$?
  targets=""
  for variant in linked opened; do
    target=$(cat "$dir"/ld.* 2>/dev/null | grep -F "binding file $dir/libprobe_$variant.so " | grep "symbol \`cudaGetDeviceCount'" |
      sed -n 's/.* to \([^ ]*\) \[.*/\1/p' | head -n 1)
    targets+="libprobe_$variant.so -> ${target:-no binding seen}; "
    [[ -n $target && $(readlink -f "$target") == "$(readlink -f "$runtime_lib")" ]] || rc=1
  done
  mapped_files=$(cat "$dir"/ld.* 2>/dev/null | sed -n 's/.*calling init: //p' | grep -E '/libcudart[^/]*$' | sort -u | tr '\n' ' ')
  for target in $mapped_files; do
    [[ $(readlink -f "$target") == "$(readlink -f "$runtime_lib")" ]] || rc=1
  done
  echo "$targets(the program: $(tr '\n' ' ' <"$dir/out"); runtimes loaded: $mapped_files)"
  return $rc
}
probe_line=$(loader_probe)
probe_rc=$?
if [[ $probe_rc -eq 0 ]]; then
  say "PASS loader-probe a library naming libcudart.so.13 (RUNPATH to NVIDIA's toolkit), linked or opened: streampool's runtime: $probe_line"
else
  say "FAIL loader-probe ${probe_line:-did not build: $(tail -n 3 "$SAMPLES_WORK/loader-probe/build.log" 2>/dev/null | tr '\n' ' ')}"
fi

# 1. Build both variants, in parallel.
build_start=$(date +%s)
for name in "${programs[@]}"; do printf '%s nvidia\n%s streampool\n' "$name" "$name"; done |
  xargs -P "${SAMPLES_BUILD_JOBS:-$cpus}" -L 1 "$0" --one-build
status_of() { cat "$SAMPLES_WORK/bin/$1/$2/status" 2>/dev/null || echo "fail not built"; }
linked=0
buildable=0
for name in "${programs[@]}"; do
  [[ $(status_of "$name" streampool) == skip* ]] && continue
  buildable=$((buildable + 1))
  [[ $(status_of "$name" streampool) == ok ]] && linked=$((linked + 1))
done
say "# built in $(($(date +%s) - build_start))s; $linked of $buildable link with -cudart none against streampool's runtime ($((${#programs[@]} - buildable)) cannot be built here)"

# 2. Run the programs both variants built: first those that may share the GPU, then the others alone.
together=()
alone=()
for name in "${programs[@]}"; do
  [[ $(status_of "$name" nvidia) == ok && $(status_of "$name" streampool) == ok ]] || continue
  IFS='|' read -r _ _ _ _ options _ < <(manifest_entry "$name")
  if has_option "$options" alone; then alone+=("$name"); else together+=("$name"); fi
done
run_start=$(date +%s)
((${#together[@]} > 0)) && printf '%s\n' "${together[@]}" | xargs -P "${SAMPLES_RUN_JOBS:-8}" -n 1 "$0" --one-run
((${#alone[@]} > 0)) && printf '%s\n' "${alone[@]}" | xargs -P 1 -n 1 "$0" --one-run
say "# ran $((${#together[@]} + ${#alone[@]})) programs twice in $(($(date +%s) - run_start))s"

# 3. Verdicts, the table and the libraries, in list order.
pass=0 fail=0 skip=0 build_failures=0
if [[ $probe_rc -eq 0 ]]; then pass=1; else fail=1 build_failures=1; fi
table=()
for name in "${programs[@]}"; do
  nvidia_status=$(status_of "$name" nvidia)
  sp_status=$(status_of "$name" streampool)
  built="both"
  if [[ $sp_status == skip* ]]; then
    say "SKIP $name ${sp_status#skip }"
    skip=$((skip + 1))
    table+=("$name|no (${sp_status#skip })|-|-|-|-|-")
    continue
  fi
  if [[ $nvidia_status != ok || $sp_status != ok ]]; then
    built="nvidia:${nvidia_status%% *} streampool:${sp_status%% *}"
    say "FAIL $name not built"
    [[ $nvidia_status != ok ]] && say "  | NVIDIA build: $nvidia_status" && tail -n 4 "$SAMPLES_WORK/bin/$name/nvidia/build.log" 2>/dev/null | sed 's/^/  | /' | tee -a "$log" >/dev/null
    [[ $sp_status != ok ]] && say "  | streampool build: $sp_status" && tail -n 4 "$SAMPLES_WORK/bin/$name/streampool/build.log" 2>/dev/null | sed 's/^/  | /' | tee -a "$log" >/dev/null
    fail=$((fail + 1))
    build_failures=$((build_failures + 1))
    table+=("$name|$built|-|-|-|-|-")
    continue
  fi
  result=$SAMPLES_WORK/results/$name
  if [[ ! -f $result ]]; then
    say "FAIL $name no result (the run was cut short)"
    fail=$((fail + 1))
    table+=("$name|$built|-|-|-|-|-")
    continue
  fi
  IFS='|' read -r verdict nvidia_rc sp_rc identical mapped driver < <(head -n 1 "$result")
  sed 1d "$result" | tee -a "$log"
  case $verdict in PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
  table+=("$name|$built|$nvidia_rc|$sp_rc|$identical|$mapped|$driver")
done
for entry in "${left_out[@]}"; do
  IFS='|' read -r name reason <<<"$entry"
  say "SKIP $name left out: $reason"
  skip=$((skip + 1))
  table+=("$name|left out|-|-|-|-|-")
done

{
  echo
  echo "| sample | built | NVIDIA exit | streampool exit | identical | NVIDIA cudart mapped | driver loaded (streampool run) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for row in "${table[@]}"; do
    IFS='|' read -r name built nvidia_rc sp_rc identical mapped driver <<<"$row"
    echo "| $name | $built | $nvidia_rc | $sp_rc | $identical | $mapped | $driver |"
  done
  echo
  echo "# CUDA libraries each streampool build loaded (LD_DEBUG=libs) and what ldd says"
  for name in "${programs[@]}"; do
    runs=$SAMPLES_WORK/run/$name
    [[ -d $runs ]] || continue
    echo "$name: loaded: $(tr '\n' ' ' <"$runs/sp.loaded" 2>/dev/null)"
    echo "$name: ldd: $(tr '\n' ';' <"$runs/sp.ldd" 2>/dev/null)"
    [[ -s $runs/sp.libraries ]] && sed "s/^/$name: library /" "$runs/sp.libraries"
  done
  echo
  echo "# The CUDA libraries the streampool builds loaded: how each reaches a CUDA runtime (every program's lines above)"
  cat "$SAMPLES_WORK"/run/*/sp.libraries 2>/dev/null | sed 's/ ([0-9]* symbols)//g' | sort | uniq -c |
    awk '{ count = $1; $1 = ""; print "-" $0 " (" count " programs)" }'
  if [[ ${#programs[@]} -gt 0 && -d $SAMPLES_WORK/run/${programs[0]} ]]; then
    echo "# for comparison, ${programs[0]} built with NVIDIA's cudart loaded: $(tr '\n' ' ' <"$SAMPLES_WORK/run/${programs[0]}/nvidia.loaded")"
  fi
} | tee -a "$log"
# Both runs' outputs, normalised outputs, diffs and loader reports (not the copies of the samples' folders).
tar -czf "$out/cudart_samples_runs.tar.gz" -C "$SAMPLES_WORK" --exclude='run/*/nvidia' --exclude='run/*/sp' run 2>/dev/null &&
  say "# outputs of every run: $out/cudart_samples_runs.tar.gz"
[[ $mode == fake ]] && say "# --fake: kernels are recorded, not run: exit codes and outputs are not expected to match"
say "cudart-samples: $pass passed, $fail failed, $skip skipped; $linked of $buildable buildable here link against streampool's runtime ($(($(date +%s) - start))s)"
if [[ $mode == fake ]]; then
  [[ $build_failures -eq 0 ]]
  exit $?
fi
[[ $fail -eq 0 ]]
