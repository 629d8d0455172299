"""What the two mutation tools share (tools/mutation-check.py, the hand-written mutations, and
tools/mutate.py, the mechanical ones): a copy of the tree that is configured once and rebuilt by
ninja for each mutant, running commands with a time bound, reading gtest's and ctest's failures,
and docs/mutation-score.md, where each tool owns one marked section and keeps the other's.
Python 3 standard library only.
"""

import os
import re
import shutil
import signal
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CORE_TARGETS = ["core_tests"]
INTERPOSE_TARGETS = ["streampool_preload", "streampool_fakecuda", "interpose_tests", "conformance_tests",
                     "safety_tests"]


def run(command, cwd, log=None, timeout=None, env=None):
    """Runs `command`; returns (exit code or "timeout", output). On a timeout the whole process
    group goes (a test runner's children too, so that none keeps running into the next mutant)."""
    started = time.time()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=env, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        output, _ = process.communicate()
        code = "timeout"
    if log is not None:
        with open(log, "a") as out:
            out.write(f"$ {' '.join(command)}  ({time.time() - started:.0f} s, exit {code})\n{output}\n")
    return code, output


def copy_tree(destination, root=ROOT, keep=()):
    """Brings the copy up to the working tree: files that differ are written (with a fresh time, so
    that a kept build rebuilds them), the others left alone, and the paths of `keep` (relative to
    the tree: files the caller writes itself) left as they are where the copy has them."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if listed.returncode == 0:
        files = listed.stdout.decode().split("\0")
    else:
        # A copy of the tree without its .git (as a build machine may get it): every file but the
        # build folders (/build*/, as .gitignore has them), caches and the destination itself.
        files = []
        destination_real = os.path.realpath(destination)
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [d for d in subfolders if not (folder == root and (d.startswith("build") or d == ".git"))
                             and d != "__pycache__" and os.path.realpath(os.path.join(folder, d)) != destination_real]
            files += [os.path.relpath(os.path.join(folder, name), root) for name in names if not name.endswith(".pyc")]
    # Files the working tree no longer has go from the copy too (its build directory stays).
    wanted = {os.path.normpath(name) for name in files if name}
    for folder, subfolders, names in os.walk(destination):
        if folder == destination and "build" in subfolders:
            subfolders.remove("build")
        for name in names:
            path = os.path.join(folder, name)
            if os.path.relpath(path, destination) not in wanted:
                os.remove(path)
    for name in files:
        source = os.path.join(root, name)
        if not name or not os.path.isfile(source) or (name in keep and os.path.isfile(os.path.join(destination, name))):
            continue
        target = os.path.join(destination, name)
        with open(source, "rb") as text:
            content = text.read()
        if os.path.isfile(target):
            with open(target, "rb") as text:
                if text.read() == content:
                    continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as text:
            text.write(content)
        shutil.copymode(source, target)


def work_paths(work):
    """The copy of the tree and its build directory inside a work directory. The build sits in the
    copy as build/ does in a checkout, so that ccache (CCACHE_BASEDIR above both) finds what any
    checkout's build compiled."""
    tree = os.path.join(work, "tree")
    return tree, os.path.join(tree, "build")


def configure(tree, build_dir, only_core, log):
    """Configures the copy once (tools/setup.sh); a kept build directory is configured again only
    to switch between the engine-only and the full build. ccache, where installed, is used."""
    arguments = [os.path.join(tree, "tools/setup.sh"), build_dir, "-DSTREAMPOOL_BUILD_BENCH=OFF",
                 f"-DSTREAMPOOL_ONLY_CORE={'ON' if only_core else 'OFF'}"]
    if shutil.which("ccache"):
        arguments += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
    return run(arguments, tree, log)[0] == 0


def build(build_dir, targets, log, jobs=2, timeout=None):
    code, _ = run(["cmake", "--build", build_dir, f"-j{jobs}", "--target", *targets], build_dir, log, timeout)
    return code == 0


def existing_targets(build_dir, wanted):
    """The targets of `wanted` the configured build has (a build without CUDA headers has fewer)."""
    code, output = run(["ninja", "-C", build_dir, "-t", "targets", "all"], build_dir)
    if code != 0:
        return list(wanted)
    names = {line.split(":", 1)[0] for line in output.splitlines()}
    return [target for target in wanted if target in names]


def gtest_failures(output, code, program="core_tests"):
    """The tests a gtest run reported failed; a crash or timeout names the test that was running."""
    failed = sorted(set(re.findall(r"^\[  FAILED  \] ([\w/]+\.[\w/]+)", output, re.M)))
    if code == 0 or (code == 1 and failed):
        return failed
    running = re.findall(r"^\[ RUN      \] ([\w/.]+)", output, re.M)
    done = set(re.findall(r"^\[       OK \] ([\w/.]+)", output, re.M)) | set(failed)
    unfinished = [name for name in running if name not in done]
    what = "timed out" if code == "timeout" else f"crashed (exit {code})"
    if unfinished:
        failed.append(f"{unfinished[-1]} ({what})")
    elif not failed:
        failed.append(f"{program} ({what})")
    return failed


def ctest_failures(output):
    """The tests ctest's summary lists as failed (a test's own timeout included: "(Timeout)")."""
    return sorted(set(re.findall(r"^\s*\d+ - ([\w./-]+) \(", output, re.M)))


def model_finding(output):
    match = re.search(r"^model check failed: (seed \d+, step \d+: .*)$", output, re.M)
    return match.group(1)[:400] if match else ""


def shown_command(tool, argv):
    """The command line as the document shows it: --keep (where it built) does not matter."""
    shown = []
    skip = False
    for argument in argv:
        if skip:
            skip = False
            continue
        if argument == "--keep":
            skip = True
            continue
        if argument.startswith("--keep="):
            continue
        shown.append(argument)
    return " ".join([tool] + shown).strip()


# --- docs/mutation-score.md ----------------------------------------------------------------------
# The file is a title and one marked section per tool, in this order. A tool rewrites its own
# section only; a section it finds without markers (a file from before the markers) is taken as
# the hand-written mutations' section.

TITLE = "# Mutation score\n"
SECTIONS = ["mechanical", "hand-written"]


def _markers(name):
    return f"<!-- section {name}: written by its tool, edited only in its notes -->", f"<!-- end of section {name} -->"


def read_sections(path):
    if not os.path.isfile(path):
        return {}
    with open(path) as source:
        text = source.read()
    sections = {}
    for name in SECTIONS:
        begin, end = _markers(name)
        first, last = text.find(begin), text.find(end)
        if first >= 0 and last > first:
            sections[name] = text[first + len(begin):last].strip("\n") + "\n"
    if not sections:
        body = text[len(TITLE):] if text.startswith(TITLE) else text
        if body.strip():
            sections["hand-written"] = body.strip("\n") + "\n"
    return sections


def write_section(path, name, content):
    sections = read_sections(path)
    sections[name] = content.strip("\n") + "\n"
    parts = [TITLE]
    for section in SECTIONS:
        if section in sections:
            begin, end = _markers(section)
            parts.append(f"\n{begin}\n{sections[section]}{end}\n")
    with open(path, "w") as out:
        out.write("".join(parts))
