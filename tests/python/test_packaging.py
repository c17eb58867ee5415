"""`pip install .` builds libsyncbn with CMake and installs it inside the package.

Offline, with the installed setuptools and wheel (``--no-build-isolation``,
``--no-index``): the checkout is installed into a fresh virtual environment
(``--system-site-packages``, so torch and numpy come from the system), and in
another directory, with no SBN_LIBRARY or PYTHONPATH, ``import syncbn.torch``
loads the library from inside the installed package and computes batch norm,
and ``python -m syncbn.run script.py`` runs a script with the patch on. A wheel
builds too and holds the library. Skipped, saying why, only when pip,
setuptools or wheel are missing (scripts/install-deps.sh installs them).
"""
import importlib.util
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MISSING = [m for m in ("pip", "setuptools", "wheel") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason="%s missing for %s (Debian: apt-get install "
                                "python3-pip python3-setuptools python3-wheel)"
                                % (", ".join(MISSING), sys.executable))


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("SBN_LIBRARY", "PYTHONPATH")}
    env["SBN_BUILD_JOBS"] = "2"
    return env


def _run(args, cwd, timeout=900):
    out = subprocess.run(args, cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    assert out.returncode == 0, "%s failed (%d):\n%s" % (args, out.returncode, out.stdout[-4000:])
    return out.stdout


def test_pip_install_then_import_from_anywhere(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
         str(tmp_path))
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
          ROOT], ROOT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import syncbn, syncbn.torch, torch\n"
            "m = syncbn.torch.SyncBatchNorm(3)\n"
            "x = torch.randn(4, 3, 2, 2, dtype=torch.float64)\n"
            "m = m.double()\n"
            "want = torch.nn.functional.batch_norm(x, None, None, m.weight, m.bias, True)\n"
            "print('error', float((m(x) - want).abs().max()))\n"
            "print('library', syncbn.library_path)\n"
            "print('package', syncbn.__file__)\n")
    out = _run([python, "-c", code], str(elsewhere))
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    site = str(venv)
    assert lines["package"].startswith(site) and lines["library"].startswith(site), out
    assert os.path.dirname(lines["library"]) == os.path.dirname(lines["package"]), out
    assert float(lines["error"]) < 1e-12, out
    script = elsewhere / "train.py"
    script.write_text("import sys, torch, syncbn.torch\n"
                      "print('patched', syncbn.torch.is_patched(), sys.argv[1:])\n")
    out = _run([python, "-m", "syncbn.run", str(script), "--sync-bn"], str(elsewhere))
    assert "patched True ['--sync-bn']" in out, out


def test_a_wheel_builds_and_holds_the_library(tmp_path):
    _run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
          "--no-index", "-w", str(tmp_path), ROOT], ROOT)
    wheels = list(tmp_path.glob("syncbn-*.whl"))
    assert len(wheels) == 1, wheels
    assert "none-any" not in wheels[0].name, wheels[0].name  # a platform wheel
    names = zipfile.ZipFile(str(wheels[0])).namelist()
    for want in ("syncbn/libsyncbn.so", "syncbn/torch/module.py", "syncbn/run.py"):
        assert want in names, (want, names)
