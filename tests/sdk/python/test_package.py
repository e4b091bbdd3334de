"""The Python package as users get it: metadata, an sdist with the typed package and nothing
else, and source that Python 3.9 (the oldest promised) can parse."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from hub import REPO

PROJECT = os.path.join(REPO, "sdk", "python")
PACKAGE = os.path.join(PROJECT, "src", "switchyard_sdk")


def sources() -> list:
    return sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py"))


class PackageTest(unittest.TestCase):
    def test_metadata(self) -> None:
        with open(os.path.join(PROJECT, "pyproject.toml"), "rb") as f:
            text = f.read().decode()
        if sys.version_info >= (3, 11):
            import tomllib

            project = tomllib.loads(text)["project"]
        else:  # tomllib arrived in 3.11; read the three keys checked here by hand
            project = {
                k: eval(v)  # noqa: S307 - our own file, simple literals
                for k, v in re.findall(r'^(name|requires-python|dependencies) = (.+)$', text, re.M)
            }
        self.assertEqual(project["name"], "switchyard-sdk")
        self.assertEqual(project["requires-python"], ">=3.9")
        self.assertEqual(project["dependencies"], [])

    def test_sdist_holds_the_typed_package(self) -> None:
        import setuptools

        major = int(setuptools.__version__.split(".")[0])
        self.assertGreaterEqual(major, 61, "building needs setuptools >= 61 (pyproject [project])")
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "project")
            shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            # setuptools' PEP 517 hook, without network or build isolation (PyPI is not reachable).
            ran = subprocess.run(
                [sys.executable, "-c", "from setuptools import build_meta as b; print(b.build_sdist('dist'))"],
                cwd=copy,
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
            name = ran.stdout.strip().splitlines()[-1]
            with tarfile.open(os.path.join(copy, "dist", name)) as tar:
                members = sorted(m.split("/", 1)[1] for m in tar.getnames() if "/" in m)
                pkg_info = tar.extractfile(f"{name[: -len('.tar.gz')]}/PKG-INFO").read().decode()
        package_files = [m for m in members if m.startswith("src/switchyard_sdk/")]
        self.assertEqual(
            package_files, sorted(["src/switchyard_sdk/py.typed"] + [f"src/switchyard_sdk/{f}" for f in sources()])
        )
        self.assertFalse([m for m in members if "test" in m.lower()])
        self.assertIn("Requires-Python: >=3.9", pkg_info)
        self.assertNotIn("Requires-Dist", pkg_info)

    def test_source_parses_as_python_3_9(self) -> None:
        for name in sources():
            with self.subTest(name):
                with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
                    ast.parse(f.read(), name, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()
