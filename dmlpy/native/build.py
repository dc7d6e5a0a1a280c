"""cffi build script for dmlpy's native compute library (out-of-line API mode).

setup.py uses it as ``cffi_modules=["dmlpy/native/build.py:ffibuilder"]``; it builds the extension
module ``dmlpy._native`` from the C sources next to this file, the public headers in ``include/``, and
the declarations in ``dmlpy.cdef``.

It can also be run by hand (``python dmlpy/native/build.py [tmpdir]``) or imported and compiled:
``ffibuilder.compile(tmpdir=...)``.

Environment:

- ``DMLPY_REQUIRE_NATIVE=1``: a failed build fails the install (otherwise the extension is optional and
  dmlpy falls back to its NumPy kernels).
- ``DMLPY_NATIVE_ARCH``: target flags for the whole library (for example ``-march=native``, which makes
  the build run only on CPUs like this one). Unset, empty or ``none``: the compiler's default target, so
  the build (a wheel) runs on any CPU of the platform; with GCC on x86 the kernels are also compiled for
  AVX2 and AVX-512 (dmlpy/native/isa/) and the best variant the CPU supports is chosen at run time.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

from cffi import FFI

# Paths. setuptools executes this file with cwd = project root and __file__ relative to it; keeping the
# paths relative then is what setuptools wants for an sdist. When imported or run directly, __file__ is
# absolute and so are the paths (cffi's compile() changes directory to its tmpdir).
_here = os.path.dirname(__file__)
if __name__ != "__cffi__" or os.path.isabs(_here) or not _here:
    _here = os.path.dirname(os.path.abspath(__file__))
NATIVE_DIR = _here
PACKAGE_DIR = os.path.dirname(NATIVE_DIR)
ROOT_DIR = os.path.dirname(PACKAGE_DIR)
INCLUDE_DIR = os.path.join(ROOT_DIR, "include")

KERNELS = ("pooling", "space_depth", "convolution", "winograd", "activation")
# The kernels as they are (the baseline variant), then each again per instruction set through a wrapper
# in isa/ (empty where the compiler builds no variants). Everything else is compiled once.
SOURCES = [
    *(os.path.join(NATIVE_DIR, f"{name}.c") for name in ("dmlpy", "dispatch", "tensor", "parallel", *KERNELS)),
    *(os.path.join(NATIVE_DIR, "isa", f"{isa}_{name}.c") for isa in ("avx2", "avx512") for name in KERNELS),
]
DEPENDS = [
    os.path.join(INCLUDE_DIR, "dmlpy", "dml_types.h"),
    os.path.join(INCLUDE_DIR, "dmlpy", "dmlpy.h"),
    os.path.join(NATIVE_DIR, "dmlpy_internal.h"),
    os.path.join(NATIVE_DIR, "half.h"),
    os.path.join(NATIVE_DIR, "activation.h"),
    os.path.join(NATIVE_DIR, "conv_shared.h"),
    *(os.path.join(NATIVE_DIR, "isa", name) for name in ("isa.h", "variant.h", "avx2.h", "avx512.h", "avx512vbmi.h")),
]
CDEF_PATH = os.path.join(NATIVE_DIR, "dmlpy.cdef")
VERSION_PATH = os.path.join(PACKAGE_DIR, "_version.py")


def read_versions(path: str = VERSION_PATH) -> tuple[str, int]:
    """(__version__, NATIVE_ABI_VERSION) parsed from dmlpy/_version.py without importing the package."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    version = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
    abi = re.search(r"^NATIVE_ABI_VERSION\s*=\s*(\d+)", text, re.M)
    if not version or not abi:
        raise RuntimeError(f"{path}: __version__ or NATIVE_ABI_VERSION not found")
    if not re.fullmatch(r"[A-Za-z0-9.+_\-]+", version.group(1)):
        raise RuntimeError(f"{path}: unexpected characters in __version__ {version.group(1)!r}")
    return version.group(1), int(abi.group(1))


