"""Loading and checking scenario files (quiz questions with a runnable snippet).

A scenario is one TOML file under ``scenarios/`` (format: ``scenarios/README.md``);
a lesson is an ordered list of scenario ids under ``scenarios/lessons/``.

Loading never stops at a broken file: :func:`load_dir` returns the scenarios
that are sound and a list of problems, each ``file:line: message`` with the
line of the TOML syntax error or of the offending key. :func:`verify` runs a
scenario's snippet (in a worker process through :func:`graphscope.trace`, or
with plain ``python`` when asked) and compares what happened with the
scenario's ``expect`` table. ``graphscope scenarios check [DIR]`` is
:func:`check_main`.

No torch here (layering rule): snippets always run in another process.
"""
from __future__ import annotations

import argparse
import codecs
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from graphscope.snippet_source import UnreadableSnippet, read_bytes

CATEGORIES = ("conceptual", "predict_output", "model_choice", "hyperparameter", "debug", "practice")
# The problem set's own words, easiest first (the browser sorts by this order).
DIFFICULTIES = ("easy", "medium", "intermediate", "advanced", "hard", "expert")
STATUSES = ("ok", "error", "exit")

REQUIRED = ("id", "title", "category", "difficulty", "question", "options", "answer",
            "hint", "explanation", "snippet", "expect")
OPTIONAL = ("mistakes", "reveal_hides_output", "note", "focus", "tags", "source")
EXPECT_KEYS = ("stdout", "stdout_contains", "stderr_contains", "error_type", "error_message", "status")
LESSON_KEYS = ("title", "description", "scenarios")

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# Each snippet runs in a fresh process; this bounds a runaway one during a check.
VERIFY_TIMEOUT = 60.0


@dataclass(frozen=True)
class Option:
    key: str
    text: str


@dataclass(frozen=True)
class Expect:
    """What running the snippet must show. Every field given is checked."""
    stdout: Optional[str] = None               # exact stdout
    stdout_contains: tuple = ()                # substrings stdout must contain
    stderr_contains: tuple = ()                # substrings stderr must contain (warnings)
    error_type: Optional[str] = None           # exception class name ("RuntimeError")
    error_message: Optional[str] = None        # substring of the exception message
    status: Optional[str] = None               # ok | error | exit

    @property
    def expected_status(self) -> str:
        if self.status:
            return self.status
        return "error" if self.error_type else "ok"


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    category: str
    difficulty: str
    question: str
    options: tuple
    answer: str
    hint: str
    explanation: str
    snippet: str
    expect: Expect
    mistakes: tuple = ()
    reveal_hides_output: bool = True   # quiz mode: output, errors and values stay hidden until Reveal
    note: Optional[str] = None
    focus: Optional[str] = None
    tags: tuple = ()
    source: Optional[str] = None
    path: Optional[Path] = None
    lines: dict = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """1-based line of ``key`` in the file (1 when not found)."""
        return self.lines.get(key, 1)

    def where(self, key: str = "id") -> str:
        return f"{self.path}:{self.line_of(key)}"

    def option(self, key: str) -> Optional[Option]:
        return next((o for o in self.options if o.key == key), None)

    @property
    def snippet_filename(self) -> str:
        return f"{self.id}.py"


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    scenario_ids: tuple
    description: str = ""
    path: Optional[Path] = None
    lines: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Outcome:
    """How a snippet run ended, in the terms ``expect`` speaks."""
    status: str
    stdout: str
    error_type: Optional[str] = None
    error_message: Optional[str] = None
    stderr: str = ""


class ScenarioError(ValueError):
    """A file that could not be read as a scenario or lesson; ``problems`` say why."""

    def __init__(self, problems: list):
        super().__init__("\n".join(problems))
        self.problems = problems


# ---------------------------------------------------------------- locating keys

