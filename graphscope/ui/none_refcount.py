"""Work around PySide6 6.12's abi3 wheel dropping a reference to ``None`` on Python < 3.12.

NOTE [None refcount]: PySide6-Essentials 6.12.0 (``cp310-abi3``) returns ``None`` from every
void method (``QPainterPath.lineTo``, ``QPainter.setPen``, ``QPixmap.fill`` ...) without
taking a reference, as if ``None`` were immortal, which it is only from Python 3.12 on
(PEP 683). On 3.11 each such call lowers ``None``'s count by one, and a few thousand
calls later the interpreter aborts with "none_dealloc: deallocating None" (seen here:
two renders of a 40-node graph). ``None`` is never freed anyway, so giving it a huge
count makes it as good as immortal and the wheel's assumption true. Applied once on
import by the modules that paint; a no-op on 3.12+ and on other interpreters.
"""
from __future__ import annotations

import sys

_BOOST = 1 << 48
_applied = False


def apply() -> None:
    global _applied
    if _applied or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    import ctypes
    ctypes.c_ssize_t.from_address(id(None)).value += _BOOST
    _applied = True


apply()
