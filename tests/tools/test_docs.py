"""The documents describe the code as it is: docs/ARCHITECTURE.md's layer table has a row for every
folder under src/, and calls nothing built "being built". Run by ctest (label tools):
python3 -m unittest tests/tools/test_docs.py."""

import os
import re
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def layer_table(text):
    """The first-column names of the table under '## Layers' (`core`, `driver`, ...)."""
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    return {match.group(1) for match in re.finditer(r"^\|\s*`([^`]+)`\s*\|", section, re.MULTILINE)}


class ArchitectureDocument(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as document:
            self.text = document.read()

    def test_every_src_folder_is_a_row_of_the_layer_table(self):
        folders = {name for name in os.listdir(os.path.join(ROOT, "src")) if os.path.isdir(os.path.join(ROOT, "src", name))}
        missing = sorted(folders - layer_table(self.text))
        self.assertEqual(missing, [], "src/ folders without a row in docs/ARCHITECTURE.md's layer table")

    def test_the_table_reader_sees_the_rows(self):
        # Guards the check above from passing on a table it cannot read.
        self.assertTrue({"core", "driver", "interpose", "cli"} <= layer_table(self.text))

    def test_nothing_is_still_being_built(self):
        self.assertFalse("being built" in self.text, "docs/ARCHITECTURE.md still calls something 'being built'")


if __name__ == "__main__":
    unittest.main()
