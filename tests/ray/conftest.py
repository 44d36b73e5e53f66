"""A real multi-node Ray cluster on this machine, started once for the tests here and
shut down right after the last of them (see :func:`pytest_runtest_teardown`): the rest of
the suite must not run as its driver (a Ray 2.60 driver that sees a node die can end its
whole process on an internal check, taking the test run with it).

Ray is in the ``test`` extra (``scripts/setup test``). Without it these tests skip,
except where INTERCODE_REQUIRE_RAY is set (CI), where they fail.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import intercode

NODES = 3
CPUS_PER_NODE = 1
STORE = 80 * 1024 * 1024  # bytes of object store per node: records are small
SRC = str(Path(intercode.__file__).resolve().parents[1])


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        if os.environ.get("INTERCODE_REQUIRE_RAY"):
            pytest.fail("ray is not installed but INTERCODE_REQUIRE_RAY is set "
                        "(pip install 'intercode[ray]')")
        pytest.skip("ray is not installed (pip install 'intercode[ray]')")
    return ray


def node_args(**more: Any) -> dict[str, Any]:
    """A small node: one CPU, a small object store, no dashboard."""
    return {"num_cpus": CPUS_PER_NODE, "object_store_memory": STORE, **more}


@pytest.fixture(scope="session")
def ray_env() -> Any:
    """Ray, with the intercode under test first on PYTHONPATH (its source folder), which
    Ray's processes, and the commands the tests start, inherit."""
    ray = _ray()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [SRC, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return ray


@pytest.fixture(scope="session")
def ray_cluster(ray_env: Any) -> Iterator[Any]:
    """A head and two worker nodes (one CPU each); this process is its driver."""
    ray = ray_env
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True,
                      head_node_args=node_args(include_dashboard=False))
    for _ in range(NODES - 1):
        cluster.add_node(**node_args())
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level=logging.WARNING, log_to_driver=False)

    def stop() -> None:
        if _CLUSTERS:
            _CLUSTERS.clear()
            ray.shutdown()  # the driver leaves first, then the nodes go
            cluster.shutdown()

    _CLUSTERS.append(stop)
    try:
        yield cluster
    finally:
        stop()


_CLUSTERS: list[Any] = []  # the running cluster's stop(), while there is one


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After the last test of this folder (and its fixtures' teardown), stop the cluster:
    a session fixture would keep it, and this process as its driver, until the run ends."""
    result = yield
    here = Path(__file__).parent
    if _CLUSTERS and (nextitem is None or here not in Path(nextitem.path).parents):
        _CLUSTERS[0]()
    return result


BROKEN = {"nobwrap": {"INTERCODE_BWRAP": "/nonexistent/bwrap"},
          "nodata": {"INTERCODE_DATA_MIRROR": "/nonexistent/mirror"}}


@pytest.fixture(scope="session")
def broken_node(ray_cluster: Any) -> Any:
    """``broken_node(name)``: a node (added once per session) without bubblewrap
    (``nobwrap``) or without the data (``nodata``). It has no CPUs: only actors that ask
    for its resource (``{name: 1}``) with ``num_cpus=0`` go there."""
    nodes: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in nodes:
            nodes[name] = ray_cluster.add_node(**node_args(num_cpus=0, resources={name: 1},
                                                         env_vars=BROKEN[name]))
            ray_cluster.wait_for_nodes()
        return nodes[name]

    return get


@pytest.fixture()
def add_node(ray_cluster: Any) -> Iterator[Any]:
    """Adds a node to the session's cluster for one test (removed at its end, unless
    the test removed it): ``add_node(resources=..., env_vars=...)``."""
    added: list[Any] = []

    def add(**kwargs: Any) -> Any:
        node = ray_cluster.add_node(**node_args(**kwargs))
        added.append(node)
        ray_cluster.wait_for_nodes()
        return node

    yield add
    for node in added:
        if node in ray_cluster.worker_nodes:
            ray_cluster.remove_node(node)
