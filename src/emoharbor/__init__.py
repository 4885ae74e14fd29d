"""emoharbor: evaluate and improve personalised emotional support."""

__version__ = "0.1.0"
