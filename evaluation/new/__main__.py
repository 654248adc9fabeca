import sys

from evaluation.launch import new

sys.exit(new())
