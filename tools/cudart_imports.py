#!/usr/bin/env python3
"""What ELF libraries import from libcudart.so.13, and which of those streampool's runtime lacks.

    cudart_imports.py [--exports LIB] [--names-out FILE] [--markdown-out FILE] [--title TEXT] PATH...

PATH is a library or a folder (searched recursively for *.so and *.so.N files). For every ELF file
that imports something in the libcudart.so.13 version node (`nm -D --undefined-only`: names printed
as `cudaFree@libcudart.so.13`), or that has DT_NEEDED libcudart.so.13 and imports cuda* names with
no version, it prints the file, its DT_NEEDED, DT_RPATH and DT_RUNPATH, and how many cudart names it
imports. --exports: the runtime to hold them to (libstreampool_cudart.so): the names it does not
export are "missing". --names-out: every imported name, one a line (tools/cudart_coverage.py
--needed-by reads it). --markdown-out: the missing names and which libraries import each.
Exit status 0 (also when names are missing), 2 on a usage error.
"""
import argparse
import os
import re
import subprocess
import sys

CUDART_VERSION_NODE = "libcudart.so.13"
CUDART_NAME = re.compile(r"^(cuda|__cuda)\w*$")


def run_text(argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def parse_undefined(nm_output):
    """{name: version or ''} of the cuda* names an `nm -D --undefined-only` listing imports."""
    names = {}
    for line in nm_output.splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[0] not in ("U", "w", "v"):
            continue
        symbol = fields[1]
        name, _, version = symbol.partition("@")
        version = version.lstrip("@")
        if CUDART_NAME.match(name):
            names[name] = version
    return names


def parse_dynamic(readelf_output):
    """(needed, rpath, runpath) from `readelf -d`."""
    needed, rpath, runpath = [], "", ""
    for line in readelf_output.splitlines():
        value = re.search(r"\[(.*)\]", line)
        if value is None:
            continue
        if "(NEEDED)" in line:
            needed.append(value.group(1))
        elif "(RPATH)" in line:
            rpath = value.group(1)
        elif "(RUNPATH)" in line:
            runpath = value.group(1)
    return needed, rpath, runpath


def cudart_imports(library):
    """The names `library` takes from libcudart.so.13 (sorted), and its (needed, rpath, runpath)."""
    dynamic = parse_dynamic(run_text(["readelf", "-d", library]))
    needs_cudart = any(name.startswith("libcudart.so") for name in dynamic[0])
    names = parse_undefined(run_text(["nm", "-D", "--undefined-only", library]))
    chosen = sorted(name for name, version in names.items()
                    if version == CUDART_VERSION_NODE or (version == "" and needs_cudart))
    return chosen, dynamic


def exported(library):
    """cuda* names a library defines (as tools/cudart_coverage.py counts them)."""
    names = set()
    for line in run_text(["nm", "-D", "--defined-only", library]).splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] in ("T", "W", "i"):
            name = fields[2].split("@")[0]
            if CUDART_NAME.match(name):
                names.add(name)
    return names


def is_elf(path):
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def libraries_under(paths):
    shared = re.compile(r"\.so(\.\d+)*$")
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    candidate = os.path.join(root, name)
                    if shared.search(name) and not os.path.islink(candidate) and is_elf(candidate):
                        found.append(candidate)
        elif is_elf(path):
            found.append(path)
    return found


def missing_table(importers, ours, title):
    """Markdown: every imported name streampool's runtime lacks, with the libraries importing it."""
    wanted = sorted(importers)
    missing = [name for name in wanted if name not in ours]
    lines = [f"# {title}", "",
             f"{len(wanted)} functions of `{CUDART_VERSION_NODE}` are imported; "
             f"{len(wanted) - len(missing)} are exported by streampool's runtime, **{len(missing)} are missing**.",
             ""]
    if missing:
        lines += ["| missing function | imported by |", "| --- | --- |"]
        lines += [f"| `{name}` | {', '.join(sorted(importers[name]))} |" for name in missing]
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--exports", help="the runtime the imports are held to (libstreampool_cudart.so)")
    parser.add_argument("--names-out")
    parser.add_argument("--markdown-out")
    parser.add_argument("--title", default="libcudart.so.13 functions imported, and missing from streampool's runtime")
    args = parser.parse_args(argv)
    ours = exported(args.exports) if args.exports else None
    importers = {}
    for library in libraries_under(args.paths):
        names, (needed, rpath, runpath) = cudart_imports(library)
        if not names and not any(name.startswith("libcudart.so") for name in needed):
            continue
        print(f"{library}: {len(names)} cudart imports; NEEDED {' '.join(needed) or '-'}; "
              f"RPATH {rpath or '-'}; RUNPATH {runpath or '-'}")
        for name in names:
            importers.setdefault(name, set()).add(os.path.basename(library))
    print(f"{len(importers)} distinct libcudart.so.13 functions imported")
    if args.names_out:
        with open(args.names_out, "w") as handle:
            handle.write("".join(f"{name}\n" for name in sorted(importers)))
    if ours is not None:
        missing = sorted(name for name in importers if name not in ours)
        print(f"missing from {os.path.basename(args.exports)}: {len(missing)}")
        for name in missing:
            print(f"  {name}  ({', '.join(sorted(importers[name]))})")
        if args.markdown_out:
            with open(args.markdown_out, "w") as handle:
                handle.write(missing_table(importers, ours, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
