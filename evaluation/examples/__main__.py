import sys

from evaluation.launch import examples

sys.exit(examples())
