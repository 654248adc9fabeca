"""Images with their geometry: the header first, checked, and only then the pixels.

A submitted image can lie in its header (60000 x 60000 pixels in a few bytes, a "bomb") and can
point elsewhere: a MetaImage's `ElementDataFile` or a NRRD's `data file` names another file,
which SimpleITK would read on the submission's say-so (the ground truth, /etc/passwd). So:

1. the format is chosen from the name and checked against the file's first bytes, and SimpleITK
   is told which reader to use (it never guesses from content);
2. a format's indirection is refused before SimpleITK opens the file: MetaImage data must be
   LOCAL (.mha) or a plain file next to its header, inside the same folder (.mhd); NRRD data must
   be attached; NIfTI must be single-file (.nii / .nii.gz);
3. `open_image` reads the header alone; `ImageFile.read(expected_shape)` decodes only when the
   header's size equals the ground truth's;
4. a NIfTI image of floating-point pixels has its stored values scanned for NaN and infinities
   before they are used: the NIfTI library inside SimpleITK turns them into 0 as it reads (a NaN
   in a label map would silently be background), so they are refused instead, as in any other
   format's label map.
"""

from __future__ import annotations

import gzip
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.reading.files import Origin, shown_path

HEADER_BYTES = 65536  # a MetaImage or NRRD header longer than this is not one we read
# An image read without a ground truth to compare with (the ground truth itself) is still
# bounded: 2**31 voxels is far beyond any mask we score (512 x 512 x 1000 is 2**28).
MAX_VOXELS = 1 << 31

# name suffix -> (format name, SimpleITK ImageIO)
FORMATS = {
    ".nii.gz": ("NIfTI", "NiftiImageIO"),
    ".nii": ("NIfTI", "NiftiImageIO"),
    ".mha": ("MetaImage", "MetaImageIO"),
    ".mhd": ("MetaImage", "MetaImageIO"),
    ".nrrd": ("NRRD", "NrrdImageIO"),
    ".tif": ("TIFF", "TIFFImageIO"),
    ".tiff": ("TIFF", "TIFFImageIO"),
    ".png": ("PNG", "PNGImageIO"),
}


@dataclass(frozen=True)
class Geometry:
    """Physical placement of a voxel grid, in SimpleITK's (x, y, z) order."""

    size: tuple[int, ...]
    spacing: tuple[float, ...]
    origin: tuple[float, ...]
    direction: tuple[float, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """The size in numpy's order (z, y, x)."""
        return tuple(reversed(self.size))

    @property
    def voxel_volume(self) -> float:
        """Volume of one voxel in the spacing's unit cubed (mm³ for medical images)."""
        return float(np.prod(self.spacing))

    def differences(self, other: Geometry, rtol: float = 1e-4) -> list[str]:
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
            return "(" + ", ".join(f"{v + 0:g}" for v in values) + ")"  # -0.0 + 0 is 0.0: never "-0"
        return (f"size {fmt(self.size)}, spacing {fmt(self.spacing)}, origin {fmt(self.origin)}, "
                f"direction {fmt(self.direction)}")


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape)  # ASCII: the message is the last stderr line, whatever the locale


def image_format(name: str) -> tuple[str, str] | None:
    lower = name.lower()
    for suffix, found in FORMATS.items():
        if lower.endswith(suffix):
            return found
    return None


