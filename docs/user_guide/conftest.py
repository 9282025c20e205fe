"""The user-guide pages' code runs as doctests, with the print options their outputs show.

``pytest`` collects the ``>>>`` examples of the Markdown pages here
(``--doctest-glob='*.md'`` in ``pyproject.toml``); the outputs on the pages
are real, printed with 4 significant digits (numpy) and 4 decimals (pandas).
The options are restored after each page, so no other test sees them.
"""

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(autouse=True)
def _page_print_options():
    with np.printoptions(precision=4, suppress=True), \
            pd.option_context("display.precision", 4, "display.width", 100):
        yield
