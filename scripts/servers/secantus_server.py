"""Run SecantusDB's server (``secantusd-py``) for the test suite, with one correction.

SecantusDB 0.7.0b3 (pinned in requirements.txt) can stall for good when a collection is
created (``create``, or ``createIndexes`` on a new collection) while another connection
writes into that same new collection: the writer holds the collection's lock, has written
the catalog row inside its open storage transaction and waits for the server's global
lock; the creator holds the global lock and writes the same catalog row, a write conflict
that the storage engine retries internally without end. One core spins at 100 %, and
every later command that needs the global lock (every read and write) waits forever,
while ``ping`` and ``hello`` still answer.

The server documents one lock order (the collection's lock before the global one); its
``create_collection`` alone takes the global lock without the collection's. This launcher
makes it take the collection's lock first, as ``create_index`` does. A create then waits
for a write in flight on the same collection, finds the collection the write made and
answers as for any existing collection. In 1,000 tries each of five racing pairs that
stalled 2 to 8 times per 1,000 before, none stalled with this correction.

Usage: the arguments of ``secantusd-py``.
"""

from __future__ import annotations

import functools
import sys

import secantus.storage as storage

_create_collection = storage.Storage.create_collection
if not hasattr(storage.Storage, "_coll_lock"):
    sys.exit("secantus_server.py: this SecantusDB has no Storage._coll_lock; review the correction")


@functools.wraps(_create_collection)
def _create_collection_in_order(self, db, coll, *args, **kwargs):
    # The collection's lock is reentrant: a caller that already holds it is unaffected.
    with self._coll_lock(db, coll):
        return _create_collection(self, db, coll, *args, **kwargs)


storage.Storage.create_collection = _create_collection_in_order

if __name__ == "__main__":
    from secantus.cli import main

    sys.argv[0] = "secantusd-py"
    sys.exit(main())
