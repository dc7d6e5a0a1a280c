# setuptools reads cffi_modules and cmdclass only from setup(); everything else is in pyproject.toml.
import sys

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

# The oldest Python the package supports (pyproject.toml requires-python): the abi3 wheel's tag.
ABI3_TAG = "cp310"


class BuildExt(build_ext):
    """Without a working C compiler the (optional) extension is skipped with one line saying so."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except (CCompilerError, BaseError) as error:
            if not ext.optional:
                raise
            reason = " ".join(str(error).split())
            reason = reason if len(reason) <= 160 else reason[:157] + "..."
            print(f"dmlpy: native build skipped ({reason}); dmlpy will run on its NumPy kernels. "
                  "Install a C compiler and reinstall for the C kernels.", file=sys.stderr, flush=True)  # fmt: skip


class BdistWheel(bdist_wheel):
    """Tags the wheel abi3 when its extension uses the limited API (cffi's default on CPython)."""

    def finalize_options(self):
        if not self.py_limited_api and any(getattr(ext, "py_limited_api", False) for ext in self.distribution.ext_modules or ()):
            self.py_limited_api = ABI3_TAG
        super().finalize_options()


setup(
    cffi_modules=["dmlpy/native/build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt, "bdist_wheel": BdistWheel},
)
