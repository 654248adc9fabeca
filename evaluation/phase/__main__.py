import sys

from evaluation.launch import phase

sys.exit(phase())
