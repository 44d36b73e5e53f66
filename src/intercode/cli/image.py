"""``intercode image build|list``: the sandbox's root file systems and Docker images."""

from __future__ import annotations

import argparse
from typing import Any

from intercode.benchmarks import get
from intercode.errors import IntercodeError

__all__ = ["add_image", "cmd_image"]


def add_image(sub: Any) -> None:
    """The ``image`` sub-command's parser (``build`` and ``list``)."""
    im = sub.add_parser("image", help="the sandbox's root file system and Docker images "
                                      "(docs/images.md)")
    images = im.add_subparsers(dest="image_command", metavar="COMMAND", required=True)
    ib = images.add_parser("build", help="build the pinned root file system of a profile "
                                         "(once; cached) and with --docker import it")
    ib.add_argument("--profile", default="base", choices=["base", "ctf"],
                    help="base (Bash, Python, SQL) or ctf (+ the CTF tools) (base)")
    ib.add_argument("--packages", default="", metavar="A,B",
                    help="more Debian packages (e.g. nodejs)")
    ib.add_argument("--env", default=None, metavar="ENV",
                    help="the profile and packages an environment declares instead")
    ib.add_argument("--docker", action="store_true",
                    help="also docker import it as intercode/sandbox:<profile>-<id>")
    ib.add_argument("--rebuild", action="store_true",
                    help="build again even if built (new package versions: a new identity)")
    ib.add_argument("--swe", default=None, metavar="DATASET",
                    help="instead: build the environment of each instance of a SWE dataset "
                         "or task file (/testbed and a venv of its packages from PyPI; "
                         "docs/swe.md)")
    ib.add_argument("--instances", default="", metavar="ID,ID",
                    help="with --swe: only these instance ids")
    ib.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker"],
                    help="with --swe: the backend the environments are for (bwrap)")
    ib.add_argument("--repo-mirror", default=None, metavar="DIR",
                    help="with --swe: a folder of local git clones (offline)")
    images.add_parser("list", help="the built roots and imported images")


def cmd_image(args: argparse.Namespace) -> int:
    """``intercode image build|list``."""
    from intercode.sandbox import rootfs
    from intercode.sandbox.docker import images

    if args.image_command == "list":
        found = rootfs.built()
        for root in found:
            added = ",".join(root.manifest.get("extra", []))
            print(f"rootfs {root.short}  {root.profile}{'+' + added if added else ''}  "
                  f"{len(root.manifest.get('versions', {}))} packages  built "
                  f"{root.manifest.get('built', '?')}  {root.path}")
        if not found:
            print(f"no root file system built yet (in {rootfs.cache_root()})")
        try:
            images.require_engine()
        except IntercodeError as exc:
            print(f"docker: {exc}")
            return 0
        for image in images.docker_images():
            print(f"docker {image['tag']}  {image['id']}  {image['size']}")
        return 0
    if args.swe is not None:
        return _build_swe(args)
    profile: str = args.profile
    extra = [p.strip() for p in args.packages.split(",") if p.strip()]
    if args.env is not None:
        spec = get(args.env)
        profile, extra = spec.sandbox_profile, [*spec.sandbox_packages, *extra]
    rootfs.packages(profile, extra)  # a malformed name: one line before anything runs
    if args.docker:
        images.require_engine()
    root = rootfs.build(profile, extra, rebuild=args.rebuild)
    print(f"rootfs {root.short}  {root.profile}  {root.path}")
    if args.docker:
        print(f"docker {images.docker_import(root)}")
    return 0


def _build_swe(args: argparse.Namespace) -> int:
    """``image build --swe``: one line per instance; exit 1 when any could not be built."""
    from intercode.swe.prepare import Prepared, prepare

    def show(result: Prepared) -> None:
        state = "built" if result.ok else "cannot build"
        print(f"{state} {result.instance_id} ({result.seconds:.1f} s): {result.detail}",
              flush=True)

    wanted = [i.strip() for i in args.instances.split(",") if i.strip()]
    results = prepare(args.swe, wanted, args.sandbox, args.repo_mirror, args.rebuild, show)
    failed = sum(not r.ok for r in results)
    print(f"{len(results) - failed} of {len(results)} environments ready")
    return 1 if failed else 0
