"""stages() and stage(): what `imgpipe plugins` says."""
import os
import shutil
import subprocess
import sys

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
    with pytest.raises(imgpipe.PipelineError) as caught:
        imgpipe.stage("meidan")
    assert "median" in str(caught.value) and caught.value.suggestion == "median"
    assert isinstance(caught.value, ValueError)


def test_device_array_not_made_from_python():
    with pytest.raises(TypeError):
        imgpipe.DeviceArray()


def test_version():
    assert imgpipe.version() == "0.1.0"
    assert imgpipe._imgpipe.version_number() == imgpipe._imgpipe.VERSION


def test_plugins_not_looked_for_beside_the_interpreter(tmp_path):
    """A system imgpipe's plugins in <python's prefix>/lib/imgpipe/plugins must not clash with the
    package's: the library looks beside the program only when linked into it."""
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    shutil.copy(os.path.realpath(sys.executable), python)
    plugins = tmp_path / "lib" / "imgpipe" / "plugins"
    plugins.mkdir(parents=True)
    shutil.copy(os.path.join(os.path.dirname(imgpipe.__file__), "plugins", "median.so"), plugins)
    env = dict(os.environ, PYTHONHOME=sys.base_prefix,
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(imgpipe.__file__))] + sys.path[1:]))
    env.pop("IMGPIPE_PLUGIN_PATH", None)
    code = "import imgpipe, numpy; print(imgpipe.Pipeline('median radius=1')(numpy.zeros((5, 5), numpy.uint8)).shape)"
    run = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and "(5, 5)" in run.stdout, run.stderr