@dataclass(frozen=True)
class ImageFile:
    """An image whose header has been read and checked; `read` decodes its pixels."""

    origin: Origin
    path: Path
    what: str
    image_io: str
    geometry: Geometry
    components: int
    component_bytes: int  # of one component of a pixel, as the file stores it (decoded)
    name: str  # as given (shown), not a link's target
    stored_floats: StoredFloats | None = None  # a NIfTI's float data, scanned for NaN when read


    @property
    def shape(self) -> tuple[int, ...]:
        return self.geometry.shape

    def fitted_shape(self, expected: tuple[int, ...]) -> tuple[int, ...]:
        """The shape, without a leading single slice when a 2D image is expected (2D images are
        often stored as one slice of a volume)."""
        shape = self.shape
        if len(shape) == len(expected) + 1 and shape[0] == 1:
            return shape[1:]
        return shape

    def check_shape(self, expected: tuple[int, ...]) -> None:
        found = self.fitted_shape(expected)
        if tuple(found) != tuple(expected):
            self.origin.fail(f"{self.what}: shape {shape_text(found)}, expected {shape_text(expected)} as in the "
                             f"ground truth.")

    def read(self, expected_shape: tuple[int, ...] | None) -> np.ndarray:
        """The pixels (numpy order), decoded only after the header's shape equals
        `expected_shape` (None only for an image with nothing to compare with: the ground
        truth), and single-channel."""
        if self.components != 1:
            self.origin.fail(f"{self.what}: {self.name} has {self.components} components per pixel; a "
                             f"single-channel label image is expected.")
        if expected_shape is not None:
            self.check_shape(expected_shape)
        elif int(np.prod(self.shape, dtype=np.float64)) > MAX_VOXELS:
            self.origin.fail(f"{self.what}: {self.name} claims {shape_text(self.shape)} voxels, more than can be read.")
        import SimpleITK as sitk

        from evaluation.machine import require_free_memory

        # The reader's buffer and ITK's image, at most: whether they fit is asked first, since a
        # NIfTI reader that cannot allocate says only that it failed, as for a corrupt file.
        decoded = 2 * int(np.prod(self.shape, dtype=np.float64)) * self.components * self.component_bytes
        require_free_memory(decoded, decoded)
        reader = sitk.ImageFileReader()
        reader.SetImageIO(self.image_io)
        reader.SetFileName(str(self.path))
        try:
            image = reader.Execute()
        except RuntimeError:  # ITK's own out-of-memory error is the machine's limit (Origin.fail)
            self.origin.fail(f"{self.what}: {self.name} cannot be decoded (its data is truncated or corrupt).")
        if self.stored_floats is not None and not self.stored_floats.all_finite(self.path):
            self.origin.fail(f"{self.what}: {self.name} holds NaN or infinite values, which a NIfTI reader turns "
                             f"into 0; every pixel must be a finite number.")
        array = _pixels(image)
        if expected_shape is not None and array.ndim == len(expected_shape) + 1:
            array = array[0]
        return array


@dataclass(frozen=True)
class StoredFloats:
    """Where a NIfTI file keeps its floating-point voxels: `count` values of numpy type `dtype`
    (byte order included) from byte `offset` of the (decompressed) file."""

    offset: int
    dtype: str
    count: int
    gzipped: bool

    SLAB_BYTES = 1 << 24

    def all_finite(self, path: Path) -> bool:
        """Whether every stored value is finite, read in slabs of 16 MB (never the whole data at
        once); a file shorter than its header says is left to the reader, which refuses it."""
        item = np.dtype(self.dtype).itemsize
        left = self.count * item
        opener = gzip.open if self.gzipped else open
        try:
            with opener(path, "rb") as handle:
                handle.seek(self.offset)
                while left > 0:
                    chunk = handle.read(min(left, self.SLAB_BYTES - self.SLAB_BYTES % item))
                    if not chunk:
                        return True
                    usable = len(chunk) - len(chunk) % item
                    if not np.isfinite(np.frombuffer(chunk[:usable], dtype=self.dtype)).all():
                        return False
                    left -= len(chunk)
        except (OSError, EOFError, gzip.BadGzipFile):
            return True  # a corrupt stream: the reader has already refused it, or will
        return True


# NIfTI datatype codes of real floating-point voxels, and their numpy types (byte order apart)
_NIFTI_FLOATS = {16: "f4", 64: "f8"}
# Where a single-file NIfTI-1's voxels may start: after its 348-byte header and 4-byte extension
# flag, and (a bound of ours) within the first 2**40 bytes
MIN_NIFTI_OFFSET, MAX_NIFTI_OFFSET = 352, 1 << 40


