"""Internal helpers shared by the estimators."""
