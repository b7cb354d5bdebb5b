"""Unit tests of baselines/kernlab_baselines (standard library only; the tests that need NumPy
or torch skip without them). From the repository's root:

    python3 -m unittest discover -s baselines/tests -t baselines
"""
