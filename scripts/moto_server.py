"""moto_server with one fix applied: DynamoDB TransactWriteItems backs each table up once per transaction.

moto 5.2.5's `transact_write_items` deep-copies a table once per *item* of the transaction (its rollback
backup; moto/dynamodb/models/__init__.py), so a transaction of n items on a table of m items costs O(n x m)
and a 1,000-resource journal spends most of its time there. The fix keeps moto's own code and only makes the
second and later copies of the same table within one transaction return the first copy: the backup is the
same state (nothing is written before the copies are taken), so rollback behaves exactly as before.

Run with the emulator's Python: .venv-moto/bin/python scripts/moto_server.py -H 127.0.0.1 -p 5000
Set AZEVAC_MOTO_UNFIXED=1 to serve moto unchanged (the benchmark reports both).
"""

import copy
import os
import sys
import threading

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models.table import Table
from moto.server import main


class _TableBackupOncePerTransaction:
    """Stands in for the `copy` module inside moto.dynamodb.models."""

    def __init__(self) -> None:
        # moto server answers requests on several threads; each transaction has its own backups.
        self._local = threading.local()

    def deepcopy(self, obj, memo=None):
        backups = getattr(self._local, "backups", None)
        if backups is None or not isinstance(obj, Table):
            return copy.deepcopy(obj, memo)
        if id(obj) not in backups:
            backups[id(obj)] = (obj, copy.deepcopy(obj, memo))
        return backups[id(obj)][1]

    def __getattr__(self, name):
        return getattr(copy, name)

    def transaction(self, run):
        def transact_write_items(backend, transact_items):
            self._local.backups = {}
            try:
                return run(backend, transact_items)
            finally:
                self._local.backups = None

        return transact_write_items


def apply_fix() -> None:
    shim = _TableBackupOncePerTransaction()
    dynamodb_models.copy = shim
    backend = dynamodb_models.DynamoDBBackend
    backend.transact_write_items = shim.transaction(backend.transact_write_items)


if __name__ == "__main__":
    if os.environ.get("AZEVAC_MOTO_UNFIXED") != "1":
        apply_fix()
    sys.argv[0] = "moto_server"
    sys.exit(main())
