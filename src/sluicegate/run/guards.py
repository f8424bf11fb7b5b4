"""What a run may touch on disk: regular files below the source folder, a warehouse that is a
file or a folder. Everything else is refused with an error that names the path.

A landing folder is written by others. A symbolic link in it to ``/etc/passwd`` or
``/proc/self/environ`` would put those bytes (secrets included) into the DLQ's ``_raw``;
a FIFO would hang the bind; a device would never end. So, by default, links are not
followed at all; ``follow_symlinks: true`` on a source reads links whose target stays
inside the source folder. Kernel folders (``/proc``, ``/sys``, ``/dev``) are never sources.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputError

KERNEL_ROOTS = ("/proc", "/sys", "/dev")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _in(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_root(root: str, what: str) -> None:
    """A source folder inside /proc, /sys or /dev is refused."""
    real = os.path.realpath(root)
    if any(_in(real, k) for k in KERNEL_ROOTS):
        raise InputError(
            f"{what} path {root} resolves to {real}: kernel and device files are never read",
            hint="point the source at a folder of data files",
        )


def check_file(path: str, root: str, what: str, *, follow_symlinks: bool) -> None:
    """Refuse ``path`` when it is (or goes through) a link sluicegate must not follow, or is
    not a regular file."""
    absolute = os.path.abspath(path)
    real = os.path.realpath(absolute)
    real_root = os.path.realpath(root)
    rel = os.path.relpath(absolute, os.path.abspath(root))
    expected = os.path.normpath(os.path.join(real_root, rel)) if not rel.startswith("..") else real
    if real != expected:  # a link below the source folder
        if not follow_symlinks:
            raise InputError(
                f"{what} file {absolute} is a symbolic link (to {real}); links are not followed",
                hint=f"replace the link by the file, or set {what}.follow_symlinks: true "
                "(links must still point inside the source folder)",
            )
        if not _in(real, real_root):
            raise InputError(
                f"{what} file {absolute} links to {real}, outside the source folder {real_root}",
                hint="links may only point inside the source folder",
            )
    if any(_in(real, k) for k in KERNEL_ROOTS):
        raise InputError(f"{what} file {absolute} is a kernel or device file ({real})")
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise InputError(f"{what} file {absolute}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise InputError(
            f"{what} file {absolute} is {_kind(mode)}; only regular files are read",
            hint="remove it from the landing folder",
        )


def walk_files(root: str, what: str) -> list[str]:
    """Every non-directory entry below ``root`` (links not followed into folders); an
    unreadable folder is an error, never an empty input."""
    out: list[str] = []

    def fail(err: OSError) -> None:
        raise InputError(
            f"{what}: cannot list {err.filename}: {err.strerror}",
            hint="give the user running sluicegate read and execute permission on the folder",
        )

    for folder, dirs, files in os.walk(root, onerror=fail, followlinks=False):
        for d in list(dirs):
            if os.path.islink(os.path.join(folder, d)):
                dirs.remove(d)
                files.append(d)  # a link to a folder is checked (and refused) like a file
        out.extend(os.path.join(folder, f) for f in files)
    return out


def check_warehouse(path: str) -> None:
    """The warehouse must be a regular file, a folder, or not exist yet (``/dev/null`` is not)."""
    if "://" in path:  # an object store URI (engines/object_store.py): nothing local to check
        return
    if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
        raise InputError(
            f"outputs.warehouse {path} is {_kind(os.stat(path).st_mode)}",
            hint="point outputs.warehouse at a file (DuckDB) or a folder (Spark)",
        )
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise InputError(f"outputs.warehouse {path}: {parent} is not a folder")
