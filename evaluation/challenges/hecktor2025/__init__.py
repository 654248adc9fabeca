"""HECKTOR 2025 (docs/challenges/hecktor2025.md): task 1 segments GTVp and GTVn (task1.py), task 2
predicts recurrence-free survival and task 3 HPV status (base.py, with the patient ids, sockets
and settings the three tasks share)."""

from evaluation.challenges.hecktor2025.base import HecktorTask2, HecktorTask3
from evaluation.challenges.hecktor2025.task1 import HecktorTask1

__all__ = ["HecktorTask1", "HecktorTask2", "HecktorTask3"]

# The packages of requirements.txt each task's image installs (their pins stay there), numpy's
# dependencies included, read from this file's text before anything is installed
# (evaluation/image_requirements.py). Task 1: NIfTI / MHA masks (SimpleITK), 26-connected lesions
# (cc3d), the 'hungarian' lesion matching (scipy); tasks 2 and 3: CSV and JSON values, numpy alone.
# tests/test_image_requirements.py scores each bundled example with every other package blocked.
RUNTIME_PACKAGES = {
    "hecktor2025-task1": ("numpy", "SimpleITK", "connected-components-3d", "scipy"),
    "hecktor2025-task2": ("numpy",),
    "hecktor2025-task3": ("numpy",),
}
