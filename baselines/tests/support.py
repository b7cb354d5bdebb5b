"""Helpers the tests share: the entry script loaded by path (as kernlab's tests load it), the
command line run in this process, and the optional array libraries."""

import contextlib
import importlib.util
import io
import os

BASELINES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = os.path.join(BASELINES, "torch_baselines.py")
REPO_DATA = os.path.join(os.path.dirname(BASELINES), "tests", "data")


def load_entry():
    """baselines/torch_baselines.py loaded as a module by its path."""
    spec = importlib.util.spec_from_file_location("torch_baselines_under_test", ENTRY)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run_main(argv):
    """(exit code, stdout, stderr) of cli.main(argv) in this process."""
    from kernlab_baselines import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def optional(name):
    """The module `name`, or None where it does not import."""
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def close(a, b):
    """Equal to ~1e-12 relative (infinities exactly)."""
    import math

    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-12 * max(1.0, abs(b)) or abs(a - b) <= 1e-9 * abs(b)
