"""Phase packs written as grand-challenge.org's generator writes them, for the tests of
`python -m evaluation.phase --pack`.

Followed: the platform's app/grandchallenge/forge/ (forge.py generate_phase_pack and the
generate_* it calls, generation_utils.py socket_to_socket_value and
generate_socket_value_stub_file, models.py ForgeSocket / ForgePrediction), ComponentInterface.
forge_model, json_kind_example, InterfaceKinds and INTERFACE_KIND_JSON_EXAMPLES in
app/grandchallenge/components/models.py, and PhaseStarterKitDownload in
app/grandchallenge/evaluation/views/__init__.py, at DIAGNijmegen/rse-grand-challenge commit
4e38c78ba1ff7b7329a5d71ceaa71ff7eacaf053 (2025-12-19). Written here from what they do:

- the pack is a zip (zipfile's default, stored) with no top folder (`target_zpath=Path("")`),
  served as `<challenge>-<phase>-kit.zip`: the pack's README.md, LICENSE, .gitattributes and
  .gitignore; upload_to_archive/ (interf<N>/case<0..2>/<relative_path> stubs, upload_files.py);
  example_algorithm/ (test/input/interf<N>/inputs.json and an input stub per socket, then its
  template files); example_evaluation_method/ (test/input/predictions.json, a stub per output of
  every job, a stub per additional evaluation input, then its template files);
- example_evaluation_method/test/input/predictions.json: 3 jobs per algorithm interface, each
  {"pk" (a uuid4), "inputs", "outputs", "exec_duration": "PT1337S", "invoke_duration": null,
  "status": "Succeeded"}, indented by 4; an input or output is {"socket", "file", "image",
  "value"}: an image socket gets image {"name": ...}, a file socket a "file" link, a JSON socket
  its example value inline;
- a socket is {"slug", "relative_path", ["example_value",] "is_image_kind", "is_panimg_kind",
  "is_dicom_image_kind", "is_json_kind", "is_file_kind"}: no kind, no super_kind; example_value
  for every JSON kind only: the organizer's example for the socket, else the kind's default
  (a Float's 42.0, a Bool's true, an Anything's {"key": "value", "None": null});
- a stub: a JSON socket's example value (json.dumps, indent 4) at <relative_path>; a DICOM image
  set's three .dcm files in <relative_path>/; a panimg image's <relative_path>/<uuid4>.mha; a
  file socket's example text at <relative_path>.
"""

from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

# The platform's kinds (their display names, as predictions.json shows them) by kind set.
IMAGE_KINDS = {"Image", "Segmentation", "Heat Map", "Displacement field", "DICOM Image Set"}
FILE_KINDS = {"CSV file", "ZIP file", "PDF file", "SQREG file", "Thumbnail jpg", "Thumbnail png", "OBJ file",
              "MP4 file", "Newick tree-format file", "BIOM format"}
JSON_KINDS = {
    "String", "Integer", "Float", "Bool", "Anything", "Chart", "2D bounding box", "Multiple 2D bounding boxes",
    "Distance measurement", "Multiple distance measurements", "Point", "Multiple points", "Polygon",
    "Multiple polygons", "Line", "Multiple lines", "Angle", "Multiple angles", "Ellipse", "Multiple ellipses",
    "Three-point angle", "Multiple three-point angles", "Choice", "Multiple choice", "Affine transform registration"}
# The default example value of the JSON kinds these tests use.
JSON_EXAMPLES: dict[str, Any] = {
    "String": "Example String",
    "Integer": 42,
    "Float": 42.0,
    "Bool": True,
    "Anything": {"key": "value", "None": None},
    "Multiple points": {
        "name": "Points of interest", "type": "Multiple points",
        "points": [{"name": "Point 1", "point": [96.0, 79.8, 0.5], "probability": 0.92},
                   {"name": "Point 2", "point": [130.1, 115.5, 0.5], "probability": 0.92}],
        "version": {"major": 1, "minor": 0},
    },
}
# JSON kinds the platform never stores in its database (super_kind always File).
NEVER_IN_DATABASE = {"Multiple 2D bounding boxes", "Multiple distance measurements", "Multiple points",
                     "Multiple polygons", "Multiple lines", "Multiple angles", "Multiple ellipses",
                     "Multiple three-point angles"}
# A small valid MetaImage: the stub of an image socket (the platform's is a 3D example image).
STUB_MHA = (b"ObjectType = Image\nNDims = 2\nDimSize = 1 1\nElementType = MET_UCHAR\n"
            b"ElementDataFile = LOCAL\n\x00")
STUB_DICOM = b"\x00" * 128 + b"DICM"  # the platform's are three small example slices
STUB_FILE = b"An example file\n"
PACK_PREDICTIONS = "example_evaluation_method/test/input/predictions.json"
# The generator's template files by folder (their content does not matter here).
TEMPLATES = {
    "": (".gitattributes", ".gitignore", "LICENSE", "README.md"),
    "upload_to_archive": ("upload_files.py",),
    "example_algorithm": (".gitattributes", "Dockerfile", "do_build.sh", "do_save.sh", "do_test_run.sh",
                          "inference.py", "requirements.txt", "model/README.md",
                          "model/a_tarball_subdirectory/some_tarball_resource.txt", "test/.gitignore"),
    "example_evaluation_method": (".gitattributes", "Dockerfile", "do_build.sh", "do_save.sh", "do_test_run.sh",
                                  "evaluate.py", "helpers.py", "requirements.txt", "ground_truth/README.md",
                                  "ground_truth/a_tarball_subdirectory/some_tarball_resource.txt"),
}
_DEFAULT = object()