def _nifti_stored_floats(head: bytes, gzipped: bool, voxels: int) -> StoredFloats | None:
    """Where a NIfTI-1 header says its float voxels are; None for other types; ValueError for a
    data offset no single-file image has (NaN, infinite, inside the header, beyond 2**40). (A
    NIfTI-2 header, which SimpleITK does not read here, is refused by the reader before any pixel
    is used.)"""
    for order in "<>":
        if len(head) >= 348 and struct.unpack_from(order + "i", head, 0)[0] == 348:
            datatype = struct.unpack_from(order + "h", head, 70)[0]
            offset = struct.unpack_from(order + "f", head, 108)[0]  # vox_offset, a float in NIfTI-1
            break
    else:
        return None
    if datatype not in _NIFTI_FLOATS:
        return None
    if not MIN_NIFTI_OFFSET <= offset <= MAX_NIFTI_OFFSET:  # NaN too: the scan would start nowhere
        raise ValueError(f"vox_offset {offset}")
    return StoredFloats(int(offset), order + _NIFTI_FLOATS[datatype], voxels, gzipped)


class _ImagePixels:
    """The pixel buffer of a SimpleITK image as numpy sees it, holding the image: an array made
    from it keeps the image, hence its buffer, alive (SimpleITK's view does not)."""

    def __init__(self, image, view: np.ndarray):
        self.image = image
        self.__array_interface__ = view.__array_interface__


def _pixels(image) -> np.ndarray:
    """The image's pixels (numpy order) without a copy: GetArrayFromImage copies the whole
    buffer, 30 ms and one more volume of memory per 200 x 512 x 512 mask."""
    import SimpleITK as sitk

    return np.asarray(_ImagePixels(image, sitk.GetArrayViewFromImage(image)))


def open_image(origin: Origin, path: Path, what: str) -> ImageFile:
    """Check the file (regular, inside `origin`, a supported format with no indirection) and
    read its header alone."""
    given = Path(path).name  # messages and the format go by the name given, not a link's target
    path = origin.contains(path, what)
    origin.regular_file(path, what, given)
    name = shown_path(given)
    found = image_format(given)
    if found is None:
        origin.fail(f"{what}: {name} is not an image format we read (supported: "
                    f"{', '.join(sorted({s.lstrip('.') for s in FORMATS}))}).")
    format_name, image_io = found
    head = _head(origin, path, what, name, gzipped=given.lower().endswith(".gz"))
    _check_no_indirection(origin, path, what, name, format_name, head)

    import SimpleITK as sitk

    reader = sitk.ImageFileReader()
    reader.SetImageIO(image_io)
    reader.SetFileName(str(path))
    try:
        reader.ReadImageInformation()
    except RuntimeError:
        origin.fail(f"{what}: {name} is not a readable {format_name} image.")
    geometry = Geometry(tuple(int(n) for n in reader.GetSize()), tuple(reader.GetSpacing()),
                        tuple(reader.GetOrigin()), tuple(reader.GetDirection()))
    if any(n <= 0 for n in geometry.size):
        origin.fail(f"{what}: {name} has an empty size {shape_text(geometry.shape)}.")
    components = int(reader.GetNumberOfComponents())
    stored_floats = None
    if format_name == "NIfTI":
        voxels = int(np.prod(geometry.size, dtype=np.int64)) * components
        try:
            stored_floats = _nifti_stored_floats(head, given.lower().endswith(".gz"), voxels)
        except ValueError:
            origin.fail(f"{what}: {name} is not a readable NIfTI image (its data offset, vox_offset, is not one a "
                        f"single-file NIfTI-1 image can have).")
    return ImageFile(origin, path, what, image_io, geometry, components,
                     _component_bytes(sitk.GetPixelIDValueAsString(reader.GetPixelID())), name, stored_floats)


def _component_bytes(pixel_type: str) -> int:
    """Bytes of one decoded component from SimpleITK's name of the pixel type ("16-bit signed
    integer", "vector of 32-bit float", "complex of 64-bit float": both parts); 8 if it names none."""
    bits = re.search(r"(\d+)-bit", pixel_type)
    size = int(bits.group(1)) // 8 if bits else 8
    return 2 * size if pixel_type.startswith("complex") else size


