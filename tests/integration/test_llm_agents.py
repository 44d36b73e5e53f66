"""The paper's strategies end to end: real client, local Chat Completions server, real envs."""

from __future__ import annotations

import json

import pytest

from intercode.agents import prompts
from intercode.agents.llm import PlanSolvePolicy, ReactPolicy, StrategyOptions, TryAgainPolicy
from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.envs.factory import create_env
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import Reply, ScriptedChatServer, sequence
from intercode.runner.episode import run_episode
from intercode.runner.run import RunConfig, execute

CASES = {"bash": ("bash-demo", tuple(range(8))), "sql": ("spider-dev", tuple(range(12))),
         "python": ("mbpp-prompt", tuple(range(10))),
         "ctf": ("intercode-ctf", (0, 3, 4, 5, 13, 23, 44)), "swe": ("swe-demo", (0, 1, 2))}
TURNS = {"single-turn": 1, "try-again": 10, "react": 10, "plan-solve": None}


def run(tmp_path, env, agent, server, tasks=None, workers=2, **kw):
    dataset, default = CASES[env]
    cfg = RunConfig(env=env, dataset=dataset, agent=agent, output=tmp_path / "run",
                    workers=workers, tasks=tasks or default, max_turns=TURNS[agent],
                    model=ModelConfig("scripted", base_url=server.url, retries=1, backoff=0.0),
                    **kw)
    summary = execute(cfg, progress=False)
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    return summary, {json.loads(x)["task"]: json.loads(x) for x in lines}


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(CASES))
@pytest.mark.parametrize("agent", sorted(TURNS))
def test_every_strategy_runs_on_every_environment(tmp_path, env, agent):
    dataset, tasks = CASES[env]
    with ScriptedChatServer(GoldResponder(load_dataset(dataset), detour=3)) as server:
        summary, records = run(tmp_path, env, agent, server)
    assert summary["errors"] == 0 and summary["ok"] == len(tasks)
    detoured = [t for t in tasks if t % 3 == 0]
    # single-turn: a detour reply (no code) is the only reply; the others solve the task,
    # except in CTF where the first reply looks around (`ls`)
    expected = len(tasks)
    if agent == "single-turn":
        expected = 0 if env == "ctf" else len(tasks) - len(detoured)
    assert summary["success"] == expected
    calls = 0
    for record in records.values():
        for turn in record["turns"]:
            assert turn["llm"]["calls"] >= 1 and turn["llm"]["prompt_tokens"] > 0
            assert ("reply" in turn["llm"] and turn["env_s"] is None) or turn["env_s"] >= 0
        calls += record["llm"]["calls"]
    assert summary["llm"]["calls"] == calls == len(server.requests)
    if agent == "plan-solve":
        assert all(r["extra"]["steps"] == ["Run the command that answers the question."]
                   for r in records.values())


def test_try_again_shows_output_reward_and_query_and_trims_the_dialogue():
    env = create_env("bash", "bash-demo")
    replies = ["```bash\nls /project\n```", "not code but run anyway",
               "```bash\necho one\n```", "```bash\necho two\n```"]
    with ScriptedChatServer(sequence(replies)) as server:
        policy = TryAgainPolicy("bash", ChatClient(ModelConfig("m", base_url=server.url)),
                                StrategyOptions(dialogue_limit=4))
        record = run_episode(env, 0, policy, max_turns=4)
        sent = server.requests
    env.close()
    task = load_dataset("bash-demo")[0]
    assert [m["role"] for m in sent[0]["messages"]] == ["system", "user"]
    assert sent[0]["messages"][0]["content"] == prompts.try_again_system("bash")
    assert sent[0]["messages"][1]["content"].startswith(f'Query: "{task.query}"')
    second = sent[1]["messages"]
    assert second[2] == {"role": "assistant", "content": "ls /project"}
    shown = second[3]["content"]
    assert shown.startswith("Bourne Shell Output: data\ndocs\nlogs\nsrc")
    assert f"Reward: {record.turns[0].reward:.2f}" in shown and task.query in shown
    # with a limit of 4, the query and system stay and only the 4 newest messages follow
    assert len(sent[3]["messages"]) == 6 and sent[3]["messages"][1] == sent[0]["messages"][1]
    assert [t.llm["reply"] for t in record.turns] == replies


def test_python_try_again_says_the_tests_failed():
    env = create_env("python", "mbpp-prompt")
    replies = ["```python\ndef remove_Occ(s, ch):\n    return s\n```", "```python\nx = 1\n```"]
    with ScriptedChatServer(sequence(replies)) as server:
        policy = TryAgainPolicy("python", ChatClient(ModelConfig("m", base_url=server.url)))
        run_episode(env, 0, policy, max_turns=2)
        last = server.requests[1]["messages"][-1]["content"]
    env.close()
    assert last.startswith(f"Python 3 Interpreter Output: {get('python').prompting.failed_definition}")


def test_ctf_try_again_hides_the_reward_and_a_wrong_flag_goes_on():
    env = create_env("ctf", "intercode-ctf")
    gold = load_dataset("intercode-ctf")[4].gold
    replies = ["ls", "submit picoCTF{guess}", "cat flag", f"submit {gold}"]
    with ScriptedChatServer(sequence(replies)) as server:
        policy = TryAgainPolicy("ctf", ChatClient(ModelConfig("m", base_url=server.url)))
        record = run_episode(env, 4, policy, max_turns=10)
        sent = server.requests
    env.close()
    assert sent[0]["messages"][1]["content"].startswith("Task: ")
    assert sent[1]["messages"][-1]["content"] == "Output: flag\n"
    assert sent[2]["messages"][-1]["content"].startswith("Output: The flag is wrong")
    assert all("Reward" not in m["content"] for r in sent for m in r["messages"][1:])
    assert record.reward == 1.0 and len(record.turns) == 4 and record.turns[1].submit


