"""A run on the docker backend records the image its sandboxes ran (config.json), a resume
on another image is refused, and the Bash gold cache keys on the image's content."""

from __future__ import annotations

import json

import pytest
from backends import need

from intercode.envs.bash import BashEnv
from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError
from intercode.runner.run import RunConfig, execute
from intercode.sandbox import rootfs


@pytest.fixture(autouse=True)
def _docker():
    need("docker")


def run(out, tasks=(0,), resume=False):
    return execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=tasks,
                             workers=1, output=out, resume=resume,
                             settings=EnvSettings(sandbox="docker")), progress=False)


def test_the_run_records_its_image_and_resumes_only_on_it(tmp_path):
    out = tmp_path / "run"
    run(out)
    root = json.loads((out / "config.json").read_text())["rootfs"]
    assert root["kind"] == "image" and root["id"].startswith("sha256:")
    pinned = rootfs.describe(rootfs.default_root("base"))
    assert root["identity"] == pinned["identity"]  # made from the pinned root of bwrap runs
    run(out, tasks=(0, 1), resume=True)  # the same image: fine
    config = json.loads((out / "config.json").read_text())
    config["rootfs"] = {**root, "id": "sha256:" + "0" * 64, "identity": "1" * 64}
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=r"cannot resume: the run used the image .*--image"):
        run(out, tasks=(0, 1, 2), resume=True)


def test_the_gold_cache_keys_on_the_image(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    monkeypatch.delenv("INTERCODE_GOLD_CACHE", raising=False)
    env = BashEnv("bash-demo", backend="docker")
    try:
        env.reset(options={"task": 0})
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
        image_id = env._sandbox("agent").image_id
        assert image_id and image_id.startswith("sha256:")
    finally:
        env.close()
    (entry,) = sorted((tmp_path / "gold").rglob("*.json"))
    assert json.loads(entry.read_text())["key"]["rootfs"] == f"image:{image_id}"
