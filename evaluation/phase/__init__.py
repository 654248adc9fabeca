"""A phase of grand-challenge.org as an organizer sets it up: its socket names from the
platform's phase pack (pack.py), and the command that prints or writes its leaderboard columns
(declared in evaluation/declarations/columns.py) and sockets (`python -m evaluation.phase`,
command.py)."""
