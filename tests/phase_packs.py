"""Phase packs written as grand-challenge.org's generator writes them, for the tests of
`python -m evaluation.phase --pack`.

Followed: the platform's app/grandchallenge/forge/ (forge.py, generation_utils.py, models.py) and
ComponentInterface.forge_model / InterfaceKinds / INTERFACE_KIND_JSON_EXAMPLES in
app/grandchallenge/components/models.py, at DIAGNijmegen/rse-grand-challenge commit
4e38c78ba1ff7b7329a5d71ceaa71ff7eacaf053 (2025-12-19). Written here from what they do:

- the pack is a zip with no top folder (the phase page's download, `<challenge>-<phase>-kit.zip`):
  README.md, upload_to_archive/, example_algorithm/ (test/input/interf<N>/inputs.json and an input
  stub per socket) and example_evaluation_method/;
- example_evaluation_method/test/input/predictions.json: 3 jobs per algorithm interface, each
  {"pk" (a uuid4), "inputs", "outputs", "exec_duration": "PT1337S", "invoke_duration": null,
  "status": "Succeeded"}, indented by 4; an input or output is {"socket", "file", "image",
  "value"}: an image socket gets image {"name": ...}, a file socket a "file" link, a JSON socket
  its example value inline;
- a socket is {"slug", "relative_path", ["example_value",] "is_image_kind", "is_panimg_kind",
  "is_dicom_image_kind", "is_json_kind", "is_file_kind"}: no kind, no super_kind; example_value
  only for a JSON kind (the kind's default example: a Float's 42.0, a Bool's true, ...);
- each output of each job has a stub at example_evaluation_method/test/input/<pk>/output/
  <relative_path>: a JSON socket's example value (json.dumps, indent 4), an image socket's
  <relative_path>/<uuid4>.mha.
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
# JSON kinds with their default example value (the kinds these tests use).
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
PACK_PREDICTIONS = "example_evaluation_method/test/input/predictions.json"


def forge_socket(slug: str, kind: str, relative_path: str | None = None, example_value: Any = None) -> dict[str, Any]:
    """A socket as ComponentInterface.forge_model gives it for a socket of this kind."""
    is_image = kind in IMAGE_KINDS
    is_json = kind in JSON_EXAMPLES or kind in NEVER_IN_DATABASE
    if relative_path is None:
        relative_path = f"images/{slug}" if is_image else f"{slug}.json" if is_json else slug
    socket: dict[str, Any] = {"slug": slug, "relative_path": relative_path}
    if is_json:
        socket["example_value"] = example_value if example_value is not None else JSON_EXAMPLES[kind]
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


def stub(socket: dict[str, Any]) -> tuple[str, bytes]:
    """(path under the socket's relative_path, content) of the stub file the generator writes."""
    if "example_value" in socket:
        return "", json.dumps(socket["example_value"], indent=4).encode()
    if socket["is_panimg_kind"]:
        return f"/{uuid.uuid4()}.mha", STUB_MHA
    return "", b"An example file\n"


def pack_files(interfaces: list[dict[str, list[dict]]], challenge: str = "challenge-slug",
               phase: str = "phase-slug") -> dict[str, bytes]:
    """{path in the zip: content} of a phase pack for these algorithm interfaces, each
    {"inputs": [forge_socket, ...], "outputs": [...]}."""
    files: dict[str, bytes] = {
        "README.md": f"# Phase pack of {challenge} / {phase}\n".encode(),
        "LICENSE": b"Apache License 2.0\n",
        "upload_to_archive/upload_files.py": b"# uploads the example cases to the phase's archive\n",
        "example_algorithm/Dockerfile": b"FROM python:3.14-slim\n",
        "example_algorithm/inference.py": b"# the example algorithm\n",
        "example_evaluation_method/Dockerfile": b"FROM python:3.14-slim\n",
        "example_evaluation_method/evaluate.py": b"# the example evaluation\n",
    }
    jobs = []
    for number, interface in enumerate(interfaces):
        name = f"interf{number}"
        files[f"example_algorithm/test/input/{name}/inputs.json"] = json.dumps(
            [socket_value(s) for s in interface["inputs"]], indent=4).encode()
        for socket in interface["inputs"]:
            suffix, content = stub(socket)
            files[f"example_algorithm/test/input/{name}/{socket['relative_path']}{suffix}"] = content
            for case in range(3):
                files[f"upload_to_archive/{name}/case{case}/{socket['relative_path']}{suffix}"] = content
        for _ in range(3):
            jobs.append({"pk": str(uuid.uuid4()), "inputs": [socket_value(s) for s in interface["inputs"]],
                         "outputs": [socket_value(s) for s in interface["outputs"]], "exec_duration": "PT1337S",
                         "invoke_duration": None, "status": "Succeeded"})
    files[PACK_PREDICTIONS] = json.dumps(jobs, indent=4).encode()
    for job in jobs:
        for value in job["outputs"]:
            suffix, content = stub(value["socket"])
            relative_path = value["socket"]["relative_path"]
            files[f"example_evaluation_method/test/input/{job['pk']}/output/{relative_path}{suffix}"] = content
    return files


def write_pack_zip(path: Path, interfaces: list[dict[str, list[dict]]], top_folder: str | None = None) -> Path:
    """The pack as the phase page serves it (top_folder None), or re-zipped inside one folder."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in pack_files(interfaces).items():
            archive.writestr(f"{top_folder}/{name}" if top_folder else name, content)
    return path


def write_pack_folder(folder: Path, interfaces: list[dict[str, list[dict]]]) -> Path:
    """The pack unpacked into `folder`."""
    for name, content in pack_files(interfaces).items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder
