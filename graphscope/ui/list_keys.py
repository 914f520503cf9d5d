"""NOTE [a list keeps its keys]: the window steps the timeline on Left, Right,
Home, End, PageUp and PageDown, and a lesson or quiz takes N, P, A-G, R and H,
as window-wide shortcuts. With the focus in the scenario browser or the
Problems list those fired instead of the list's own keys: Left stepped the
graph back and left the category open, Home sent the timeline to step 0, and
N (the list's type-to-find) moved the lesson on (GUI review). A focused list
keeps them, as the editor keeps its letters: Qt asks a widget first
(ShortcutOverride), and accepting it makes the key a key press of the list's.
A presenter's clicker (PageUp/PageDown) still steps in presentation mode: the
presentation controller's filter takes its key press before any widget."""
from __future__ import annotations

from PySide6.QtCore import QEvent, Qt

_NAVIGATION = frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down,
                         Qt.Key.Key_Home, Qt.Key.Key_End, Qt.Key.Key_PageUp,
                         Qt.Key.Key_PageDown, Qt.Key.Key_Space})
_COMMAND = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
            | Qt.KeyboardModifier.MetaModifier)


def is_list_key(event) -> bool:
    """Whether a key event is one a focused list uses itself: navigation, or a
    printable character without Ctrl/Alt (type-to-find)."""
    if event.modifiers() & _COMMAND:
        return False
    if event.key() in _NAVIGATION:
        return True
    text = event.text()
    return bool(text) and text.isprintable()


class KeepsListKeys:
    """Mixin for a QAbstractItemView subclass (first in the bases)."""

    def event(self, event):
        if event.type() == QEvent.Type.ShortcutOverride and is_list_key(event):
            event.accept()
            return True
        return super().event(event)
