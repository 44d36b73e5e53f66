"""The strategies as Inspect solvers: the paper's Try Again loop, and Inspect's own
``react`` agent with ``execute`` / ``submit`` tools that act in the episode's environment."""

from __future__ import annotations

from inspect_ai.agent import AgentSubmit, as_solver, react
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef, ToolError

from intercode.agents import prompts
from intercode.agents.llm import OBSERVATION_LIMITS
from intercode.agents.parsing import parse_code, truncate_observation
from intercode.benchmarks import get
from intercode.integrations.inspectai.episode import Episode
from intercode.integrations.inspectai.running import Running, Setup, blocking

__all__ = ["STRATEGIES", "react_agent", "try_again"]

STRATEGIES = ("try_again", "react")


@solver
def try_again(env: str, dataset: str, turns: int = 10, sql_backend: str = "sqlite",
              network: bool = False, sandbox: str = "bwrap") -> Solver:
    """The paper's Try Again: the model sees each action's output and reward (CTF: the
    output) and tries again until the reward is 1 or ``turns`` replies were made."""
    setup = Setup(env, dataset, sql_backend, network, sandbox)
    benchmark = get(env)
    chars, rows = OBSERVATION_LIMITS["try-again"]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        async with Running(setup, state, score_each_turn=True) as episode:
            query = episode.query
            state.messages = [ChatMessageSystem(content=prompts.try_again_system(env)),
                              ChatMessageUser(content=prompts.try_again_query(env, query))]
            while not episode.done and episode.turns < turns:
                state = await generate(state)
                parsed = parse_code(state.output.completion, env)
                if parsed.kind == "none":
                    step = episode.invalid()
                else:
                    step = await blocking(episode.act, parsed.text)
                if episode.done or episode.turns >= turns:
                    break
                shown = step.observation
                failed = benchmark.prompting.failed_definition
                if (failed is not None and parsed.kind == "code"
                        and parsed.text.lstrip().startswith("def ")
                        and step.reward is not None and step.reward < 1):
                    shown = failed
                shown = truncate_observation(shown, chars, rows)
                state.messages.append(ChatMessageUser(content=prompts.try_again_observation(
                    env, query, shown, step.reward)))
        return state

    return solve


def instructions(env: str) -> str:
    """The react agent's instructions for benchmark ``env``."""
    d = get(env).prompting
    if get(env).parsing.submit_argument:
        how = ("call submit(answer) with the answer (a flag, or the name of the function "
               "you defined) to hand it in")
    else:
        how = ("call submit() when the last output (or the current state) answers the "
               "question; the state is then scored")
    return (f"Answer the question by running {d.language} code on a {d.setting} with the "
            f"execute(code) tool, which shows you the code's output. When you are done, "
            f"{how}.\n" + d.try_again_note)


def episode_tools(env: str, episode: Episode, turns: int) -> tuple[ToolDef, ToolDef]:
    """``execute(code)`` and ``submit(answer)``, acting in ``episode``."""
    chars, rows = OBSERVATION_LIMITS["react"]
    language = get(env).prompting.language

    async def execute(code: str) -> str:
        if episode.done:
            raise ToolError("the episode has ended")
        if episode.turns >= turns:
            raise ToolError(f"the turn limit ({turns}) is reached: call submit")
        step = await blocking(episode.act, code)
        return truncate_observation(step.observation, chars, rows) or prompts.NO_OUTPUT

    async def submit(answer: str = "") -> str:
        step = await blocking(episode.submit, answer)
        if not episode.done:  # a wrong flag: say so, the agent goes on
            raise ToolError(step.observation or "that answer is not right")
        return answer

    return (ToolDef(execute, name="execute",
                    description=f"Run {language} code in the task's environment and "
                                "return its output.",
                    parameters={"code": f"The {language} code to run."}),
            ToolDef(submit, name="submit", description="Hand in the answer; ends the task.",
                    parameters={"answer": "The answer (a flag or a function name), or "
                                          "empty when the state is the answer."}))


@solver
def react_agent(env: str, dataset: str, turns: int = 10, sql_backend: str = "sqlite",
                network: bool = False, sandbox: str = "bwrap") -> Solver:
    """Inspect's ``react`` agent with the episode's ``execute`` and ``submit`` tools; the
    reward is the submitted one, or the final state's if it never submits."""
    setup = Setup(env, dataset, sql_backend, network, sandbox)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        async with Running(setup, state, score_each_turn=False) as episode:
            execute, submit = episode_tools(env, episode, turns)
            agent = react(prompt=instructions(env), tools=[execute],
                          submit=AgentSubmit(tool=submit, answer_only=True))
            state = await as_solver(agent)(state, generate)
        return state

    return solve
