"""Where the backend's disk queue lives when the job directory's file system does not lock files.

The collector's disk queue (the ``file_storage`` extension, bbolt) takes an exclusive flock on
its database when it opens it. On a file system without flock (Lustre mounted without ``flock``
or ``localflock``: ENOSYS; NFSv3 without a lock manager: ENOLCK) that fails, and the collector
does not start ("function not implemented"). The rendered configs keep ``<job dir>/otel/queue``
as the queue's folder (their only ``${...}`` are the job id and the token, so the folder cannot
become a variable). Before it starts the collector, the step's start (``_step/queue_place.sh.j2``)
asks the job directory's file system, not a guess from its type: it takes and drops an
exclusive lock (util-linux ``flock -n``) on the collector's log, a file of ``otel/`` the step
writes anyway. Where that fails, the queue goes to a folder on the node's own disk, unique to
the job, ``${TMPDIR:-/tmp}/nemo-gym-otel-<SLURM_JOB_ID>-<key>`` (the key: from the job
directory's path; ``/tmp`` where ``TMPDIR`` is no absolute path of a folder), after the same
probe there, and ``otel/queue`` becomes a link to it. The start appends ``<node> <folder>`` to
``otel/queue-node-local`` (nothing secret) and says where the queue is and why in the
collector's log.

What follows from it: the stop's drain runs on the same node and reaches the queue through the
link; ``nemo-gym-otel drain`` reaches it only on that node, and from another one says so in one
line (exit 5). A requeue on the same node reuses the folder; one on another node starts a new
one there, and the earlier one stays on its node (the marker keeps both lines, the log says
so). Where the node has no ``flock`` command the queue stays in the job directory, unprobed,
and the log says so.

**In memory where no folder locks.** Where the node-local folder cannot be made or does not lock
either (``TMPDIR`` on the same kind of mount), or the collector runs in a container
(``otel.container``) that sees only the job directory, the queue goes to memory: the start's
second config (``otel/queue-budget.yaml``, see :mod:`.disk_budget`) merges ``storage: null``
into the queue's exporter, the same exporter and loopback hop as on disk, holding at most
``MEMORY_QUEUE_BYTES`` per signal. The ``file_storage`` extension stays in the config; it makes
its folder and lists it at start but opens no database (and so takes no lock) until a queue asks
for one, which none then does. The start appends ``<node> memory`` to ``otel/queue-node-local``
and says why in the collector's log; the stop then runs no drain (nothing of the queue is on
disk: the log says so) and TERMs the collector before its sender, so that the queue sends what
it holds through the sender while that still runs. ``nemo-gym-otel drain`` says in one line that
nothing is on disk, and ``report`` that the queue was in memory. What the queue holds at a crash,
or what the backend does not take while the stop waits, is lost for the backend, as with
``otel.backend_queue_megabytes: null``; the files are written regardless.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .._common.constants import COLLECTOR_DIR, QUEUE_DIR_NAME, QUEUE_PLACES_NAME
from .._common.errors import JobDirError
from .._common.text_file import bounded_lines, open_regular

MEMORY = "memory"  # a queue.places line's second field where the start put the queue in memory
_KEY_HEX = 12  # of the job directory's path's SHA-256: two job directories of one job differ
_LINE_LIMIT = 64 * 1024


def queue_place_context(otel_dir: PurePosixPath, in_container: bool) -> dict[str, object]:
    """The values of ``templates/_step/queue_place.sh.j2`` for a job whose queue is on disk."""
    key = hashlib.sha256(str(otel_dir.parent).encode("utf-8")).hexdigest()[:_KEY_HEX]
    return {
        "queue": {
            "folder": otel_dir / QUEUE_DIR_NAME,
            "places": otel_dir / QUEUE_PLACES_NAME,
            "key": key,
            "in_container": in_container,
        }
    }


@dataclass(frozen=True)
class QueuePlace:
    """Where an attempt of the job put its queue outside the job directory: a node-local
    folder, or (``folder`` None) the collector's memory on that node."""

    node: str
    folder: Path | None


def queue_places(job_dir: Path) -> list[QueuePlace]:
    """Every node-local folder the job's queue was put in, and every node where it went to
    memory, oldest first (empty: the queue stayed in the job directory). The last folder is
    where ``otel/queue`` links to."""
    path = job_dir / COLLECTOR_DIR / QUEUE_PLACES_NAME
    try:
        stream = open_regular(str(path), JobDirError, "remove it; the job step writes it")
    except FileNotFoundError:
        return []
    places: list[QueuePlace] = []
    with stream:
        for raw in bounded_lines(stream, _LINE_LIMIT):
            node, _, folder = (raw or b"").decode("utf-8", "replace").rstrip("\n").partition(" ")
            place = QueuePlace(node, None if folder == MEMORY else Path(folder))
            if node and (folder.startswith("/") or place.folder is None):
                places = [p for p in places if p != place] + [place]
    return places


def this_node() -> str:
    """The Slurm name of the node this runs on (set in a job step), else its short host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def in_memory_only(job_dir: Path) -> list[str] | None:
    """The nodes where the job's queue was in memory (latest last), when no attempt left it
    on disk: neither in a node-local folder nor in the job directory (``otel/queue`` holds no
    file that is not empty). None otherwise."""
    places = queue_places(job_dir)
    if not places or any(p.folder is not None for p in places):
        return None
    folder = job_dir / COLLECTOR_DIR / QUEUE_DIR_NAME
    try:
        if any(entry.stat().st_size for entry in folder.iterdir()):
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    return [p.node for p in places]  # one line per place: a node's one memory line


class QueueOnAnotherNode(Exception):
    """The job's queue is in a node-local folder this node does not hold."""

    def __init__(self, job_dir: Path, places: list[QueuePlace], here: str) -> None:
        where = "; ".join(f"{p.node} ({p.folder})" for p in reversed(places))
        nodes = " or ".join(dict.fromkeys(p.node for p in reversed(places)))
        super().__init__(
            f"{job_dir}: the backend queue is node-local on {where}, not on this node ({here}); "
            f"run nemo-gym-otel drain on {nodes}"
        )


def local_queue_folder(job_dir: Path) -> Path | None:
    """The folder ``nemo-gym-otel drain`` sends from on this node: None where the queue stayed
    in the job directory; the newest of this node's node-local folders that is here; else
    :class:`QueueOnAnotherNode` (a folder listed for this node but gone from it, its temporary
    folder cleaned, is drained as the empty queue it now is)."""
    places = [p for p in queue_places(job_dir) if p.folder is not None]
    if not places:
        return None
    here = this_node()
    mine = [p.folder for p in places if p.node == here and p.folder is not None]
    if not mine:
        raise QueueOnAnotherNode(job_dir, places, here)
    present = [folder for folder in mine if folder.is_dir()]
    return (present or mine)[-1]
