"""Command groups of the CLI; each module lists its click commands in ``COMMANDS``."""
