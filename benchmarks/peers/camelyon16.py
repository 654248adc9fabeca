"""CAMELYON16 the 2016 way (benchmarks/camelyon16_reference.py: the organizers' Evaluation_FROC.py
rewritten plainly: whole-mask distance transform, hole filling, scikit-image labels and
regionprops, a loop per detection), slide AUC by scikit-learn, as a command.

    python -m benchmarks.peers.camelyon16 GROUND_TRUTH_DIR INPUT_DIR

Prints {"slide_auc", "froc_score"}.
"""

import json
import sys
from pathlib import Path

from benchmarks.camelyon16_reference import reference_scores


def main():
    scores = reference_scores(Path(sys.argv[2]), Path(sys.argv[1]))
    print(json.dumps({"slide_auc": scores["slide_auc"], "froc_score": scores["froc_score"]}))


if __name__ == "__main__":
    main()
