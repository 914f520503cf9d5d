"""One way in to bundled files (themes, icons, scenarios), never an import side effect."""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(name: str) -> Path:
    """Folder of bundled data: ``resources`` or ``scenarios``.

    An installed package carries them in ``graphscope/_data``; an editable
    install or a plain checkout reads the repository's top-level folders.
    """
    packaged = Path(str(resources.files("graphscope"))) / "_data" / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / name


def read_text(relpath: str) -> str:
    """Text of a file under resources/."""
    return (data_dir("resources") / relpath).read_text(encoding="utf-8")
