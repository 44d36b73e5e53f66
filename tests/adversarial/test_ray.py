"""On a Ray cluster a sandbox must not reach Ray: whoever reaches a Ray node's ports can
run code on the cluster. The isolated network still reaches the host's non-loopback
addresses (where Ray listens) and the LAN, so no sandbox network is allowed there."""

from __future__ import annotations

import pytest

from intercode.cli import main
from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError


@pytest.mark.parametrize("flag", ["--network", "--host-network"])
def test_a_sandbox_network_is_refused_on_ray(flag, capsys, tmp_path):
    code = main(["eval", "ctf", "--dataset", "intercode-ctf", "--tasks", "0", flag,
                 "--executor", "ray", "--output", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "refused on Ray" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("network", [True, "host"])
def test_an_env_pool_refuses_a_sandbox_network(network):
    from intercode.integrations.raycluster import EnvPool

    with pytest.raises(ConfigError, match="refused on Ray"):
        EnvPool("ctf", "intercode-ctf", size=1, settings=EnvSettings(network=network))
