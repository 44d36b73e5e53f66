"""The upstream data files intercode uses, pinned by revision and sha256."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FILES", "REPOSITORY", "REVISION", "DataFile"]

REPOSITORY = "princeton-nlp/intercode"
REVISION = "c3e46d827cfc9d4c704ec078f7abf9f41e3191d8"


@dataclass(frozen=True)
class DataFile:
    """One file of the upstream repository.

    ``upstream`` is its path in the repository; ``mirror`` its path in the flat
    mirror layout of ``shared/datasets/intercode`` (both layouts are accepted).
    A file is pinned by its ``sha256`` or, for a large file known only by the pinned
    commit's tree, by its git ``blob`` id (``sha256`` empty, ``size`` 0: unknown).
    """

    upstream: str
    mirror: str
    sha256: str
    size: int
    blob: str = ""

    @property
    def pin(self) -> str:
        """What the content is checked against (``sha256:...`` or ``blob:...``)."""
        return f"sha256:{self.sha256}" if self.sha256 else f"blob:{self.blob}"


def _f(upstream: str, mirror: str, sha256: str, size: int) -> DataFile:
    return DataFile(upstream, mirror, sha256, size)


def _blob(upstream: str, mirror: str, blob: str) -> DataFile:
    """A large file known only by its git blob id in the pinned commit's tree."""
    return DataFile(upstream, mirror, "", 0, blob)


