"""tools/mutate.py's generator and document over a small C++ file (snippet.cpp): each rule yields
the mutants it should, comments, strings, templates, logging and catch fallbacks yield none, ids
stay the same from run to run, every mutant compiles, and the notes typed into the document stay
when the tool rewrites it. Run by ctest (label tools): python3 -m unittest discover tests/tools."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import mutate  # noqa: E402
import mutation_common  # noqa: E402

with open(os.path.join(HERE, "snippet.cpp")) as source:
    SNIPPET = source.read()


def line_of(text):
    """The snippet's line (1-based) holding `text`, which must occur once."""
    lines = [number for number, line in enumerate(SNIPPET.split("\n"), 1) if text in line]
    assert len(lines) == 1, (text, lines)
    return lines[0]


def mutants(rules=None, functions=None, text=SNIPPET):
    return mutate.generate(text, "tests/tools/snippet.cpp", functions, rules)


def after_lines(rule):
    """(line, the line after the edit) of every mutant of `rule`."""
    return {(m.line, m.after) for m in mutants([rule])}


class Rules(unittest.TestCase):
    def test_negate_turns_each_condition_and_each_operand_into_its_negation(self):
        got = after_lines("negate")
        loop = line_of("if (values[i] < limit")
        self.assertIn((loop, "if (!(values[i] < limit && values[i] >= 0)) ++count;"), got)
        self.assertIn((loop, "if (!(values[i] < limit) && values[i] >= 0) ++count;"), got)
        self.assertIn((loop, "if (values[i] < limit && !(values[i] >= 0)) ++count;"), got)
        self.assertIn((line_of("if (result != CUDA_SUCCESS)"), "if (!(result != CUDA_SUCCESS)) return result;"), got)
        self.assertIn((line_of("while (engine().last"), "while (!(engine().last > stream)) --engine().last;"), got)
        self.assertIn((line_of("return static_cast<int>(count)"),
                       "return !(static_cast<int>(count) == 0) ? -1 : count;"), got)

    def test_negate_swaps_equality_only_where_it_is_not_already_a_whole_condition(self):
        got = after_lines("negate")
        self.assertIn((line_of("const bool same"), "const bool same = engine().last != stream;"), got)
        self.assertNotIn((line_of("if (result != CUDA_SUCCESS)"), "if (result == CUDA_SUCCESS) return result;"), got)

    def test_shift_comparison_moves_each_ordering_comparison_by_one(self):
        got = after_lines("shift-comparison")
        loop = line_of("if (values[i] < limit")
        self.assertEqual(got, {
            (line_of("for (lib::size_t i"), "for (lib::size_t i = 0; i <= values.size(); ++i) {"),
            (loop, "if (values[i] <= limit && values[i] >= 0) ++count;"),
            (loop, "if (values[i] < limit && values[i] > 0) ++count;"),
            (line_of("while (engine().last"), "while (engine().last >= stream) --engine().last;"),
        })

    def test_drop_tracking_keeps_each_tracking_call_from_running(self):
        got = after_lines("drop-tracking")
        self.assertEqual(got, {
            (line_of("engine().commit(ticket);"), "{ if (false) { engine().commit(ticket); } }"),
            (line_of("engine().stream_ended(stream);"), "{ if (false) { engine().stream_ended(stream); } }"),
        })

    def test_move_tracking_puts_the_update_before_the_driver_call_it_follows(self):
        [moved] = mutants(["move-tracking"])
        self.assertEqual(moved.line, line_of("engine().commit(ticket);"))
        self.assertEqual(moved.after, f"moved above line {line_of('CUresult result = forward')}: "
                                      "CUresult result = forward(table.cuStreamSynchronize, stream);")
        mutated = moved.apply(SNIPPET)
        self.assertLess(mutated.index("engine().commit(ticket);"), mutated.index("CUresult result = forward("))
        self.assertEqual(mutated.count("engine().commit(ticket);"), 1)

    def test_drop_result_check_keeps_the_check_from_returning(self):
        self.assertEqual(after_lines("drop-result-check"), {
            (line_of("if (result != CUDA_SUCCESS)"), "if ((result != CUDA_SUCCESS) && false) return result;")})


class WhatIsNotMutated(unittest.TestCase):
    def lines(self):
        return {m.line for m in mutants()}

    def test_comments_and_strings_yield_no_mutant(self):
        self.assertNotIn(line_of("if (commented < out)"), self.lines())
        self.assertNotIn(line_of('"a < b && c"'), self.lines())

    def test_template_arguments_are_not_comparisons(self):
        for m in mutants():
            self.assertNotIn("static_cast<=", m.after)
            self.assertNotIn("static_cast<int>=", m.after)
        self.assertNotIn(line_of("lib::vector<int> clock;"), self.lines())

    def test_logging_catch_fallbacks_and_code_outside_functions_yield_no_mutant(self):
        self.assertNotIn(line_of("STREAMPOOL_LOG_DEBUG(\"ended"), self.lines())
        self.assertNotIn(line_of("a fallback: not mutated"), self.lines())
        self.assertNotIn(line_of("enum CUresult"), self.lines())

    def test_a_function_filter_keeps_or_leaves_out_the_functions_it_names(self):
        only = {m.line for m in mutants(functions="synchronize")}
        self.assertEqual(only, {line_of("if (result != CUDA_SUCCESS)"), line_of("engine().commit(ticket);")})
        self.assertFalse(only & {m.line for m in mutants(functions="!synchronize")})


