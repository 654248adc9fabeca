import sys

from evaluation.launch import leaderboard

sys.exit(leaderboard())
