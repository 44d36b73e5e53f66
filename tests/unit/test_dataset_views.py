"""Named views of datasets: without known-issue tasks, and seeded splits that never
overlap; and the turn limit the Gymnasium ids carry."""

from __future__ import annotations

import pytest

from intercode.datasets import load_dataset
from intercode.datasets.known_issues import known_issues
from intercode.errors import ConfigError


def ids(name: str) -> set[tuple[str, int]]:
    return {(t.source, t.source_index) for t in load_dataset(name)}


def test_clean_leaves_out_every_known_issue_and_nothing_else() -> None:
    full, clean = load_dataset("nl2bash"), load_dataset("nl2bash:clean")
    known = known_issues("nl2bash", "bash")
    assert known and len(clean) == len(full) - len(known)
    kept = {(t.source, t.source_index) for t in full if t.index not in known}
    assert ids("nl2bash:clean") == kept
    assert [t.index for t in clean] == list(range(len(clean)))
    assert all(t.dataset == "nl2bash:clean" for t in clean)


@pytest.mark.parametrize("seed", [0, 7])
def test_train_and_test_never_overlap_and_cover_the_dataset(seed: int) -> None:
    suffix = f":seed={seed}" if seed else ""
    train, test = ids(f"nl2bash:train{suffix}"), ids(f"nl2bash:test{suffix}")
    assert not train & test and train | test == ids("nl2bash")
    assert 0.7 < len(train) / 200 < 0.9  # about 80 %
    # a task keeps its side in the clean view: the split is a function of the task
    assert ids(f"nl2bash:clean:train{suffix}") == train & ids("nl2bash:clean")


def test_other_seeds_and_fractions_make_other_splits() -> None:
    assert ids("nl2bash:train") != ids("nl2bash:train:seed=1")
    assert len(ids("nl2bash:train:frac=0.5")) < len(ids("nl2bash:train"))
    assert ids("spider-dev:test") <= ids("spider-dev")


@pytest.mark.parametrize(("name", "said"), [
    ("nl2bash:bogus", "unknown view word"), ("nl2bash:train:test", "not both"),
    ("nl2bash:seed=3", "choose a split"), ("nl2bash:train:frac=2", "unknown view word"),
    ("nope:clean", "unknown dataset")])
def test_bad_views_are_one_line_errors(name: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as err:
        load_dataset(name)
    assert "\n" not in str(err.value)


def test_a_view_works_through_make_and_the_gym_ids_carry_the_turn_limit() -> None:
    import gymnasium as gym

    import intercode

    env = intercode.make("bash", dataset="nl2bash:clean:test")
    try:
        assert env.unwrapped.dataset.name == "nl2bash:clean:test"  # type: ignore[attr-defined]
        assert env.spec is not None and env.spec.max_episode_steps == 10
    finally:
        env.close()
    for name in ("bash", "sql", "python", "ctf"):
        assert gym.spec(f"intercode/{name}-v0").max_episode_steps == 10
    assert gym.spec("intercode/swe-v0").max_episode_steps == 30
    env = intercode.make("bash", dataset="bash-demo", max_turns=3)
    try:
        assert env.spec is not None and env.spec.max_episode_steps == 3
    finally:
        env.close()
