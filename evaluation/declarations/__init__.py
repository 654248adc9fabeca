"""What a challenge declares, below the framework and the commands: the phase's leaderboard
columns (columns.py), the rules ranking submissions against each other (ranking_rules.py) and
the result page's charts (charts.py).
A challenge imports these, never a command package (evaluation.phase, evaluation.leaderboard)."""
