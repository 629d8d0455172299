#!/usr/bin/env python3
"""How far PyTorch's wheel gets with streampool's runtime as its libcudart.so.13.

    torch_cudart_trial.py --runtime-dir DIR --out DIR [--scan PATH ...] [--step-timeout S]

--runtime-dir: a folder whose libcudart.so.13 is streampool's (the build's runtime/ folder).
1. Where torch's libraries are and how they find libcudart.so.13: DT_NEEDED, DT_RPATH/DT_RUNPATH of
   every library under torch/lib and the nvidia/ package folders, and the loader's own account
   (LD_DEBUG=libs) of the search that found it, with NVIDIA's stack and with our folder first on
   LD_LIBRARY_PATH.
2. What they import from libcudart.so.13 and what streampool's runtime lacks (tools/cudart_imports.py):
   torch_cudart_imports.txt (for tools/cudart_coverage.py --needed-by PyTorch=...) and
   torch_cudart_missing.md.
3. Small steps (import, cuda.is_available, a tensor on the GPU, a matmul, training steps, the
   cudaMallocAsync backend), each in its own process, in four modes:
     nvidia            NVIDIA's stack as installed (the reference)
     ld_library_path   our folder first on LD_LIBRARY_PATH
     ld_preload        LD_PRELOAD=<our folder>/libcudart.so.13 (an object already loaded under the
                       SONAME libcudart.so.13 satisfies every later DT_NEEDED of it, RUNPATH or not)
     ld_preload_lazy   as ld_preload, and Python opens extension modules with RTLD_LAZY, so a missing
                       function fails when first called instead of at import
   For each: exit status, the libcudart files mapped in the process, and the error it stopped with.
Without torch (a machine with no GPU) steps 1 and 3 say so, and step 2 lists --scan paths only.
The Markdown summary goes to torch_cudart_missing.md; everything is printed (the shell script logs it).
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import cudart_imports  # noqa: E402

MAPS = r'''
def _cudart_maps():
    seen = []
    for line in open("/proc/self/maps"):
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if re.search(r"libcudart|streampool|libcuda\.so", path) and path not in seen:
            seen.append(path)
    return seen
'''

# The mapped libraries are printed at exit, also after an ImportError (not after the loader's own
# "symbol lookup error", which ends the process at once).
PRELUDE = "import atexit, os, re, sys\n" + MAPS + '''
atexit.register(lambda: [print("mapped:", path, flush=True) for path in _cudart_maps()])
if os.environ.get("TRIAL_LAZY") == "1":
    sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)
import torch
'''

STEPS = (
    ("import", 'print("torch", torch.__version__, "cuda", torch.version.cuda)'),
    ("is_available", 'ok = torch.cuda.is_available(); print("available", ok, "devices", torch.cuda.device_count())\n'
                     'assert ok\nprint("device 0:", torch.cuda.get_device_name(0))'),
    ("tensor", 'x = torch.arange(1 << 20, device="cuda", dtype=torch.float64)\n'
               'total = x.sum().item(); print("sum", total); assert total == (1 << 20) * ((1 << 20) - 1) / 2'),
    ("matmul", 'torch.manual_seed(0); a = torch.randn(512, 512)\nc = (a.cuda() @ a.cuda()).cpu()\n'
               'err = (c - a @ a).abs().max().item(); print("max abs error vs CPU", err); assert err < 1e-2'),
    ("train", 'torch.manual_seed(0)\nmodel = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),'
              ' torch.nn.Linear(128, 1)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\n'
              'x = torch.randn(256, 64, device="cuda"); y = x.sum(dim=1, keepdim=True)\nlosses = []\n'
              'for _ in range(20):\n    opt.zero_grad(); loss = torch.nn.functional.mse_loss(model(x), y)\n'
              '    loss.backward(); opt.step(); losses.append(loss.item())\n'
              'torch.cuda.synchronize(); print("loss first %.4f last %.4f" % (losses[0], losses[-1]))\n'
              'assert losses[-1] < losses[0]'),
    ("async_allocator", 'assert torch.cuda.memory.get_allocator_backend() == "cudaMallocAsync"\n'
                        'xs = [torch.empty(1 << 20, device="cuda") for _ in range(16)]\ndel xs[::2]\n'
                        'y = torch.ones(1 << 22, device="cuda") * 2; torch.cuda.synchronize()\n'
                        'print("sum", y.sum().item(), "allocated", torch.cuda.memory_allocated())'),
)
MODES = ("nvidia", "ld_library_path", "ld_preload", "ld_preload_lazy")


def mode_environment(mode, runtime_dir):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if mode == "nvidia":
        return env
    env["LD_LIBRARY_PATH"] = runtime_dir + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    if mode.startswith("ld_preload"):
        env["LD_PRELOAD"] = os.path.join(runtime_dir, "libcudart.so.13")
    if mode == "ld_preload_lazy":
        env["TRIAL_LAZY"] = "1"
    return env


def stop_reason(text):
    """The line that says why a step stopped: a loader or Python error, else the last line."""
    lines = [line for line in text.splitlines() if line.strip()]
    for pattern in (r"undefined symbol|symbol lookup error|cannot open shared object|version .* not found",
                    r"^\w*(Error|Exception)\b.*", r"Error|error"):
        for line in reversed(lines):
            if re.search(pattern, line):
                return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "(no output)"


def run_step(mode, step, body, runtime_dir, timeout):
    env = mode_environment(mode, runtime_dir)
    if step == "async_allocator":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    script = PRELUDE + body + "\n"
    try:
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout)
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        output, status = output + f"\n(timed out after {timeout} s)", 124
    mapped = [line.split("mapped: ", 1)[1] for line in output.splitlines() if line.startswith("mapped: ")]
    return dict(mode=mode, step=step, status=status, mapped=mapped, output=output,
                reason="" if status == 0 else stop_reason(output))


def loader_account(runtime_dir, mode):
    """The loader's lines about libcudart.so.13 while importing torch (LD_DEBUG=libs)."""
    env = mode_environment(mode, runtime_dir)
    env["LD_DEBUG"] = "libs"
    done = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True, timeout=300)
    keep = []
    lines = done.stderr.splitlines()
    for index, line in enumerate(lines):
        if "find library=libcudart" in line:
            keep += [text.strip() for text in lines[index:index + 8]
                     if re.search(r"find library|search path|trying file|search cache", text)]
    return keep[:40], done.returncode


