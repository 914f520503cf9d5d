"""The window's snippet file: open (with a clear message for what cannot be
read), save, recent files, and the question before unsaved changes are
replaced. A mixin of ``MainWindow``: it uses the window's ``editor``,
``settings``, ``path``, ``display_name``, ``set_status``, ``stop``, ``run`` and
``ask_unsaved``."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from graphscope.snippet_source import UnreadableSnippet, read_bytes
from graphscope.ui.editor import paragraph_separator_line

MAX_RECENT = 8
NEW_SNIPPET = "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = (x * x).sum()\ny.backward()\nprint(x.grad)\n"


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _stamp(p) -> Optional[tuple]:
    """(modification time in ns, size) of file ``p``; None when it cannot be read."""
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _declared_coding(data: bytes) -> Optional[str]:
    """The encoding a PEP 263 line in the first two lines declares, if any."""
    for line in data.splitlines()[:2]:
        m = _CODING.match(line)
        if m:
            return m.group(1).decode("ascii", "replace")
    return None


class SnippetFiles:
    def load_snippet(self, source: str, name: str = "<snippet>", run: bool = False,
                     path: Optional[os.PathLike] = None) -> None:
        """Show ``source`` in the editor (a scenario, a file). Never runs it unless ``run``."""
        self.stop()
        self._reset_run_view()
        self.editor.setPlainText(source)
        self.editor.document().setModified(False)
        self.path = Path(path) if path else None
        self._disk_stamp = None     # (open_file sets it for a file it read)
        self.display_name = name
        self._update_title()
        self._fit_editor_width()
        self.set_status(f"Opened {name}. Press F5 to run it.")
        self.run_label.setText("")   # how the last run ended is not this snippet's
        self.snippet_loaded.emit()
        if run:
            self.run()

    def open_file(self, path) -> bool:
        """Open a .py file; a clear message (never a traceback) when it cannot be read."""
        p = Path(path)
        problem = None
        try:
            text = read_bytes(p).decode("utf-8-sig")   # a byte-order mark dropped, as python does
        except UnreadableSnippet as e:
            problem = f"Cannot open {p}: {e.reason}."
        except UnicodeDecodeError as e:
            problem = (f"{p.name} is not UTF-8 text (byte {e.start} cannot be read). "
                       "Save it as UTF-8 and open it again.")
            declared = _declared_coding(e.object)
            if declared:
                # python honours the line, the editor reads and writes UTF-8 only
                # (student review: the message did not say why python's file was refused)
                problem = (f"{p.name} declares its own encoding ({declared}), which python "
                           "honours; GraphScope's editor reads and writes UTF-8 only. Save it "
                           "as UTF-8, remove the coding line, and open it again.")
        else:
            line = paragraph_separator_line(text)
            if line is not None:
                problem = (f"{p.name} has a paragraph separator character (U+2029) on line "
                           f"{line}. Python keeps it as it is; GraphScope's editor would turn "
                           "it into a line break, and run and save that instead. Write it as "
                           "\\u2029 in a string, and open the file again.")
        if problem:
            self.show_message("Cannot open file", problem)
            return False
        if not self.confirm_replace():
            return False
        self.load_snippet(text.replace("\r\n", "\n"), p.name, path=p.resolve())
        self._disk_stamp = _stamp(p)
        self._add_recent(p.resolve())
        self.settings.setValue("last_folder", str(p.resolve().parent))
        self.file_loaded.emit(str(p.resolve()))
        return True

    def _start_folder(self) -> Path:
        """Where Open and Save As start: the file's folder, else the last folder one
        of them used, else home (Save As of a scenario started in the folder the app
        was launched from, the repository: student review)."""
        if self.path:
            return self.path.parent
        last = self.settings.value("last_folder", "")
        if last and Path(str(last)).is_dir():
            return Path(str(last))
        return Path.home()

    def open_dialog(self) -> None:
        start = str(self._start_folder())
        path, _ = QFileDialog.getOpenFileName(self, "Open a Python snippet", start,
                                              "Python files (*.py);;All files (*)")
        if path:
            self.open_file(path)

    def new_file(self) -> None:
        if self.confirm_replace():
            self.load_snippet(NEW_SNIPPET, "untitled.py")

    def save(self) -> bool:
        if self.path is None:
            return self.save_as()
        now = _stamp(self.path)
        if now is not None and self._disk_stamp is not None and now != self._disk_stamp \
                and not self.ask_overwrite(self.path):
            # another program changed the file since it was read: its text would be
            # gone without a word (GUI review); Save As keeps both
            self.set_status(f"Not saved: {self.display_name} changed on disk. "
                            "Save As keeps both, or open it again to see the change.")
            return False
        return self.save_to(self.path)

    def _ask_overwrite_dialog(self, p: Path) -> bool:
        b = QMessageBox.question(
            self, "File changed on disk",
            f"{p.name} was changed by another program since GraphScope read it. "
            "Replace it with the text in the editor?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        return b == QMessageBox.StandardButton.Yes

    def save_as(self) -> bool:
        start = str(self.path) if self.path else str(self._start_folder() / self.display_name)
        path, _ = QFileDialog.getSaveFileName(self, "Save snippet as", start,
                                              "Python files (*.py);;All files (*)")
        if not path:
            return False
        p = Path(path)
        if not p.suffix:
            # "mysnippet" was saved as it was typed, and the Open dialog's *.py
            # filter then hid it (student review); the dialog asked about
            # replacing the name typed, not this one (code review: a week's work
            # in mysnippet.py was overwritten without a word)
            p = p.with_name(p.name + ".py")
            if p.exists() and not self.ask_replace(p):
                return False
        return self.save_to(p)

    def _ask_replace_dialog(self, p: Path) -> bool:
        b = QMessageBox.question(self, "Replace file", f"{p.name} already exists. Replace it?",
                                 QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                 QMessageBox.StandardButton.No)
        return b == QMessageBox.StandardButton.Yes

    def save_to(self, path) -> bool:
        p = Path(path)
        try:
            p.write_text(self.editor.source(), encoding="utf-8")
        except OSError as e:
            self.show_message("Cannot save file", f"{p} cannot be written: {e.strerror or e}.")
            return False
        self.path = p.resolve()
        self._disk_stamp = _stamp(self.path)
        self.display_name = p.name
        self.editor.document().setModified(False)
        self._add_recent(self.path)
        self.settings.setValue("last_folder", str(self.path.parent))
        self._update_title()
        self.set_status(f"Saved {p}")
        return True

    def keep_unsaved(self) -> Optional[Path]:
        """The editor's text, if it has changes not saved, written to a new file in
        the app's data folder (NOTE [ending on a signal] in app.py); its path, or
        None when there was nothing to keep."""
        if not self.editor.document().isModified():
            return None
        folder = Path(QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.AppDataLocation) or Path.home()) / "unsaved"
        folder.mkdir(parents=True, exist_ok=True)
        stem = Path(self.display_name or "snippet").stem or "snippet"
        p = folder / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.py"
        n = 1
        while p.exists():
            n += 1
            p = folder / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{n}.py"
        p.write_text(self.editor.source(), encoding="utf-8")
        return p

    def recent_files(self) -> list[str]:
        v = self.settings.value("recent_files", [])
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def _add_recent(self, p: Path) -> None:
        items = [str(p)] + [x for x in self.recent_files() if x != str(p)]
        self.settings.setValue("recent_files", items[:MAX_RECENT])
        self.settings.sync()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)
        for f in files:
            act = self.recent_menu.addAction(f)
            act.triggered.connect(lambda _=False, f=f: self.open_file(f))

    def confirm_replace(self) -> bool:
        """True when it is fine to replace the editor's text (a file, a scenario, a
        new snippet): unsaved changes are saved or given up as the user says,
        and asked about once (given up, the text no longer counts as changed)."""
        if not self.editor.document().isModified():
            return True
        if self.path is not None:
            question = f"{self.display_name} has changes that are not saved. Save them?"
        else:   # a scenario's or a new snippet: there is no file of it yet
            question = (f"Your changes to the snippet {self.display_name} are not saved in any "
                        "file. Save them to a file?")
        answer = self.ask_unsaved("Unsaved changes", question)
        if answer == "save":
            return self.save()
        if answer == "discard":
            self.editor.document().setModified(False)
            return True
        return False

    def _ask_unsaved_dialog(self, title: str, text: str) -> str:
        b = QMessageBox.question(self, title, text,
                                 QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                                 | QMessageBox.StandardButton.Cancel)
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(b, "cancel")

    def show_message(self, title: str, text: str) -> None:
        """A non-blocking message box plus the status line."""
        self.last_message = (title, text)
        self.set_status(text, error=True)
        box = getattr(self, "_message_box", None)
        if box is not None and box.isVisible():
            # one box at a time: a second failed Open says its own message in it
            # (they piled up, one over another)
            box.setWindowTitle(title)
            box.setText(text)
            return
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.destroyed.connect(lambda *_: setattr(self, "_message_box", None))
        self._message_box = box
        box.open()

    def _update_title(self, *_) -> None:
        star = "*" if self.editor.document().isModified() else ""
        self.setWindowTitle(f"{self.display_name}{star} — GraphScope")
