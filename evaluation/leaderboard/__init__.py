"""The final ranking across submissions (python -m evaluation.leaderboard; docs/final-ranking.md).

Not part of the evaluation image: its libraries (dask, distributed, altair, vl-convert) are
pinned in requirements-leaderboard.txt.
"""
