"""Validating the user-judge against real help-seekers: real ESConv conversations replayed through the
simulated user, rated by it and by a third-party judge, compared with the seekers' own survey ratings."""