class Ids(unittest.TestCase):
    def test_ids_are_file_line_rule_index_and_unique(self):
        ids = [m.id for m in mutants()]
        self.assertEqual(len(ids), len(set(ids)))
        loop = line_of("if (values[i] < limit")
        self.assertEqual(sorted(i for i in ids if f":{loop}:" in i), [
            f"tests/tools/snippet.cpp:{loop}:negate:1", f"tests/tools/snippet.cpp:{loop}:negate:2",
            f"tests/tools/snippet.cpp:{loop}:negate:3", f"tests/tools/snippet.cpp:{loop}:shift-comparison:1",
            f"tests/tools/snippet.cpp:{loop}:shift-comparison:2"])

    def test_ids_and_edits_are_the_same_from_run_to_run(self):
        first = [(m.id, m.start, m.end, m.replacement) for m in mutants()]
        second = [(m.id, m.start, m.end, m.replacement) for m in mutants()]
        self.assertEqual(first, second)

    def test_an_edit_further_down_leaves_the_ids_above_it_alone(self):
        edited = SNIPPET.replace("int main() {", "int unused_helper(int x) { return x < 3 ? 1 : 2; }\nint main() {")
        below = line_of("int main() {")
        before = {m.id: m.after for m in mutants() if m.line < below}
        after = {m.id: m.after for m in mutants(text=edited) if m.line < below}
        self.assertEqual(before, after)


@unittest.skipUnless(shutil.which(os.environ.get("CXX", "g++")), "no C++ compiler")
class EveryMutantCompiles(unittest.TestCase):
    def test_every_mutant_of_the_snippet_compiles_with_warnings_as_errors(self):
        compiler = os.environ.get("CXX", "g++")
        with tempfile.TemporaryDirectory() as work:
            for m in mutants():
                path = os.path.join(work, "mutant.cpp")
                with open(path, "w") as out:
                    out.write(m.apply(SNIPPET))
                compiled = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic",
                                           "-Wshadow", "-Wconversion", "-Wno-sign-conversion", "-Werror", path],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                self.assertEqual(compiled.returncode, 0, f"{m.id} ({m.describe()}):\n{compiled.stdout}")


class Document(unittest.TestCase):
    def results(self):
        rows = []
        for number, m in enumerate(mutants()):
            status = "survived" if number % 5 == 0 else "does-not-compile" if number == 3 else "killed"
            rows.append(mutate.Result(m.id, m.file, m.line, m.rule, m.before, m.after, status,
                                      [] if status != "killed" else ["a test"], 1.0, 2.0))
        return rows

    def write(self, path, results, **extra):
        notes = mutate.read_notes(path)
        meta = {"total": 40, "sample": True, "seed": 3, "seconds": 120, **extra}
        mutation_common.write_section(path, "mechanical", mutate.markdown(
            results, "tools/mutate.py --sample 17", meta, notes, [("tests/tools/snippet.cpp", None)]))
        with open(path) as source:
            return source.read()

    def test_notes_and_the_hand_written_section_stay_when_the_tool_rewrites_the_file(self):
        results = self.results()
        survivor = next(r for r in results if r.status == "survived")
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "mutation-score.md")
            with open(path, "w") as out:
                out.write("# Mutation score\n\nThe hand-written table.\n")
            text = self.write(path, results)
            self.assertIn("The hand-written table.", text)
            self.assertIn("a random sample of 17 of the 40 mutants", text)
            row = next(line for line in text.split("\n") if line.startswith(f"| `{survivor.id}` |"))
            self.assertTrue(row.endswith("|  |"), row)
            with open(path, "w") as out:
                out.write(text.replace(row, row[:-len("|  |")] + "| equivalent: a \\| in it, and more |"))
            rewritten = self.write(path, results)
            self.assertIn("| equivalent: a \\| in it, and more |", rewritten)
            self.assertEqual(rewritten.count("The hand-written table."), 1)
            self.assertEqual(rewritten, self.write(path, results))

    def test_a_schema_runs_table_names_the_tests_reaching_each_survivor_and_keeps_the_notes(self):
        results = self.results()
        survivor = next(r for r in results if r.status == "survived")
        survivor.reached_by, survivor.note = 3, "flaky: a_test"
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "mutation-score.md")
            text = self.write(path, results, method="schema", tests=12, model_programs="1000")
            self.assertIn("mutant schemata", text)
            self.assertIn("model check runs 1000 random programs", text)
            row = next(line for line in text.split("\n") if line.startswith(f"| `{survivor.id}` |"))
            self.assertTrue(row.endswith("| 3 (flaky: a_test) |  |"), row)
            with open(path, "w") as out:
                out.write(text.replace(row, row[:-len("|  |")] + "| equivalent: why |"))
            self.assertIn("| 3 (flaky: a_test) | equivalent: why |",
                          self.write(path, results, method="schema", tests=12, model_programs="1000"))


