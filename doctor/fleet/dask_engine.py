"""``gnd fleet --dask``: the nodes analysed in batches on a Dask cluster, folded as the batches arrive.

A task analyses a batch of nodes on a worker with :func:`doctor.fleet.fleet.analyse` (the one
pipeline, node after node, exactly as a local pool worker does; URLs are fetched there, next to the
data) and sends each summary as :func:`doctor.fleet.fleet._sent` does, against bases of its own
batch only, so batches may arrive in any order, from any worker, or twice. The client re-numbers
those bases and folds every batch whole into the one :class:`~doctor.fleet.fleet.Aggregate`
(:func:`~doctor.fleet.fleet.analyse_fleet` with this engine): the report is the local one.

A worker that dies mid-batch loses nothing: the scheduler runs its batch again elsewhere. A batch
that fails (the scheduler gave up on it, ``KilledWorker``, or anything else) is split and each node
tried on its own; a node that fails on its own too (a neighbour on its worker may have killed it) is
tried once more at the end with nothing else running, and if that fails, reported with the reason,
never dropped. Every batch
says which gnd and which checks made it; one made by another release or other plugins ends the run
(its results would not be the local ones). ``distributed`` (the ``distributed`` extra) is imported
only here, only with ``--dask``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from doctor.errors import DoctorError

_EXTRA = "install the 'distributed' extra: pip install 'gpu-node-doctor[distributed]'"
_LOCAL = re.compile(r"^local:(\d{1,4})$")
#: Scheduler address schemes accepted (the Dask comms a platform runs; inproc is for tests of Dask itself)
SCHEDULER_SCHEMES = ("tcp://", "tls://")
MAX_LOCAL_WORKERS = 256
#: Most nodes in one batch, and how many batches per worker at least (so a slow node delays few others)
MAX_BATCH = 16
BATCHES_PER_WORKER = 4
#: Seconds to wait for a scheduler to answer, and for a first worker to join it
CONNECT_TIMEOUT_S = 30
WORKER_TIMEOUT_S = 120
#: The number a re-numbered base digest carries where a local worker's pid would be (no pid is negative)
_TAG = -1

#: one batch at a time per worker process, whatever its thread count: the pipeline's caches are per process
_LOCK = threading.Lock()


def identity() -> str:
    """Which gnd and which checks a result comes from (the tool version and each check with its plugin)."""
    from doctor import __version__
    from doctor.fleet.fleet import checks_key

    return f"{__version__} {hashlib.sha256(checks_key().encode()).hexdigest()[:12]}"


def run_batch(items: list[tuple[int, str]], cache_dir: str | None) -> dict[str, Any]:
    """A worker's task: each (index, path) analysed and sent against this batch's own bases."""
    from doctor.fleet.fleet import analyse_batch

    with _LOCK:
        return {"gnd": identity(), "nodes": analyse_batch(items, cache_dir)}


def _renumbered(summary: dict[str, Any], numbers: dict[Any, tuple[int, int]], counter: list[int]) -> dict[str, Any]:
    """``summary`` with its base number (a worker's pid and count) replaced by the client's own."""
    base = summary.get("digest_base")
    if base is not None:
        counter[0] += 1
        numbers[tuple(base)] = (_TAG, counter[0])
        return {**summary, "digest_base": numbers[tuple(base)]}
    delta = summary.get("digest_delta")
    if delta is not None:
        number, changes, removed = delta
        return {**summary, "digest_delta": (numbers[tuple(number)], changes, removed)}
    return summary


def _reason(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text[:300]


class DaskEngine:
    """An :data:`~doctor.fleet.fleet.Engine` over a ``distributed.Client``."""

    def __init__(self, client: Any, batch: int | None = None,
                 task: Callable[[list[tuple[int, str]], str | None], dict[str, Any]] = run_batch) -> None:
        self.client = client
        self.batch = batch
        self.task = task
        self.expected = identity()

    @property
    def jobs(self) -> int:
        """Worker threads the scheduler knows of now."""
        workers = self.client.scheduler_info().get("workers", {})
        return sum(int(w.get("nthreads", 1)) for w in workers.values()) or 1

    def _batch_size(self, nodes: int) -> int:
        if self.batch:
            return self.batch
        workers = len(self.client.scheduler_info().get("workers", {})) or 1
        return max(1, min(MAX_BATCH, nodes // (workers * BATCHES_PER_WORKER) or 1))

    def __call__(self, paths: list[str], cache_dir: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
        from distributed import as_completed

        items = list(enumerate(paths))
        size = self._batch_size(len(items))
        token = hashlib.sha256(os.urandom(16)).hexdigest()[:12]
        pending: dict[Any, list[tuple[int, str]]] = {}
        submitted = [0]

        def submit(batch: list[tuple[int, str]]) -> Any:
            submitted[0] += 1
            future = self.client.submit(self.task, batch, cache_dir, key=f"gnd-batch-{token}-{submitted[0]}",
                                        pure=False)
            pending[future] = batch
            return future

        done = as_completed([submit(items[i:i + size]) for i in range(0, len(items), size)])
        numbers: dict[Any, tuple[int, int]] = {}
        counter = [0]
        alone: list[tuple[int, str]] = []  # nodes that failed on their own too: tried once more, nothing beside them
        for future in done:
            batch = pending.pop(future)
            try:
                out = future.result()
            except (Exception, asyncio.CancelledError):  # the scheduler gave up on it (KilledWorker) or it failed
                if len(batch) > 1:
                    for item in batch:  # each node on its own: a worker lost to one node costs only that node
                        done.add(submit([item]))
                else:  # perhaps a neighbour on the same worker killed it: judged alone, at the end
                    alone.extend(batch)
                continue
            finally:
                future.release()
            yield from self._nodes(out, numbers, counter)
        for item in alone:
            future = submit([item])
            try:
                out = future.result()
            except (Exception, asyncio.CancelledError) as exc:
                yield item[0], {"path": item[1], "error": f"a Dask worker failed on it every time it was tried, "
                                                          f"alone too ({_reason(exc)})"}
                continue
            finally:
                pending.pop(future, None)
                future.release()
            yield from self._nodes(out, numbers, counter)

    def _nodes(self, out: dict[str, Any], numbers: dict[Any, tuple[int, int]],
               counter: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """A batch's summaries, re-numbered; DoctorError when another gnd or other checks made them."""
        if out.get("gnd") != self.expected:
            raise DoctorError(f"a Dask worker runs gnd {out.get('gnd')}, this client {self.expected} "
                              f"(version and checks): install the same gpu-node-doctor and plugins on the workers")
        numbers.clear()
        for index, summary in out["nodes"]:
            yield index, _renumbered(summary, numbers, counter)


def _quiet_logs() -> None:
    import logging

    for name in ("distributed", "tornado"):  # a worker lost and replaced is handled, not an error to show
        logging.getLogger(name).setLevel(logging.CRITICAL)


@contextlib.contextmanager
def connect(spec: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``spec``: ``local:N`` (N worker processes of one thread on this
    machine, every port on 127.0.0.1, no dashboard) or a scheduler address (``tcp://HOST:8786``,
    ``tls://...``). One-line DoctorError when it cannot be had."""
    m = _LOCAL.match(spec)
    if not m and not spec.startswith(SCHEDULER_SCHEMES):
        raise DoctorError(f"--dask {spec}: give local:N or a scheduler address (tcp://HOST:8786, tls://HOST:8786)")
    if m and not 1 <= int(m.group(1)) <= MAX_LOCAL_WORKERS:
        raise DoctorError(f"--dask {spec}: local:N takes 1 to {MAX_LOCAL_WORKERS} workers")
    try:
        import distributed
    except ImportError:
        raise DoctorError(f"--dask needs Dask; {_EXTRA}") from None
    _quiet_logs()
    with contextlib.ExitStack() as stack:
        try:
            if m:
                import logging

                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=int(m.group(1)), threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL))
                client = stack.enter_context(distributed.Client(cluster))
            else:
                client = stack.enter_context(distributed.Client(spec, timeout=CONNECT_TIMEOUT_S))
            client.wait_for_workers(1, timeout=WORKER_TIMEOUT_S)
        except DoctorError:
            raise
        except Exception as exc:  # OSError, TimeoutError, a bad address: one line, whatever Dask says
            raise DoctorError(f"--dask {spec}: cannot start or reach the cluster ({_reason(exc)})") from None
        try:
            versions = client.run(identity)
        except Exception as exc:
            raise DoctorError(f"--dask {spec}: the workers cannot run gnd ({_reason(exc)}); "
                              f"install gpu-node-doctor[distributed] on them") from None
        mine = identity()
        for address, theirs in sorted(versions.items()):
            if theirs != mine:
                raise DoctorError(f"--dask {spec}: worker {address} runs gnd {theirs}, this client {mine} "
                                  f"(version and checks): install the same gpu-node-doctor and plugins on the workers")
        yield client
