"""pytest plugin for the notebook runs (``make nbval``, ``make nbval-reader``): each kernel talks to nbval over Unix
sockets with a name of its own, not over TCP ports, and nbval waits longer for a cell's last messages.

jupyter_client finds a kernel's five TCP ports by binding to port 0 and releasing the port; the kernel binds them a
moment later. In that moment another kernel starting on the other pytest worker, or any connection that any program
opens, can be given the same port, and the kernel dies ("Address already in use") before the notebook's first cell.
A socket file named after a random id cannot be taken by anyone else.

Once a cell's reply has come, nbval reads the kernel's output messages until the kernel says it is idle, and fails the
cell ("Timeout of 5 seconds exceeded waiting for output") if five seconds pass without one. On two cores shared with
other work, a kernel that has just finished minutes of training (chapter 10) was seen to take longer than that to send
them; ``OUTPUT_TIMEOUT`` gives it a minute. The cell's own time limit (``--nbval-cell-timeout``) is unchanged.

The notebooks run in the order the command line gives them (pytest's), each in its own order: the Makefile's runs give
the longest first (``scripts/book_toc.py --first``), so that with two workers none of them starts near the end while
the other worker has run out (with ``--no-loadscope-reorder``: pytest-xdist's own order puts the files with the most
tests first).

    python -m pytest -p tests.nbval_kernels --nbval-lax book/
"""

from __future__ import annotations

import os
import tempfile
import uuid

import nbval.kernel
import nbval.plugin
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


OUTPUT_TIMEOUT = 60  # seconds nbval waits for each of a cell's messages after its reply (nbval's own: 5)


def _patient_init(init):
    """nbval's cell constructor, then ``OUTPUT_TIMEOUT`` for the wait on each output message after the reply."""

    def patient(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.output_timeout = OUTPUT_TIMEOUT

    return patient


def pytest_configure(config) -> None:
    nbval.kernel.KernelManager = IPCKernelManager  # nbval.kernel.start_new_kernel builds its manager from this name
    nbval.plugin.IPyNbCell.__init__ = _patient_init(nbval.plugin.IPyNbCell.__init__)
