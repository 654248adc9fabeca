"""Hostile masks and label maps are scored through the library calls in bounded time and memory:
each call within 10 s, the whole process (Python, numpy, the inputs and every call) within 1 GiB
of peak resident memory. Each scenario runs in its own process (a real subprocess, so that the
peak is its own), on 200×200×200 voxels (8·10⁶) of 0.98×0.98×3 mm:

- a noise mask of 10⁶ connected components (one voxel every other voxel on each axis) against an
  organ-sized ellipsoid;
- a label map holding all 65,535 labels of uint16 (random) against its shifted copy: every
  label's counts, and five labels' surfaces;
- a mask filling the whole volume against the organ.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECONDS = 10.0
PEAK_BYTES = 1 << 30

PREAMBLE = """
import json, resource, time
import numpy as np
from evaluation.metrics import overlap, surface

SHAPE, SPACING = (200, 200, 200), (0.98, 0.98, 3.0)
grid = np.ogrid[:200, :200, :200]
organ = ((grid[0] - 100) / 60) ** 2 + ((grid[1] - 90) / 50) ** 2 + ((grid[2] - 110) / 40) ** 2 <= 1
seconds = {}

def timed(name, call):
    start = time.perf_counter()
    value = call()
    seconds[name] = time.perf_counter() - start
    return value
"""

SCENARIOS = {
    "noise of a million components": """
noise = np.zeros(SHAPE, dtype=bool)
noise[::2, ::2, ::2] = True
import cc3d
assert cc3d.connected_components(noise, connectivity=6, return_N=True)[1] == 10 ** 6
timed("dice", lambda: overlap.dice(noise, organ))
timed("hd95 voxels", lambda: surface.hausdorff_distance(noise, organ, SPACING, 95))
timed("nsd surfels", lambda: surface.normalized_surface_dice(noise, organ, 2.0, SPACING))
timed("assd surfels", lambda: surface.average_surface_distance(noise, organ, SPACING, boundary="surfels"))
timed("nsd voxels, full connectivity", lambda: surface.normalized_surface_dice(noise, organ, 2.0, SPACING,
                                                                              boundary="voxels", connectivity=3))
""",
    "a label map of 65,535 labels": """
labels = np.random.default_rng(0).integers(0, 65536, SHAPE).astype(np.uint16)
shifted = np.roll(labels, 1, axis=0)
assert len(np.unique(labels)) == 65536
counts = timed("label_overlap_counts, every label", lambda: overlap.label_overlap_counts(
    labels, shifted, np.arange(1, 65536)))
assert counts.prediction_size.sum() == np.count_nonzero(labels) and all(box is not None for box in counts.boxes)
timed("label_surface_distances, five labels", lambda: [d.hausdorff_distance(95) for d in
      surface.label_surface_distances(labels, shifted, [1, 2, 3, 4, 5], SPACING).values()])
timed("label_surface_distances, five labels, surfels", lambda: [d.normalized_surface_dice(2.0) for d in
      surface.label_surface_distances(labels, shifted, [1, 2, 3, 4, 5], SPACING, boundary="surfels").values()])
""",
    "a mask filling the whole volume": """
full = np.ones(SHAPE, dtype=bool)
timed("dice", lambda: overlap.dice(full, organ))
timed("hd95 voxels", lambda: surface.hausdorff_distance(full, organ, SPACING, 95))
timed("nsd surfels", lambda: surface.normalized_surface_dice(full, organ, 2.0, SPACING))
timed("surface_distances surfels, three metrics", lambda: (lambda d: (d.hausdorff_distance(95),
      d.normalized_surface_dice(2.0), d.average_surface_distance()))(
      surface.surface_distances(full, organ, SPACING, boundary="surfels")))
""",
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_hostile_inputs_are_scored_in_bounded_time_and_memory(scenario):
    code = PREAMBLE + textwrap.dedent(SCENARIOS[scenario]) + """
print(json.dumps({"seconds": seconds, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    result = json.loads(process.stdout.strip().splitlines()[-1])
    slow = {name: round(s, 2) for name, s in result["seconds"].items() if s > SECONDS}
    assert not slow, f"{scenario}: calls over {SECONDS} s: {slow}"
    assert result["peak"] <= PEAK_BYTES, f"{scenario}: peak resident memory {result['peak'] / 2**20:.0f} MiB"
