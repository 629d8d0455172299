#!/usr/bin/env python3
"""Mutation score: break each safety and accounting rule of the engine and of the tracking on
purpose, one at a time, in a temporary copy of the tree, and record which tests fail.

Each mutation is an exact text replacement in one file of src/ (it must match exactly once, so a
change of the source that moves the rule makes the mutation fail loudly instead of testing
nothing). The copy is configured once; each mutation rebuilds what it touches, runs the tests
of the layer it is in (core_tests for src/core; the interposer's, the conformance and the
reuse-safety tests for src/interpose and src/driver) and lists the tests that failed. A mutation
that no test fails is a survivor: the run exits non-zero. The working tree is never modified.

Usage:
  tools/mutation-check.py [--only NAME,...] [--layer core|interpose|all] [--keep DIR]
                          [--markdown FILE] [--list]
    --only       run these mutations only
    --layer      which mutations (default: core; interpose needs the CUDA headers)
    --keep       build in DIR and keep it (default: a temporary directory, removed at the end)
    --markdown   write the results as a Markdown table into FILE's hand-written section
                 (docs/mutation-score.md; tools/mutate.py's section stays)
    --list       print the mutations and exit
Environment: STREAMPOOL_MODEL_PROGRAMS etc. are passed through to the tests (the model check
runs its default 10,000 programs, as in CI, stopping at the first failing one).
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutation_common as common  # noqa: E402
from mutation_common import (CORE_TARGETS, INTERPOSE_TARGETS, copy_tree, ctest_failures,  # noqa: E402
                             gtest_failures, model_finding, run)


@dataclass
class Mutation:
    name: str
    rule: str        # the rule the mutation breaks, in words
    path: str        # relative to the repository root
    old: str
    new: str
    bug_class: str = ""  # the class of the earlier tracking's bugs it reintroduces, if any
    layer: str = "core"


M = Mutation
# Rules with no mutation here, and why: they cannot be broken on their own in any execution the
# tests can arrange (see docs/mutation-score.md, which markdown() writes).
NOT_MUTATED = [
    ("a reclaimed stream slot's new stream starts with an empty clock (HappensBefore::reclaim_slot_locked)",
     "equivalent: a slot is reclaimed only once its frees are known complete, which takes a ticket or marker "
     "covering the ended stream's last position, clock included, so every entry of the old clock is complete"),
    ("a destroyed pool is reclaimed only once nothing of it is allocated (Pool::drained_locked, outstanding_)",
     "equivalent in every sequential execution: a live block keeps its memory mapped, so reserved_bytes() != 0 "
     "already holds; the count guards a free racing the destroy between its share push and finish_free, a "
     "window no test can hold open without a seam in Engine::free"),
]

MUTATIONS = [
    # --- the tracking (src/core/engine.hpp, happens_before.cpp) -----------------------------------
    M("record-counts-failed",
      "an event record changes the tracking only when the driver's record succeeded",
      "src/core/engine.hpp",
      "    if (!real_record()) return false;\n    event_recorded_at(event, std::move(position));\n    return true;",
      "    const bool recorded = real_record();\n    event_recorded_at(event, std::move(position));\n    return recorded;",
      "1"),
    M("record-tracked-before-driver-unlocked",
      "a record is tracked after the driver's record, under the event's lock (the previous code: "
      "tracking first, no lock, whatever the driver answers)",
      "src/core/engine.hpp",
      "    std::unique_lock<std::mutex> lock = lock_event(event);\n"
      "    std::vector<std::uint64_t> position = record_position(stream);  // covers frees made before the call\n"
      "    if (!real_record()) return false;\n    event_recorded_at(event, std::move(position));\n    return true;",
      "    event_recorded_at(event, record_position(stream));\n    return real_record();",
      "1, 2"),
    M("record-without-lock",
      "record and its tracking hold the event's lock, so records are tracked in the driver's order",
      "src/core/engine.hpp",
      "    std::unique_lock<std::mutex> lock = lock_event(event);\n"
      "    std::vector<std::uint64_t> position = record_position(stream);",
      "    std::vector<std::uint64_t> position = record_position(stream);",
      "2"),
    M("wait-merged-without-lock",
      "a wait merges the event's clock under the event's lock, right after the driver's wait "
      "(the previous code: merged after the call, unlocked)",
      "src/core/engine.hpp",
      "    std::unique_lock<std::mutex> lock = lock_event(event);\n    if (!real_wait()) return false;",
      "    if (!real_wait()) return false;",
      "2"),
    M("wait-merges-failed",
      "a wait merges the event's clock only when the driver's wait succeeded",
      "src/core/engine.hpp",
      "    if (!real_wait()) return false;\n    waited_on(waiter, event);\n    return true;",
      "    const bool waited = real_wait();\n    waited_on(waiter, event);\n    return waited;",
      "1"),
    M("commit-ignores-event-sequence",
      "an event's query or synchronize counts only if no record came in between",
      "src/core/engine.cpp",
      "    if (state_->order.same_record(*ticket.event, ticket.event_sequence)) {",
      "    if (true) {",
      "2"),
    M("commit-without-event-lock",
      "an event ticket's commit checks the record count under the event's lock",
      "src/core/engine.cpp",
      "    std::unique_lock<std::mutex> lock = lock_event(*ticket.event);\n"
      "    if (state_->order.same_record(",
      "    if (state_->order.same_record(",
      "2"),
    M("context-ticket-covers-all",
      "a context's ticket covers the streams of that context only (cuCtxSynchronize, cuMemFree)",
      "src/core/happens_before.cpp",
      "    if (group && stream->group != *group) continue;\n",
      "    (void)group;\n",
      "3, 4"),
    M("implicit-order-without-wait",
      "reuse through the legacy stream's implicit order puts a real wait into the allocating stream",
      "src/core/pool.cpp",
      "  if (fit && !order_implied_locked(requester, fit->address, placed, proven)) {",
      "  if (fit && !(true || order_implied_locked(requester, fit->address, placed, proven))) {",
      "5"),
    M("stream-ended-keeps-state",
      "a stream that ended unseen (its context ended, its key was reused) loses its state",
      "src/core/happens_before.cpp",
      "  end_stream_locked(it->second, /*record_marker=*/false);  // the old stream is gone already",
      "  // the old stream's state is kept",
      "6"),
    M("event-created-keeps-state",
      "a new event under an old handle starts with no tracking",
      "src/core/engine.cpp",
      "void Engine::event_created(EventKey event) {\n  std::unique_lock<std::mutex> lock = lock_event(event);\n"
      "  state_->order.event_forgotten(event);\n}",
      "void Engine::event_created(EventKey /*event*/) {}",
      "6"),
    M("event-untracked-ignored",
      "an event recorded where streampool cannot see (graph, launch attribute, capture) proves nothing",
      "src/core/happens_before.cpp",
      "void HappensBefore::event_untracked(EventKey event) {\n  std::lock_guard guard(mutex_);\n"
      "  EventState& state = events_[event];\n  ++state.sequence;\n  state.untracked = true;\n"
      "  state.clock.clear();\n}",
      "void HappensBefore::event_untracked(EventKey /*event*/) {}",
      "7"),
    M("tracked-record-revives-untracked",
      "an untracked event stays untracked until destroyed, whatever is recorded on it later",
      "src/core/happens_before.cpp",
      "  if (!state.untracked) state.clock = std::move(position);",
      "  state.clock = std::move(position);\n  state.untracked = false;",
      "7"),
    M("stream-ticket-claims-next-free",
      "a stream's ticket covers the frees made before it, not the next one",
      "src/core/happens_before.cpp",
      "  raise(clock, stream->slot, own);\n  return clock;",
      "  raise(clock, stream->slot, own + 1);\n  return clock;"),
    M("implicit-free-synchronize-without-marker",
      "a synchronize of a stream the legacy stream's implicit order binds proves its frees only through a "
      "marker recorded in it first (a free there may follow a partner's work that nothing in the stream waits for)",
      "src/core/happens_before.cpp",
      "  if (stream->freed_at.load() <= stream->anchored || !implicitly_ordered(stream)) return clock;",
      "  return clock;",
      bug_class="5"),
    M("free-tick-unpublished",
      "a free notes its tick in its stream before it commits to it, so a ticket cut in between sees it",
      "src/core/happens_before.cpp",
      "    if (noted < tick && !stream->freed_at.compare_exchange_weak(noted, tick)) continue;",
      "    (void)noted;",
      bug_class="5"),
    M("marker-claims-more",
      "a marker covers exactly the frees made before it was recorded",
      "src/core/happens_before.cpp",
      "  Clock covers = position_locked(stream);  // cut before the real record: it covers frees so far",
      "  Clock covers = position_locked(stream);\n  raise(covers, stream->slot, at(covers, stream->slot) + 1);"),
    M("marker-counts-before-complete",
      "a marker counts once the driver says it completed",
      "src/core/happens_before.cpp",
      "  if (ordering_.query(stream->marker->marker) != Status::success) return;",
      "  if (ordering_.query(stream->marker->marker) == Status::backend_error) return;"),
    M("inserted-wait-counts-when-refused",
      "an inserted dependency orders the waiter only when the driver's wait succeeded",
      "src/core/happens_before.cpp",
      "  if (ordering_.wait(waiter->key, freer->marker->marker) != Status::success) return false;",
      "  (void)ordering_.wait(waiter->key, freer->marker->marker);"),
    M("slot-reclaimed-with-pending-frees",
      "an ended stream's slot serves a new stream only once its frees are known complete",
      "src/core/happens_before.cpp",
      "    if (stream->marker || at(host_completed_, stream->slot) < stream->final_tick) continue;",
      "    if (stream->marker) continue;",
      "6"),
    # --- reuse and the free index (src/core/pool.cpp, free_index.*, engine.cpp) -------------------
    M("settle-clears-unmet",
      "only requirements known to be met are cleared when completion knowledge grows",
      "src/core/free_index.hpp",
      "if (node.live && !node.requirements.empty() && met(node.requirements)) node.requirements = Requirements{};",
      "if (node.live && !node.requirements.empty() && (met(node.requirements) || true)) node.requirements = Requirements{};"),
    M("take-middle-drops-tail-requirements",
      "taking from the middle of a free range keeps the tail's requirements",
      "src/core/free_index.cpp",
      "    if (address + bytes < end) add(address + bytes, end - (address + bytes), node.requirements);",
      "    if (address + bytes < end) add(address + bytes, end - (address + bytes), Requirements{});"),
    M("merge-ignores-requirements",
      "neighbouring free ranges merge only when they wait on the same thing",
      "src/core/free_index.cpp",
      "  const bool with_prev = prev && nodes_[*prev].requirements.same_as(requirements);",
      "  const bool with_prev = prev.has_value();"),
    M("evicted-free-loses-requirement",
      "a free pushed out of a stream's cache keeps what must be known before another stream reuses it",
      "src/core/pool.cpp",
      "  return freed.fresh ? Requirements{} : Requirements::of(owner.stream->slot, freed.tick);",
      "  return freed.fresh || true ? Requirements{} : Requirements::of(owner.stream->slot, freed.tick);"),
    M("same-stream-cache-ignores-stream",
      "a stream's fast path uses its own cache of frees only",
      "src/core/engine.cpp",
      "  if (t_last_share.pool == pool && t_last_share.key == key && t_last_share.engine == this &&",
      "  if (t_last_share.pool == pool && t_last_share.engine == this &&"),
    # --- growth and release (src/core/address_space.cpp) -------------------------------------------
    M("release-unmaps-partly-used-unit",
      "release gives back only whole mapping units inside a free range",
      "src/core/address_space.cpp",
      "      if (unit >= first && unit + length <= end) {",
      "      if (unit + length <= end) {"),
    M("release-takes-pending-frees",
      "release gives back only free memory whose frees are known complete",
      "src/core/address_space.cpp",
      "    if (!range.requirements.empty()) return;  // a free whose completion is not known yet\n",
      ""),
    M("growth-maps-too-little",
      "growth maps every granule the allocation needs beyond the free tail it extends",
      "src/core/address_space.cpp",
      "      const std::size_t need = bytes > have ? round_up(bytes - have, granule_bytes_) : 0;",
      "      const std::size_t need = bytes > have ? round_down(bytes - have, granule_bytes_) : 0;"),
    M("release-threshold-ignored",
      "a synchronisation gives back memory above the release threshold",
      "src/core/pool.cpp",
      "  space_.release_to(threshold);\n  note_reserved_locked();\n}",
      "  (void)threshold;\n  note_reserved_locked();\n}"),
    M("pool-reclaimed-while-mapped",
      "a destroyed pool is reclaimed only once its last frees are known complete and given back",
      "src/core/pool_lifetime.cpp",
      "  if (drained_ || !destroyed() || outstanding_ != 0 || space_.reserved_bytes() != 0) return false;",
      "  if (drained_ || !destroyed() || outstanding_ != 0) return false;"),
    # --- accounting (src/core/engine.cpp, usage_counter.cpp, address_space.cpp) ------------------
    M("used-off-by-one",
      "USED_MEM_CURRENT counts exactly the bytes asked for by live allocations",
      "src/core/engine.cpp",
      "    UsageCounter::credit(*share->usage, block->requested_bytes);",
      "    UsageCounter::credit(*share->usage, block->requested_bytes - 1);"),
    M("used-high-not-raised",
      "USED_MEM_HIGH rises with the peak of the live bytes",
      "src/core/usage_counter.cpp",
      "    high_ += bytes - spare_;\n",
      ""),
    M("reserved-unit-miscounted",
      "RESERVED_MEM_CURRENT drops by a whole mapping unit when it is given back",
      "src/core/address_space.cpp",
      "  for (std::size_t g = first_granule; g < first_granule + length; ++g) region.mapped[g] = false;\n"
      "  reserved_bytes_ -= length * granule_bytes_;",
      "  for (std::size_t g = first_granule; g < first_granule + length; ++g) region.mapped[g] = false;\n"
      "  reserved_bytes_ -= granule_bytes_;"),
    M("reserved-high-not-noted",
      "RESERVED_MEM_HIGH rises with every growth",
      "src/core/pool.cpp",
      "  reserved_high_ = std::max<std::uint64_t>(reserved_high_, space_.reserved_bytes());",
      "  (void)reserved_high_;"),
    # --- the hooks (src/interpose) -----------------------------------------------------------------
    M("hook-context-sync-covers-all",
      "cuCtxSynchronize's ticket covers the current context's streams only",
      "src/interpose/hooks/tracking.cpp",
      "  return engine().ticket_for_group(reinterpret_cast<std::uintptr_t>(context), releases);",
      "  return engine().ticket_for_all(releases);",
      "3, 4", "interpose"),
    M("hook-stream-create-keeps-state",
      "a stream created under an old handle starts fresh (stream_ended)",
      "src/interpose/hooks/lifetime_hooks.cpp",
      "  try {\n    engine().stream_ended(key);\n  } catch (...) {\n  }\n  return result;",
      "  (void)key;\n  return result;",
      "6", "interpose"),
    M("hook-event-create-keeps-state",
      "an event created under an old handle starts fresh (event_created)",
      "src/interpose/hooks/lifetime_hooks.cpp",
      "    engine().event_created(event_key(*event));",
      "    (void)event_key(*event);",
      "6", "interpose"),
    M("hook-untrack-does-nothing",
      "an event a graph node, a launch attribute or a capture may record is untracked",
      "src/interpose/hooks/tracking.cpp",
      "    engine().event_untracked(event_key(event));",
      "    (void)event_key(event);",
      "7", "interpose"),
    M("per-thread-stream-non-blocking",
      "the per-thread default stream is bound by the legacy stream's implicit order (a blocking kind): "
      "a synchronize proves its frees through a marker recorded in it",
      "src/driver/stream_registry.cpp",
      "    case kPerThreadTag:\n      return core::StreamKind::blocking;",
      "    case kPerThreadTag:\n      return core::StreamKind::non_blocking;",
      "5", "interpose"),
    M("route-cache-ignores-epoch",
      "an allocation hook's cached route holds only while the route epoch is unchanged (a stream created "
      "under a reused handle on another device allocates from that device's pool)",
      "src/interpose/hooks/route_cache.cpp",
      "    if (route_cache[index].identity == identity && route_cache[index].epoch == epoch) {",
      "    if (route_cache[index].identity == identity && epoch != 0) {",
      "6", "interpose"),
    M("stream-end-keeps-routes",
      "a stream's end (destroy, or a creation under its handle) bumps the route epoch, so no cached route "
      "of the old stream serves the next stream on its handle",
      "src/driver/stream_registry.cpp",
      "    shared.streams.erase(reinterpret_cast<std::uintptr_t>(stream));\n  }\n  invalidate_routes();\n}",
      "    shared.streams.erase(reinterpret_cast<std::uintptr_t>(stream));\n  }\n}",
      "6", "interpose"),
    M("marker-on-own-per-thread-stream",
      "another thread's per-thread default stream takes no marker from this thread (CU_STREAM_PER_THREAD "
      "would name this thread's own)",
      "src/driver/stream_registry.cpp",
      "      if (!own_per_thread_slot(slot_address)) return core::Status::not_supported;",
      "      (void)own_per_thread_slot(slot_address);",
      layer="interpose"),
    M("primary-release-always-ends",
      "a primary context release ends the context in the tracking only when the context is no longer active",
      "src/interpose/hooks/lifetime_hooks.cpp",
      "  if (result == CUDA_SUCCESS && (ends == PrimaryEnd::always || !primary_active(device))) {",
      "  if (result == CUDA_SUCCESS && (ends == PrimaryEnd::always || primary_active(device) || true)) {",
      layer="interpose"),
    M("refused-destroy-ends-context",
      "a cuCtxDestroy the driver refused leaves the context and its streams as they were in the tracking",
      "src/interpose/hooks/lifetime_hooks.cpp",
      "  if (result == CUDA_SUCCESS) context_ended(context, streams, -1);",
      "  context_ended(context, streams, -1);",
      layer="interpose"),
    M("ended-context-streams-kept",
      "an ended context's streams end in the engine, so their slots serve later streams",
      "src/interpose/hooks/lifetime_hooks.cpp",
      "    for (core::StreamKey key : streams.keys) engine().stream_ended(key);",
      "    (void)streams.keys;",
      "6", "interpose"),
    M("inserted-wait-needs-follow",
      "the waits streampool inserted order the allocating stream whatever FOLLOW_EVENT_DEPENDENCIES says",
      "src/core/pool.cpp",
      "    if (inserted) status = reuse_or_grow_locked(requester, placed, address, /*follow=*/true);",
      "    if (inserted) status = reuse_or_grow_locked(requester, placed, address, follow);"),
]


@dataclass
class Result:
    mutation: Mutation
    failed: list = field(default_factory=list)
    note: str = ""
    seconds: float = 0.0


def build(build_dir, targets, log):
    return common.build(build_dir, targets, log)


FLAKY = set()  # tests that failed once and passed when run again: no verdict rests on them


def test(build_dir, layer, log):
    if layer == "core":
        code, output = run([os.path.join(build_dir, "tests/core/core_tests")], build_dir, log, timeout=900)
        return gtest_failures(output, code), model_finding(output)
    command = ["ctest", "--test-dir", build_dir, "-L", "^(interpose|conformance|safety)$", "-j2", "--timeout", "300"]
    code, output = run(command, build_dir, log, timeout=1800)
    failed = []
    for name in ctest_failures(output) if code != 0 else []:
        # A mutant fails its tests every time: a test that passes when run again is flaky.
        again = [run(["ctest", "--test-dir", build_dir, "-R", f"^{re.escape(name)}$", "--output-on-failure"],
                     build_dir, log) for _ in range(3)]
        if any(rerun_code == 0 for rerun_code, _ in again):
            FLAKY.add(name)
            continue
        cases = sorted(set(re.findall(r"\[  FAILED  \] ([\w/]+\.[\w/]+)", again[-1][1])))
        failed += [f"{name}: {case}" for case in cases] or [name]
    return failed, ""


def mutate(tree, mutation):
    path = os.path.join(tree, mutation.path)
    with open(path) as source:
        text = source.read()
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"mutation {mutation.name}: its text occurs {count} times in {mutation.path}, not once")
    with open(path, "w") as source:
        source.write(text.replace(mutation.old, mutation.new))
    return text


def restore(tree, mutation, text):
    path = os.path.join(tree, mutation.path)
    with open(path, "w") as source:
        source.write(text)
    os.utime(path)  # newer than what was built from the mutation: rebuilt next time


def markdown(results, command, seconds):
    lines = [
        "## Hand-written mutations",
        "",
        "Each row breaks one safety or accounting rule of the engine, the tracking or the hooks on",
        "purpose (an exact text replacement in a temporary copy of the tree), rebuilds, runs the tests",
        "of that layer and lists the tests that failed. Class: the bug class of the earlier tracking",
        "that the mutation reintroduces (1 a failed record counts; 2 a record or wait racing a query",
        "or wait on another thread; 3 a context synchronize counting for other contexts; 4 a host",
        "synchronisation (cuMemFree) counting for every context; 5 implicit legacy-stream order with",
        "nothing put into the allocating stream; 6 handles outliving what they named; 7 records",
        "streampool does not see leaving the old clock). The model check's finding is the first",
        "failing program's report (replay it with the seed).",
        "",
        f"Produced by `{command}` ({seconds / 60:.0f} min on a 2-core machine).",
        "",
    ]
    if FLAKY:
        lines += [f"Flaky (failed once, then passed when run again; counted for no mutation): "
                  f"{', '.join(sorted(FLAKY))}.", ""]
    lines += [
        "| mutation | rule broken | class | tests that fail | model check's finding |",
        "|---|---|---|---|---|",
    ]
    survivors = 0
    for result in results:
        if not result.failed:
            survivors += 1
        failed = "<br>".join(result.failed) if result.failed else "**none: survives**"
        finding = result.note.replace("|", "\\|")
        lines.append(f"| `{result.mutation.name}` (`{result.mutation.path}`) | {result.mutation.rule} | "
                     f"{result.mutation.bug_class} | {failed} | {finding} |")
    lines += ["", f"{len(results) - survivors} of {len(results)} mutations fail some test; {survivors} survive.", ""]
    # Each bug class of the earlier tracking, and whether the model check found it in the code the
    # mutations reintroduce it into.
    lines += ["The model check against each bug class of the earlier tracking (reintroduced by the mutations "
              "of that class):", "", "| class | mutations | model check |", "|---|---|---|"]
    for bug_class in "1234567":
        rows = [r for r in results if bug_class in r.mutation.bug_class.replace(" ", "").split(",")]
        found = [f"`{r.mutation.name}`: {r.note.split(':')[0]}" for r in rows if r.note]
        lines.append(f"| {bug_class} | {', '.join(f'`{r.mutation.name}`' for r in rows)} | "
                     f"{'; '.join(found) if found else 'not run here (hook layer): see the tests above'} |")
    lines += ["",
              "Rules with no mutation in the table, and why:", ""]
    lines += [f"- {rule}: {why}." for rule, why in NOT_MUTATED]
    lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="")
    parser.add_argument("--layer", default="core", choices=["core", "interpose", "all"])
    parser.add_argument("--keep", default="")
    parser.add_argument("--markdown", default="")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()

    chosen = [m for m in MUTATIONS if args.layer == "all" or m.layer == args.layer]
    if args.only:
        names = args.only.split(",")
        unknown = [name for name in names if name not in {m.name for m in MUTATIONS}]
        if unknown:
            raise SystemExit(f"unknown mutations: {', '.join(unknown)}")
        chosen = [m for m in MUTATIONS if m.name in names]
    if args.list:
        for m in chosen:
            print(f"{m.name:40} {m.layer:9} {m.path}: {m.rule}")
        return 0

    work = args.keep or tempfile.mkdtemp(prefix="streampool-mutants-")
    tree, build_dir = common.work_paths(work)
    log = os.path.join(work, "mutation-check.log")
    started = time.time()
    copy_tree(tree)
    layers = sorted({m.layer for m in chosen})
    targets = CORE_TARGETS + (INTERPOSE_TARGETS if "interpose" in layers else [])
    if not common.configure(tree, build_dir, "interpose" not in layers, log) or not build(build_dir, targets, log):
        raise SystemExit(f"the unmutated tree does not build: see {log}")
    for layer in layers:
        failed, _ = test(build_dir, layer, log)
        if failed:
            raise SystemExit(f"the unmutated tree fails {', '.join(failed)}: see {log}")
    print(f"unmutated tree: builds, and its {', '.join(layers)} tests pass ({time.time() - started:.0f} s)", flush=True)

    results = []
    for mutation in chosen:
        begin = time.time()
        original = mutate(tree, mutation)
        try:
            if not build(build_dir, CORE_TARGETS if mutation.layer == "core" else targets, log):
                # A mutation must break a rule, not the build: fix the mutation.
                raise SystemExit(f"mutation {mutation.name} does not compile: see {log}")
            failed, finding = test(build_dir, mutation.layer, log)
            result = Result(mutation, failed, finding)
        finally:
            restore(tree, mutation, original)
        result.seconds = time.time() - begin
        results.append(result)
        verdict = ", ".join(result.failed) if result.failed else "SURVIVES"
        print(f"{mutation.name}: {verdict} ({result.seconds:.0f} s)", flush=True)
        if result.note:
            print(f"    model check: {result.note}", flush=True)
    if args.markdown:
        command = common.shown_command("tools/mutation-check.py", sys.argv[1:])
        # Its own section only: the mechanical mutants' (tools/mutate.py) stays as it is.
        common.write_section(args.markdown, "hand-written", markdown(results, command, time.time() - started))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if FLAKY:
        print(f"flaky, counted for no mutation: {', '.join(sorted(FLAKY))}")
    survivors = [r.mutation.name for r in results if not r.failed]
    print(f"{len(results) - len(survivors)} of {len(results)} mutations fail some test"
          + (f"; survivors: {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
