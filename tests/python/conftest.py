"""pytest setup for the syncbn Python tests: the package from this checkout, one thread.

``python/`` of the checkout goes first on sys.path (and into PYTHONPATH, for the
processes the multi-process tests spawn), so the tests exercise this tree's
package; the library is whatever the package finds (``SBN_LIBRARY``, else
``build/release/``). Each test module skips itself with ``pytest.importorskip``
when torch is missing (CI installs it); nothing else is ever skipped.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (PYTHON_DIR, HERE, os.environ.get("PYTHONPATH")) if p)
