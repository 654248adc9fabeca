"""Real files for the label-image kinds' tests (lesions, instances): images with their grid, and a
submission laid out as the platform mounts it (predictions.json, one folder per job)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.platform import synthetic


def write_image(path: Path, array: np.ndarray, spacing=None) -> Path:
    """`array` (numpy order) as a compressed .mha with `spacing` (SimpleITK's x, y, z order)."""
    import SimpleITK as sitk

    path.parent.mkdir(parents=True, exist_ok=True)
    image = sitk.GetImageFromArray(array)
    if spacing is not None:
        image.SetSpacing(tuple(float(s) for s in spacing))
    sitk.WriteImage(image, str(path), True)
    return path


def write_submission(input_dir: Path, outputs: dict[str, dict[str, tuple[np.ndarray, tuple | None] | dict | list]]
                     ) -> None:
    """One job per case: {case id: {output socket: (array, spacing) for an Image output, or a
    dict or list for a JSON output the platform keeps as a file}}."""
    rng = np.random.default_rng(0)
    jobs = []
    for case_id, images in sorted(outputs.items()):
        pk = synthetic.job_pk(rng)
        written = []
        for number, (slug, content) in enumerate(images.items()):
            if isinstance(content, (dict, list)):
                synthetic.write_output(input_dir, pk, f"{slug}.json", content)
                written.append(synthetic.file_output(slug, f"{slug}.json"))
                continue
            array, spacing = content
            name = f"{case_id}-{number}.mha"
            write_image(input_dir / pk / "output" / "images" / slug / name, array, spacing)
            written.append({"pk": 0, "file": None, "value": None, "image": {"pk": f"image-{pk}-{number}", "name": name},
                            "socket": synthetic.socket(slug, "Segmentation", "Image", f"images/{slug}")})
        jobs.append(synthetic.job(pk, [synthetic.image_input("image", f"{case_id}.mha", "images/image")], written))
    synthetic.write_predictions(input_dir, jobs)


def blobs(rng: np.random.Generator, shape: tuple[int, ...], count: int, largest: float = 4.0) -> np.ndarray:
    """A mask of `count` random ellipsoids (or ellipses) of radii 1 to `largest` voxels."""
    mask = np.zeros(shape, dtype=bool)
    grid = np.ogrid[tuple(slice(0, n) for n in shape)]
    for _ in range(count):
        centre = rng.uniform(0, shape)
        radii = rng.uniform(1.0, largest, len(shape))
        mask |= sum(((axis - c) / r) ** 2 for axis, c, r in zip(grid, centre, radii, strict=True)) <= 1
    return mask
