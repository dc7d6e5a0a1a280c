"""What a user installing dmlpy meets: the license, a portable abi3 wheel, a quiet build, a testable sdist.

The build checks run setuptools on a copy of the source tree (never writing into it); they need the
setuptools the build requires (pyproject.toml [build-system]), which the [test] extra installs.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS_MIN = "77"  # PEP 639 license expressions (pyproject.toml [build-system] requires the same)

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _needs_setuptools() -> None:
    pytest.importorskip("setuptools", minversion=SETUPTOOLS_MIN, reason=f"the build needs setuptools>={SETUPTOOLS_MIN} (pip install -e .[test])")
    pytest.importorskip("cffi")


def _setup(tree: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python setup.py <args>` in `tree`, with egg-info kept out of it."""
    egg = tree.parent / "egg-info"
    egg.mkdir(exist_ok=True)
    command = [sys.executable, "setup.py", "egg_info", "--egg-base", str(egg), *args]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=600, env=env, check=False)


@pytest.fixture(scope="module")
def source_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the source tree without build products, as a fresh checkout has it."""
    tree = tmp_path_factory.mktemp("src") / "dmlpy-src"
    junk = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", "*.so", "*.o", ".pytest_cache", ".hypothesis", "_native.c")
    shutil.copytree(ROOT, tree, ignore=junk)
    return tree


@pytest.fixture(scope="module")
def sdist(source_tree: Path) -> Path:
    _needs_setuptools()
    out = source_tree.parent / "sdist"
    done = _setup(source_tree, "sdist", "--dist-dir", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = out.glob("dmlpy-*.tar.gz")
    return archive


def _members(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        return {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}


def _git_files(*options: str) -> set[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    done = subprocess.run(["git", "ls-files", "-z", *options], cwd=ROOT, capture_output=True, text=True, check=True)
    return {name for name in done.stdout.split("\0") if name and (ROOT / name).is_file()}


# ---------------------------------------------------------------------------------------
# 16. The license


def test_the_license_is_an_spdx_expression_whose_mit_text_ships() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text
    assert "the dmlpy authors" in text


def test_the_sdist_metadata_names_the_license_expression_and_file(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        name = next(m for m in tar.getnames() if m.count("/") == 1 and m.endswith("/PKG-INFO"))
        metadata = tar.extractfile(name).read().decode()  # type: ignore[union-attr]
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert "LICENSE" in _members(sdist)


# ---------------------------------------------------------------------------------------
# 17. A portable build (the kernels per instruction set are in tests/test_native.py)


def _build_module(monkeypatch: pytest.MonkeyPatch, arch: str | None) -> object:
    if arch is None:
        monkeypatch.delenv("DMLPY_NATIVE_ARCH", raising=False)
    else:
        monkeypatch.setenv("DMLPY_NATIVE_ARCH", arch)
    spec = importlib.util.spec_from_file_location("dmlpy_native_build_under_test", ROOT / "dmlpy" / "native" / "build.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_default_build_targets_no_particular_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cffi")
    options = _build_module(monkeypatch, None)._build_options()  # type: ignore[attr-defined]
    cpu_specific = [arg for arg in options["extra_compile_args"] if arg.startswith(("-march", "-mtune", "-mcpu", "-mavx", "/arch"))]
    assert cpu_specific == []
    assert ("DMLPY_NATIVE_ARCH_FLAGS", '""') in options["define_macros"]


def test_native_arch_variable_still_chooses_the_target_and_is_stamped_into_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cffi")
    options = _build_module(monkeypatch, "-march=x86-64-v3 -mtune=generic")._build_options()  # type: ignore[attr-defined]
    assert options["extra_compile_args"][-2:] == ["-march=x86-64-v3", "-mtune=generic"]
    assert ("DMLPY_NATIVE_ARCH_FLAGS", '"-march=x86-64-v3 -mtune=generic"') in options["define_macros"]


def test_every_kernel_source_is_compiled_once_per_instruction_set(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cffi")
    build = _build_module(monkeypatch, None)
    sources = {Path(s).relative_to(ROOT / "dmlpy" / "native").as_posix() for s in build._build_options()["sources"]}  # type: ignore[attr-defined]
    kernels = {"pooling", "space_depth", "convolution", "winograd", "activation", "element_wise", "max_pooling", "resampling", "normalization", "gemm", "reduction"}
    assert {f"{k}.c" for k in kernels} | {f"isa/{isa}_{k}.c" for isa in ("avx2", "avx512") for k in kernels} <= sources
    assert {"dmlpy.c", "dispatch.c", "tensor.c", "parallel.c"} <= sources
    assert not any(s.startswith("isa/") and ("parallel" in s or "tensor" in s or "dispatch" in s) for s in sources)
    for wrapper in (ROOT / "dmlpy" / "native" / "isa").glob("avx*_*.c"):
        assert wrapper.name.split("_", 1)[1][:-2] in kernels, f"{wrapper.name} wraps no kernel source"


# ---------------------------------------------------------------------------------------
# 18. The abi3 tag, a build without warnings, one line when the native build is skipped


def _bdist_wheel_tag(tree: Path) -> list[str]:
    """[the extensions' py_limited_api flags, the wheel tag] as `setup.py bdist_wheel` would have them."""
    code = (
        "import sys, setuptools, distutils.core as core\n"
        "core._setup_stop_after = 'commandline'\n"
        "sys.argv = ['setup.py', 'bdist_wheel']\n"
        "exec(compile(open('setup.py').read(), 'setup.py', 'exec'))\n"
        "dist = core._setup_distribution\n"
        "print([getattr(e, 'py_limited_api', False) for e in dist.ext_modules])\n"
        "command = dist.get_command_obj('bdist_wheel'); command.ensure_finalized()\n"
        "print('-'.join(command.get_tag()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()[-2:]


def test_the_wheel_is_tagged_abi3_because_its_extension_uses_the_limited_api(source_tree: Path) -> None:
    _needs_setuptools()
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        pytest.skip("cffi uses the limited API on release builds of CPython only")
    import sysconfig  # noqa: PLC0415

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("free-threaded CPython has no limited API before 3.15")
    limited, tag = _bdist_wheel_tag(source_tree)
    assert limited == "[True]"
    python, abi, _platform = tag.split("-", 2)
    assert (python, abi) == ("cp310", "abi3")  # requires-python >= 3.10
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"


def test_building_the_package_draws_no_setuptools_warnings_and_ships_the_headers(source_tree: Path, tmp_path: Path) -> None:
    _needs_setuptools()
    done = _setup(source_tree, "build_py", "--build-lib", str(tmp_path / "lib"))
    assert done.returncode == 0, done.stdout + done.stderr
    output = (done.stdout + done.stderr).splitlines()
    warnings = [line for line in output if ("Warning" in line or "warning:" in line) and "byte-compiling is disabled" not in line]
    assert warnings == [], "\n".join(output)
    lib = tmp_path / "lib" / "dmlpy"
    assert sorted(p.name for p in (lib / "include" / "dmlpy").glob("*.h")) == ["dml_types.h", "dmlpy.h"]
    assert sorted(p.name for p in (lib / "native" / "isa").iterdir()) == sorted(p.name for p in (ROOT / "dmlpy" / "native" / "isa").glob("*.[ch]"))


def test_the_wheel_holds_every_tracked_file_of_the_package(source_tree: Path, tmp_path: Path) -> None:
    _needs_setuptools()
    tracked = _git_files()
    expected = {name for name in tracked if name.startswith("dmlpy/")}
    expected |= {"dmlpy/" + name for name in tracked if name.startswith("include/dmlpy/")}
    done = _setup(source_tree, "build_py", "--build-lib", str(tmp_path / "lib"))
    assert done.returncode == 0, done.stdout + done.stderr
    built = {p.relative_to(tmp_path / "lib").as_posix() for p in (tmp_path / "lib").rglob("*") if p.is_file()}
    assert expected <= built, f"declare these as package data in pyproject.toml: {sorted(expected - built)}"


def _build_ext_without_compiler(tree: Path, tmp_path: Path, require: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    env.pop("DMLPY_REQUIRE_NATIVE", None)
    if require:
        env["DMLPY_REQUIRE_NATIVE"] = "1"
    return _setup(tree, "build_ext", "--build-lib", str(tmp_path / "lib"), "--build-temp", str(tmp_path / "tmp"), env=env)


def test_a_build_without_a_c_compiler_says_in_one_line_that_the_native_build_is_skipped(source_tree: Path, tmp_path: Path) -> None:
    _needs_setuptools()
    done = _build_ext_without_compiler(source_tree, tmp_path, require=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "native build skipped" in line]
    assert len(lines) == 1 and lines[0].startswith("dmlpy: native build skipped (") and "NumPy" in lines[0], lines
    assert len(lines[0]) < 300, "one short line, not the compiler's command line"
    assert not list((tmp_path / "lib").rglob("_native*"))


def test_a_build_that_requires_native_fails_without_a_c_compiler(source_tree: Path, tmp_path: Path) -> None:
    _needs_setuptools()
    done = _build_ext_without_compiler(source_tree, tmp_path, require=True)
    assert done.returncode != 0
    assert "native build skipped" not in done.stdout + done.stderr


# ---------------------------------------------------------------------------------------
# 19. The sdist carries what its tests need


def test_the_sdist_holds_every_tracked_file_but_gitignore_and_no_build_product(sdist: Path) -> None:
    members = _members(sdist)
    tracked = _git_files() - {".gitignore"}
    assert tracked <= members, f"missing from the sdist: {sorted(tracked - members)}"
    allowed = _git_files("--others", "--exclude-standard") | tracked | {"PKG-INFO", "setup.cfg"}
    extra = {m for m in members - allowed if not m.startswith("dmlpy.egg-info/")}
    assert extra == set(), f"not source files: {sorted(extra)}"


def _collected(tree: Path) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_unpacked_sdist_collects_the_tests_of_the_checkout(sdist: Path, tmp_path: Path) -> None:
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (unpacked,) = tmp_path.iterdir()
    in_sdist = _collected(unpacked)
    assert len(in_sdist) > 100
    assert in_sdist == _collected(ROOT)


# ---------------------------------------------------------------------------------------
# 20. CI exercises what users install


def test_ci_installs_a_wheel_and_an_sdist_in_fresh_venvs_and_runs_the_suite_without_a_compiler() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip wheel" in ci and "build --sdist" in ci
    assert ci.count("-m venv") >= 3  # the test venv, one for the wheel, one for the sdist
    assert "samples/" in ci
    assert "CC=false" in ci
