"""The kernlab_do_bench column's package: found, refused where it is missing or was built from
other sources, and named in the column's note (a fake package; no torch needed)."""

import types
import unittest

from kernlab_baselines.package import INSTALL_HINT, describe, load_package


def fake(build_id="0123abcd", version="0.1.0"):
    m = types.ModuleType("kernlab")
    m.__version__ = version
    if build_id is not None:
        m.build_id = build_id
    return m


def importer_of(module=None, error=None):
    def importer(name):
        assert name == "kernlab", name
        if error is not None:
            raise error
        return module
    return importer


class LoadPackage(unittest.TestCase):
    def test_the_same_build(self):
        m = fake()
        self.assertIs(load_package("0123abcd", importer_of(m)), m)
        self.assertIs(load_package(None, importer_of(m)), m)  # no build asked: any

    def test_not_importable(self):
        with self.assertRaises(RuntimeError) as c:
            load_package("0123abcd", importer_of(error=ImportError("No module named 'kernlab'\nmore")))
        msg = str(c.exception)
        self.assertIn("not importable (ImportError: No module named 'kernlab')", msg)
        self.assertTrue(msg.endswith(INSTALL_HINT), msg)

    def test_another_build(self):
        for got, says in [("ffff0000", "build ffff0000"), (None, "build unknown")]:
            with self.subTest(got=got), self.assertRaises(RuntimeError) as c:
                load_package("0123abcd", importer_of(fake(got)))
            msg = str(c.exception)
            self.assertIn(f"other sources ({says}, this kernlab's 0123abcd)", msg)
            self.assertIn(INSTALL_HINT, msg)

    def test_the_note_names_the_call(self):
        self.assertEqual(describe(fake(), "softmax", "auto"),
                         "kernlab.softmax(..., variant='auto') on torch's tensors and stream, "
                         "kernlab 0.1.0 (build 0123abcd)")


if __name__ == "__main__":
    unittest.main()
