"""The few file operations the embedded engine's Delta store needs, on a local folder or
an ``s3://`` prefix alike (pyarrow's file systems).

Locations are spelled as the clients open them: a local absolute path, or
``s3://bucket/key`` (delta-rs takes that with ``storage_options``; pyarrow takes
``bucket/key`` with an ``S3FileSystem``, :meth:`Files.fs_path`). S3 has no folders: a
"folder" is a key prefix that has objects below it, and removing one removes them.
"""

from __future__ import annotations

import contextlib
import os

import pyarrow.fs as pafs

from .object_store import S3Settings, canonical, is_s3, key_path


class Files:
    """A warehouse root and the file system it lives on."""

    def __init__(self, root: str, s3: S3Settings | None = None) -> None:
        self.remote = is_s3(root)
        if self.remote:
            self.s3 = s3 or S3Settings.resolve()
            self.root = canonical(root).rstrip("/")
            self.fs: pafs.FileSystem = self.s3.arrow_fs()
        else:
            self.s3 = None
            self.root = os.path.abspath(root)
            self.fs = pafs.LocalFileSystem()

    def join(self, *parts: str) -> str:
        return "/".join([self.root, *parts]) if self.remote else os.path.join(self.root, *parts)

    def storage_options(self) -> dict[str, str] | None:
        """What delta-rs needs to open a location under this root (None: a local path)."""
        return self.s3.delta_options() if self.s3 is not None else None

    def fs_path(self, location: str) -> str:
        return key_path(location) if self.remote else location

    def is_dir(self, location: str) -> bool:
        info = self.fs.get_file_info(self.fs_path(location))
        return info.type == pafs.FileType.Directory

    def exists(self, location: str) -> bool:
        return self.fs.get_file_info(self.fs_path(location)).type != pafs.FileType.NotFound

    def children(self, location: str) -> list[str]:
        """Names directly under ``location`` ([] when there is nothing)."""
        selector = pafs.FileSelector(self.fs_path(location), allow_not_found=True)
        return sorted(i.base_name for i in self.fs.get_file_info(selector))

    def read_text(self, location: str) -> str:
        with self.fs.open_input_stream(self.fs_path(location)) as f:
            return f.read().decode("utf-8")

    def write_text(self, location: str, text: str) -> None:
        """Write a small file whole: one PUT on S3 (atomic there); locally a temp file,
        fsync'ed and renamed into place."""
        if self.remote:
            with self.fs.open_output_stream(self.fs_path(location)) as f:
                f.write(text.encode("utf-8"))
            return
        os.makedirs(os.path.dirname(location), exist_ok=True)
        tmp = location + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, location)

    def delete(self, location: str) -> None:
        """Remove a file or a folder (prefix) and everything below; nothing there is fine."""
        path = self.fs_path(location)
        info = self.fs.get_file_info(path)
        with contextlib.suppress(FileNotFoundError):
            if info.type == pafs.FileType.Directory:
                self.fs.delete_dir(path)
            elif info.type == pafs.FileType.File:
                self.fs.delete_file(path)

    def makedirs(self) -> None:
        """Create the root locally (S3 prefixes need no creating)."""
        if not self.remote:
            os.makedirs(self.root, exist_ok=True)
