import sys

from evaluation.launch import evaluation

sys.exit(evaluation())