def _key_lines(text: str) -> dict:
    """Line of each top-level key (and of ``[expect]``/``[[options]]`` tables).

    tomllib gives no positions, so keys are found by a line scan: good enough
    to point a teacher at the right line, and never used for the values. Lines
    inside a multi-line string (a snippet) are skipped: a snippet line
    ``[int(v) for v in xs]`` read as a table header sent every problem after it
    to line 1 (teacher review). A dotted key (``expect.stdout = ...``) also
    gives its table's line. ``lines[UNCLOSED]``: where a multi-line string that
    never ends began.
    """
    lines: dict = {}
    table = None
    key_re = re.compile(r'^\s*("?)([A-Za-z0-9_.-]+)\1\s*=')
    open_quote, opened_at = None, 0
    for n, raw in enumerate(text.splitlines(), 1):
        if open_quote is not None:
            if raw.count(open_quote) % 2:
                open_quote = None        # the string ends on this line
            continue
        s = raw.strip()
        if s.startswith("[["):
            name = s.strip("[] ")
            table = name
            lines.setdefault(name, n)
            continue
        if s.startswith("["):
            table = s.strip("[] ")
            lines.setdefault(table, n)
            continue
        m = key_re.match(raw)
        if not m:
            # a multi-line string opened inside an array or an inline table
            # (``options = [ { key = "A", text = """...``), not in a comment
            if not s.startswith("#"):
                for q in (_LITERAL3, _BASIC3):
                    if raw.count(q) % 2:
                        open_quote, opened_at = q, n
                        break
            continue
        value = raw[m.end():].lstrip()
        for q in (_LITERAL3, _BASIC3):
            # a key's value that opens a multi-line string and does not close it on
            # this line (a triple quote in a comment or inside a one-line string
            # opened nothing: code review)
            if value.startswith(q) and q not in value[3:]:
                open_quote, opened_at = q, n
                break
        key = m.group(2)
        if table is None:
            lines.setdefault(key, n)
            if "." in key:
                lines.setdefault(key.split(".", 1)[0], n)
        else:
            lines.setdefault(f"{table}.{key}", n)
    if open_quote is not None:
        lines[UNCLOSED] = opened_at
    return lines


UNCLOSED = " unclosed"    # a key no TOML file can have
_LITERAL3, _BASIC3 = "'" * 3, '"' * 3


def _toml_error_line(exc: tomllib.TOMLDecodeError) -> int:
    line = getattr(exc, "lineno", None)  # Python 3.14 adds lineno
    if line:
        return line
    m = re.search(r"at line (\d+)", str(exc))
    return int(m.group(1)) if m else 1


def _read_toml(path: Path):
    """(data, key_lines) or raise ScenarioError with a file:line problem."""
    try:
        # utf-8-sig: a file saved by Windows Notepad starts with a byte-order
        # mark, which tomllib reads as "Invalid statement"; read_bytes refuses a
        # pipe or a device (a FIFO named *.toml in a lessons folder blocked the
        # loading for ever) and a file too big to be a scenario
        data = read_bytes(path, "TOML file")
        text = data.decode("utf-8-sig")
    except UnreadableSnippet as e:
        raise ScenarioError([f"{path}:1: cannot read file: {e.reason}"])
    except UnicodeDecodeError as e:
        # TOML is UTF-8 by definition; a teacher's editor saved Latin-1 or
        # cp1252, and Python's "'utf-8' codec can't decode byte 0xe9 in position
        # 12" told them nothing they could act on (teacher's review). The line
        # is the one with the first byte that is not UTF-8.
        # (e.start counts from after a byte-order mark, which utf-8-sig drops)
        skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        line = data.count(b"\n", 0, e.start + skip) + 1
        raise ScenarioError([f"{path}:{line}: the file is not UTF-8 text: save it as UTF-8"])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        line = _toml_error_line(e)
        unclosed = _key_lines(text).get(UNCLOSED)
        if unclosed is not None and "end of document" in str(e):
            # a snippet's closing quotes forgotten: where it began, not line 1
            line, msg = unclosed, f"a multi-line string begins here and never ends ({msg})"
        raise ScenarioError([f"{path}:{line}: bad TOML: {msg}"])
    if not data:
        # one line, not every required field missing (eleven for a scenario)
        raise ScenarioError([f"{path}:1: " + ("the file holds only comments, no fields"
                                              if text.strip() else "the file is empty")])
    return data, _key_lines(text)


def looks_like_lesson(data: dict) -> bool:
    """A lesson's ``scenarios = [...]`` and no scenario's ``snippet``."""
    return isinstance(data.get("scenarios"), list) and "snippet" not in data


# ---------------------------------------------------------------- scenarios