def forge_socket(slug: str, kind: str, relative_path: str | None = None, example_value: Any = _DEFAULT
                 ) -> dict[str, Any]:
    """A socket as ComponentInterface.forge_model gives it for a socket of this kind (the kind's
    default example unless the organizer set one: `example_value`)."""
    assert kind in IMAGE_KINDS | FILE_KINDS | JSON_KINDS, kind
    is_image, is_json = kind in IMAGE_KINDS, kind in JSON_KINDS
    if relative_path is None:
        relative_path = f"images/{slug}" if is_image else f"{slug}.json" if is_json else slug
    socket: dict[str, Any] = {"slug": slug, "relative_path": relative_path}
    if is_json:
        socket["example_value"] = JSON_EXAMPLES[kind] if example_value is _DEFAULT else example_value
    socket.update(is_image_kind=is_image, is_panimg_kind=is_image and kind != "DICOM Image Set",
                  is_dicom_image_kind=kind == "DICOM Image Set", is_json_kind=is_json, is_file_kind=kind in FILE_KINDS)
    return socket


def socket_value(socket: dict[str, Any]) -> dict[str, Any]:
    """How the generator lists a socket in a job (socket_to_socket_value)."""
    value: dict[str, Any] = {"socket": socket, "file": None, "image": None, "value": None}
    if socket["is_image_kind"]:
        value["image"] = {"name": "the_original_filename_of_the_file_that_was_uploaded_or_image_set"}
    elif socket["is_file_kind"]:
        value["file"] = f"https://grand-challenge.org/media/some-link/{socket['relative_path']}"
    else:
        value["value"] = socket.get("example_value", {"some_key": "some_value"})
    return value


def stubs(socket: dict[str, Any], where: str) -> dict[str, bytes]:
    """{path: content} of the stub the generator writes for a socket at `where`."""
    if "example_value" in socket:
        return {where: json.dumps(socket["example_value"], indent=4).encode()}
    if socket["is_dicom_image_kind"]:
        return {f"{where}/1.2.826.0.1.3680043.10.1666.{n}.dcm": STUB_DICOM for n in (1, 2, 3)}
    if socket["is_panimg_kind"]:
        return {f"{where}/{uuid.uuid4()}.mha": STUB_MHA}
    return {where: STUB_FILE}


def _templates(folder: str) -> dict[str, bytes]:
    prefix = f"{folder}/" if folder else ""
    return {f"{prefix}{name}": f"# {name} of the phase pack\n".encode() for name in TEMPLATES[folder]}


def job(interface: dict[str, list[dict]]) -> dict[str, Any]:
    """One job of an interface as generate_predictions_json writes it."""
    return {"pk": str(uuid.uuid4()), "inputs": [socket_value(s) for s in interface["inputs"]],
            "outputs": [socket_value(s) for s in interface["outputs"]], "exec_duration": "PT1337S",
            "invoke_duration": None, "status": "Succeeded"}


def pack_files(interfaces: list[dict[str, list[dict]]], evaluation_inputs: list[dict] = (),
               jobs: list[dict] | None = None) -> dict[str, bytes]:
    """{path in the zip: content}, in the generator's order, of a phase pack for these algorithm
    interfaces, each {"inputs": [forge_socket, ...], "outputs": [...]}, and these additional
    evaluation inputs. `jobs`: predictions.json's jobs instead of three a interface (a test's
    hostile edit)."""
    files = _templates("")
    for number, interface in enumerate(interfaces):
        for case in range(3):
            for socket in interface["inputs"]:
                files.update(stubs(socket, f"upload_to_archive/interf{number}/case{case}/{socket['relative_path']}"))
    files.update(_templates("upload_to_archive"))
    for number, interface in enumerate(interfaces):
        folder = f"example_algorithm/test/input/interf{number}"
        files[f"{folder}/inputs.json"] = json.dumps([socket_value(s) for s in interface["inputs"]], indent=4).encode()
        for socket in interface["inputs"]:
            files.update(stubs(socket, f"{folder}/{socket['relative_path']}"))
    files.update(_templates("example_algorithm"))
    if jobs is None:
        jobs = [job(interface) for interface in interfaces for _ in range(3)]
    files[PACK_PREDICTIONS] = json.dumps(jobs, indent=4).encode()
    for one in jobs:
        for value in one["outputs"]:
            socket = value["socket"]
            files.update(stubs(socket, f"example_evaluation_method/test/input/{one['pk']}/output/"
                                       f"{socket['relative_path']}"))
    for socket in evaluation_inputs:
        files.update(stubs(socket, f"example_evaluation_method/test/input/{socket['relative_path']}"))
    files.update(_templates("example_evaluation_method"))
    return files


def write_pack_zip(path: Path, interfaces: list[dict[str, list[dict]]], top_folder: str | None = None,
                   **options) -> Path:
    """The pack as the phase page serves it (top_folder None), or re-zipped inside one folder."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in pack_files(interfaces, **options).items():
            archive.writestr(f"{top_folder}/{name}" if top_folder else name, content)
    return path


def write_pack_folder(folder: Path, interfaces: list[dict[str, list[dict]]], **options) -> Path:
    """The pack unpacked into `folder`."""
    for name, content in pack_files(interfaces, **options).items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder
