"""kernlab's own kernels in PyTorch's process (the `kernlab_do_bench` column): the `kernlab`
Python package (python/ in the checkout) called on the run's tensors, validated and timed by
the same harness as every PyTorch column. `kernlab bench --torch` asks for it with
`--kernlab VARIANT --kernlab-build ID`; the package must have been built from the same sources
as the kernlab that asks (its `build_id`), or the column would time other kernels."""

from .common import first_line

KERNLAB_VARIANT = "kernlab_do_bench"

INSTALL_HINT = "pip install ./python in the kernlab checkout, with this Python"


def load_package(build=None, importer=None):
    """The `kernlab` module, or raise RuntimeError saying why it cannot be used: not
    importable, without the functions on tensors, or (`build` given) built from other sources
    than kernlab's `build`. `importer`: the import function (the unit tests pass a fake)."""
    if importer is None:
        import importlib

        importer = importlib.import_module
    try:
        kl = importer("kernlab")
    except Exception as e:  # ImportError, or a broken install
        raise RuntimeError(f"the kernlab package is not importable ({first_line(e)}): "
                           f"{INSTALL_HINT}")
    got = getattr(kl, "build_id", None)
    if build is not None and got != build:
        raise RuntimeError(f"the kernlab package here was built from other sources (build "
                           f"{got or 'unknown'}, this kernlab's {build}): {INSTALL_HINT}")
    return kl


def describe(kl, call, variant):
    """The column's note: which function ran which variant, from which package."""
    return (f"kernlab.{call}(..., variant={variant!r}) on torch's tensors and stream, "
            f"kernlab {getattr(kl, '__version__', '?')} (build {getattr(kl, 'build_id', '?')})")
