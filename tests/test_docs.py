"""Every ```python block in docs/*.md runs (each file in one namespace); errors point at
the block's real line in the Markdown file."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_snippets_run(path, quiet_gc):
    text = path.read_text()
    namespace: dict = {}
    for match in re.finditer(r"```python\n(.*?)```", text, re.S):
        first_line = text.count("\n", 0, match.start(1))
        code = "\n" * first_line + match.group(1)
        exec(compile(code, str(path), "exec"), namespace)