# Calls every function of the snippet over inputs that tell its mutants apart; appended to the
# snippet (whose own main is renamed) for test_schema_*.
HARNESS = r"""
extern "C" int printf(const char* format, ...);  // no standard header: each mutant compiles in milliseconds
namespace std { using ::printf; }
static CUresult succeeds(int) { return CUDA_SUCCESS; }
static CUresult refuses(int) { return CUDA_ERROR_INVALID_VALUE; }
int main() {
  const Table good{succeeds}, bad{refuses}, none{nullptr};
  for (int stream = 0; stream < 3; ++stream) {
    std::printf("%d %d ", synchronize(good, stream), engine().last);
    std::printf("%d %d ", synchronize(bad, stream + 7), engine().last);
    std::printf("%d %d ", synchronize(none, stream + 9), engine().last);
  }
  for (int limit = -1; limit < 5; ++limit) std::printf("%d ", count_below(lib::vector<int>{{1, -2, 3, 0}, 4}, limit));
  for (int limit = -1; limit < 5; ++limit) std::printf("%d ", count_below(lib::vector<int>{{4, 4, 4, 4}, 2}, limit));
  for (int stream = 0; stream < 4; ++stream) {
    engine().last = 5;
    end_stream(stream, stream % 2 == 1);
    std::printf("%d ", engine().last);
  }
  std::printf("%d\n", snippet_main());
}
"""


class Schema(unittest.TestCase):
    """tools/mutation_schema.py: one build of every mutant, each switched on at run time, must behave
    as that mutant built alone, and with none switched on as the original."""

    def build(self, work):
        import mutation_schema
        numbered = list(enumerate(mutants(), 1))
        text, refused, held = mutation_schema.write(SNIPPET, numbered, len(numbered))
        self.assertEqual(refused, set())
        self.assertEqual(held, {n for n, _ in numbered})
        return numbered, self.program(work, "schema", text)

    def program(self, work, name, text):
        compiler = os.environ.get("CXX", "g++")
        source = os.path.join(work, name + ".cpp")
        with open(source, "w") as out:
            out.write(text.replace("int main()", "int snippet_main()") + HARNESS)
        binary = os.path.join(work, name)
        built = subprocess.run([compiler, "-std=c++20", "-O0", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow",
                                "-Wconversion", "-Wno-sign-conversion", "-Werror", source, "-o", binary],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(built.returncode, 0, built.stdout)
        return binary

    @staticmethod
    def output(binary, **env):
        # Some mutants loop (a negated loop condition counts an int down past its minimum): a run
        # that takes longer than the unmutated one ever could is its output.
        try:
            # The snippet's switches read the same variables as the tree's: when tools/mutate.py
            # runs this test under one of the tree's mutants, that mutant is not the snippet's.
            inherited = {k: v for k, v in os.environ.items() if not k.startswith("STREAMPOOL_MUTANT")}
            return subprocess.run([binary], stdout=subprocess.PIPE, text=True, env={**inherited, **env},
                                  timeout=2).stdout
        except subprocess.TimeoutExpired:
            return "(runs on)"

    def test_schema_with_each_mutant_switched_on_behaves_as_that_mutant_built_alone(self):
        with tempfile.TemporaryDirectory() as work:
            numbered, binary = self.build(work)
            self.assertEqual(self.output(binary), self.output(self.program(work, "original", SNIPPET)))
            differing = 0
            for number, m in numbered:
                alone = self.output(self.program(work, f"mutant{number}", m.apply(SNIPPET)))
                self.assertEqual(self.output(binary, STREAMPOOL_MUTANT=str(number)), alone, f"{m.id} ({m.describe()})")
                differing += alone != self.output(binary)
            self.assertGreater(differing, len(numbered) // 2)  # the harness tells most mutants apart

    def test_every_mutant_that_changes_the_output_is_reached(self):
        with tempfile.TemporaryDirectory() as work:
            numbered, binary = self.build(work)
            original = self.output(binary)
            reached_dir = os.path.join(work, "reached")
            os.makedirs(reached_dir)
            self.output(binary, STREAMPOOL_MUTANT_REACHED=reached_dir)
            reached = set()
            for name in os.listdir(reached_dir):
                with open(os.path.join(reached_dir, name)) as source:
                    reached |= {int(line) for line in source.read().split()}
            changing = {n for n, _ in numbered if self.output(binary, STREAMPOOL_MUTANT=str(n)) != original}
            self.assertTrue(changing)
            self.assertLessEqual(changing, reached)
            self.assertLess(len(reached), len(numbered) + 1)


if __name__ == "__main__":
    unittest.main()