def load_file(path) -> Scenario:
    """One scenario file; raises :class:`ScenarioError` listing every fault found."""
    path = Path(path)
    data, lines = _read_toml(path)
    if looks_like_lesson(data):
        # a lesson in a folder of scenarios (`--scenarios DIR/lessons`): one line
        # saying what it is, not ten missing fields and an unknown 'scenarios'
        where = (f", and {path.parent.parent}, the folder above lessons/, with --scenarios"
                 if path.parent.name == "lessons"
                 else "; lessons go in a lessons/ folder beside the scenarios")
        raise ScenarioError([f"{path}:1: a lesson file, not a scenario: open it with "
                             f"--lesson (Scenarios \u203a Open lesson\u2026){where}"])
    problems: list = []

    def bad(key: str, message: str):
        problems.append(f"{path}:{lines.get(key, 1)}: {message}")

    for key in REQUIRED:
        if key not in data:
            bad(key, f"missing field '{key}'")
    for key in data:
        if key not in REQUIRED and key not in OPTIONAL:
            bad(key, f"unknown field '{key}' (fields: {', '.join(REQUIRED + OPTIONAL)})")

    def text_field(key, required=True):
        v = data.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or (required and not v.strip()):
            bad(key, f"'{key}' must be a non-empty string")
            return None
        return v

    sid = text_field("id")
    if sid is not None and not _ID_RE.match(sid):
        bad("id", f"id '{sid}' must be lower-case letters, digits, '-' or '_'")
    for key in ("title", "question", "hint", "explanation", "snippet", "answer"):
        text_field(key)
    for key in ("note", "focus", "source"):
        text_field(key)

    category = text_field("category")
    if category is not None and category not in CATEGORIES:
        bad("category", f"unknown category '{category}' (one of: {', '.join(CATEGORIES)})")
    difficulty = text_field("difficulty")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        bad("difficulty", f"unknown difficulty '{difficulty}' (one of: {', '.join(DIFFICULTIES)})")

    options = []
    raw_opts = data.get("options")
    if raw_opts is not None:
        if not isinstance(raw_opts, list) or len(raw_opts) < 2:
            bad("options", "'options' must be a list of at least two {key, text} tables")
        else:
            seen = set()
            for i, o in enumerate(raw_opts):
                if not (isinstance(o, dict) and isinstance(o.get("key"), str)
                        and isinstance(o.get("text"), str) and o["key"].strip() and o["text"].strip()):
                    bad("options", f"option {i + 1} must have a non-empty 'key' and 'text'")
                    continue
                # (case folded: the quiz shows keys in capitals, and "a" and "A"
                # were two "A" buttons, both right: robustness review)
                folded = o["key"].strip().upper()
                if folded in seen:
                    bad("options", f"option key '{o['key']}' appears twice")
                seen.add(folded)
                options.append(Option(o["key"], o["text"]))
    answer = data.get("answer")
    if isinstance(answer, str) and options and answer not in {o.key for o in options}:
        bad("answer", f"answer '{answer}' is not among the options ({', '.join(o.key for o in options)})")

    def str_list(key):
        v = data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            bad(key, f"'{key}' must be a list of strings")
            return ()
        return tuple(v)

    mistakes, tags = str_list("mistakes"), str_list("tags")
    hides = data.get("reveal_hides_output", True)
    if not isinstance(hides, bool):
        bad("reveal_hides_output", "'reveal_hides_output' must be true or false")
        hides = False

    expect = _parse_expect(data.get("expect"), bad) if "expect" in data else None

    focus = data.get("focus")
    snippet = data.get("snippet")
    if isinstance(focus, str) and isinstance(snippet, str) and not re.search(
            rf"\b{re.escape(focus)}\b", snippet):
        bad("focus", f"focus '{focus}' does not occur in the snippet")

    if problems:
        raise ScenarioError(problems)
    return Scenario(
        id=sid, title=data["title"], category=category, difficulty=difficulty,
        question=data["question"], options=tuple(options), answer=answer, hint=data["hint"],
        explanation=data["explanation"], snippet=snippet, expect=expect, mistakes=mistakes,
        reveal_hides_output=hides, note=data.get("note"), focus=focus, tags=tags,
        source=data.get("source"), path=path, lines=lines)


