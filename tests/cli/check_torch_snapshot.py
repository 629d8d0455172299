#!/usr/bin/env python3
"""Checks a file `streampool export --format torch-snapshot` wrote, with the standard library only.

It reads the file the way PyTorch's memory tools do (torch/cuda/_memory_viz.py in Python, and the
viewer's own unpickler and state reconstruction in torch/utils/viz/MemoryViz.js) and fails with one
line on anything they would trip on:
  - only the pickle opcodes the viewer's unpickler knows;
  - the dictionary torch.cuda.memory._snapshot() returns: segments with blocks that tile them
    (_memory_viz's `stats` asserts it), device_traces of entries with the fields each action has;
  - the viewer's "Allocator State History" rebuilds each earlier state by undoing entries from the
    final segments back: every undo must find what it undoes, every live block must lie in a
    segment at every step, and (a trace recorded from the process's start) undoing everything
    must leave nothing.
Prints one summary line: entries per action, segments, and the peak of reserved and allocated
bytes over the trace.

usage: check_torch_snapshot.py SNAPSHOT.pickle
"""
import pickle
import pickletools
import sys

# The opcodes MemoryViz.js's unpickler handles.
VIEWER_OPCODES = {
    "PROTO", "APPEND", "APPENDS", "LIST", "TUPLE", "NEWFALSE", "NEWTRUE", "NONE", "BINGET", "BININT",
    "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME", "LONG1", "LONG_BINGET", "MARK", "MEMOIZE",
    "BINPUT", "LONG_BINPUT", "SETITEMS", "SETITEM", "DICT", "SHORT_BINUNICODE", "BINUNICODE", "STOP",
    "EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "BINFLOAT",
}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_map", "segment_unmap", "segment_alloc",
           "segment_free", "oom", "snapshot"}
BLOCK_STATES = {"active_allocated", "active_pending_free", "inactive"}


class Bad(Exception):
    pass


def need(condition, what):
    if not condition:
        raise Bad(what)


def check_frames(frames, where):
    need(isinstance(frames, list), f"{where}: frames is not a list")
    for frame in frames:
        need(isinstance(frame, dict) and isinstance(frame.get("filename"), str) and isinstance(frame.get("line"), int)
             and isinstance(frame.get("name"), str), f"{where}: a frame without filename/line/name")


def check_structure(data):
    need(isinstance(data, dict), "the snapshot is not a dict")
    need(isinstance(data.get("segments"), list), "no segments list")
    need(isinstance(data.get("device_traces"), list), "no device_traces list")
    for i, seg in enumerate(data["segments"]):
        where = f"segment {i}"
        for key in ("device", "address", "total_size", "allocated_size", "active_size", "stream"):
            need(isinstance(seg.get(key), int), f"{where}: {key} is not an int")
        need(isinstance(seg.get("segment_type"), str), f"{where}: no segment_type")
        need(isinstance(seg.get("blocks"), list) and seg["blocks"], f"{where}: no blocks")
        offset = 0
        allocated = 0
        for j, block in enumerate(seg["blocks"]):
            bwhere = f"{where} block {j}"
            for key in ("address", "size", "requested_size"):
                need(isinstance(block.get(key), int), f"{bwhere}: {key} is not an int")
            need(block.get("state") in BLOCK_STATES, f"{bwhere}: state {block.get('state')!r}")
            need(block["address"] == seg["address"] + offset, f"{bwhere}: does not follow the block before it")
            need(0 < block["size"] and block["requested_size"] <= block["size"], f"{bwhere}: bad sizes")
            check_frames(block.get("frames"), bwhere)
            if block["state"] == "active_allocated":
                allocated += block["size"]
            offset += block["size"]
        need(offset == seg["total_size"], f"{where}: blocks cover {offset} of {seg['total_size']} bytes")
        need(allocated == seg["allocated_size"], f"{where}: allocated_size {seg['allocated_size']}, blocks {allocated}")
    for d, trace in enumerate(data["device_traces"]):
        need(isinstance(trace, list), f"device_traces[{d}] is not a list")
        last_time = 0
        for i, e in enumerate(trace):
            where = f"device {d} entry {i}"
            need(isinstance(e, dict) and e.get("action") in ACTIONS, f"{where}: action {e.get('action')!r}")
            for key in ("size", "stream", "time_us"):
                need(isinstance(e.get(key), int), f"{where}: {key} is not an int")
            if e["action"] == "oom":
                need(isinstance(e.get("device_free"), int), f"{where}: oom without device_free")
            else:
                need(isinstance(e.get("addr"), int), f"{where}: addr is not an int")
            need(e["time_us"] >= last_time, f"{where}: time goes back")
            last_time = e["time_us"]
            check_frames(e.get("frames"), where)


