"""The README's and the quick-start page's Python examples run as written, in order.

The front door must not rot: the README's example, and every Python block of
``docs/user_guide/quickstarts.md`` (moved there from the README), run in one
namespace each, later blocks using names from earlier ones as a reader would.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"README.md": 1, "docs/user_guide/quickstarts.md": 5}


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
