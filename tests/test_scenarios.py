"""Scenario files: the bundled set is sound and faithful to the problem set, and
malformed files give the documented ``file:line: message`` problems without
stopping the others. Snippets here are tiny and torch-free, so running them is
cheap; the bundled snippets themselves are run in test_scenarios_run.py."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphscope import scenarios as S

REPO = Path(__file__).resolve().parent.parent
PROBLEM_SET = REPO.parent / "shared" / "seed" / "problem-set.txt"

GOOD = '''\
id = "{id}"
title = "A title"
category = "predict_output"
difficulty = "easy"
question = "What is printed?"
options = [
  {{ key = "A", text = "hi" }},
  {{ key = "B", text = "bye" }},
]
answer = "A"
hint = "Read it."
explanation = "It prints hi."
mistakes = ["Reading too fast"]
snippet = \'\'\'
print("hi")
\'\'\'
expect = {{ stdout = "hi\\n" }}
'''


def write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.write_text(text, encoding="utf-8")
    return p


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# ---------------------------------------------------------------- bundled set

@pytest.fixture(scope="module")
def bundled():
    scenarios, problems = S.load_dir(S.bundled_dir())
    assert problems == []
    return {s.id: s for s in scenarios}


def test_bundled_dir_is_the_repository_folder():
    assert S.bundled_dir().resolve() == (REPO / "scenarios").resolve()


def test_every_bundled_file_loads(bundled):
    files = sorted((REPO / "scenarios").glob("*.toml"))
    assert len(bundled) == len(files) >= 31  # problem set + welcome + at least 20 more
    for s in bundled.values():
        assert s.path.name == f"{s.id}.toml"
        assert len(s.options) == 4 and s.option(s.answer) is not None
        assert s.mistakes or s.source and "challenge" in s.source  # the set's challenges list none
        assert len(s.snippet.strip().splitlines()) <= 22, s.id


def test_welcome_exists_and_builds_a_graph_with_a_no_grad_region(bundled):
    w = bundled["welcome"]
    assert "torch.no_grad()" in w.snippet and ".backward()" in w.snippet
    assert S.find("welcome").id == "welcome"
    assert S.find("no-such-scenario") is None


def test_categories_cover_the_problem_set_kinds(bundled):
    assert {s.category for s in bundled.values()} == set(S.CATEGORIES)


def test_problem_set_is_complete(bundled):
    ps = [s for s in bundled.values() if "problem-set" in s.tags]
    assert sorted(s.source for s in ps) == sorted(
        [f"problem-set.txt, challenge {i}" for i in range(1, 6)]
        + [f"problem-set.txt, practice {i}" for i in range(1, 6)])
    assert all(s.category == "practice" for s in ps if "practice" in s.source)


def test_known_disagreements_with_current_pytorch_are_noted(bundled):
    p2, p4 = bundled["practice-2-requires-grad"], bundled["practice-4-missing-requires-grad"]
    assert p2.answer == "D" and "floating point and complex" in p2.note
    assert p2.expect.error_type == "RuntimeError"
    assert p2.option("D").text in p2.snippet  # runs option D exactly as written
    assert p4.answer == "A" and "print(x.grad) never runs" in p4.note
    assert p4.expect.error_type == "RuntimeError" and p4.expect.stdout == ""


@pytest.mark.skipif(not PROBLEM_SET.exists(), reason="problem set not on this machine")
def test_problem_set_text_is_kept_faithfully(bundled):
    raw = PROBLEM_SET.read_text(encoding="utf-8")
    # The set indents solution steps; compare on words, not on layout.
    norm = lambda t: re.sub(r"\s+", " ", t).strip()  # noqa: E731
    src = norm(raw)
    for s in bundled.values():
        if "problem-set" not in s.tags:
            continue
        pieces = [s.question, s.hint, *[o.text for o in s.options], *s.mistakes]
        if s.category != "practice":
            pieces.append(s.title)
        for para in s.explanation.split("\n"):
            if para.strip():
                pieces.append(para)
        for piece in pieces:
            assert norm(piece) in src, f"{s.id}: not in the problem set: {piece!r}"
        code = [ln for ln in s.snippet.strip().splitlines()]
        if s.id in ("challenge-2-predict-branch", "challenge-5-debug-no-grad",
                    "practice-3-branch-gradient", "practice-4-missing-requires-grad"):
            assert "\n".join(code) in raw, f"{s.id}: snippet differs from the problem set's code"


def test_lessons_cover_problem_set_and_every_scenario(bundled):
    lessons, problems = S.load_lessons(S.bundled_dir())
    assert problems == []
    by = {l.id: l for l in lessons}
    ps = by["problem-set"]
    assert len(ps.scenario_ids) == 10
    assert all(bundled[i].source for i in ps.scenario_ids)
    course = by["autograd-course"]
    assert sorted(course.scenario_ids) == sorted(bundled)
    assert course.scenario_ids[0] == "welcome"
    for lesson in lessons:
        assert S.check_lesson(lesson, set(bundled)) == []


def test_focus_names_a_definition_in_the_snippet(bundled):
    for s in bundled.values():
        if s.focus:
            assert re.search(rf"(def|class) {s.focus}\b|^{s.focus}\s*=|\b{s.focus}, \w+ =",
                             s.snippet, re.M), s.id


def test_static_scenarios_cover_branch_loop_and_rnn(bundled):
    static = {s.id for s in bundled.values() if "static-graph" in s.tags}
    assert {"static-jit-trace-branch", "static-fx-branch", "static-jit-trace-loop",
            "static-jit-trace-rnn", "static-fx-rnn"} <= static


def test_readme_example_is_a_valid_scenario_that_holds(tmp_path):
    readme = (REPO / "scenarios" / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    p = write(tmp_path, "double-backward.toml", example)
    s = S.load_file(p)
    assert s.id == "double-backward" and s.answer == "B"
    assert S.verify(s, S.run_plain) == []


# ---------------------------------------------------------------- malformed files

def test_bad_toml_reports_the_parser_line(tmp_path):
    text = GOOD.format(id="broken").replace('answer = "A"', 'answer = "A')
    p = write(tmp_path, "broken.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    [msg] = e.value.problems
    assert msg.startswith(f"{p}:{line_of(text, 'answer =')}: bad TOML: ")


def test_a_scenario_saved_with_a_byte_order_mark_loads(tmp_path):
    """Windows Notepad starts a UTF-8 file with a BOM; tomllib called it an
    'Invalid statement' on line 1."""
    p = tmp_path / "bom.toml"
    p.write_bytes(b"\xef\xbb\xbf" + GOOD.format(id="bom").encode("utf-8"))
    assert S.load_file(p).id == "bom"


def test_missing_fields_are_each_named(tmp_path):
    text = "\n".join(ln for ln in GOOD.format(id="m").splitlines()
                     if not ln.startswith(("hint", "explanation")))
    p = write(tmp_path, "m.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    assert e.value.problems == [f"{p}:1: missing field 'hint'", f"{p}:1: missing field 'explanation'"]


def test_wrong_answer_key_unknown_category_and_typo_point_at_their_lines(tmp_path):
    text = (GOOD.format(id="w").replace('answer = "A"', 'answer = "E"')
            .replace('category = "predict_output"', 'category = "quiz"')
            .replace('mistakes =', 'mistake ='))
    p = write(tmp_path, "w.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    probs = e.value.problems
    assert f"{p}:{line_of(text, 'answer =')}: answer 'E' is not among the options (A, B)" in probs
    assert any(m.startswith(f"{p}:{line_of(text, 'category =')}: unknown category 'quiz'") for m in probs)
    assert any(m.startswith(f"{p}:{line_of(text, 'mistake =')}: unknown field 'mistake'") for m in probs)


@pytest.mark.parametrize("expect, message", [
    ('{ stderr = "x" }', "unknown key 'expect.stderr'"),
    ('{ error_message = "x" }', "'expect.error_message' needs 'expect.error_type'"),
    ('{ status = "fine" }', "unknown status 'fine'"),
    ('"hi"', "'expect' must be a table"),
])
def test_broken_expect_tables(tmp_path, expect, message):
    text = GOOD.format(id="e").replace('expect = { stdout = "hi\\n" }', f"expect = {expect}")
    p = write(tmp_path, "e.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    assert any(m.startswith(f"{p}:{line_of(text, 'expect =')}: {message}") for m in e.value.problems), \
        e.value.problems


def test_duplicate_options_and_focus_not_in_snippet(tmp_path):
    text = (GOOD.format(id="d").replace('key = "B"', 'key = "A"')
            .replace('hint = "Read it."', 'hint = "Read it."\nfocus = "model"'))
    p = write(tmp_path, "d.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    assert f"{p}:{line_of(text, 'options =')}: option key 'A' appears twice" in e.value.problems
    assert f"{p}:{line_of(text, 'focus =')}: focus 'model' does not occur in the snippet" in e.value.problems


def test_option_keys_that_differ_only_in_case_are_one_key(tmp_path):
    """The quiz shows keys in capitals: "a" and "A" were two "A" buttons, both
    marked right (robustness review)."""
    text = GOOD.format(id="c").replace('key = "B"', 'key = "a"')
    p = write(tmp_path, "c.toml", text)
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(p)
    assert f"{p}:{line_of(text, 'options =')}: option key 'a' appears twice" in e.value.problems


def test_a_folder_given_as_a_scenario_file_is_called_what_it_is_not(tmp_path):
    d = tmp_path / "lesson.toml"
    d.mkdir()
    with pytest.raises(S.ScenarioError) as e:
        S.load_lesson(d)
    assert any("is a folder, not a TOML file" in m for m in e.value.problems), e.value.problems


def test_one_broken_file_does_not_stop_the_rest(tmp_path):
    write(tmp_path, "a.toml", GOOD.format(id="a"))
    write(tmp_path, "b.toml", "id = \n")
    write(tmp_path, "c.toml", GOOD.format(id="c"))
    write(tmp_path, "d.toml", GOOD.format(id="a"))  # duplicate of a.toml
    write(tmp_path, "notes.txt", "not a scenario")
    scenarios, problems = S.load_dir(tmp_path)
    assert [s.id for s in scenarios] == ["a", "c"]
    assert problems[0].startswith(f"{tmp_path / 'b.toml'}:1: bad TOML")
    assert problems[1] == f"{tmp_path / 'd.toml'}:1: duplicate id 'a' (also in {tmp_path / 'a.toml'}:1)"
    assert len(problems) == 2


def test_snippet_whose_output_changed_is_reported_at_the_expect_line(tmp_path):
    text = GOOD.format(id="changed").replace('expect = { stdout = "hi\\n" }',
                                             'expect = { stdout = "bye\\n" }')
    p = write(tmp_path, "changed.toml", text)
    s = S.load_file(p)
    [msg] = S.verify(s, S.run_plain)
    assert msg.startswith(f"{p}:{line_of(text, 'expect =')}: snippet no longer behaves as claimed: stdout differs")
    assert "'bye\\n'" in msg and "'hi\\n'" in msg


def test_expected_error_that_no_longer_happens(tmp_path):
    text = GOOD.format(id="err").replace(
        'expect = { stdout = "hi\\n" }',
        'expect = { error_type = "ZeroDivisionError", error_message = "division by zero" }')
    s = S.load_file(write(tmp_path, "err.toml", text))
    msgs = S.verify(s, S.run_plain)
    assert any("expected status 'error', got 'ok'" in m for m in msgs)
    assert any("expected ZeroDivisionError, got no exception" in m for m in msgs)


def test_plain_run_reads_exceptions_and_exits():
    o = S.run_plain("print('a')\nraise ValueError('bad\\nvalue')\n", "x.py")
    assert (o.status, o.stdout, o.error_type, o.error_message) == ("error", "a\n", "ValueError", "bad\nvalue")
    o = S.run_plain("import sys\nsys.exit(3)\n", "x.py")
    assert o.status == "exit" and o.error_type is None
    o = S.run_plain("class E(Exception): pass\nraise E('x')\n", "x.py")
    assert o.error_type == "E"  # plain python prints "__main__.E"


def test_lesson_problems(tmp_path):
    (tmp_path / "lessons").mkdir()
    write(tmp_path, "a.toml", GOOD.format(id="a"))
    text = 'title = "L"\nscenarios = [\n  "a",\n  "zzz",\n]\n'
    write(tmp_path / "lessons", "l.toml", text)
    write(tmp_path / "lessons", "bad.toml", 'title = "no list"\n')
    os.mkfifo(tmp_path / "lessons" / "pipe.toml")    # reading it blocked for ever
    lessons, problems = S.load_lessons(tmp_path)
    assert [l.id for l in lessons] == ["l"]
    assert problems == [f"{tmp_path / 'lessons' / 'bad.toml'}:1: missing field 'scenarios'",
                        f"{tmp_path / 'lessons' / 'pipe.toml'}:1: cannot read file: "
                        "not a regular file (a pipe or a device)"]
    assert S.check_lesson(lessons[0], {"a"}) == [
        f"{tmp_path / 'lessons' / 'l.toml'}:2: lesson names unknown scenario 'zzz'"]


def test_check_main_prints_every_problem_and_exits_non_zero(tmp_path, capsys):
    write(tmp_path, "good.toml", GOOD.format(id="good"))
    write(tmp_path, "changed.toml", GOOD.format(id="changed").replace('"hi\\n"', '"bye\\n"'))
    write(tmp_path, "broken.toml", "title = [\n")
    assert S.check_main(tmp_path, plain=True) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(ln.startswith(f"{tmp_path / 'broken.toml'}:") and "bad TOML" in ln for ln in out)
    assert any(ln.startswith(f"{tmp_path / 'changed.toml'}:") and "no longer behaves" in ln for ln in out)
    assert out[-1] == f"checked and ran 3 scenario file(s) in {tmp_path}: 2 loaded, 2 problem(s)"


def test_check_main_passes_a_sound_folder_through_the_worker(tmp_path, capsys):
    write(tmp_path, "good.toml", GOOD.format(id="good"))
    assert S.check_main(tmp_path) == 0  # default runner: GraphScope's worker
    assert capsys.readouterr().out.endswith("1 loaded, 0 problem(s)\n")


def test_cli_scenarios_check(tmp_path):
    write(tmp_path, "bad.toml", GOOD.format(id="bad").replace('answer = "A"', 'answer = "Z"'))
    p = subprocess.run([sys.executable, "-m", "graphscope", "scenarios", "check", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert f"{tmp_path / 'bad.toml'}:" in p.stdout and "answer 'Z' is not among the options" in p.stdout


def test_stderr_contains_checks_warnings(tmp_path):
    text = GOOD.format(id="warns").replace(
        'print("hi")', 'import warnings\nwarnings.warn("careful now")\nprint("hi")').replace(
        'expect = { stdout = "hi\\n" }',
        'expect = { stdout = "hi\\n", stderr_contains = ["UserWarning: careful now", "louder"] }')
    p = write(tmp_path, "warns.toml", text)
    s = S.load_file(p)
    assert s.expect.stderr_contains == ("UserWarning: careful now", "louder")
    [msg] = S.verify(s, S.run_plain)
    assert msg.startswith(f"{p}:{line_of(text, 'expect =')}: snippet no longer behaves as claimed: "
                          "stderr lacks 'louder'")


def test_teachers_lesson_may_name_bundled_scenarios(tmp_path, capsys):
    write(tmp_path, "mine.toml", GOOD.format(id="mine"))
    (tmp_path / "lessons").mkdir()
    write(tmp_path / "lessons", "week3.toml",
          'title = "Week 3"\nscenarios = ["welcome", "mine", "nowhere"]\n')
    assert S.check_main(tmp_path, run_snippets=False) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:-1] == [f"{tmp_path / 'lessons' / 'week3.toml'}:2: lesson names unknown scenario 'nowhere'"]
    assert out[-1] == f"checked 1 scenario file(s) in {tmp_path}: 1 loaded, 1 problem(s)"


def test_an_id_that_shadows_a_bundled_one_is_a_warning_naming_both_files(tmp_path, capsys):
    """A lesson in the folder shows this file, `--scenario detach` alone the
    bundled one (NOTE [a lesson's own folder first]): worth a warning, not a failure."""
    mine = write(tmp_path, "j-shadow.toml", GOOD.format(id="detach"))
    write(tmp_path, "mine.toml", GOOD.format(id="mine"))
    assert S.check_main(tmp_path, run_snippets=False) == 0
    out = capsys.readouterr().out.splitlines()
    [warning] = [ln for ln in out if ": warning: " in ln]
    assert warning.startswith(f"{mine}:1: warning: id 'detach' is also the bundled scenario "
                              f"{S.bundled_dir() / 'detach.toml'}:1")
    assert out[-1] == (f"checked 2 scenario file(s) in {tmp_path}: 2 loaded, 0 problem(s), "
                       "1 warning(s)")
    assert S.shadow_warnings(S.load_dir(S.bundled_dir())[0], S.bundled_dir()) == []


def test_a_file_that_is_not_utf8_is_told_to_be_saved_as_utf8(tmp_path):
    """Python's "'utf-8' codec can't decode byte 0xe9 in position 12" was the
    message; scenario and lesson files get the same plain advice, at the line
    of the first byte that is not UTF-8."""
    (tmp_path / "lessons").mkdir()
    scenario = tmp_path / "cafe.toml"
    scenario.write_bytes(GOOD.format(id="cafe").replace('"A title"', '"Caf\xe9"').encode("latin-1"))
    lesson = tmp_path / "lessons" / "latin1.toml"
    lesson.write_bytes(b'title = "Caf\xe9 lesson"\nscenarios = ["cafe"]\n')
    advice = "the file is not UTF-8 text: save it as UTF-8"
    assert S.load_dir(tmp_path) == ([], [f"{scenario}:2: {advice}"])
    assert S.load_lessons(tmp_path) == ([], [f"{lesson}:1: {advice}"])


def test_a_folder_with_no_scenario_file_in_it_fails_and_says_so(tmp_path, capsys):
    """It said "checked 0 scenario file(s)... 0 problem(s)" and passed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert S.check_main(empty, run_snippets=False) == 1
    assert capsys.readouterr().out == (f"{empty}: no scenario files in this folder "
                                       "(a scenario is a .toml file directly in it)\n")
    nested = tmp_path / "nested"
    (nested / "week1").mkdir(parents=True)
    write(nested / "week1", "a.toml", GOOD.format(id="a"))
    assert S.check_main(nested, run_snippets=False) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{nested}: no scenario files in this folder")
    assert line.endswith(f"sub-folders with .toml files: week1 (check one with "
                         f"'graphscope scenarios check {nested / 'week1'}')")


def test_a_lesson_among_scenarios_is_one_line_saying_what_it_is(tmp_path):
    """`--scenarios DIR/lessons` gave eleven lines of missing and unknown fields."""
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    week3 = write(lessons, "week3.toml", 'title = "Week 3"\nscenarios = ["a"]\n')
    assert S.load_dir(lessons) == ([], [
        f"{week3}:1: a lesson file, not a scenario: open it with --lesson (Scenarios \u203a "
        f"Open lesson\u2026), and {tmp_path}, the folder above lessons/, with --scenarios"])


def test_a_scenario_opened_as_a_lesson_is_one_line_saying_what_it_is(tmp_path):
    """`--lesson scenarios/detach.toml` said "missing field 'scenarios' (and 13
    more problems)" (UX review)."""
    one = write(tmp_path, "one.toml", GOOD.format(id="one"))
    with pytest.raises(S.ScenarioError) as e:
        S.load_lesson(one)
    assert e.value.problems == [
        f"{one}:1: a scenario file, not a lesson: open it with --scenario one (with "
        f"--scenarios {tmp_path} if it is not a bundled one), or list its id in a "
        "lesson's scenarios"]


def test_an_empty_file_is_called_empty(tmp_path):
    """Eleven missing-field lines for a scenario, two for a lesson."""
    (tmp_path / "lessons").mkdir()
    empty = write(tmp_path, "empty.toml", "\n  \n")
    comments = write(tmp_path, "comments.toml", "# to do: write the question\n")
    lesson = write(tmp_path / "lessons", "l.toml", "")
    assert S.load_dir(tmp_path) == ([], [
        f"{comments}:1: the file holds only comments, no fields",
        f"{empty}:1: the file is empty"])
    assert S.load_lessons(tmp_path) == ([], [f"{lesson}:1: the file is empty"])


def test_problem_lines_skip_snippet_lines_and_find_dotted_keys_and_unclosed_strings(tmp_path):
    """A snippet line "[int(v) ** 2 for v in xs]" was read as a table header and the
    next problem went to line 1; so did a dotted ``expect.stdout = ...`` and a
    snippet whose closing quotes were forgotten (teacher review)."""
    q3 = "'" * 3
    text = (f'snippet = {q3}\nys = (\n  [int(v) ** 2 for v in xs]\n)\n{q3}\n'
            'expect = { stdout = "x" }\n')
    lines = S._key_lines(text)
    assert lines["expect"] == 6 and "int(v) ** 2 for v in xs" not in lines
    assert S._key_lines('id = "a"\nexpect.stdout = "1\\n"\n')["expect"] == 2
    bad = tmp_path / "unclosed.toml"
    bad.write_text(f'id = "u"\ntitle = "t"\nsnippet = {q3}\nimport torch\nprint(1)\n')
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(bad)
    assert f"{bad}:3: bad TOML: a multi-line string begins here" in str(e.value.problems[0])


def test_check_reports_progress_after_each_snippet(tmp_path):
    """A folder of slow snippets printed nothing until all had run (teacher review)."""
    d = tmp_path / "two"
    d.mkdir()
    for sid in ("a", "b"):
        src = (S.bundled_dir() / "welcome.toml").read_text().replace('id = "welcome"', f'id = "{sid}"')
        (d / f"{sid}.toml").write_text(src)
    seen = []
    S.check(d, run=lambda src, name: S.run_plain(src, name), jobs=1,
            progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


def test_problem_lines_are_not_moved_by_triple_quotes_in_comments_or_one_line_strings(tmp_path):
    """A comment mentioning triple quotes, or a one-line string holding them, was
    taken as a snippet's opening and every later key went to line 1 (code review);
    a file with a byte-order mark named the wrong line for a bad byte."""
    q3 = '"' * 3
    text = (f'# the snippet below is in {q3} quotes\nid = "a"\n'
            f"question = 'Is {q3} a docstring?'\ndifficulty = \"x\"\n")
    lines = S._key_lines(text)
    assert lines["id"] == 2 and lines["difficulty"] == 4
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbfid = 'a'\n\xe9 = 1\n")
    with pytest.raises(S.ScenarioError) as e:
        S.load_file(bom)
    assert f"{bom}:2: the file is not UTF-8" in e.value.problems[0]


def test_a_multi_line_string_opened_inside_an_array_is_skipped_too():
    """``options = [ { key = "A", text = \"\"\"...`` opened a string on a line
    with no key of its own, and a line inside it was read as a key (a second code
    review)."""
    q3 = '"' * 3
    text = (f'options = [\n  {{ key = "A", text = {q3}y = x * 2\nanswer = "A" would be wrong\n'
            f'{q3} }},\n]\nanswer = "C"\n')
    assert S._key_lines(text)["answer"] == 6
