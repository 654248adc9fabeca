"""Pure metric functions: arrays in, numbers out, validation at the top, no I/O.

A heavy library (scipy, cc3d, OpenCV...) is imported inside the function that uses it, never at
the top of a module: a run pays only for what its challenge uses (evaluation/challenges/__init__.py).
"""
