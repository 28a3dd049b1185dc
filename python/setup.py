"""The wheel: `pip wheel --no-deps --no-build-isolation ./python` builds
libcudajitcache with CMake (in a temporary build tree, Release) and puts it
inside the package, with _build.py naming it, so that the wheel works on a
machine without the C install (it still needs the shared libraries that the
library links: Debian's libssl3, zlib1g, libjansson4, libiniparser1).  The
version is CMakeLists.txt's project(VERSION).

CMake, Ninja or Make, and the -dev packages of scripts/install-deps are
needed to build it; CJC_CMAKE_ARGS adds arguments to CMake's configure.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
SONAME = "libcudajitcache.so.0"


def version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(CudaJitCache\s+VERSION\s+([0-9.]+)", f.read()).group(1)


class BuildWithLibrary(build_py):
    """build_py, then the C library built into the package beside the modules."""

    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "cudajitcache")
        with tempfile.TemporaryDirectory(prefix="cudajitcache-wheel-") as tree:
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(["cmake", "-S", SOURCE, "-B", tree, *generator,
                            "-DCMAKE_BUILD_TYPE=Release", "-DCJC_BUILD_TESTS=OFF",
                            *shlex.split(os.environ.get("CJC_CMAKE_ARGS", ""))], check=True)
            subprocess.run(["cmake", "--build", tree, "--target", "cudajitcache_jit"], check=True)
            built = glob.glob(os.path.join(tree, "src", "jit", SONAME))
            if not built:
                raise RuntimeError("the CMake build made no %s" % SONAME)
            shutil.copyfile(os.path.realpath(built[0]), os.path.join(package, SONAME))
        with open(os.path.join(package, "_build.py"), "w", encoding="utf-8") as f:
            f.write('"""Written by the wheel\'s build (python/setup.py)."""\n'
                    'VERSION = "%s"\n'
                    "# the library inside the package, relative to this directory\n"
                    'LIBRARY = "%s"\n' % (version(), SONAME))


class BinaryDistribution(Distribution):
    """A wheel for this platform: it carries a shared library."""

    def has_ext_modules(self):
        return True


setup(version=version(), cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
