# Sourced by the benchmark scripts (bench/*/run.sh).
# benchmark_min_time_flag SECONDS BINARY [VAR=value ...]: the --benchmark_min_time flag in the
# form this Google Benchmark takes. Up to 1.7 it wants a plain number; from 1.8 on "0.5s" (a
# plain number still works there, with a warning). Listing runs nothing, so probing is free.
benchmark_min_time_flag() {
  local seconds=$1 binary=$2
  shift 2
  if env "$@" "$binary" --benchmark_list_tests "--benchmark_min_time=${seconds}s" >/dev/null 2>&1; then
    echo "--benchmark_min_time=${seconds}s"
  else
    echo "--benchmark_min_time=${seconds}"
  fi
}
