"""stages() and stage(): what `imgpipe plugins` says."""
import subprocess

import pytest

import imgpipe


def test_stages_match_cli(cli):
    names = [s.name for s in imgpipe.stages()]
    listing = subprocess.run([cli, "plugins"], capture_output=True, text=True, check=True).stdout
    for name in names:
        assert name in listing
    assert len(names) == len(set(names))


def test_median_parameters():
    median = imgpipe.stage("median")
    assert median.name == "median" and median.summary
    params = {p.name: p for p in median.params}
    assert params["radius"].type == "int" and params["radius"].default == "1"
    assert params["border"].type == "enum"
    assert "replicate" in params["border"].choices.split("|")
    assert all(p.help for p in median.params)


def test_stage_without_parameters():
    assert imgpipe.stage("transpose").params == []


def test_unknown_stage():
    with pytest.raises(ValueError) as caught:
        imgpipe.stage("meidan")
    assert "median" in str(caught.value)


def test_version():
    assert imgpipe.version() == "0.1.0"
    assert imgpipe._imgpipe.version_number() == imgpipe._imgpipe.VERSION
