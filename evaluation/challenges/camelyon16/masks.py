"""Reading a whole-slide tumor mask at one pyramid level, without ever decoding level 0.

A CAMELYON16 mask is either the official multi-resolution TIFF (first page level 0, ~100k x 220k
pixels, reduced levels as further pages or SubIFDs: ASAP writes them 512-tiled, LZW-compressed)
or a single raster already at the evaluation level (.tif/.tiff with tifffile, .png/.mha through
the reading layer). Which of the two a file is, is decided per file: a TIFF holding a
reduced-resolution image besides its first one is a pyramid. Any nonzero value is tumor (255 in
the 2016 release, 1 or 2 in later conversions).

The masks are the organizer's (an `Origin.ground_truth`): a file that is not a regular file in
the ground-truth folder, or whose header claims more pixels than a mask at the evaluation level
can have (a level-0 raster, a header "bomb"), is refused before a pixel is decoded (SetupError).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import SetupError
from evaluation.reading.files import Origin
from evaluation.reading.images import open_image, shape_text

TIFF_SUFFIXES = (".tif", ".tiff")
OTHER_SUFFIXES = (".png", ".mha")
MASK_SUFFIXES = TIFF_SUFFIXES + OTHER_SUFFIXES
# A mask at the evaluation level: CAMELYON16's level-5 masks are about 3,000 x 7,000 pixels
# (21 million); 2**28 (16,384 x 16,384) is far beyond any of them, and a level-0 mask (~2e10
# pixels) or a header claiming absurd sizes is refused before decoding.
MAX_MASK_PIXELS = 1 << 28
MAX_MASK_BYTES = 1 << 30  # decoded, all samples of a pixel included
LEVEL0_HINT = " (a level-0 mask must be a pyramidal TIFF with its reduced levels)"


@dataclass(frozen=True)
class LevelMask:
    tumor: np.ndarray  # bool, the mask at `level`
    level: int  # its pyramid level: pixel (r, c) covers level-0 pixels [r·2**level, (r+1)·2**level)
    pyramidal: bool
    level0_pixel_size_um: float | None  # from a pyramid's level-0 resolution tags, when present


def read_mask(path: Path, pyramid_level: int, single_page_level: int, what: str,
              origin: Origin | None = None) -> LevelMask:
    """The tumor mask at `pyramid_level` of a pyramidal TIFF (the level whose size is level 0's
    divided by 2**pyramid_level, within one pixel), or the single raster of any other file, which
    is taken to be at `single_page_level`. `origin`: the ground truth the file belongs to (default:
    its folder). Unreadable or unsuitable files are the organizer's problem: SetupError naming
    `what`."""
    path = Path(path)
    origin = origin if origin is not None else Origin.ground_truth(path.parent)
    path = origin.contains(path, what)
    origin.regular_file(path, what)
    if path.name.lower().endswith(TIFF_SUFFIXES):
        return _read_tiff(path, pyramid_level, single_page_level, what)
    image = open_image(origin, path, what)  # the header alone
    size = "x".join(str(n) for n in image.geometry.size)  # width x height, as for TIFF pages
    _check_size(image.shape, image.components * image.component_bytes, what, f"{path.name} holds a single {size} image",
                LEVEL0_HINT)
    voxels = np.squeeze(image.read(None))
    if voxels.ndim != 2:
        raise SetupError(f"{what}: {path.name} has shape {shape_text(voxels.shape)}; a 2-D mask is expected.")
    return LevelMask(voxels != 0, single_page_level, False, None)


def _check_size(shape: tuple[int, ...], bytes_per_pixel: int, what: str, claim: str, hint: str = "") -> None:
    """Refuse, before decoding, an image too large to be a mask at the evaluation level."""
    pixels = int(np.prod([int(n) for n in shape], dtype=np.float64))
    if pixels > MAX_MASK_PIXELS:
        raise SetupError(f"{what}: {claim}, more than the {MAX_MASK_PIXELS} pixels a mask at the evaluation level "
                         f"may have{hint}.")
    if pixels * bytes_per_pixel > MAX_MASK_BYTES:
        raise SetupError(f"{what}: {claim} of {bytes_per_pixel} bytes a pixel, {pixels * bytes_per_pixel} bytes "
                         f"decoded, more than the {MAX_MASK_BYTES} a mask may take (write it with 8-bit pixels).")


def _plane(array: np.ndarray, samples: int) -> np.ndarray:
    """The first channel (the 2016 script reads the red channel) of a 2-D or colour page."""
    array = np.asarray(array)
    if samples > 1 and array.ndim == 3:
        array = array[..., 0] if array.shape[-1] == samples else array[0]
    return np.squeeze(array)


def _read_tiff(path: Path, pyramid_level: int, single_page_level: int, what: str) -> LevelMask:
    try:
        return _read_tiff_levels(path, pyramid_level, single_page_level, what)
    except SetupError:
        raise
    except Exception as exc:  # tifffile raises many types for a broken or unusual file
        raise SetupError(f"{what}: {path.name} is not a readable TIFF "
                         f"({type(exc).__name__}: {str(exc)[:200]}).") from None


def _read_tiff_levels(path: Path, pyramid_level: int, single_page_level: int, what: str) -> LevelMask:
    import tifffile  # where used: the start-up rule (evaluation/challenges/__init__.py)

    with tifffile.TiffFile(path) as tif:
        first = tif.pages[0]
        height0, width0 = int(first.imagelength), int(first.imagewidth)
        # Every image of the file but the first: reduced pages, SubIFD levels, further series.
        others = {}
        for series in tif.series:
            for level in series.levels:
                page = level.keyframe
                if page.offset != first.offset:
                    others[page.offset] = page
        for page in tif.pages[1:]:
            page = page.keyframe if hasattr(page, "keyframe") else page
            others.setdefault(page.offset, page)
        if not others:  # a single raster: already at the evaluation level
            _check_page(first, what, f"{path.name} holds a single {_page_size(first)} image", LEVEL0_HINT)
            return LevelMask(_decode(first, path, what) != 0, single_page_level, False, None)
        factor = 2 ** pyramid_level
        wanted = (height0 / factor, width0 / factor)
        matches = [page for page in others.values()
                   if abs(int(page.imagelength) - wanted[0]) <= 1 and abs(int(page.imagewidth) - wanted[1]) <= 1]
        if not matches:
            sizes = ", ".join(f"{p.imagewidth}x{p.imagelength}" for p in others.values())
            raise SetupError(f"{what}: the pyramidal TIFF {path.name} (level 0 {width0}x{height0}) has no level "
                             f"{pyramid_level} of about {width0 / factor:.0f}x{height0 / factor:.0f} pixels "
                             f"(levels found: {sizes}).")
        page = min(matches, key=lambda p: abs(p.imagelength - wanted[0]) + abs(p.imagewidth - wanted[1]))
        _check_page(page, what, f"level {pyramid_level} of the pyramidal TIFF {path.name} claims "
                                f"{_page_size(page)} pixels")
        tumor = _decode(page, path, what) != 0
        return LevelMask(tumor, pyramid_level, True, _pixel_size_um(first))


def _page_size(page) -> str:
    return f"{int(page.imagewidth)}x{int(page.imagelength)}"


def _check_page(page, what: str, claim: str, hint: str = "") -> None:
    """A TIFF page's size from its tags, before anything is decoded."""
    shape = (int(page.imagedepth), int(page.imagelength), int(page.imagewidth))
    bytes_per_sample = max(1, -(-int(page.bitspersample) // 8))
    _check_size(shape, int(page.samplesperpixel) * bytes_per_sample, what, claim, hint)


def _decode(page, path: Path, what: str) -> np.ndarray:
    try:
        array = page.asarray()
    except Exception as exc:
        reason = str(exc)
        if "imagecodecs" in reason:  # LZW (ASAP's default) and JPEG need the imagecodecs package
            raise SetupError(f"{what}: {path.name} is compressed with {page.compression.name}, which needs the "
                             f"imagecodecs package; install it in the image or convert the mask to deflate "
                             f"(zlib) or no compression.") from None
        raise SetupError(f"{what}: {path.name} cannot be decoded ({reason[:200]}).") from None
    array = _plane(array, int(page.samplesperpixel))
    if array.ndim != 2:
        raise SetupError(f"{what}: {path.name} holds an image of shape {array.shape}; a 2-D mask is expected.")
    return array


def _pixel_size_um(page) -> float | None:
    """Level-0 pixel size from XResolution/ResolutionUnit (pixels per centimetre or inch)."""
    tag, unit = page.tags.get("XResolution"), page.tags.get("ResolutionUnit")
    if tag is None or unit is None:
        return None
    numerator, denominator = tag.value if isinstance(tag.value, tuple) else (tag.value, 1)
    if not numerator or not denominator:
        return None
    per_unit = numerator / denominator
    micrometres = {2: 25400.0, 3: 10000.0}.get(int(unit.value))  # inch, centimetre; 1 = no unit
    if micrometres is None or per_unit <= 0:
        return None
    return micrometres / per_unit
