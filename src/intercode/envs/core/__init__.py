"""The environments' workings without Gymnasium: :class:`~intercode.envs.core.base.EnvCore`
and the built-in environments' cores (``BashCore``, ``SqlCore``, ``PythonCore``,
``CtfCore``, ``SweCore``). Each public environment (``BashEnv``, ...) is its core with
Gymnasium's base class and spaces added (:class:`intercode.envs.base.IntercodeEnv`). A
run's workers use the cores: they start without importing Gymnasium and numpy."""

__all__: list[str] = []
