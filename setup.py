"""Ships the top-level resources/ and scenarios/ folders inside the package.

They live at the repository's top level (where teachers and contributors look
for them) and are copied to graphscope/_data/ in the build tree, so a regular
(non-editable) install finds them through importlib.resources. An editable
install reads them from the checkout instead (see graphscope/resources.py).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        for name in ("resources", "scenarios"):
            src = HERE / name
            dst = Path(self.build_lib) / "graphscope" / "_data" / name
            if src.is_dir():
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst)


setup(cmdclass={"build_py": BuildPyWithData})
