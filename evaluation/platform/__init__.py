"""The grand-challenge.org evaluation contract, in parts, and nothing about any challenge
(docs/grand-challenge.md): where things are (locations.py), predictions.json (predictions.py),
a case of a submission (cases.py), and metrics.json and the charts written back (outputs.py)."""
