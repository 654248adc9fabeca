"""The one way a challenge reads a submission (and its ground truth).

A submission is written by someone who wants a better score, so every read goes through here:

- `Origin` says where a file comes from, and so whose fault a bad one is: the participant's
  (`SubmissionError`, exit 1) for the submission, the organizer's or the platform's
  (`SetupError`, exit 3) for the ground truth and predictions.json. Call sites never choose.
- `files`: only regular files inside the origin's folder are read (no link out, no pipe, no
  folder, no device), within a size bound checked before reading.
- `json_files`: bounded JSON, duplicate keys refused, integers too long for a float kept as
  `HugeNumber` (never converted), deep nesting refused.
- `values`: one finite number, N finite numbers, and `shown`, the one way a submitted value is
  quoted in a message.
- `tables`: the CSV reader (named columns, a row bound checked before parsing).
- `images`: a label image's header read and checked against the ground truth's geometry before
  any pixel is decoded; a format's own indirection (MHA/MHD ElementDataFile, NRRD detached
  data) refused before SimpleITK sees the file.
- `label_maps`: a label map (2D or 3D) on the ground truth's grid, checked in its header (size,
  spacing, origin, direction within 1e-4, never resampled), then its values against the declared
  labels in one pass; `LabelMap.spacing` is in the array's (z, y, x) order.
- `annotations`: the platform's "Multiple points" and "Multiple 2D bounding boxes" outputs,
  validated as its schema says, their world coordinates turned into voxel indices of a grid.
- `hdf5`: datasets reached by hard links only; external links, virtual datasets and external
  storage refused; shapes checked before reading.

SimpleITK, h5py, tifffile and imagecodecs are imported inside the functions that use them, never
at the top of a module: a run pays only for the formats its challenge reads (the start-up rule of
evaluation/challenges/__init__.py).
"""

from evaluation.reading.files import Origin
from evaluation.reading.values import HugeNumber, finite_number, finite_numbers, shown

__all__ = ["HugeNumber", "Origin", "finite_number", "finite_numbers", "shown"]
