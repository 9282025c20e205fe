"""The README's Python example runs as written.

The front door must not rot: the README's blocks run in one namespace, in
order. (The user guide's pages, ``docs/user_guide/*.md``, run as doctests
with their printed output: ``--doctest-glob`` in ``pyproject.toml``.)
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"README.md": 1}


@pytest.mark.parametrize("page", list(PAGES))
def test_python_blocks_run_in_order(page):
    path = ROOT / page
    namespace = {"__name__": "readme"}
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert len(blocks) >= PAGES[page]
    for code in blocks:
        exec(compile(code, str(path), "exec"), namespace)


def test_readme_fits_on_a_few_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
