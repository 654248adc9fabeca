"""Reading a HECKTOR 2025 synthetic data set for the task tests, without our loaders (the tests
compare our numbers with computations on what is read here)."""

import json
import shutil


def copy_dataset(dataset, tmp_path):
    """A copy of a module-scoped data set that a test may change: (input, ground truth)."""
    shutil.copytree(dataset, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


def ground_truth_table(ground_truth):
    """The ground-truth CSV as a pandas table indexed by PatientID, in sorted patient order."""
    import pandas as pd

    (csv,) = ground_truth.glob("*.csv")
    return pd.read_csv(csv).set_index("PatientID").sort_index()


def value_outputs(input_dir, filename):
    """{PatientID: the JSON value of the job's `filename` output}; the patient is the CT image
    name up to its "__CT" suffix, as the synthetic data names them."""
    values = {}
    for job in json.loads((input_dir / "predictions.json").read_text()):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        values[ct["image"]["name"].split("__")[0]] = json.loads((input_dir / job["pk"] / "output" / filename).read_text())
    return values
