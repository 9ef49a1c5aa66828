"""pytest plugin for the notebook runs (``make nbval``, ``make nbval-reader``): each kernel talks to nbval over Unix
sockets with a name of its own, not over TCP ports.

jupyter_client finds a kernel's five TCP ports by binding to port 0 and releasing the port; the kernel binds them a
moment later. In that moment another kernel starting on the other pytest worker, or any connection that any program
opens, can be given the same port, and the kernel dies ("Address already in use") before the notebook's first cell.
A socket file named after a random id cannot be taken by anyone else.

    python -m pytest -p tests.nbval_kernels --nbval-lax book/
"""

from __future__ import annotations

import os
import tempfile
import uuid

import nbval.kernel
from jupyter_client.manager import KernelManager
from traitlets import default


class IPCKernelManager(KernelManager):
    """A kernel manager whose kernel listens on ``<tmp>/kernel-<random id>-<n>`` (ipc) instead of TCP ports."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("ip")
    def _default_ip(self) -> str:  # for ipc, the sockets' path prefix; absolute, as the kernel runs in another folder
        return os.path.join(tempfile.gettempdir(), f"kernel-{uuid.uuid4().hex}")


def pytest_configure(config) -> None:
    nbval.kernel.KernelManager = IPCKernelManager  # nbval.kernel.start_new_kernel builds its manager from this name