FILES: dict[str, DataFile] = {
    "nl2bash_fs_1": _f("data/nl2bash/nl2bash_fs_1.json", "bash/nl2bash_fs_1.json",
                       "60f88e1aacc7ebba535093f9890c5c33203f4e5f32958e0e94fbe90ec4f01c82", 13588),
    "nl2bash_fs_2": _f("data/nl2bash/nl2bash_fs_2.json", "bash/nl2bash_fs_2.json",
                       "8f4ce24e535fab782fda607e37db2ae1d6c5f99993c638d1ac0a7e0b542f633e", 11158),
    "nl2bash_fs_3": _f("data/nl2bash/nl2bash_fs_3.json", "bash/nl2bash_fs_3.json",
                       "a2d4ec8bc7ad69a4e2fb3eb84033994cf65ee9cfb355e3e63099df67a339b2e1", 11264),
    "nl2bash_fs_4": _f("data/nl2bash/nl2bash_fs_4.json", "bash/nl2bash_fs_4.json",
                       "ce41b89450f87765a02a51df259ca0c1762e8249185c022adb089147e2c16200", 4028),
    "bash_test_queries": _f("data/nl2bash/test_queries.json", "bash/test_queries.json",
                            "d24a7a1eb61c2621c48a42f942d08f6aa02066630ab49c2a07de2530a226e0aa",
                            4921),
    "setup_nl2b_fs_1": _f("docker/bash_scripts/setup_nl2b_fs_1.sh", "bash/setup_nl2b_fs_1.sh",
                          "02b9a2206d809a9fca03b755e61b94618248a400fd3132ac61d32b6f3009dd3f", 4018),
    "setup_nl2b_fs_2": _f("docker/bash_scripts/setup_nl2b_fs_2.sh", "bash/setup_nl2b_fs_2.sh",
                          "05c3109c4e9999e661d66c6d74137f0238b88017ec9cf884abdda0499e94ff1d", 3280),
    "setup_nl2b_fs_3": _f("docker/bash_scripts/setup_nl2b_fs_3.sh", "bash/setup_nl2b_fs_3.sh",
                          "5e8d9f832f272c31dfb73567e75d33efb970d4e4bf9a8e691582d4fa09422d09", 3055),
    "setup_nl2b_fs_4": _f("docker/bash_scripts/setup_nl2b_fs_4.sh", "bash/setup_nl2b_fs_4.sh",
                          "c5fb550aa1578fe2454e8ab06221165df90311231cb71d3d9b0ce036a8235274", 60),
    "setup_fs": _f("docker/bash_scripts/setup_fs.sh", "bash/setup_fs.sh",
                   "e9f0d2d8854f7c00a6a9ac5ade0479d6dc9d824786d355652b0f094331a617b0", 2128),
    "docker_gitignore": _f("docker/docker.gitignore", "bash/docker.gitignore",
                           "5479a1cafa260c77e836e8601ba9a345d39df777dc9cb07d6a93f0ac29b69166", 100),
    "results_bash_fs_1": _f(
        "data/results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json",
        "results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json",
        "3ece47365a5ed12660627878b95326661c900c6a8dc90a19a60fedd5bce864f1", 2041281),
    "results_bash_fs_3": _f(
        "data/results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_3.json",
        "results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_3.json",
        "18580674d510bfaa346bb80e7da5377323317427fd708372aa56f4085e054c6c", 227129),
    "results_bash_fs_4": _f(
        "data/results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json",
        "results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json",
        "0e7d10b719b994efc9472098760b69e4771ed43a588ce80e2b8f547f88c4077c", 74009),
    "spider_dev": _f("data/sql/spider/ic_spider_dev.json", "sql/ic_spider_dev.json",
                     "68c9ecb0692c80770f46c724cc073ea76be4f301a294caa532c050546948128e", 1001475),
    "spider_dbs": _f("data/sql/spider/ic_spider_dbs.sql", "sql/ic_spider_dbs.sql",
                     "61f6e8000cb5bb696f123fa55e111acdcd8da7eca64f452a36fd1a6e5fb1781a", 412090),
    # git blob ids in the pinned tree: 1a5916c1345378ef1c2ec21da5e85528dabb5061 (tasks),
    # 26e235a422f991ef961972ab5002159b1875f482 (dump), 6f423670c8713a89844e7e0f6114bf2574c56978
    # (BIRD tasks): the sha256 below was taken of files with those blob ids
    "wikisql_dev": _f("data/sql/wikisql/ic_wikisql_dev.json", "sql/ic_wikisql_dev.json",
                      "70f8f907c9c7b101d74910c03ae4c27b21ddc83b7441588a9e0f2a909958c2cf", 42984),
    "wikisql_dbs": _f("data/sql/wikisql/ic_wikisql_dev.sql", "sql/ic_wikisql_dev.sql",
                      "407641b3b9f38dc1e10ce8914f6932b2ef0e93725ebb9937aea99582027e2afe", 108534),
    "bird_dev": _f("data/sql/bird/ic_bird.json", "sql/ic_bird.json",
                   "05fb4d4402a589b8a7e6c7048b65fbe0d89300baf8b09b02c20c64500bdd9e21", 218462),
    "bird_dbs": _blob("data/sql/bird/ic_bird_dbs.sql", "sql/ic_bird_dbs.sql",
                      "a968c44e546358ed6f5eb8ee8fdd6827e6e3d18f"),
    "results_sql": _f(
        "data/results/sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json",
        "results/sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json",
        "c19e6cb7e2fd3e64ff343a4980d59addc9aacded87f3e80a8eb0ac3f9bbedaf5", 3912527),
    "mbpp": _f("data/python/mbpp/ic_mbpp.json", "python/ic_mbpp.json",
               "4995ef1997ae7ee78c13b57bdba5c68c7989bbd31738837cc5f60c455ec0bcc7", 535519),
    # APPS test problems (upstream commits a subset; pinned by the commit's tree alone)
    "apps": DataFile("data/python/apps/ic_apps.json", "python/ic_apps.json", "", 0,
                     blob="32264df6ccc121f6acb5753f54e6bc91e696f258"),
    "results_python": _f(
        "data/results/python/gpt-3.5/ic_python_multiturn_gpt-3.5_7_turns.json",
        "results/python/gpt-3.5/ic_python_multiturn_gpt-3.5_7_turns.json",
        "c1ce7cab3bf8b0e48c6349fd2eb0cccbe2727a14c95c6ae5f8e7f40feea4ebf3", 158652),
}
