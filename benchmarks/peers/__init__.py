"""Whole scripts that score the same input files the usual way, run as commands by
benchmarks/whole_command.py: each reads a ground-truth folder and a submission folder and prints
one JSON object on stdout. Written independently of the evaluation package (none imports it)."""