def _parse_expect(raw, bad) -> Optional[Expect]:
    if not isinstance(raw, dict):
        bad("expect", "'expect' must be a table: { stdout = \"...\" } or "
                      "{ error_type = \"RuntimeError\", error_message = \"...\" } or { status = \"ok\" }")
        return None
    for key in raw:
        if key not in EXPECT_KEYS:
            bad("expect", f"unknown key 'expect.{key}' (keys: {', '.join(EXPECT_KEYS)})")
    if not any(k in raw for k in ("stdout", "stdout_contains", "error_type", "status")):
        bad("expect", "'expect' must give stdout, stdout_contains, error_type or status")
    for key in ("stdout", "error_type", "error_message", "status"):
        if key in raw and not isinstance(raw[key], str):
            bad("expect", f"'expect.{key}' must be a string")
            return None
    pieces = {}
    for key in ("stdout_contains", "stderr_contains"):
        v = raw.get(key, [])
        v = [v] if isinstance(v, str) else v
        if not isinstance(v, list) or not all(isinstance(c, str) for c in v):
            bad("expect", f"'expect.{key}' must be a string or a list of strings")
            return None
        pieces[key] = tuple(v)
    if "error_message" in raw and "error_type" not in raw:
        bad("expect", "'expect.error_message' needs 'expect.error_type'")
    status = raw.get("status")
    if status is not None and status not in STATUSES:
        bad("expect", f"unknown status '{status}' (one of: {', '.join(STATUSES)})")
    if status not in (None, "error") and "error_type" in raw:
        bad("expect", f"status '{status}' contradicts 'expect.error_type'")
    return Expect(stdout=raw.get("stdout"), stdout_contains=pieces["stdout_contains"],
                  stderr_contains=pieces["stderr_contains"],
                  error_type=raw.get("error_type"), error_message=raw.get("error_message"),
                  status=status)


def _scenario_files(directory: Path) -> list:
    # Lessons live in a sub-folder; every other *.toml directly in the folder is a scenario.
    return sorted(p for p in directory.glob("*.toml") if p.is_file())


def load_dir(path) -> tuple:
    """``(scenarios, problems)`` for every ``*.toml`` directly in ``path``.

    A broken file is left out and described in ``problems``; the others load.
    Two files with the same id: the first (by file name) is kept, both are named.
    """
    directory = Path(path)
    scenarios: list = []
    problems: list = []
    if not directory.is_dir():
        return [], [f"{directory}:1: not a folder"]
    by_id: dict = {}
    for f in _scenario_files(directory):
        try:
            s = load_file(f)
        except ScenarioError as e:
            problems.extend(e.problems)
            continue
        first = by_id.get(s.id)
        if first is not None:
            problems.append(f"{s.where('id')}: duplicate id '{s.id}' (also in {first.where('id')})")
            continue
        by_id[s.id] = s
        scenarios.append(s)
    return scenarios, problems


def bundled_dir() -> Path:
    """The scenarios that ship with GraphScope."""
    from graphscope.resources import data_dir
    return data_dir("scenarios")


def find(scenario_id: str, directories=None) -> Optional[Scenario]:
    """The scenario with this id in ``directories`` (default: the bundled folder)."""
    for d in directories or [bundled_dir()]:
        for s in load_dir(d)[0]:
            if s.id == scenario_id:
                return s
    return None


# ---------------------------------------------------------------- lessons

def load_lesson(path) -> Lesson:
    """A lesson file: ``title``, optional ``description``, ``scenarios = [ids]``."""
    path = Path(path)
    data, lines = _read_toml(path)
    if "snippet" in data and "scenarios" not in data:
        # the mirror of load_file's: one line, not "missing field 'scenarios' (and
        # 13 more problems)" (UX review)
        raise ScenarioError([f"{path}:1: a scenario file, not a lesson: open it with "
                             f"--scenario {data.get('id') or path.stem} (with --scenarios "
                             f"{path.parent} if it is not a bundled one), or list its id in "
                             "a lesson's scenarios"])
    problems = []

    def bad(key, message):
        problems.append(f"{path}:{lines.get(key, 1)}: {message}")

    for key in ("title", "scenarios"):
        if key not in data:
            bad(key, f"missing field '{key}'")
    for key in data:
        if key not in LESSON_KEYS:
            bad(key, f"unknown field '{key}' (fields: {', '.join(LESSON_KEYS)})")
    ids = data.get("scenarios")
    if ids is None:
        ids = []
    elif not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        bad("scenarios", "'scenarios' must be a non-empty list of scenario ids")
        ids = []
    if not isinstance(data.get("title", ""), str):
        bad("title", "'title' must be a string")
    if problems:
        raise ScenarioError(problems)
    return Lesson(id=path.stem, title=data["title"], scenario_ids=tuple(ids),
                  description=data.get("description", ""), path=path, lines=lines)


