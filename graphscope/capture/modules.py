"""nn.Module calls: global forward hooks with removable handles (stub, grown below)."""
from __future__ import annotations


class ModuleHooks:
    def __init__(self, recorder) -> None:
        self.recorder = recorder
        self.handles = []

    def install(self) -> None:
        pass

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()
