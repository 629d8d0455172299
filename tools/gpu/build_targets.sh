# Sourced by the GPU scripts that build what they run from the tree: configures BUILD (tools/setup.sh,
# benchmarks off) when it has no build files, then builds the targets named, logging through the
# caller's `say` and into the caller's $log.
#
#   build_targets BUILD WHAT TARGET...
#
# WHAT names the result in the failure line ("FAIL setup WHAT did not build"). Returns 1 on failure.
build_targets() {
  local build=$1 what=$2
  shift 2
  if [[ ! -e $build/build.ninja && ! -e $build/Makefile ]]; then
    say "# configuring $build"
    (cd "$repo" && tools/setup.sh "$build" -DSTREAMPOOL_BUILD_BENCH=OFF) >>"$log" 2>&1 || { say "FAIL setup configure failed"; return 1; }
  fi
  say "# building $* in $build"
  if ! cmake --build "$build" --target "$@" -j"$(nproc 2>/dev/null || echo 2)" >>"$log" 2>&1; then
    say "FAIL setup $what did not build (see above)"
    return 1
  fi
}
