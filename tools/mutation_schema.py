"""Mutant schemata: every mutant of a file written into one copy of it, each behind a switch read at
run time, so one build serves every mutant and a mutant costs only the tests it can reach.

A mutant numbered N is active when the environment has STREAMPOOL_MUTANT=N; with no mutant active
the schema behaves as the original file. Each switch is a call `::streampool_mutation::active(N)`
evaluated exactly where the mutated code would run, so with STREAMPOOL_MUTANT_REACHED=DIR set, each
process appends to DIR/<pid> the numbers of the switches it reached: the tests that never reach a
mutant cannot kill it, and are not run for it.

How each rule is written (I: the original text, with the mutants nested inside it written too):
  a negated condition           (!(I) == active(N))            !(I) when active, I otherwise
  an operator swapped           (active(N) ? (I') : (I))       I' the comparison with the operator swapped
  a statement that never runs   { if (!active(N)) { I } }
  a result check never taken    (I) && !active(N)              the check still evaluated, as by the mutant
  a statement moved up          if (active(N)) { S } at the new place, { if (!active(N)) { I } } at the old

Mutants whose edits cross (neither holds the other), a declaration moved up (braces would end its
scope), and any mutant on a line the compiler refuses in the schema are built one by one as before.
"""

from dataclasses import dataclass, field

PRELUDE = """#ifndef STREAMPOOL_MUTATION_SCHEMA_PRELUDE
#define STREAMPOOL_MUTATION_SCHEMA_PRELUDE
// Written by tools/mutation_schema.py into a copy of the tree: the run-time switch of each mutant.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>
namespace streampool_mutation {
inline constexpr int kCount = %(count)d;
inline int selected() noexcept {
  static const int id = [] {
    const char* value = std::getenv("STREAMPOOL_MUTANT");
    return value == nullptr ? 0 : std::atoi(value);
  }();
  return id;
}
inline const char* reached_dir() noexcept {
  static const char* const dir = std::getenv("STREAMPOOL_MUTANT_REACHED");
  return dir;
}
inline void note_reached(int id) noexcept {
  static std::atomic<unsigned char> seen[kCount + 1];
  if (id <= 0 || id > kCount || seen[id].exchange(1, std::memory_order_relaxed) != 0) return;
  char path[4096];
  std::snprintf(path, sizeof path, "%%s/%%d", reached_dir(), static_cast<int>(::getpid()));
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[24];
  const int length = std::snprintf(line, sizeof line, "%%d\\n", id);
  if (::write(fd, line, static_cast<std::size_t>(length)) < 0) {
  }
  ::close(fd);
}
inline bool active(int id) noexcept {
  if (reached_dir() != nullptr) note_reached(id);
  return selected() == id;
}
}  // namespace streampool_mutation
#endif
"""


def switch(number):
    return f"::streampool_mutation::active({number})"


@dataclass
class Node:
    start: int
    end: int
    order: int              # for equal spans: the lower order holds the higher
    kind: str               # xor, operator, statement, and-false, move-insert, op
    number: int = 0
    mutant: object = None
    text: str = ""          # move-insert: the statement moved; op: the operator it becomes
    children: list = field(default_factory=list)


# Equal spans nest in this order, outermost first: a result check wrapping a negated condition
# wrapping a comparison whose operator is the innermost.
ORDER = {"move-insert": 0, "and-false": 1, "statement": 2, "xor": 3, "operator": 4, "op": 5}


def nodes_of(mutant, number):
    kind = mutant.schema[0] if mutant.schema else None
    if kind in ("xor", "statement", "and-false"):
        return [Node(mutant.start, mutant.end, ORDER[kind], kind, number, mutant)]
    if kind == "operator":
        _, first, last = mutant.schema
        return [Node(first, last, ORDER["operator"], "operator", number, mutant),
                Node(mutant.start, mutant.end, ORDER["op"], "op", number, mutant, mutant.replacement)]
    if kind == "move":
        _, moved_start, indent, declares = mutant.schema
        if declares:
            return None  # braces around a declaration would end its scope: built alone
        return [Node(mutant.start, mutant.start, ORDER["move-insert"], "move-insert", number, mutant, indent),
                Node(moved_start, mutant.end, ORDER["statement"], "statement", number, mutant)]
    return []


def _nest(nodes):
    """The nodes as a forest by containment; the numbers of mutants whose spans cross another's."""
    nodes = sorted(nodes, key=lambda n: (n.start, 0 if n.start == n.end else 1, -n.end, n.order))
    roots, stack, crossing = [], [], set()
    for node in nodes:
        while stack and stack[-1].end <= node.start:
            stack.pop()
        if stack and node.end > stack[-1].end:
            crossing.add(node.number)
            continue
        (stack[-1].children if stack else roots).append(node)
        if node.start != node.end:
            stack.append(node)
    return roots, crossing


def _interior(node, text, swap=None):
    out, position = [], node.start
    for child in node.children:
        out.append(text[position:child.start])
        out.append(child.text if child is swap else render(child, text))
        position = child.end
    out.append(text[position:node.end])
    return "".join(out)


def render(node, text):
    if node.kind == "op":
        return text[node.start:node.end]
    if node.kind == "move-insert":
        moved = text[node.mutant.schema[1]:node.mutant.end]
        return f"if ({switch(node.number)}) {{ {moved}\n}}\n{node.text}"
    inner = _interior(node, text)
    if node.kind == "xor":
        return f"(!({inner}) == {switch(node.number)})"
    if node.kind == "statement":
        return f"{{ if (!{switch(node.number)}) {{ {inner}\n}} }}"
    if node.kind == "and-false":
        return f"({inner}) && !{switch(node.number)}"
    if node.kind == "operator":
        swap = next((c for c in node.children if c.kind == "op" and c.number == node.number), None)
        if swap is None:
            raise ValueError("operator not directly inside its comparison")
        return f"({switch(node.number)} ? ({_interior(node, text, swap)}) : ({inner}))"
    raise ValueError(node.kind)


def _operators_in_place(roots):
    """Numbers of operator mutants whose operator is not a direct child of their comparison."""
    misplaced = set()

    def walk(node, parent):
        if node.kind == "op" and not (parent is not None and parent.kind == "operator"
                                      and parent.number == node.number):
            misplaced.add(node.number)
        for child in node.children:
            walk(child, node)
    for root in roots:
        walk(root, None)
    return misplaced


def write(text, numbered, count, is_header=False):
    """The schema of one file's text holding the mutants of `numbered` ([(number, mutant)]); returns
    (schema text, numbers that could not be held, numbers held)."""
    excluded = {number for number, mutant in numbered if nodes_of(mutant, number) is None}
    while True:
        nodes = [n for number, mutant in numbered if number not in excluded for n in nodes_of(mutant, number)]
        roots, crossing = _nest(nodes)
        misplaced = _operators_in_place(roots)
        if not (crossing | misplaced):
            break
        excluded |= crossing | misplaced
    held = {number for number, _ in numbered} - excluded
    out, position = [], 0
    for root in roots:
        out.append(text[position:root.start])
        out.append(render(root, text))
        position = root.end
    out.append(text[position:])
    body = "".join(out)
    prelude = PRELUDE % {"count": count}
    if is_header and body.lstrip().startswith("#pragma once"):
        head, _, rest = body.partition("#pragma once")
        return head + "#pragma once\n" + prelude + rest, excluded, held
    return prelude + body, excluded, held
