"""Where the corpus tests look for the corpora, and what they say when they are not there:
skipped on a developer's machine, failed under CI=true, and either way told where to put
the data or which variable to set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kuuki.testing.corpora import corpora_dir, corpus_missing

REPO = Path(__file__).resolve().parents[2]
WHERE = (
    "Put the corpora (irc-disentanglement/{train,dev} and mrmp/dialogues/{train,dev}) in "
    "../shared/data beside the checkout, or set KUUKI_DATA_DIR to the folder that holds "
    'them; README.md, "Corpora", says where they come from'
)


def test_the_corpora_are_beside_the_checkout_unless_the_variable_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUUKI_DATA_DIR", raising=False)
    assert corpora_dir(tmp_path / "kuuki") == tmp_path / "shared" / "data"
    monkeypatch.setenv("KUUKI_DATA_DIR", str(tmp_path / "corpora"))
    assert corpora_dir(tmp_path / "kuuki") == tmp_path / "corpora"


def test_a_missing_corpus_says_where_to_put_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "mrmp" / "dialogues" / "dev"
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        corpus_missing("the MRMP corpus", missing)
    assert str(failed.value) == (
        f"the MRMP corpus not found: {missing} is not a folder. {WHERE} (CI=true: the corpus "
        "tests are real tests, so a missing corpus fails them)"
    )
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception) as skipped:
        corpus_missing("the MRMP corpus", missing)
    assert str(skipped.value) == f"the MRMP corpus not found: {missing} is not a folder. {WHERE}"


@pytest.mark.parametrize(
    ("test", "missing"),
    [
        ("tests/conversation/test_mrmp.py::test_the_dev_split_reads_without_marks",
         "the MRMP corpus not found: {data}/mrmp/dialogues/dev is not a folder."),
        ("tests/decide/training/test_models_cli.py::test_training_is_deterministic",
         "the MRMP corpus not found: {data}/mrmp/dialogues/train is not a folder."),
    ],
    ids=["conversation", "decide"],
)
def test_under_ci_a_corpus_test_without_its_corpus_fails_saying_where_to_put_it(
    tmp_path: Path, test: str, missing: str
) -> None:
    data = tmp_path / "no-corpora"
    env = {**os.environ, "CI": "true", "KUUKI_DATA_DIR": str(data)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", test],
        capture_output=True, text=True, check=False, cwd=REPO, env=env, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    said = " ".join(proc.stdout.split())  # pytest wraps long lines
    assert "1 error" in said  # the fixture that finds the corpus fails the test at setup
    assert missing.format(data=data) in said and "set KUUKI_DATA_DIR to the folder" in said