def test_react_sends_stop_sequences_and_numbers_observations():
    env = create_env("sql", "spider-dev")
    gold = load_dataset("spider-dev")[0].gold
    replies = ["Thought 1: I look at the tables.\nAction 1: execute[SHOW TABLES]",
               "Thought 2: I am unsure what to do.",
               f"Thought 3: Ask it.\nAction 3: execute[{gold}]\nObservation 3: [(6,)]",
               "Thought 4: Done.\nAction 4: submit"]
    with ScriptedChatServer(sequence(replies)) as server:
        policy = ReactPolicy("sql", ChatClient(ModelConfig("m", base_url=server.url)))
        record = run_episode(env, 0, policy, max_turns=10)
        sent = server.requests
    env.close()
    assert sent[0]["stop"] == ["\nObservation 1:", "\nObservation:"]
    assert "Examples:" in sent[0]["messages"][0]["content"]
    assert sent[1]["messages"][-1]["content"].startswith("Observation 1: [(")
    assert sent[2]["messages"][-1]["content"] == (
        "Observation 2: " + prompts.react_not_an_action("sql"))
    assert [t.valid for t in record.turns] == [True, False, True, True]
    assert record.turns[0].llm["thought"] == "I look at the tables."
    assert record.turns[3].submit and record.status == "ok" and record.reward == 1.0


def test_plan_solve_executes_each_step_then_repairs_only_while_unsolved():
    env = create_env("sql", "spider-dev")
    plan = "Plan:\n1. List the tables.\n2. Count the singers.\n"
    wrong = "```sql\nSELECT 1\n```"
    replies = [plan, "```sql\nSHOW TABLES\n```", wrong, wrong, wrong, wrong]
    with ScriptedChatServer(sequence(replies)) as server:
        policy = PlanSolvePolicy("sql", ChatClient(ModelConfig("m", base_url=server.url)),
                                 StrategyOptions(refine_turns=2))
        record = run_episode(env, 0, policy)
        sent = server.requests
    env.close()
    assert len(sent) == 5  # plan, 2 steps, 2 repairs
    assert [m["role"] for m in sent[1]["messages"]] == ["system", "user", "system", "user"]
    assert sent[1]["messages"][3]["content"] == "Step: List the tables."
    assert sent[2]["messages"][-1]["content"].startswith("Observation: [(")
    assert sent[2]["messages"][-1]["content"].endswith("Step: Count the singers.")
    assert all(plan not in m["content"] for m in sent[2]["messages"])
    assert sent[3]["messages"][-2]["content"] == prompts.refine_system("sql")
    assert record.extra["steps"] == ["List the tables.", "Count the singers."]
    assert len(record.turns) == 4 and record.reward < 1.0
    assert record.turns[0].llm["calls"] == 2  # the plan's call is counted with the first step

    env = create_env("sql", "spider-dev")
    gold = load_dataset("spider-dev")[0].gold
    with ScriptedChatServer(sequence(["1. Answer.", f"```sql\n{gold}\n```"])) as server:
        policy = PlanSolvePolicy("sql", ChatClient(ModelConfig("m", base_url=server.url)))
        record = run_episode(env, 0, policy)
        assert len(server.requests) == 2  # solved by the plan: no repairs
    env.close()
    assert record.reward == 1.0 and len(record.turns) == 1


def test_model_failures_are_errors_and_resume_runs_them_again(tmp_path):
    with ScriptedChatServer(sequence([Reply(status=500)])) as broken:
        summary, records = run(tmp_path, "bash", "try-again", broken, tasks=(0, 1, 2))
    assert summary["errors"] == 3 and summary["ok"] == 0
    assert all(r["status"] == "error" and r["reward"] is None for r in records.values())
    assert "ModelError" in records[0]["error"]
    with ScriptedChatServer(GoldResponder(load_dataset("bash-demo"), detour=0)) as good:
        summary, records = run(tmp_path, "bash", "try-again", good, tasks=(0, 1, 2),
                               resume=True)
    assert summary["ok"] == 3 and summary["success"] == 3 and summary["errors"] == 0


def test_a_refused_key_stops_the_run_without_scoring_zeros(tmp_path, monkeypatch):
    from intercode.runner.executors import RunAborted

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with (ScriptedChatServer(sequence(["x"]), api_key="sk-right") as server,
          pytest.raises(RunAborted, match="refused the credentials")):
        run(tmp_path, "bash", "try-again", server, tasks=tuple(range(8)))
    results = tmp_path / "run" / "results.jsonl"
    assert not results.exists() or results.read_text() == ""


def test_summary_breaks_results_down_by_hardness_and_turn(tmp_path):
    with ScriptedChatServer(GoldResponder(load_dataset("spider-dev"), detour=3)) as server:
        summary, records = run(tmp_path, "sql", "try-again", server)
    by = summary["by_category"]
    assert set(by) <= {"easy", "medium", "hard", "extra"}
    assert sum(g["episodes"] for g in by.values()) == 12
    assert summary["success_by_turn"]["1"] == pytest.approx(8 / 12)
    assert summary["success_by_turn"]["2"] == 1.0
    assert records[1]["category"] == load_dataset("spider-dev")[1].hardness
