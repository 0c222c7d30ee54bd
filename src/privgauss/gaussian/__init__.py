"""Single-Gaussian estimation algorithms, one module per algorithm."""
