"""Whole scripts that score the same input files the usual way, run as commands by
benchmarks/whole_command.py: each reads a ground-truth folder and a submission folder and prints
one JSON object on stdout. Written independently of the evaluation package (none imports it)."""

import re


def patient_of(image_name):
    """A HECKTOR patient id from the CT input's image name (extension and modality suffix off)."""
    stem = re.sub(r"(\.nii\.gz|\.nii|\.mha|\.nrrd)$", "", image_name)
    for suffix in ("__CT", "_CT", "_0000"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem
