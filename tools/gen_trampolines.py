#!/usr/bin/env python3
"""Generates libstreampool.so's driver entry points from CUDA's stub libcuda.

Every cu* name the stub exports (nm -D --defined-only) becomes an exported function of the same
name that tail-jumps through a table slot to the real driver's symbol. A slot starts out pointing
at a resolver that saves every argument register, asks spi_forward_resolve(index) (C++, in
src/interpose/forward_resolve.cpp) for the target, stores it in the slot and jumps there; so the
real symbol is looked up once, on first call, and the caller's arguments (registers and stack)
arrive untouched.

Names listed in hooked_symbols.txt are streampool's own definitions: for those the trampoline is
emitted WEAK, so a hook defined anywhere in the library (extern "C", default visibility) wins at
link time, and a missing hook still forwards. The generated C file also holds the tables that
cuGetProcAddress routing uses: every name (sorted) and, per name, the address of streampool's
definition for hooked names (NULL for forwarded ones).

Outputs (in --out-dir): driver_entry_points.c, driver_symbols.txt (all names), forwarded_symbols.txt.
"""
import argparse
import os
import re
import subprocess
import sys

NAME = re.compile(r"^cu[A-Za-z0-9_]*$")


def stub_names(nm, stub):
    output = subprocess.run([nm, "-D", "--defined-only", stub], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] in ("T", "W", "i") and NAME.match(fields[2]):
            names.add(fields[2].split("@")[0])
    return sorted(names)


def hooked_names(path):
    names = []
    with open(path) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


# What each resolver saves before calling spi_forward_resolve and restores after it, as
# (register, offset from the stack pointer): one table per architecture, so that the save and the
# restore sequences cannot disagree.
X86_64_SAVED_GPRS = [("rdi", 0), ("rsi", 8), ("rdx", 16), ("rcx", 24), ("r8", 32), ("r9", 40), ("rax", 48),
                     ("r10", 56)]
X86_64_SAVED_XMMS = [(f"xmm{reg}", 64 + 16 * reg) for reg in range(8)]
AARCH64_SAVED_X_PAIRS = [("x0", "x1", 16), ("x2", "x3", 32), ("x4", "x5", 48), ("x6", "x7", 64)]
AARCH64_X8_OFFSET = 80  # x8, the indirect-result register, saved alone
AARCH64_SAVED_Q_PAIRS = [("q0", "q1", 96), ("q2", "q3", 128), ("q4", "q5", 160), ("q6", "q7", 192)]


def x86_64_assembly(names, hooked):
    lines = ["\t.text"]
    for index, name in enumerate(names):
        binding = ".weak" if name in hooked else ".globl"
        lines += [
            "\t.p2align 4",
            f"\t{binding} {name}",
            f"\t.type {name}, @function",
            f"{name}:",
            "\tendbr64",
            f"\tjmp *spi_forward_slots+{8 * index}(%rip)",
            f"\t.size {name}, .-{name}",
            f".Lspi_resolve_{index}:",
            "\tendbr64",
            f"\tmovl ${index}, %r11d",
            "\tjmp .Lspi_resolve_common",
        ]
    # Entered with the caller's arguments live and %rsp = 8 mod 16 (as at any function entry).
    # Saves the integer argument registers, %rax (vector-register count of variadic calls) and
    # %r10, plus xmm0-7; stack arguments stay where they are because %rsp is restored before the jump.
    lines += [
        "\t.p2align 4",
        ".Lspi_resolve_common:",
        "\tpushq %rbp",
        "\tmovq %rsp, %rbp",
        "\tsubq $192, %rsp",
    ]
    lines += [f"\tmovq %{reg}, {offset}(%rsp)" for reg, offset in X86_64_SAVED_GPRS]
    lines += [f"\tmovaps %{reg}, {offset}(%rsp)" for reg, offset in X86_64_SAVED_XMMS]
    lines += ["\tmovl %r11d, %edi", "\tcall spi_forward_resolve@PLT", "\tmovq %rax, %r11"]
    lines += [f"\tmovaps {offset}(%rsp), %{reg}" for reg, offset in X86_64_SAVED_XMMS]
    lines += [f"\tmovq {offset}(%rsp), %{reg}" for reg, offset in X86_64_SAVED_GPRS]
    lines += ["\tleave", "\tjmp *%r11"]
    lines += slot_table(names, ".quad")
    return lines


