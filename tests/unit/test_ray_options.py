"""`--executor ray` options: bad values and a missing extra are one line (no Ray needed)."""

from __future__ import annotations

import sys

import pytest

from intercode.cli import main
from intercode.errors import ConfigError
from intercode.integrations.raycluster.cluster import check_address


def run_cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["eval", "bash", "--dataset", "bash-demo", "--no-progress", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("address", ["auto", "local", "ray://10.0.0.1:10001",
                                     "head.example.org:6379", "[::1]:6379", None])
def test_addresses_ray_understands(address):
    assert check_address(address) == address


@pytest.mark.parametrize("address", ["", "ray://", "ray://host", "host:0", "host:99999",
                                     "http://host:1", "a b:1", "auto;rm -rf /"])
def test_bad_addresses_are_one_line(address, capsys, tmp_path):
    with pytest.raises(ConfigError, match="bad --ray-address"):
        check_address(address)
    code, err = run_cli(capsys, "--executor", "ray", "--ray-address", address,
                        "--output", str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1 and "--ray-address" in err
    assert not (tmp_path / "run").exists()


def test_ray_options_need_the_ray_executor(capsys, tmp_path):
    code, err = run_cli(capsys, "--ray-address", "auto", "--output", str(tmp_path / "run"))
    assert code == 2 and "--ray-address applies only to --executor ray" in err
    code, err = run_cli(capsys, "--ray-actor-cpus", "0.5", "--output", str(tmp_path / "run"))
    assert code == 2 and "--ray-actor-cpus applies only to --executor ray" in err
    for bad in ("0", "-1", "nan", "x"):
        with pytest.raises(SystemExit):
            run_cli(capsys, "--executor", "ray", "--ray-actor-cpus", bad)
        assert "--ray-actor-cpus" in capsys.readouterr().err
    code, err = run_cli(capsys, "--executor", "ray", "--agent", "human",
                        "--output", str(tmp_path / "run"))
    assert code == 2 and "not with --executor ray" in err
    with pytest.raises(SystemExit) as caught:
        run_cli(capsys, "--executor", "spark")
    assert caught.value.code == 2 and "invalid choice: 'spark'" in capsys.readouterr().err


def test_without_the_extra_one_line_names_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    code, err = run_cli(capsys, "--executor", "ray", "--output", str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1
    assert "pip install 'intercode[ray]'" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
    from intercode.integrations.raycluster import EnvPool

    with pytest.raises(ConfigError, match=r"intercode\[ray\]"):
        EnvPool("bash", "bash-demo", size=1)


def test_intercode_imports_no_ray():
    """A core install never imports Ray: only --executor ray and EnvPool do."""
    import subprocess

    code = ("import sys, intercode, intercode.cli, intercode.runner.run, intercode.integrations.raycluster, "
            "intercode.integrations.raycluster.executor; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
