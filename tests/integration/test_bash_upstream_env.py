"""--upstream-quirks episodes start as upstream's reset left its container, and score a
path without a "." as its missing md5deep did; the default mode keeps the prepared tree."""

from __future__ import annotations

import pytest

from intercode.datasets.user import load_user_dataset
from intercode.envs.bash import BashEnv

SETUP = """mkdir -p /w/empty/deeper /w/full /w/bin
echo a > /w/full/a.txt
echo b > /w/full/noext
echo c > /w/full/old.txt
touch -m -t 202001010000.00 /w/full/old.txt
"""
TASKS = [
    '{"query": "empty", "gold": "find /w -empty | sort", "setup": "setup.sh"}',
    '{"query": "out", "gold": "mkdir /w/out && echo gold > /w/out/result", "setup": "setup.sh"}',
    '{"query": "dot", "gold": "echo gold > /w/out.txt", "setup": "setup.sh"}',
    '{"query": "old", "gold": "find /w -type f -mtime +31 -delete", "setup": "setup.sh"}',
]


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "setup.sh").write_text(SETUP)
    (tmp_path / "tasks.jsonl").write_text("\n".join(TASKS) + "\n")
    return load_user_dataset(tmp_path / "tasks.jsonl", "bash")


def run(env: BashEnv, task: int, *actions: str) -> tuple[list[str], float]:
    env.reset(options={"task": task})
    outputs = [env.step(a)[0] for a in actions]
    return outputs, env.evaluate().reward


def test_empty_directories_are_gone_in_quirks_mode_only(dataset):
    for quirks, listed in ((True, "/w/bin\n"), (False, "/w/bin\n/w/empty/deeper\n")):
        env = BashEnv(dataset, upstream_quirks=quirks, gold_cache=False)
        try:
            outputs, reward = run(env, 0, "find /w -empty | sort")
            assert outputs == [listed] and reward == 1.0
            assert env._gold_cache is not None and env._gold_cache[1].output == listed
        finally:
            env.close()


def test_a_path_without_a_dot_matches_whatever_it_holds_in_quirks_mode(dataset):
    agent = "mkdir /w/out && echo agent > /w/out/result"
    env = BashEnv(dataset, upstream_quirks=True, gold_cache=False)
    try:
        assert run(env, 1, agent)[1] == 1.0  # `md5deep -r w/out/` failed on both sides
        assert run(env, 2, "echo agent > /w/out.txt")[1] == 0.67  # md5sum compared
    finally:
        env.close()
    env = BashEnv(dataset, gold_cache=False)
    try:
        assert run(env, 1, agent)[1] == 0.67
    finally:
        env.close()


def test_file_times_are_the_images_age_at_the_episodes_start(dataset):
    env = BashEnv(dataset, upstream_quirks=True, gold_cache=False)
    try:
        young = "find /w -type f -mmin +5 -mmin -60 | sort"
        old = "find /w -type f -mtime +7 | sort"
        unread = "find /w -type f -atime +1 | sort"
        for _episode in range(2):
            outputs, _ = run(env, 0, young, old, "cat /w/full/a.txt >/dev/null", unread)
            assert outputs == ["/w/full/a.txt\n/w/full/noext\n", "/w/full/old.txt\n",
                               "", ""]
    finally:
        env.close()
    env = BashEnv(dataset, gold_cache=False)
    try:
        for _episode in range(2):  # reads in the first episode change nothing in the next
            outputs, _ = run(env, 0, young, unread, "cat /w/full/a.txt", unread)
            assert outputs == ["", "/w/full/a.txt\n/w/full/noext\n/w/full/old.txt\n", "a\n",
                               "/w/full/noext\n/w/full/old.txt\n"]  # read: accessed now
    finally:
        env.close()


def test_the_golds_second_scoring_finds_the_files_its_first_deleted_written_anew(dataset):
    # upstream reset the gold's container before every scoring: git wrote the deleted
    # file anew (dated then), so the same gold deleted nothing the second time
    agent = "find /w -type f -mtime +31 -delete"
    with BashEnv(dataset, upstream_quirks=True, gold_cache=False) as env:
        env.reset(options={"task": 3})
        env.step(agent)
        first = env.evaluate()
        assert first.reward == 1.0 and first.info["diff_miss"] == []
        assert env.evaluate().reward == 1.0  # the same turn: the same scoring
        env.step("true")  # the next turn's scoring reset the gold's container
        second = env.evaluate()  # the agent's container was not reset: its deletion stays
        assert second.info["diff_extra"] == [["w/full/old.txt", "D"]]
        assert second.reward < 1.0
        env.reset(options={"task": 3})  # next episode: both containers wrote it anew
        env.step(agent)
        assert env.evaluate().reward == 1.0
    with BashEnv(dataset, gold_cache=False) as env:
        env.reset(options={"task": 3})
        env.step(agent)
        assert env.evaluate().reward == 1.0
        env.step("true")
        assert env.evaluate().reward == 1.0


def test_the_directories_the_images_build_wrote_are_as_old_as_the_image_or_gone(dataset):
    listing = "find / -maxdepth 2 -path /proc -prune -o -type d -mmin -60 -print | sort"
    with BashEnv(dataset, upstream_quirks=True, gold_cache=False) as env:
        outputs, _ = run(env, 0, listing, "ls -d /tmp /mnt /var/tmp 2>&1")
        young = outputs[0].split()
        assert {"/", "/var", "/var/log", "/w"} <= set(young)
        assert "/boot" not in young and "/home" not in young
        # empty and not ignored: git clean -fd deleted them at upstream's first reset
        assert "/tmp" not in young and "cannot access '/tmp'" in outputs[1]
        assert "cannot access '/mnt'" in outputs[1] and "\n/var/tmp\n" in outputs[1]
    with BashEnv(dataset, gold_cache=False) as env:
        outputs, _ = run(env, 0, listing, "ls -d /tmp /mnt")
        assert not {"/tmp", "/var/log", "/w"} & set(outputs[0].split())
        assert outputs[1] == "/mnt\n/tmp\n"


def test_an_episode_finds_what_earlier_episodes_changed_written_anew(dataset):
    # upstream's containers lived on: its reset wrote the deleted file anew, dated then
    old = "find /w -type f -mtime +31 | sort"
    with BashEnv(dataset, upstream_quirks=True, gold_cache=False) as env:
        assert run(env, 0, old)[0] == ["/w/full/old.txt\n"]
        run(env, 3, "rm /w/full/old.txt")
        assert run(env, 0, old)[0] == [""]  # the agent's container: written anew
        env.reset(options={"task": 3})  # the gold's container: its earlier scoring
        env.step("true")
        assert env.evaluate().info["diff_miss"] == []  # deleted it: now young
    with BashEnv(dataset, upstream_quirks=True, gold_cache=False) as fresh:
        assert run(fresh, 0, old)[0] == ["/w/full/old.txt\n"]


def test_commands_get_the_environment_docker_exec_gave_upstreams(dataset):
    with BashEnv(dataset, upstream_quirks=True, gold_cache=False) as env:
        outputs, _ = run(env, 0, "env | cut -d= -f1 | sort | tr '\\n' ' '; echo ~",
                         "locale 2>&1 | grep LC_CTYPE")
        assert outputs == ["HOME HOSTNAME PATH PWD SHLVL _ /root\n", 'LC_CTYPE="POSIX"\n']
    with BashEnv(dataset, gold_cache=False) as env:
        outputs, _ = run(env, 0, "echo $LANG ~")
        assert outputs == ["C.UTF-8 /home/agent\n"]
