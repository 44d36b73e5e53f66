"""The resource limits of the supervisor, and of every process it starts, kept as at boot.

Every process of a sandbox runs as one user, and the kernel lets a process lower the
limits of any other of the same user (``prlimit --pid 1 --nproc=2:2``): the seccomp
filter refuses that (see ``sandbox/seccomp.py``). Behind it, the supervisor takes its
own limits once set up (:func:`current`) as the limits of everything it starts, and
sets them again (:func:`apply`) at every request, before it starts a shell, and in the
interpreters and SQL engines it forks, so that nothing an episode did to them reaches
the next one. A hard limit cannot be raised again without a privilege: a supervisor
that finds one of its own lowered at a reset says the sandbox must be replaced
(:class:`LimitsLost`).
"""

import resource

NAMES = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS",
         "LOCKS", "SIGPENDING", "MSGQUEUE", "NICE", "RTPRIO", "RTTIME")
# Linux's numbers (x86-64 and AArch64 alike): Python's module has no RLIMIT_LOCKS
ALL = tuple(getattr(resource, "RLIMIT_" + n, number) for number, n in enumerate(NAMES))
_get, _set = resource.getrlimit, resource.setrlimit


class LimitsLost(RuntimeError):
    """A hard limit of the supervisor is below its boot value: the sandbox is spent."""

    restart = True  # the supervisor's reply says so (see main.Supervisor._answer)


def current():
    """This process's limits, ``(soft, hard)`` of each resource of :data:`ALL`."""
    return tuple(_get(res) for res in ALL)


def apply(wanted, strict=False):
    """Give this process the limits ``wanted`` (from :func:`current`), each that differs.

    A limit that cannot be set (a hard limit lowered below it: only a privileged process
    raises one) is left as high as it goes; ``strict`` raises :class:`LimitsLost` then."""
    lost = []
    for index, res in enumerate(ALL):
        want = wanted[index]
        have = _get(res)
        if have == want:
            continue
        try:
            _set(res, want)
        except (ValueError, OSError):
            lost.append(res)
            try:
                _set(res, (_lower(want[0], have[1]), have[1]))
            except (ValueError, OSError):
                pass
    if lost and strict:
        names = [NAMES[ALL.index(res)] for res in lost]
        raise LimitsLost("the supervisor's resource limits were lowered (%s): the sandbox "
                         "must be replaced" % ", ".join(names))


def _lower(a, b):
    """The lower of two limits (:data:`resource.RLIM_INFINITY` is above every other)."""
    if a == resource.RLIM_INFINITY:
        return b
    if b == resource.RLIM_INFINITY:
        return a
    return min(a, b)