def aarch64_assembly(names, hooked):
    lines = ["\t.text"]
    for index, name in enumerate(names):
        binding = ".weak" if name in hooked else ".globl"
        slot = f"spi_forward_slots+{8 * index}"
        lines += [
            "\t.p2align 4",
            f"\t{binding} {name}",
            f"\t.type {name}, %function",
            f"{name}:",
            f"\tadrp x16, {slot}",
            f"\tldr x16, [x16, #:lo12:{slot}]",
            "\tbr x16",
            f"\t.size {name}, .-{name}",
            f".Lspi_resolve_{index}:",
            f"\tmov w17, #{index}",
            "\tb .Lspi_resolve_common",
        ]
    # Saves x0-x8 (x8: indirect result) and q0-q7; x16/x17 are the intra-procedure scratch registers.
    lines += [
        "\t.p2align 4",
        ".Lspi_resolve_common:",
        "\tstp x29, x30, [sp, #-224]!",
        "\tmov x29, sp",
    ]
    lines += [f"\tstp {first}, {second}, [sp, #{offset}]" for first, second, offset in AARCH64_SAVED_X_PAIRS]
    lines += [f"\tstr x8, [sp, #{AARCH64_X8_OFFSET}]"]
    lines += [f"\tstp {first}, {second}, [sp, #{offset}]" for first, second, offset in AARCH64_SAVED_Q_PAIRS]
    lines += ["\tmov w0, w17", "\tbl spi_forward_resolve", "\tmov x16, x0"]
    lines += [f"\tldp {first}, {second}, [sp, #{offset}]" for first, second, offset in AARCH64_SAVED_Q_PAIRS]
    lines += [f"\tldr x8, [sp, #{AARCH64_X8_OFFSET}]"]
    lines += [f"\tldp {first}, {second}, [sp, #{offset}]" for first, second, offset in AARCH64_SAVED_X_PAIRS]
    lines += ["\tldp x29, x30, [sp], #224", "\tbr x16"]
    lines += slot_table(names, ".xword")
    return lines


def slot_table(names, word):
    lines = [
        "\t.data",
        "\t.p2align 3",
        "\t.globl spi_forward_slots",
        "\t.hidden spi_forward_slots",
        "\t.type spi_forward_slots, %object",
        "spi_forward_slots:",
    ]
    lines += [f"\t{word} .Lspi_resolve_{index}" for index in range(len(names))]
    lines += [f"\t.size spi_forward_slots, {8 * len(names)}", "\t.text"]
    return lines


def c_asm_block(lines):
    return "__asm__(\n" + "\n".join(f'    "{line}\\n"' for line in lines) + "\n);\n"


def generate_c(names, hooked, stub):
    out = [
        f"/* Generated by tools/gen_trampolines.py from {os.path.basename(stub)}: do not edit. */",
        "#include <stddef.h>",
        "",
        f"#define SPI_SYMBOL_COUNT {len(names)}",
        "",
        "/* Every driver entry point streampool exports, sorted (strcmp order). */",
        "const unsigned spi_symbol_count = SPI_SYMBOL_COUNT;",
        "const char* const spi_symbol_names[SPI_SYMBOL_COUNT] = {",
    ]
    out += [f'    "{name}",' for name in names]
    out += ["};", "", "/* streampool's own definitions (strong ones from src/interpose/hooks, else the weak forwarders below). */"]
    out += [f"extern void {name}(void);" for name in names if name in hooked]
    out += ["", "void (*const spi_hooked_functions[SPI_SYMBOL_COUNT])(void) = {"]
    out += [f"    {name if name in hooked else 'NULL'}, /* {name} */" for name in names]
    out += ["};", "", "#if defined(__x86_64__)"]
    out.append(c_asm_block(x86_64_assembly(names, hooked)))
    out.append("#elif defined(__aarch64__)")
    out.append(c_asm_block(aarch64_assembly(names, hooked)))
    out += ["#else", '#error "streampool trampolines exist for x86-64 and aarch64 only"', "#endif", ""]
    return "\n".join(out)


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path) as handle:
            if handle.read() == text:
                return
    with open(path, "w") as handle:
        handle.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", required=True)
    parser.add_argument("--stub", required=True)
    parser.add_argument("--hooked", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()

    names = stub_names(args.nm, args.stub)
    if not names:
        sys.exit(f"gen_trampolines: no cu* names in {args.stub}")
    hooked_list = hooked_names(args.hooked)
    unknown = [name for name in hooked_list if name not in set(names)]
    if unknown:
        sys.exit(f"gen_trampolines: hooked names not exported by the stub: {', '.join(unknown)}")
    hooked = set(hooked_list)

    os.makedirs(args.out_dir, exist_ok=True)
    write_if_changed(os.path.join(args.out_dir, "driver_entry_points.c"), generate_c(names, hooked, args.stub))
    write_if_changed(os.path.join(args.out_dir, "driver_symbols.txt"), "".join(f"{n}\n" for n in names))
    write_if_changed(os.path.join(args.out_dir, "forwarded_symbols.txt"),
                     "".join(f"{n}\n" for n in names if n not in hooked))


if __name__ == "__main__":
    main()
