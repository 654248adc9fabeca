"""A phase of grand-challenge.org as an organizer sets it up: its leaderboard columns
(columns.py), its socket names from the platform's phase pack (pack.py), and the command that
prints or writes them (`python -m evaluation.phase`, command.py)."""
