"""One member of a streampool group (STREAMPOOL_GROUP) on the GPU, for tools/gpu/group_check.sh.

    python3 tools/gpu/group_member.py hold GIB READY_FILE   takes GIB and holds it until killed
    python3 tools/gpu/group_member.py probe GIB             prints mem_get_info, tries GIB (expects OOM)
    python3 tools/gpu/group_member.py take GIB              takes GIB (expects success)

Prints one `key=value` line per figure.
"""
import os
import sys
import time

import torch


def gib(value):
    return value / float(1 << 30)


def info(tag):
    free, total = torch.cuda.mem_get_info()
    print(f"{tag} free_gib={gib(free):.3f} total_gib={gib(total):.3f}", flush=True)


def take(size_gib):
    return torch.empty(int(size_gib * (1 << 30)), dtype=torch.uint8, device="cuda")


def main():
    mode, size = sys.argv[1], float(sys.argv[2])
    torch.cuda.init()
    info(f"{mode}_start")
    if mode == "hold":
        held = take(size)
        torch.cuda.synchronize()
        info("hold_taken")
        with open(sys.argv[3] + ".tmp", "w") as out:
            out.write("ready\n")
        os.rename(sys.argv[3] + ".tmp", sys.argv[3])
        while held is not None:
            time.sleep(1)
    started = time.time()
    try:
        block = take(size)
        torch.cuda.synchronize()
        print(f"{mode}_outcome=allocated gib={size} seconds={time.time() - started:.3f}", flush=True)
        info(f"{mode}_after")
        del block
    except torch.cuda.OutOfMemoryError as error:
        print(f"{mode}_outcome=oom gib={size} message={str(error).splitlines()[0][:200]}", flush=True)


if __name__ == "__main__":
    main()