def elide(trace):
    """The viewer's annotate_snapshot: free_requested directly followed by its free_completed is one 'free'."""
    out = []
    for e in trace:
        e = dict(e)
        if e["action"] == "free_completed" and out and out[-1]["action"] == "free_requested" and out[-1]["addr"] == e["addr"]:
            out[-1]["action"] = "free"
            continue
        out.append(e)
    return out


def replay_backwards(data, device):
    """MemoryViz.js's simulate_memory, undoing each entry from the end; checks each state it passes."""
    segments = sorted(([s["address"], s["total_size"], s["stream"]] for s in data["segments"] if s["device"] == device))
    blocks = {}
    for s in data["segments"]:
        if s["device"] != device:
            continue
        for b in s["blocks"]:
            if b["state"] in ("active_allocated", "active_pending_free"):
                blocks[b["address"]] = b["requested_size"]

    def find(addr):
        for seg in segments:
            if seg[0] <= addr < seg[0] + seg[1]:
                return seg
        return None

    def map_segment(addr, size, stream):  # undo of an unmap: merges with neighbours of its stream
        segments.append([addr, size, stream])
        segments.sort()
        merged = []
        for seg in segments:
            if merged and merged[-1][0] + merged[-1][1] == seg[0] and merged[-1][2] == seg[2]:
                merged[-1][1] += seg[1]
            else:
                need(not merged or merged[-1][0] + merged[-1][1] <= seg[0], f"segment at {addr:#x} overlaps another")
                merged.append(seg)
        segments[:] = merged

    def unmap_segment(addr, size, where):  # undo of a map: the range must lie in one segment
        seg = next((s for s in segments if s[0] <= addr and addr + size <= s[0] + s[1]), None)
        need(seg is not None, f"{where}: no segment holds the mapped range {addr:#x}+{size}")
        end = seg[0] + seg[1]
        segments.remove(seg)
        if seg[0] < addr:
            segments.append([seg[0], addr - seg[0], seg[2]])
        if addr + size < end:
            segments.append([addr + size, end - addr - size, seg[2]])
        segments.sort()

    def state():
        return sum(s[1] for s in segments), sum(blocks.values())

    peak_reserved, peak_allocated = state()
    trace = elide(data["device_traces"][device])
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        where = f"device {device} entry {i} ({e['action']})"
        # The state drawn at entry i: every live block in a segment (the viewer reads b.segment).
        for addr in blocks:
            need(find(addr) is not None, f"{where}: block {addr:#x} lies in no segment")
        reserved, allocated = state()
        peak_reserved = max(peak_reserved, reserved)
        peak_allocated = max(peak_allocated, allocated)
        action = e["action"]
        if action in ("free", "free_completed"):
            blocks[e["addr"]] = e["size"]
        elif action == "free_requested":
            need(e["addr"] in blocks, f"{where}: undoing a free request of no block")
        elif action == "alloc":
            need(e["addr"] in blocks, f"{where}: undoing an allocation that is not live")
            del blocks[e["addr"]]
        elif action in ("segment_unmap", "segment_free"):
            map_segment(e["addr"], e["size"], e["stream"])
        elif action in ("segment_map", "segment_alloc"):
            unmap_segment(e["addr"], e["size"], where)
    need(not blocks and not segments, f"device {device}: before the first entry, {len(blocks)} blocks and "
         f"{len(segments)} segments remain (the trace should start from nothing)")
    return peak_reserved, peak_allocated


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    try:
        for opcode, _, position in pickletools.genops(raw):
            need(opcode.name in VIEWER_OPCODES, f"opcode {opcode.name} at {position}: not read by the viewer")
        data = pickle.loads(raw)
        check_structure(data)
        counts = {}
        peak_reserved = peak_allocated = 0
        for d, trace in enumerate(data["device_traces"]):
            for e in trace:
                counts[e["action"]] = counts.get(e["action"], 0) + 1
            reserved, allocated = replay_backwards(data, d)
            peak_reserved += reserved
            peak_allocated += allocated
    except Bad as error:
        print(f"check_torch_snapshot: {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    actions = ", ".join(f"{counts[a]} {a}" for a in sorted(counts))
    print(f"snapshot ok: {actions}; {len(data['segments'])} segments at the end; "
          f"peak reserved {peak_reserved}, peak allocated {peak_allocated}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
