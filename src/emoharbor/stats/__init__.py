"""Statistics used by the reports: bootstrap intervals and friends."""