def load_lessons(path) -> tuple:
    """``(lessons, problems)`` for ``path/lessons/*.toml``."""
    lessons, problems = [], []
    for f in sorted((Path(path) / "lessons").glob("*.toml")):
        try:
            lessons.append(load_lesson(f))
        except ScenarioError as e:
            problems.extend(e.problems)
    return lessons, problems


def check_lesson(lesson: Lesson, known_ids) -> list:
    """Problems with a lesson's references (ids that no scenario has, repeats)."""
    line = lesson.lines.get("scenarios", 1)
    out, seen = [], set()
    for sid in lesson.scenario_ids:
        if sid not in known_ids:
            out.append(f"{lesson.path}:{line}: lesson names unknown scenario '{sid}'")
        if sid in seen:
            out.append(f"{lesson.path}:{line}: lesson names scenario '{sid}' twice")
        seen.add(sid)
    return out


# ---------------------------------------------------------------- running snippets

def _short_type(name: Optional[str]) -> Optional[str]:
    # Plain python prints "torch.fx.proxy.TraceError"; compare the class name.
    return name.rsplit(".", 1)[-1] if name else name


def run_traced(source: str, filename: str, timeout: float = VERIFY_TIMEOUT) -> Outcome:
    """Run in a GraphScope worker (the path the app takes)."""
    import graphscope
    tr = graphscope.trace(source, filename, timeout=timeout)
    err = tr.error
    return Outcome(status=tr.status, stdout=tr.stdout, stderr=tr.stderr,
                   error_type=_short_type(err.type) if err else None,
                   error_message=err.message if err else None)


# The exception line: a (dotted) class name, then ": message" unless it is empty.
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?:: (.*))?$")


def parse_traceback(stderr: str):
    """(type, message) of the exception a ``python`` run printed last, or (None, None)."""
    lines = stderr.rstrip("\n").splitlines()
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback (most recent call last):"):
            start = i
            break
    if start is None:
        return None, None
    # The exception line is the first unindented line after the frames; the
    # message may continue over several lines.
    for j in range(start + 1, len(lines)):
        ln = lines[j]
        if ln and not ln.startswith(" "):
            m = _EXC_LINE.match(ln)
            if m:
                msg = "\n".join([m.group(2) or ""] + lines[j + 1:])
                return _short_type(m.group(1)), msg
    return None, None


def run_plain(source: str, filename: str, timeout: float = VERIFY_TIMEOUT) -> Outcome:
    """Run with plain ``python FILE`` in a fresh process: what the learner would see."""
    with tempfile.TemporaryDirectory(prefix="graphscope-") as tmp:
        f = Path(tmp) / filename
        f.write_text(source, encoding="utf-8")
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        try:
            p = subprocess.run([sys.executable, str(f)], capture_output=True, text=True,
                               encoding="utf-8", timeout=timeout, cwd=tmp, env=env)
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            return Outcome("timeout", out if isinstance(out, str) else out.decode(),
                           "Timeout", f"did not finish within {timeout:g} s")
    return outcome_of_process(p.returncode, p.stdout, p.stderr)


def outcome_of_process(returncode: int, stdout: str, stderr: str) -> Outcome:
    """What a finished ``python FILE`` run amounts to, read off its exit code and stderr."""
    if returncode == 0:
        return Outcome("ok", stdout, stderr=stderr)
    etype, emsg = parse_traceback(stderr)
    if etype is not None:
        return Outcome("error", stdout, etype, emsg, stderr)
    if returncode < 0:
        return Outcome("crash", stdout, "Crash", f"killed by signal {-returncode}", stderr)
    return Outcome("exit", stdout, stderr=stderr)  # sys.exit(n): no traceback


