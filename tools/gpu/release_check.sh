#!/usr/bin/env bash
# The release benchmark on a GPU: CUDA's two thresholds on NVIDIA's pool and on streampool's, and
# STREAMPOOL_RELEASE=auto, in one table (tools/gpu/release_bench.cpp says what is measured).
#
#   tools/gpu/release_check.sh BUILD_DIR [OUT_DIR] [ROUNDS]
#
# BUILD_DIR holds libstreampool.so (interpose/). Configurations, interleaved, ROUNDS rounds
# (default 3), medians:
#   nvidia zero / max      NVIDIA's pool, the program sets 0 / UINT64_MAX
#   streampool zero / max  the same under LD_PRELOAD=libstreampool.so
#   streampool default     under streampool, the program never sets a threshold (today's default)
#   streampool auto        the same with STREAMPOOL_RELEASE=auto
# Writes OUT_DIR/release.md (the table) and OUT_DIR/release.log (every run's output).
# --fake: over the CPU-only fake driver (STREAMPOOL_FAKE_LIB, default BUILD_DIR/fakecuda/
# libcuda.so.1), streampool's configurations only, ITERATIONS=20: checks that it all runs.
set -u
fake=0
if [[ ${1:-} == --fake ]]; then
  fake=1
  shift
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: release_check.sh [--fake] BUILD_DIR [OUT_DIR] [ROUNDS]}" && pwd)
out=$(mkdir -p "${2:-$build/release}" && cd "${2:-$build/release}" && pwd)
rounds=${3:-3}
preload=${STREAMPOOL_PRELOAD:-$build/interpose/libstreampool.so}
fake_lib=${STREAMPOOL_FAKE_LIB:-$build/fakecuda/libcuda.so.1}
log=$out/release.log
: >"$log"

cuda_home=${CUDA_HOME:-}
if [[ -z $cuda_home ]]; then
  nvcc_path=$(command -v nvcc || true)
  cuda_home=${nvcc_path:+$(dirname "$(dirname "$nvcc_path")")}
  cuda_home=${cuda_home:-/usr/local/cuda}
fi
binary=$build/release_bench
stub_dir=$cuda_home/lib64/stubs
[[ -d $stub_dir ]] || stub_dir=$cuda_home/targets/x86_64-linux/lib/stubs
if ! g++ -std=c++17 -O2 -Wall -Werror -I"$cuda_home/include" "$here/release_bench.cpp" -L"$stub_dir" -lcuda \
     -o "$binary" >>"$log" 2>&1; then
  echo "FAIL build (release.log)"
  exit 1
fi

configs=()
[[ $fake == 0 ]] && configs+=("nvidia zero" "nvidia max")
configs+=("streampool zero" "streampool max" "streampool default" "streampool auto")

# run CONFIG ROUND: one process; its key=value lines go to $out/runs/CONFIG.ROUND.
mkdir -p "$out/runs"
run() {
  local pool=${1% *} setting=${1#* } mode env_vars=()
  case $setting in
    zero | max) mode=$setting ;;
    *) mode=unset ;;
  esac
  if [[ $pool == streampool ]]; then
    env_vars+=("LD_PRELOAD=$preload")
    [[ $setting == auto ]] && env_vars+=("STREAMPOOL_RELEASE=auto")
    [[ $fake == 1 ]] && env_vars+=("STREAMPOOL_LIBCUDA=$fake_lib" "ITERATIONS=20")
  fi
  local file="$out/runs/${pool}-${setting}.$2"
  echo "=== $1, round $2: ${env_vars[*]} $binary $mode" >>"$log"
  if ! timeout -k 5 120 env "${env_vars[@]}" "$binary" "$mode" >"$file" 2>>"$log"; then
    echo "FAIL $1 round $2" | tee -a "$log"
    rm -f "$file"
    return 1
  fi
  cat "$file" >>"$log"
}

failures=0
for ((round = 1; round <= rounds; ++round)); do
  for config in "${configs[@]}"; do run "$config" "$round" || failures=$((failures + 1)); done
done

python3 - "$out" "${configs[@]}" >"$out/release.md" <<'EOF'
import glob, os, statistics, sys
out, configs = sys.argv[1], sys.argv[2:]
columns = [("sync_loop_ns_per_iteration", "sync every iteration: us/iter", 1e-3),
           ("phase_peak_reserved_mib", "phase: peak reserved MiB", 1),
           ("phase_held_after_2s_mib", "phase: MiB held after 2 s", 1),
           ("phase_device_free_lost_mib", "phase: device free memory taken, MiB", 1)]
print("| pool, threshold | " + " | ".join(c[1] for c in columns) + " | rounds |")
print("| --- " * (len(columns) + 2) + "|")
for config in configs:
    pool, setting = config.split(" ", 1)
    runs = []
    for path in sorted(glob.glob(os.path.join(out, "runs", f"{pool}-{setting}.*"))):
        values = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
        runs.append({k: float(v) for k, v in values.items()})
    cells = []
    for key, _, scale in columns:
        values = [r[key] for r in runs if key in r]
        cells.append(f"{statistics.median(values) * scale:,.1f}" if values else "-")
    label = {"zero": "0 (set)", "max": "UINT64_MAX (set)", "default": "never set (today's default)",
             "auto": "never set, STREAMPOOL_RELEASE=auto"}[setting]
    print(f"| {pool}, {label} | " + " | ".join(cells) + f" | {len(runs)} |")
EOF
cat "$out/release.md"
exit $((failures > 0))
