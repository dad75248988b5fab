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


def _twins() -> list[str]:
    """The compiled modules, as aiokafka_lite/speedups.py declares them (read, not
    imported: the package's dependencies need not be installed to build it)."""
    tree = ast.parse(Path(__file__).with_name("aiokafka_lite").joinpath("speedups.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "TWINS":
            calls = node.value.elts if isinstance(node.value, ast.Tuple) else []
            return [ast.literal_eval(c.args[0]) for c in calls if isinstance(c, ast.Call)]
    raise RuntimeError("aiokafka_lite/speedups.py declares no TWINS")


TWINS = {
    f"aiokafka_lite._internal.{name}": f"aiokafka_lite/_internal/{name}.pyx" for name in _twins()
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
