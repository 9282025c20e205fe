"""Private matrix decompositions."""

from skdp.decomposition._pca import DPPCA

__all__ = ["DPPCA"]