def package_folders():
    """torch/ and the nvidia/ package folders of this Python, found without importing torch."""
    folders = []
    for name in ("torch", "nvidia"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders += list(spec.submodule_search_locations)
    return folders


def summary_markdown(results, listing_md, torch_found):
    lines = ["# PyTorch with streampool's runtime as libcudart.so.13", ""]
    if not torch_found:
        lines += ["torch is not installed here: no steps ran.", ""]
    else:
        lines += ["| step | " + " | ".join(MODES) + " |", "| --- |" + " --- |" * len(MODES)]
        for step, _ in STEPS:
            row = f"| {step} |"
            for mode in MODES:
                result = next((r for r in results if r["mode"] == mode and r["step"] == step), None)
                row += " — |" if result is None else (" ok |" if result["status"] == 0 else f" FAIL ({result['status']}) |")
            lines.append(row)
        lines.append("")
        for mode in MODES:
            failed = [r for r in results if r["mode"] == mode and r["status"] != 0]
            mapped = sorted({path for r in results if r["mode"] == mode for path in r["mapped"]})
            where = (f"stops at **{failed[0]['step']}**: `{failed[0]['reason']}`" if failed else "every step passed")
            lines.append(f"- {mode}: {where}; libcudart/libcuda mapped: {', '.join(f'`{p}`' for p in mapped) or 'none seen'}")
        lines.append("")
    return "\n".join(lines) + "\n" + listing_md


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--scan", nargs="*", default=[], help="more libraries or folders for the symbol listing")
    parser.add_argument("--step-timeout", type=float, default=300)
    args = parser.parse_args(argv)
    runtime_dir = os.path.abspath(args.runtime_dir)
    ours = os.path.join(runtime_dir, "libcudart.so.13")
    os.makedirs(args.out, exist_ok=True)

    folders = package_folders()
    torch_found = any(os.path.basename(folder) == "torch" for folder in folders)
    print(f"== python {sys.version.split()[0]}; torch {'found' if torch_found else 'NOT installed'}; folders: {folders}")
    print(f"== our libcudart.so.13: {ours} -> {os.path.realpath(ours)}")

    print("== 1. how torch's libraries find libcudart.so.13")
    if torch_found:
        for mode in ("nvidia", "ld_library_path"):
            account, status = loader_account(runtime_dir, mode)
            print(f"-- LD_DEBUG=libs python3 -c 'import torch' ({mode}; exit {status}):")
            for line in account or ["(no search for libcudart.so.13 seen: loaded by full path, or not at all)"]:
                print("   " + line)

    print("== 2. libcudart.so.13 functions imported (nm -D --undefined-only) and missing from streampool's runtime")
    names_path = os.path.join(args.out, "torch_cudart_imports.txt")
    listing_path = os.path.join(args.out, "torch_cudart_listing.md")
    cudart_imports.main(folders + args.scan + ["--exports", ours, "--names-out", names_path,
                                               "--markdown-out", listing_path, "--title",
                                               "libcudart.so.13 functions PyTorch's libraries import, missing from streampool's runtime"])
    with open(listing_path) as handle:
        listing_md = handle.read()
    os.unlink(listing_path)

    results = []
    print("== 3. steps")
    if torch_found:
        for mode in MODES:
            for step, body in STEPS:
                result = run_step(mode, step, body, runtime_dir, args.step_timeout)
                results.append(result)
                print(f"-- {mode} / {step}: exit {result['status']}" + (f"  [{result['reason']}]" if result["status"] else ""))
                for line in result["output"].splitlines()[-15:]:
                    print("   | " + line)
    summary = summary_markdown(results, listing_md, torch_found)
    with open(os.path.join(args.out, "torch_cudart_missing.md"), "w") as handle:
        handle.write(summary)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