def _compiler_kind() -> str:
    """'msvc' or 'unix': the kind of compiler setuptools would use."""
    try:
        try:
            from setuptools._distutils.ccompiler import get_default_compiler
        except ImportError:  # pragma: no cover - very old setuptools
            from distutils.ccompiler import get_default_compiler  # type: ignore[no-redef]
        return get_default_compiler()
    except Exception:  # pragma: no cover - no usable distutils
        return "msvc" if sys.platform == "win32" else "unix"


def _c_string(text: str) -> str:
    """`text` as a C string literal (for a -D macro)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def arch_flags() -> list[str]:
    """DMLPY_NATIVE_ARCH's flags; none (the compiler's default, portable target) unless it is set."""
    requested = os.environ.get("DMLPY_NATIVE_ARCH", "").strip()
    if requested.lower() in ("", "none"):
        return []
    return shlex.split(requested)


def _build_options() -> dict:
    version, abi = read_versions()
    kind = _compiler_kind()
    arch = arch_flags()
    if kind == "msvc":
        compile_args = ["/O2", "/std:c11", "/W3", *arch]
        libraries: list[str] = []
        link_args: list[str] = []
    else:
        compile_args = ["-O3", "-std=c11", "-Wall", "-Wextra", "-pthread", *arch]
        libraries = ["pthread", "m"]
        link_args = ["-pthread"]
    return dict(
        sources=SOURCES,
        depends=DEPENDS,
        include_dirs=[INCLUDE_DIR, NATIVE_DIR],
        define_macros=[
            ("DMLPY_NATIVE_VERSION", '"%s"' % version),
            ("DMLPY_EXPECTED_ABI_VERSION", str(abi)),
            ("DMLPY_NATIVE_ARCH_FLAGS", _c_string(" ".join(arch))),
        ],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        libraries=libraries,
        # Optional only inside setuptools (pip install succeeds without a compiler; the NumPy backend then
        # serves). A direct ffibuilder.compile() should fail loudly instead of returning a missing file.
        optional=__name__ == "__cffi__" and os.environ.get("DMLPY_REQUIRE_NATIVE", "") != "1",
    )


class _NativeFFI(FFI):
    """An FFI whose compile() names the sources relative to tmpdir when they lie inside it.

    cffi's compile() runs distutils from inside tmpdir, and distutils mirrors an absolute source path
    under the object directory (tmpdir/work/.../pooling.o). Relative paths keep the objects next to
    their sources, e.g. ``compile(tmpdir=<repo root>)`` builds dmlpy/_native*.so in place.
    """

    def compile(self, tmpdir=".", verbose=0, target=None, debug=None):  # noqa: A003 - cffi's name
        module_name, source, source_extension, kwds = self._assigned_source
        base = os.path.abspath(tmpdir)

        def rel(path: str) -> str:
            try:
                inside = os.path.isabs(path) and os.path.commonpath([path, base]) == base
            except ValueError:  # different drives on Windows
                inside = False
            return os.path.relpath(path, base) if inside else path

        local = dict(kwds)
        for key in ("sources", "depends", "include_dirs"):
            local[key] = [rel(path) for path in kwds.get(key, [])]
        self._assigned_source = (module_name, source, source_extension, local)
        try:
            return super().compile(tmpdir=tmpdir, verbose=verbose, target=target, debug=debug)
        finally:
            self._assigned_source = (module_name, source, source_extension, kwds)


def _make_ffibuilder() -> FFI:
    builder = _NativeFFI()
    with open(CDEF_PATH, encoding="utf-8") as f:
        builder.cdef(f.read())
    builder.set_source("dmlpy._native", '#include "dmlpy/dmlpy.h"\n', **_build_options())
    return builder


ffibuilder = _make_ffibuilder()


if __name__ == "__main__":
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT_DIR, "build", "native")
    print(ffibuilder.compile(tmpdir=out_dir, verbose=True))
