"""The data dir: created readable by the service's user only, as is every file the service creates in it.

The directory is made 0700 and the SQLite event store's file 0600 before anything opens it; SQLite
gives its `-wal`, `-shm` and journal files the mode of the store's file, and the admin token's hash
is written 0600 (`infrastructure.auth`). A data dir that already exists keeps the modes it has: an
operator who loosened them on purpose (a backup group) is not overruled.
"""

from __future__ import annotations

import os

from infrastructure.settings import Settings

DIR_MODE = 0o700
FILE_MODE = 0o600


def prepare(settings: Settings) -> None:
    try:
        settings.data_dir.mkdir(mode=DIR_MODE, parents=True)
    except FileExistsError:
        pass
    else:
        os.chmod(settings.data_dir, DIR_MODE)  # mkdir's mode is masked by the umask; this is exact
    env = settings.event_store_env()
    if env.get("SQLITE_DBNAME") == str(settings.sqlite_path) and not settings.sqlite_path.exists():
        # An empty file is an empty SQLite database; O_EXCL: never touch one made meanwhile.
        try:
            os.close(os.open(settings.sqlite_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        except FileExistsError:
            pass
