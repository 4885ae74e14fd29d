"""Records of what was measured of the embedded model's simulated user (``report.calibration``): package data."""
