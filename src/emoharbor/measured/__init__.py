"""Records of what was measured of the embedded model's simulated user (``measurements``): package data."""
