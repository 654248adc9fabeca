"""Evaluation containers for grand-challenge.org challenges.

`python -m evaluation --list` names the challenges; `evaluation.cli` is the entry point,
`evaluation.grand_challenge` the platform contract, `evaluation.framework` the base class a
challenge subclasses, `evaluation.challenges` one module per challenge.
"""

__version__ = "0.1.0"
