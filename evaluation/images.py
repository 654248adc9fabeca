"""Reading images (NIfTI, MHA, NRRD, TIFF, PNG) with SimpleITK, keeping their geometry.

A reading failure is the submission's fault when the file is the submission's: the caller passes
the error type and the name of the case, so the message says which file of which case is unreadable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import SubmissionError


@dataclass(frozen=True)
class Geometry:
    """Physical placement of a voxel grid, in SimpleITK's (x, y, z) order."""

    size: tuple[int, ...]
    spacing: tuple[float, ...]
    origin: tuple[float, ...]
    direction: tuple[float, ...]

    @property
    def voxel_volume(self) -> float:
        """Volume of one voxel in the spacing's unit cubed (mm³ for medical images)."""
        return float(np.prod(self.spacing))

    def differences(self, other: "Geometry", rtol: float = 1e-4) -> list[str]:
        """The attributes (size, spacing, origin, direction) in which `other` differs from this
        grid beyond a relative tolerance (absolute for values near zero)."""
        found = []
        if self.size != other.size:
            found.append("size")
        for name in ("spacing", "origin", "direction"):
            mine, theirs = np.asarray(getattr(self, name)), np.asarray(getattr(other, name))
            if mine.shape != theirs.shape or not np.allclose(theirs, mine, rtol=rtol, atol=rtol):
                found.append(name)
        return found

    def describe(self) -> str:
        def fmt(values):
            return "(" + ", ".join(f"{v:g}" for v in values) + ")"
        return (f"size {fmt(self.size)}, spacing {fmt(self.spacing)}, origin {fmt(self.origin)}, "
                f"direction {fmt(self.direction)}")


def read_image(path: Path, what: str, error: type[Exception] = SubmissionError) -> tuple[np.ndarray, Geometry]:
    """The voxels (numpy order: z, y, x) and geometry of the image at `path`; `what` names the
    file in the message if it cannot be read (e.g. "Patient CHUM-001, segmentation")."""
    import SimpleITK as sitk  # imported here: challenges without images never pay for it

    try:
        image = sitk.ReadImage(str(path))
    except RuntimeError as exc:
        detail = str(exc).strip().splitlines()
        reason = next((line.strip() for line in reversed(detail) if line.strip()), "unknown format")
        raise error(f"{what}: {Path(path).name} is not a readable image ({reason[:200]}).") from None
    if image.GetNumberOfComponentsPerPixel() != 1:
        raise error(f"{what}: {Path(path).name} has {image.GetNumberOfComponentsPerPixel()} components per voxel; "
                    f"a single-channel label image is expected.")
    geometry = Geometry(tuple(image.GetSize()), tuple(image.GetSpacing()), tuple(image.GetOrigin()),
                        tuple(image.GetDirection()))
    return sitk.GetArrayFromImage(image), geometry
