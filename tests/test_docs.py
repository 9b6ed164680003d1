"""Every ```python block in docs/*.md runs (each file in one namespace); errors point at
the block's real line in the Markdown file.

A print() call whose line ends in a `# ->` comment states exactly what that print writes,
and the text is checked, doctest-style:

    print(x.shape)                 # -> torch.Size([2, 3])
    print(model)                   # ->
    # Sequential(
    #   (0): ReLU()
    # )

The text after `# -> ` is the output's first line; comment-only lines right below the print
continue it (`# ` removed; a bare `#` is an empty line), up to the first line that is not a
comment. `# ->` alone says the output is those lines only. `...` matches any text, as with
doctest's ELLIPSIS (addresses, timings); nothing else is fuzzy, whitespace included. A print
that runs several times (in a loop) is compared with all it wrote; one that never runs fails.
Every other comment is prose and is not checked.
"""
from __future__ import annotations

import ast
import io
import pathlib
import re
import textwrap
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
MARKER = re.compile(r"#\s*->")          # anything that looks like the marker, well-formed or not
PRINTER = "__docs_print__"


class Expected:
    """One checked print: where it is, the text it must write, and what it wrote."""

    def __init__(self, line: int, want: str):
        self.line, self.want, self.got = line, want, None

    def write(self, text: str) -> None:
        self.got = (self.got or "") + text

    def flush(self) -> None:
        pass


def matches(want: str, got: str) -> bool:
    """Equality, except that each `...` in want stands for any text (doctest's ELLIPSIS)."""
    if "..." not in want:
        return want == got
    first, *middle, last = want.split("...")
    if not got.startswith(first) or not got.endswith(last):
        return False
    pos, end = len(first), len(got) - len(last)
    if end < pos:
        return False
    for piece in middle:
        found = got.find(piece, pos, end)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


def _expectations(code: str, where: str) -> dict[int, Expected]:
    """The `# ->` comments of one block, by Markdown line, with their expected text."""
    lines = code.split("\n")
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type != tokenize.COMMENT or not MARKER.match(tok.string):
            continue
        line = tok.start[0]
        if not tok.line[:tok.start[1]].strip():
            raise SyntaxError(f"{where}:{line}: a `# ->` comment must end the line of the "
                              "print() call whose output it states")
        first = re.fullmatch(r"# ->(?: (.*))?", tok.string.rstrip())
        if first is None:
            raise SyntaxError(f"{where}:{line}: write the expected output as `# -> text`, "
                              f"not {tok.string!r}")
        out = [first.group(1)] if first.group(1) is not None else []
        for below in lines[line:]:             # lines[line] is the line after the comment
            below = below.lstrip()
            if below == "#":
                out.append("")
            elif below.startswith("# "):
                out.append(below[2:])
            elif below.startswith("#"):
                raise SyntaxError(f"{where}:{line}: output lines below a `# ->` start with "
                                  f"'# ', not {below!r}")
            else:
                break
        found[line] = Expected(line, "\n".join(out) + "\n")
    return found


def _instrument(tree: ast.Module, expected: dict[int, Expected], where: str) -> None:
    """Point each checked print() at its Expected: `print(a)` -> `__docs_print__(line)(a)`."""
    prints = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"):
            prints.setdefault(node.end_lineno, []).append(node.value)
    for line in expected:
        calls = prints.get(line, [])
        if len(calls) != 1:
            raise SyntaxError(f"{where}:{line}: a `# ->` comment must end a line that ends "
                              f"exactly one print() call statement (found {len(calls)})")
        call = calls[0]
        if any(k.arg == "file" for k in call.keywords):
            raise SyntaxError(f"{where}:{line}: a checked print() writes to stdout (no file=)")
        printer = ast.Call(ast.Name(PRINTER, ast.Load()), [ast.Constant(line)], [])
        call.func = ast.copy_location(printer, call.func)
    ast.fix_missing_locations(tree)


def check_markdown(text: str, where: str, namespace: dict, filename: str = "") -> list[str]:
    """Run every ```python block of a Markdown text in one namespace; return one message per
    `# ->` print whose output differs, naming `where` and the line. Errors in the code
    propagate, with tracebacks at the Markdown lines of `filename` (default: `where`)."""
    expected: dict[int, Expected] = {}
    namespace[PRINTER] = lambda line: lambda *args, **kwargs: print(
        *args, file=expected[line], **kwargs)
    for match in BLOCK.finditer(text):
        first_line = text.count("\n", 0, match.start(1))
        code = "\n" * first_line + match.group(1)
        block = _expectations(code, where)
        tree = ast.parse(code, filename or where)
        _instrument(tree, block, where)
        expected.update(block)
        exec(compile(tree, filename or where, "exec"), namespace)
    failures = []
    for e in expected.values():
        if e.got is None:
            failures.append(f"{where}:{e.line}: this print() never ran; expected:\n"
                            + textwrap.indent(e.want, "    "))
        elif not matches(e.want, e.got):
            failures.append(f"{where}:{e.line}: print() wrote other text than the `# ->` "
                            "comment says\nexpected:\n" + textwrap.indent(e.want, "    ")
                            + "got:\n" + textwrap.indent(e.got, "    "))
    return failures


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_snippets_run(path, quiet_gc):
    failures = check_markdown(path.read_text(), str(path.relative_to(ROOT)), {}, str(path))
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


# The checker itself: it must be able to fail, and say where and why.

def _doc(code: str) -> str:
    return "Some prose.\n\n```python\n" + textwrap.dedent(code) + "```\n"


def test_checker_passes_and_reports_mismatches():
    ok = _doc("""\
        x = [1, 2]
        print(x)                       # -> [1, 2]
        print("a\\n\\nb")               # ->
        # a
        #
        # b
        for i in range(2):
            print(i, object())         # -> 0 <object object at 0x...>
            # 1 <object object at ...>
        print(len(x))                  # how many: prose, not checked
        """)
    assert check_markdown(ok, "ok.md", {}) == []
    bad = _doc("""\
        print(1)    # -> 2
        print(3)    # -> 3
        """)
    (failure,) = check_markdown(bad, "bad.md", {})
    assert failure == ("bad.md:4: print() wrote other text than the `# ->` comment says\n"
                       "expected:\n    2\ngot:\n    1\n")


def test_checker_is_strict():
    assert matches("a...c\n", "abbc\n") and not matches("a...c\n", "abbd\n")
    assert not matches("ab...ba\n", "aba\n")        # the two ends may not overlap
    assert not matches("True\n", "1\n") and not matches("x \n", "x\n")
    (never,) = check_markdown(_doc("if False:\n    print(1)  # -> 1\n"), "n.md", {})
    assert never.startswith("n.md:5: this print() never ran")
    for misplaced in ("x = 1  # -> 1\n", "# -> 1\nprint(1)\n", "print(1)  #-> 1\n"):
        with pytest.raises(SyntaxError, match=r"m\.md:4: "):
            check_markdown(_doc(misplaced), "m.md", {})