def _runner_available() -> bool:
    try:
        import graphscope.runner  # noqa: F401
    except ImportError:
        return False
    return True


def default_runner() -> Callable:
    """The worker when the capture engine is installed, else plain python."""
    return run_traced if _runner_available() else run_plain


def compare(scenario: Scenario, outcome: Outcome) -> list:
    """Problems (``file:line: ...``) where ``outcome`` is not what ``expect`` claims."""
    e = scenario.expect
    at = scenario.where("expect")
    out = []
    if outcome.status != e.expected_status:
        what = (f"{outcome.error_type}: {outcome.error_message}" if outcome.error_type
                else outcome.status)
        out.append(f"{at}: snippet no longer behaves as claimed: expected status "
                   f"'{e.expected_status}', got '{outcome.status}' ({_clip(what)})")
    if e.stdout is not None and outcome.stdout != e.stdout:
        out.append(f"{at}: snippet no longer behaves as claimed: stdout differs\n"
                   f"    expected: {e.stdout!r}\n    got:      {outcome.stdout!r}")
    for piece in e.stdout_contains:
        if piece not in outcome.stdout:
            out.append(f"{at}: snippet no longer behaves as claimed: stdout lacks {piece!r}"
                       f" (got {_clip(outcome.stdout)!r})")
    for piece in e.stderr_contains:
        if piece not in outcome.stderr:
            out.append(f"{at}: snippet no longer behaves as claimed: stderr lacks {piece!r}"
                       f" (got {_clip(outcome.stderr)!r})")
    if e.error_type is not None and outcome.error_type != _short_type(e.error_type):
        out.append(f"{at}: snippet no longer behaves as claimed: expected {e.error_type}, "
                   f"got {outcome.error_type or 'no exception'}")
    if e.error_message is not None and e.error_message not in (outcome.error_message or ""):
        out.append(f"{at}: snippet no longer behaves as claimed: error message lacks "
                   f"{e.error_message!r} (got {_clip(outcome.error_message or '')!r})")
    return out


def _clip(s: str, n: int = 160) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def verify(scenario: Scenario, run: Optional[Callable] = None) -> list:
    """Run the scenario's snippet and list how it departs from ``expect`` (empty: fine)."""
    run = run or default_runner()
    try:
        outcome = run(scenario.snippet, scenario.snippet_filename)
    except Exception as e:  # a runner failure is a check failure, not a crash of the check
        return [f"{scenario.where('snippet')}: could not run the snippet: {type(e).__name__}: {e}"]
    return compare(scenario, outcome)


# ---------------------------------------------------------------- the command

def check(directory=None, run: Optional[Callable] = None, verify_snippets: bool = True,
          jobs: int = 2, progress: Optional[Callable] = None) -> tuple:
    """``(scenarios, problems)`` after validating and (optionally) running everything;
    ``progress(done, total)`` after each snippet ran."""
    directory = Path(directory) if directory else bundled_dir()
    scenarios, problems = load_dir(directory)
    lessons, lesson_problems = load_lessons(directory)
    problems += lesson_problems
    ids = {s.id for s in scenarios}
    if lessons and directory.resolve() != bundled_dir().resolve():
        # a teacher's lesson may mix bundled scenarios with the folder's own
        ids |= {s.id for s in load_dir(bundled_dir())[0]}
    for lesson in lessons:
        problems += check_lesson(lesson, ids)
    if verify_snippets and scenarios:
        run = run or default_runner()
        # Each snippet is its own process; two at a time matches the small machines
        # classrooms use and keeps a check of the bundled set to well under a minute.
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for done, found in enumerate(pool.map(lambda s: verify(s, run), scenarios), 1):
                problems += found
                if progress is not None:
                    progress(done, len(scenarios))
    return scenarios, problems


def shadow_warnings(scenarios, directory) -> list:
    """``file:line: warning: ...`` for each scenario whose id a bundled scenario
    also has: a lesson beside it, and ``--scenarios``, use the folder's file, and
    ``--scenario ID`` alone the bundled one (NOTE [a lesson's own folder first]
    in ui/lesson.py). Worth knowing, not wrong: the exit status is not changed."""
    if Path(directory).resolve() == bundled_dir().resolve():
        return []
    bundled = {s.id: s for s in load_dir(bundled_dir())[0]}
    return [f"{s.where('id')}: warning: id '{s.id}' is also the bundled scenario "
            f"{bundled[s.id].where('id')}; a lesson in this folder, and --scenarios, "
            f"use this file instead" for s in scenarios if s.id in bundled]


