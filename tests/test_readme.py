"""The README's Python examples run as written, in order (the front door must not rot)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run_in_order():
    # Later blocks may use names from earlier ones, as a reader would.
    namespace = {"__name__": "readme"}
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 5
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
