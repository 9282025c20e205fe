"""Private preprocessing: scalers whose statistics are released under the guarantee."""

from skdp.preprocessing._finite_output import FiniteOutput
from skdp.preprocessing._scaler import DPStandardScaler, check_bounds, gaussian_clipped_variance

__all__ = ["DPStandardScaler", "FiniteOutput", "check_bounds", "gaussian_clipped_variance"]
