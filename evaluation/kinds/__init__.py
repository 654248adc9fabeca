"""The kinds of challenge the scaffold writes (python -m evaluation.new NAME --template KIND):
each module is the reading and scoring of one kind, configured by a challenge folder's
declaration (its labels, metrics, variants, settings). declared.py is what every kind shares:
the ranked values, declared once, and everything derived from them."""