def _head(origin: Origin, path: Path, what: str, name: str, gzipped: bool) -> bytes:
    try:
        if gzipped:
            with gzip.open(path, "rb") as handle:
                return handle.read(HEADER_BYTES)
        with open(path, "rb") as handle:
            return handle.read(HEADER_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile):
        origin.fail(f"{what}: {name} is not a readable image (its compression is corrupt).")


_META_KEY = re.compile(rb"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def _check_no_indirection(origin: Origin, path: Path, what: str, name: str, format_name: str, head: bytes) -> None:
    if format_name == "MetaImage":
        _check_metaimage(origin, path, what, name, head)
    elif format_name == "NRRD":
        _check_nrrd(origin, what, name, head)
    elif format_name == "NIfTI":
        _check_nifti(origin, what, name, head)
    elif format_name == "TIFF" and head[:4] not in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        origin.fail(f"{what}: {name} is not a TIFF file.")
    elif format_name == "PNG" and not head.startswith(b"\x89PNG\r\n\x1a\n"):
        origin.fail(f"{what}: {name} is not a PNG file.")


def _check_metaimage(origin: Origin, path: Path, what: str, name: str, head: bytes) -> None:
    """The data must be LOCAL (after the header), or for a .mhd a plain file name next to it."""
    data_file = None
    for line in head.split(b"\n"):
        match = _META_KEY.match(line)
        if match and match.group(1).lower() == b"elementdatafile":
            data_file = match.group(2)
            break
    if data_file is None:
        origin.fail(f"{what}: {name} is not a readable MetaImage (no ElementDataFile in its header).")
    if data_file.lower() == b"local":
        return
    if not name.lower().endswith(".mhd"):
        origin.fail(f"{what}: {name} keeps its pixels in another file (ElementDataFile); a .mha image must hold "
                    f"them itself (ElementDataFile = LOCAL).")
    try:
        data_name = data_file.decode("utf-8")
    except UnicodeDecodeError:
        data_name = ""
    plain = re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", data_name) is not None and ".." not in data_name
    if not plain or data_name.upper().startswith("LIST"):
        origin.fail(f"{what}: {name} names its pixel file in a way we do not follow; ElementDataFile must be "
                    f"LOCAL or the plain name of a file next to it.")
    data_path = origin.contains(path.parent / data_name, what)
    origin.regular_file(data_path, what)


def _check_nrrd(origin: Origin, what: str, name: str, head: bytes) -> None:
    if not head.startswith(b"NRRD000"):
        origin.fail(f"{what}: {name} is not a NRRD file.")
    for line in head.split(b"\n")[1:]:
        line = line.rstrip(b"\r")
        if not line:
            return  # the end of the header: the data follows in this file
        key = line.split(b":", 1)[0].strip().lower().replace(b" ", b"")
        if key == b"datafile" and not line.startswith(b"#"):
            origin.fail(f"{what}: {name} keeps its pixels in another file (a detached NRRD 'data file'); the "
                        f"pixels must be in the .nrrd file itself.")
    origin.fail(f"{what}: {name} is not a readable NRRD file (its header does not end).")


def _check_nifti(origin: Origin, what: str, name: str, head: bytes) -> None:
    if len(head) >= 348 and head[344:348] in (b"n+1\x00",):
        return
    if len(head) >= 540 and head[4:8] == b"n+2\x00":
        return
    if (len(head) >= 348 and head[344:348] == b"ni1\x00") or (len(head) >= 8 and head[4:8] == b"ni2\x00"):
        origin.fail(f"{what}: {name} is the header of a two-file NIfTI image (.hdr/.img); a single-file .nii or "
                    f".nii.gz is expected.")
    origin.fail(f"{what}: {name} is not a readable NIfTI image.")


def read_image(origin: Origin, path: Path, what: str,
               expected_shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, Geometry]:
    """open_image, then read: the pixels (numpy order) and the geometry."""
    image = open_image(origin, path, what)
    return image.read(expected_shape), image.geometry
