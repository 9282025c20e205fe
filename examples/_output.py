"""Where the examples write their figures: $SKDP_EXAMPLES_OUT or the current directory."""

import os
from pathlib import Path


def figure_path(name: str) -> Path:
    out = Path(os.environ.get("SKDP_EXAMPLES_OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    return out / name
