"""Builds libsyncbn with CMake and packages it inside the Python package.

``pip install .`` (``--no-build-isolation`` offline) runs build_py, which
configures this checkout's CMakeLists.txt in setuptools' build_temp (the shared
library only: no tests, benchmarks or MPI backend, so the package needs nothing
but libc and libm), builds the ``syncbn`` target and copies the library to
``syncbn/libsyncbn.so`` in the build tree, where ``syncbn._lib`` looks first
after ``SBN_LIBRARY``. The wheel is tagged for this platform (it holds a
native library). ``SBN_CMAKE_ARGS`` adds CMake arguments (split on spaces) and
``SBN_BUILD_JOBS`` sets the parallel build (default: the CPU count).
"""
import glob
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(syncbn VERSION ([0-9.]+)", f.read()).group(1)


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        build_temp = os.path.abspath(self.get_finalized_command("build").build_temp)
        cmake_dir = os.path.join(build_temp, "libsyncbn")
        os.makedirs(cmake_dir, exist_ok=True)
        args = ["cmake", "-S", ROOT, "-B", cmake_dir, "-DCMAKE_BUILD_TYPE=Release",
                "-DSBN_BUILD_TESTS=OFF", "-DSBN_BUILD_BENCH=OFF", "-DSBN_WITH_MPI=OFF",
                "-DSBN_WERROR=OFF"] + os.environ.get("SBN_CMAKE_ARGS", "").split()
        subprocess.check_call(args)
        jobs = os.environ.get("SBN_BUILD_JOBS") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", cmake_dir, "--target", "syncbn", "-j", jobs])
        # the real file of this version (libsyncbn.so.X.Y.Z); a build tree reused across
        # versions also holds older ones, which must not be packaged
        built = os.path.join(cmake_dir, "libsyncbn.so." + version())
        if not os.path.isfile(built) or os.path.islink(built):
            raise RuntimeError("the build did not produce %s (found %s)" % (
                built, sorted(glob.glob(os.path.join(cmake_dir, "libsyncbn.so*")))))
        dest = os.path.join(self.build_lib, "syncbn", "libsyncbn.so")
        shutil.copyfile(built, dest)
        os.chmod(dest, 0o755)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it holds a native library
        return True


setup(
    version=version(),
    package_dir={"": "python"},
    packages=["syncbn", "syncbn.torch"],
    cmdclass={"build_py": BuildWithLibrary},
    distclass=BinaryDistribution,
    zip_safe=False,
)