def not_a_folder(path) -> Optional[str]:
    """Why ``path`` is not a folder of scenarios to check (a phrase for
    ``f"{path}: {reason}"``), or None when it is a folder. A file is called a
    file, and a lesson file is pointed at ``--lesson`` and at the folder
    ``scenarios check`` reads its lessons from: "no such folder" sent a teacher
    looking for a typo (teacher's review)."""
    p = Path(path)
    if p.is_dir():
        return None
    if not p.exists():
        return "no such folder"
    if p.suffix.lower() != ".toml":
        return "is a file, not a folder of scenarios"
    try:
        data, _ = _read_toml(p)
    except ScenarioError:
        data = {}
    if not looks_like_lesson(data):
        return (f"is a file, not a folder: check the folder it is in "
                f"('graphscope scenarios check {p.parent}')")
    # `scenarios check DIR` reads the lessons in DIR/lessons/
    check = (f", or check it with its scenarios ('graphscope scenarios check {p.parent.parent}')"
             if p.parent.name == "lessons" else "")
    return f"is a lesson file, not a folder: open it with 'graphscope --lesson {p}'{check}"


def _no_scenario_files(directory: Path) -> str:
    """The line for a folder with no scenario file directly in it (an empty
    folder said "0 scenario file(s)... 0 problem(s)" and passed)."""
    subs = sorted({f.parent.relative_to(directory) for f in directory.glob("*/**/*.toml")
                   if f.is_file()})
    msg = f"{directory}: no scenario files in this folder (a scenario is a .toml file directly in it)"
    others = [d for d in subs if d.parts[0] != "lessons"]
    if others:
        msg += (f"; sub-folders with .toml files: {', '.join(map(str, others))} (check one with "
                f"'graphscope scenarios check {directory / others[0]}')")
    elif subs:
        msg += "; only its lessons/ sub-folder has .toml files"
    return msg


def check_main(directory=None, *, run_snippets: bool = True, plain: bool = False,
               jobs: int = 2, out=None) -> int:
    """``graphscope scenarios check [DIR]``: print ``file:line: problem`` lines, then
    warnings, and a summary; 0 when everything is sound (warnings or not), 1 otherwise
    (a folder with no scenario file in it included)."""
    out = out or sys.stdout
    directory = Path(directory) if directory else bundled_dir()
    why = not_a_folder(directory)
    if why:
        print(f"{directory}: {why}", file=out)
        return 1
    runner = run_plain if plain else None
    progress = None
    if sys.stderr.isatty():
        # a folder of slow snippets printed nothing for a minute (teacher review); on
        # a terminal only, so a log or a test reads the lines it always did
        def progress(done, total):
            print(f"\rran {done} of {total} snippets", end="\n" if done == total else "",
                  file=sys.stderr, flush=True)
    scenarios, problems = check(directory, run=runner, verify_snippets=run_snippets, jobs=jobs,
                                progress=progress)
    warnings = shadow_warnings(scenarios, directory)
    for p in problems + warnings:
        print(p, file=out)
    files = len(_scenario_files(directory))
    if not files:
        print(_no_scenario_files(directory), file=out)
        return 1
    verb = "checked and ran" if run_snippets else "checked"
    warned = f", {len(warnings)} warning(s)" if warnings else ""
    print(f"{verb} {files} scenario file(s) in {directory}: {len(scenarios)} loaded, "
          f"{len(problems)} problem(s){warned}", file=out)
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="graphscope scenarios check",
                                 description="Validate scenario files and run their snippets.")
    ap.add_argument("dir", nargs="?", help="folder of scenario files (default: the bundled ones)")
    ap.add_argument("--no-run", action="store_true", help="check the files only, run nothing")
    ap.add_argument("--plain", action="store_true", help="run snippets with plain python, not the worker")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="snippets run at once (default 2)")
    a = ap.parse_args(argv)
    return check_main(a.dir, run_snippets=not a.no_run, plain=a.plain, jobs=a.jobs)


if __name__ == "__main__":
    raise SystemExit(main())
