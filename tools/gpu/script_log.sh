# Sourced by the runtime's GPU scripts (cudart_check.sh, cudart_conformance.sh, cudart_bench.sh,
# torch_cudart_trial.sh): their common start.
#
#   source tools/gpu/script_log.sh LOG_NAME DEFAULT_OUT [--fake] [BUILD_DIR]
#
# Sets fake (0/1), build_dir (default build-gpu), repo (and goes there), out ($OUT, else
# DEFAULT_OUT under build_dir; made absolute), log ($out/LOG_NAME, emptied) and status (0), and
# defines say (print and log a line) and run (log a command, run it with its output in the log,
# log its exit status, set status=1 on failure).
log_name=$1
default_out=$2
shift 2
fake=0
if [ "${1:-}" = "--fake" ]; then fake=1; shift; fi
build_dir=${1:-build-gpu}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 1
out=${OUT:-$build_dir/$default_out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log="$out/$log_name"
: >"$log"
status=0
say() { echo "$*" | tee -a "$log"; }
run() { say "\$ $*"; "$@" >>"$log" 2>&1; local rc=$?; say "  -> exit $rc"; [ $rc -eq 0 ] || status=1; return $rc; }
