"""The test session's own set-up: required packages are checked by name, the device is pinned."""

from __future__ import annotations

import os

from conftest import missing_required_packages


def test_a_missing_required_package_is_named(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy==2.4.6", "no-such-package-lem==1.0", "pyyaml>=6"]\n',
        encoding="utf-8",
    )
    assert missing_required_packages(tmp_path / "pyproject.toml") == ["no-such-package-lem==1.0"]


def test_the_project_requirements_are_installed():
    assert missing_required_packages() == []


def test_tests_see_no_gpu_unless_asked():
    import torch

    if os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and not torch.cuda.is_available()
