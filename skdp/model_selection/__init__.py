"""Private model selection: hyper-parameter searches whose scores and choice are inside the budget."""

from skdp.model_selection._search import DPGridSearchCV, DPRandomizedSearchCV

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV"]
