"""Code that runs inside the sandbox, on the sandbox's own ``python3``.

The host sends these modules' sources to the sandbox at start-up, so nothing of the
host (not even this package's files) needs to be visible inside. They use only the
standard library and must stay compatible with Python 3.9.
"""

MODULES = ("proto", "privs", "oomguard", "rlimits", "fsops", "hashing", "views", "tree",
           "shell", "snaps", "pyvalue", "pyscore", "pyprogram", "pyhold", "pyrepl", "zygote",
           "sqlconn", "sqlsnap", "sqlrepl", "runcmd", "provider", "freezer", "schema", "main")
