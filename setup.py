"""Build the optional compiled twins of the hot path (Cython), beside the pure-Python modules.

Everything else about the package is declared in pyproject.toml; this file only adds the
extensions, because declaring "optional" extensions is not possible there. The pure-Python
modules are always installed and used whenever a compiled twin is missing, so a failed
compile (no C compiler, no Python headers, an unsupported interpreter) warns and the
install still succeeds. ``AIOKAFKA_LITE_NO_EXTENSIONS=1`` at build time skips compiling.
"""

from __future__ import annotations

import ast
import os
import sys
import traceback
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _twins() -> tuple[str, list[str]]:
    """The package that holds the compiled modules and their names, as
    aiokafka_lite/speedups.py declares them (``TWIN_PACKAGE``, ``TWINS``; read, not
    imported: the package's dependencies need not be installed to build it)."""
    tree = ast.parse(Path(__file__).with_name("aiokafka_lite").joinpath("speedups.py").read_text())
    package, names = None, None
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        name = getattr(target, "id", None)
        if name == "TWIN_PACKAGE" and node.value is not None:
            package = ast.literal_eval(node.value)
        elif name == "TWINS" and node.value is not None:
            calls = node.value.elts if isinstance(node.value, ast.Tuple) else []
            names = [ast.literal_eval(c.args[0]) for c in calls if isinstance(c, ast.Call)]
    if package is None or names is None:
        raise RuntimeError("aiokafka_lite/speedups.py declares no TWIN_PACKAGE or TWINS")
    return package, names


_PACKAGE, _NAMES = _twins()
TWINS = {
    f"aiokafka_lite.{_PACKAGE}.{name}": f"aiokafka_lite/{_PACKAGE}/{name}.pyx" for name in _NAMES
}
SKIP = os.environ.get("AIOKAFKA_LITE_NO_EXTENSIONS", "") not in ("", "0")


def _warn(message: str) -> None:
    # pip shows a build backend's stderr with -v; the install itself goes on.
    print(
        f"WARNING: aiokafka-lite: {message}; the pure-Python modules will be used", file=sys.stderr
    )


def _extensions() -> list[Extension]:
    if SKIP:
        _warn("AIOKAFKA_LITE_NO_EXTENSIONS is set, not compiling")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        _warn("Cython is not installed")
        return []
    extensions = [Extension(name, [source]) for name, source in TWINS.items()]
    try:
        return list(
            cythonize(
                extensions,
                # Generated C stays out of the source tree.
                build_dir="build/cython",
                compiler_directives={
                    "language_level": 3,
                    "boundscheck": False,
                    "wraparound": False,
                    "cdivision": True,
                    "embedsignature": True,
                },
                quiet=True,
            )
        )
    except Exception:
        traceback.print_exc()
        _warn("Cython could not translate the extensions")
        return []


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: a module that does not compile is left out."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all (distutils raises before any module)
            _warn(f"cannot build the compiled modules ({e})")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:
            _warn(f"cannot compile {ext.name} ({e})")


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
