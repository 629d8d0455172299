#!/usr/bin/env bash
# Stages the upstream test files that upstream_tests.sh runs (PyTorch's test/test_cuda.py, CuPy's
# tests/cupy_tests/cuda_tests/test_memory.py with the package files it sits in)
# into an ignored folder, with this repository's conftest (upstream_conftest.py) at its top. The
# framework wheels do not ship their test suites, and no third-party code is kept in this
# repository: the files come from a source the caller names.
#
#   tools/gpu/stage_upstream_tests.sh [--pytorch SRC] [--cupy SRC] [DEST]
#
# SRC: a git directory (a bare mirror or a checkout's .git): the files are taken at PYTORCH_REF
# (default v2.11.0, the wheel on the GPU box) or CUPY_REF (default v14.2.0); or a source folder (the
# files as they are). DEST (default .gl/upstream-tests of the repository, which .gitignore leaves
# out and the GPU runs carry): DEST/pytorch-src/test/test_cuda.py, DEST/cupy-src/tests/... (folder names no Python import can take for the frameworks), DEST/conftest.py
# and DEST/SOURCES.txt (each file's origin, revision and sha256). A suite not named keeps what an
# earlier staging left. Exits 1 if a named source lacks a file.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
pytorch=""
cupy=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --pytorch) pytorch=${2:-}; shift 2 ;;
    --cupy) cupy=${2:-}; shift 2 ;;
    -*) echo "usage: $0 [--pytorch SRC] [--cupy SRC] [DEST]" >&2; exit 2 ;;
    *) break ;;
  esac
done
dest=${1:-$repo/.gl/upstream-tests}
if [[ -z $pytorch && -z $cupy ]]; then
  echo "usage: $0 [--pytorch SRC] [--cupy SRC] [DEST]: name at least one source" >&2
  exit 2
fi
mkdir -p "$dest" || exit 1
sources=$dest/SOURCES.txt
touch "$sources"
status=0

# stage SRC REF SUITE FILE...: copies each FILE (a path in the upstream tree) to DEST/SUITE/FILE.
stage() {
  local src=$1 ref=$2 suite=$3 file origin revision
  shift 3
  sed -i "\\|^$suite/|d" "$sources"
  for file in "$@"; do
    mkdir -p "$dest/$suite/$(dirname "$file")"
    if git --git-dir="$src" rev-parse --verify -q "$ref^{commit}" >/dev/null 2>&1; then
      revision="$ref ($(git --git-dir="$src" rev-parse "$ref^{commit}"))"
      origin="git $src"
      git --git-dir="$src" show "$ref:$file" >"$dest/$suite/$file" 2>/dev/null || {
        echo "stage: $suite: no $file at $ref in $src" >&2
        rm -f "$dest/$suite/$file"
        status=1
        continue
      }
    elif [[ -d $src/.git || -d $src/objects ]]; then
      echo "stage: $suite: $src has no revision $ref" >&2
      status=1
      return
    elif [[ -f $src/$file ]]; then
      revision="as found"
      origin="folder $src"
      cp "$src/$file" "$dest/$suite/$file"
    else
      echo "stage: $suite: no $file in $src" >&2
      status=1
      continue
    fi
    echo "$suite/$file | $origin | $revision | sha256 $(sha256sum "$dest/$suite/$file" | cut -d' ' -f1)" >>"$sources"
  done
}

git_dir() { # a checkout's .git, else SRC itself
  if [[ -d $1/.git ]]; then echo "$1/.git"; else echo "$1"; fi
}

if [[ -n $pytorch ]]; then
  # test_cuda.py imports only torch's own modules (torch.testing._internal is in the wheel) and
  # psutil; upstream_tests.sh reports any module the box lacks.
  stage "$(git_dir "$pytorch")" "${PYTORCH_REF:-v2.11.0}" pytorch-src test/test_cuda.py
fi
if [[ -n $cupy ]]; then
  # Not tests/conftest.py: it sets up pytester and pytest-xdist's GPU rotation, which test_memory.py
  # does not use, through pytest_plugins, which pytest refuses in a conftest below the root.
  stage "$(git_dir "$cupy")" "${CUPY_REF:-v14.2.0}" cupy-src tests/cupy_tests/__init__.py \
    tests/cupy_tests/cuda_tests/__init__.py tests/cupy_tests/cuda_tests/test_memory.py
fi
cp "$here/upstream_conftest.py" "$dest/conftest.py"
sort -o "$sources" "$sources"
echo "stage: $dest ($(du -sh "$dest" | cut -f1)):"
sed 's/^/  /' "$sources"
exit $status
