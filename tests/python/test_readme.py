"""The README's Python quick start runs as written.

README.md shows examples/quickstart.py in a ```python block; this test checks that the block is
the file's code (the file minus its docstring), so the two cannot drift apart, and runs the file
the way the README says, ``PYTHONPATH=<checkout>/python python3 examples/quickstart.py``, from
another directory, expecting exit 0 and its version line. (After ``pip install .`` the same file
runs without PYTHONPATH; test_packaging.py checks the installed package.)
"""
import ast
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, "examples", "quickstart.py")


def _code_without_docstring(text):
    """The file's text after its module docstring (the code the README shows)."""
    tree = ast.parse(text)
    first = tree.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant), \
        "examples/quickstart.py should start with its docstring"
    lines = text.splitlines(keepends=True)
    return "".join(lines[first.end_lineno:])


def _readme_python_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    blocks, start = [], 0
    while True:
        i = text.find("```python\n", start)
        if i < 0:
            return blocks
        j = text.index("```", i + len("```python\n"))
        blocks.append(text[i + len("```python\n"):j])
        start = j + 3


def test_readme_shows_quickstart_as_it_is():
    with open(QUICKSTART) as f:
        code = _code_without_docstring(f.read())
    blocks = _readme_python_blocks()
    assert code in blocks, ("README.md's ```python block is not examples/quickstart.py's code:\n"
                            "README: %r\nfile:   %r" % (blocks, code))


def test_quickstart_runs_from_another_directory(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    out = subprocess.run([sys.executable, QUICKSTART], cwd=str(tmp_path), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:]
    assert out.stdout.startswith("syncbn "), out.stdout[-2000:]
