"""The library on its own: the wheel installed without extras into a fresh virtual environment trains a TRL
user's script with PODSGRPOTrainer (`slow`: a fresh venv installs torch, TRL and what TRL brings, minutes).

torch comes as the running build (`torch==<version>`, which pip takes from this machine's wheel where one lies
on disk), the rest from the package index through the wheel's own `Requires-Dist`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "library_user_script.py"


def _core_requirements(wheel: Path) -> list[str]:
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    lines = zipfile.ZipFile(wheel).read(meta).decode().splitlines()
    return [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Requires-Dist:") and "extra ==" not in ln]


@pytest.mark.slow
def test_the_wheel_without_extras_trains_a_users_trl_script(tmp_path):
    import torch

    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    res = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", str(REPO), "-w", str(tmp_path / "dist")],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("pods_rl-*.whl")
    core = {r.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip() for r in _core_requirements(wheel)}
    assert core == {"torch", "trl", "transformers", "accelerate"}, core

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / "bin" / "python")
    vpip = [py, "-m", "pip", "--disable-pip-version-check", "-q"]
    torch_pin = f"torch=={torch.__version__.split('+')[0]}"
    for spec in ([torch_pin], [str(wheel)]):  # the wheel without extras: its core Requires-Dist only
        res = subprocess.run([*vpip, "install", *spec], capture_output=True, text=True, timeout=1800)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    res = subprocess.run([py, str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["steps"] == 3
    assert len(got["kept_reward"]) == 3
    assert Path(got["pods_module"]).is_relative_to(env_dir)  # the installed library, not the checkout
    assert got["extras_present"] == [], got["extras_present"]  # no reproduction dependency came along
