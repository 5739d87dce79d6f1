"""moto_server with five fixes. Three are to DynamoDB: a TransactWriteItems backs up the items it touches, not
the tables; an item already in DynamoDB's wire format is answered as it is, not walked member by member; and
each condition of a transaction is parsed once, not twice. The fourth is to the dispatcher: the service a host
name goes to is found once, not for every request. The fifth is to the server: it logs no line per request.
Only the first changes what moto answers (it is closer to DynamoDB); the other four are for speed alone, and
tests/it/emulator.rs checks that they change no answer.

moto 5.2.5's `transact_write_items` deep-copies a whole table once per *item* of the transaction (its
rollback backup; moto/dynamodb/models/__init__.py), so a transaction of n items on a table of m items costs
O(n x m) and a 1,000-resource journal spends most of its time there. The fix keeps moto's own code for the
transaction and replaces only its backup: before the transaction runs, each item it names (at most 100) is
copied, and the table copies moto asks for are the live tables themselves. If the transaction is cancelled,
the named items are put back as they were and the stream records added since it began are dropped. A
transaction can change no item other than those it names, so that is the state the whole-table copy
restored, at O(n).

It is also closer to DynamoDB in one way: moto serves requests on several threads, and restoring a whole
table copy also undid the writes other requests had made meanwhile to items the transaction does not name.
(An entry with two operations, which moto rejects without rolling back the ones before it, is rolled back.)

An operation whose table or key cannot be read here (a malformed request, which moto rejects itself) gets
moto's own whole-table backup of that table, so such a request is rolled back as moto would.

The second fix is for speed alone. moto 5.2.5 answers every DynamoDB call through its generic serializer,
which walks each attribute value member by member against the botocore shape, about 2.6 ms per item of
the journal (a 1,000-record Query took 2.6 s of the emulator's one CPU before a plan could start). moto keeps
an item's values in DynamoDB's own JSON form ({"S": ...}, {"N": "1"}, {"L": [...]}), so an AttributeValue
whose members are only S, N, SS, NS, L, M, BOOL and NULL, with strings and booleans at the leaves, comes
out of the walk exactly as it went in; the fix answers those as they are. Anything else (a binary value,
a number not kept as a string, a key the shape lacks, a map entry with an empty name, None) still takes
moto's own walk.
tests/it/emulator.rs checks that moto answers the same items with and without the fixes.

The third, fourth and fifth are `_TransactionItemBackup.conditions_parsed_once`, `_remembered` and
`_no_request_line`.

EventBridge Scheduler (issue 34), `_scheduler_update_replaces_the_schedule`: closer to the service. AWS's
UpdateSchedule replaces the whole schedule, every optional field left out reset to its default; moto 5.x's
keeps the ActionAfterCompletion it had (its update never reads the field) and sets State to nothing where AWS
enables the schedule. A caller that dropped either would pass against moto and reset the schedule on AWS.

Run with the emulator's Python: .venv-moto/bin/python scripts/moto_server.py -H 127.0.0.1 -p 5000
Set AZEVAC_MOTO_UNFIXED=1 to serve moto unchanged, without any fix (the benchmark reports both).
"""

import copy
import os
import sys
import threading

import moto.dynamodb.models as dynamodb_models
import moto.dynamodb.models.table as dynamodb_table
from moto.dynamodb import comparisons
from moto.core import serialize
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.server import main


def _item_key(table, op_type, op):
    """The (hash, range) key an operation of a transaction writes or checks; raises if it cannot be read."""
    attrs = op["Item"] if op_type == "Put" else op["Key"]
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


class _ItemBackup:
    """The items one transaction names, as they were before it ran, and how to put them back."""

    def __init__(self, backend, transact_items):
        self.items = {}  # (table name, hash, range) -> (table, the item's copy or None)
        self.streams = {}  # table name -> (table, stream records before the transaction)
        self.whole_tables = set()  # tables an operation of which could not be read: moto copies these
        if len(transact_items) > 100:
            return  # moto refuses the transaction before it changes anything
        for entry in transact_items:
            try:
                op_type, op = next(iter(entry.items()))
                # get_table takes a name or an ARN, as the operations do.
                table = backend.get_table(op["TableName"])
            except Exception:
                continue  # moto cancels an operation on a missing table before it changes anything
            try:
                key = _item_key(table, op_type, op)
                ident = (table.name, *key)
                if ident not in self.items:
                    self.items[ident] = (table, copy.deepcopy(table.get_item(*key)))
            except Exception:
                # A key moto cannot read either (no key attribute, a malformed value): moto's own backup.
                self.whole_tables.add(table.name)
                continue
            if table.stream_shard is not None and table.name not in self.streams:
                self.streams[table.name] = (table, len(table.stream_shard.items))

    def copies_table(self, table):
        """Whether moto's own whole-table copy is still needed for this table."""
        return table.name in self.whole_tables

    def restore(self):
        for (_, hash_value, range_value), (table, item) in self.items.items():
            if range_value is None:
                if item is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = item
            elif item is None:
                table.items[hash_value].pop(range_value, None)
            else:
                table.items[hash_value][range_value] = item
        for table, length in self.streams.values():
            # A shard that passed its records on to a Lambda function in the meantime starts over.
            if table.stream_shard is not None and len(table.stream_shard.items) >= length:
                del table.stream_shard.items[length:]


class _TransactionItemBackup:
    """Stands in for the `copy` module inside moto.dynamodb.models."""

    def __init__(self) -> None:
        # moto server answers requests on several threads; each transaction has its own backup.
        self._local = threading.local()

    def deepcopy(self, obj, memo=None):
        backup = getattr(self._local, "backup", None)
        if backup is None or not isinstance(obj, Table) or backup.copies_table(obj):
            return copy.deepcopy(obj, memo)
        # moto's rollback puts this object back as the table: the live table, whose items `restore` resets.
        return obj

    def __getattr__(self, name):
        return getattr(copy, name)

    def transaction(self, run):
        def transact_write_items(backend, transact_items):
            backup = _ItemBackup(backend, transact_items)
            self._local.backup = backup
            self._local.conditions = {}
            try:
                return run(backend, transact_items)
            except BaseException:
                backup.restore()
                raise
            finally:
                self._local.backup = None
                self._local.conditions = None

        return transact_write_items

    def conditions_parsed_once(self, parse):
        """moto's transaction parses an operation's condition to check it, then hands the same expression,
        names and values (the same objects) to its put/update/delete, which parse it again. A parsed
        condition holds no state (its `expr` only reads the item), so within one transaction the first
        parse of each is answered again. Outside a transaction every call parses, as moto does."""

        def get_filter_expression(expr, names, values):
            parsed = getattr(self._local, "conditions", None)
            if parsed is None or not expr:
                return parse(expr, names, values)
            key = (expr, id(names), id(values))
            if key not in parsed:
                # names and values are kept with it, so that no other object takes their ids meanwhile.
                parsed[key] = (parse(expr, names, values), names, values)
            return parsed[key][0]

        return get_filter_expression


# The members of an AttributeValue whose wire form is the value itself (B and BS are base64 on the wire).
_AS_IS = frozenset(("S", "N", "SS", "NS", "L", "M", "BOOL", "NULL"))


def _in_wire_form(value) -> bool:
    """Whether moto's walk would give back this attribute value unchanged."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    (kind, inner), = value.items()
    if kind not in _AS_IS:
        return False
    if kind in ("S", "N"):
        return isinstance(inner, str)
    if kind in ("BOOL", "NULL"):
        return isinstance(inner, bool)
    if kind in ("SS", "NS"):
        return isinstance(inner, list) and all(isinstance(v, str) for v in inner)
    if kind == "L":
        return isinstance(inner, list) and all(_in_wire_form(v) for v in inner)
    # moto's walk answers a map entry with an empty name differently; leave such a map to it.
    return isinstance(inner, dict) and all(isinstance(k, str) and k and _in_wire_form(v) for k, v in inner.items())


def _answer_items_as_they_are(walk):
    def serialize_structure(self, serialized, value, shape, key):
        if (
            key
            and shape.name == "AttributeValue"
            and self.operation_model.service_model.service_name == "dynamodb"
            and _in_wire_form(value)
        ):
            self._default_serialize(serialized, value, shape, key)
            return
        walk(self, serialized, value, shape, key)

    return serialize_structure


class _ParsedOnce:
    """Stands in for the parser `create_condition_expression_parser` makes in moto's update_item."""

    def __init__(self, get_filter_expression, expr, names, values):
        self._parse = lambda: get_filter_expression(expr, names, values)

    def parse(self):
        return self._parse()


def apply_fix() -> None:
    shim = _TransactionItemBackup()
    dynamodb_models.copy = shim
    backend = dynamodb_models.DynamoDBBackend
    backend.transact_write_items = shim.transaction(backend.transact_write_items)
    parse_condition = shim.conditions_parsed_once(comparisons.get_filter_expression)
    dynamodb_models.get_filter_expression = parse_condition
    dynamodb_table.get_filter_expression = parse_condition
    dynamodb_models.create_condition_expression_parser = lambda expr, names, values: _ParsedOnce(
        parse_condition, expr, names, values
    )
    json_serializer = serialize.BaseJSONSerializer
    json_serializer._serialize_type_structure = _answer_items_as_they_are(json_serializer._serialize_type_structure)
    DomainDispatcherApplication.get_backend_for_host = _remembered(DomainDispatcherApplication.get_backend_for_host)
    MotoRequestHandler.log_request = _no_request_line
    _scheduler_update_replaces_the_schedule()


def _scheduler_update_replaces_the_schedule():
    """moto's UpdateSchedule sets every field it reads from the request, left out or not, but it does not read
    ActionAfterCompletion (the schedule keeps the old one) and stores a missing State as nothing. AWS resets
    both to their defaults: ActionAfterCompletion as CreateSchedule leaves it when not given, State ENABLED."""
    from moto.scheduler.responses import EventBridgeSchedulerResponse

    update = EventBridgeSchedulerResponse.update_schedule

    def update_schedule(self):
        answer = update(self)
        name = self.uri.split("?")[0].split("/")[-1]
        schedule = self.scheduler_backend.get_schedule(self._get_param("GroupName"), name)
        schedule.action_after_completion = self._get_param("ActionAfterCompletion")
        schedule.state = self._get_param("State") or "ENABLED"
        return answer

    EventBridgeSchedulerResponse.update_schedule = update_schedule


def _no_request_line(handler, code="-", size="-"):
    """werkzeug's server formats and logs a line for every request it answers (method, path, status), about
    11 % of the emulator's CPU in the benchmark's Auto Scaling and ECS calls (a py-spy profile). The tests,
    the demo and the benchmark send the server's output to /dev/null, so the launcher logs none; werkzeug's
    error lines (a request it could not parse, an exception) are logged as before."""


def _remembered(find_backend):
    """moto's dispatcher finds a request's service from its host name anew for every request: it lists
    moto's package folder (a stat per service, some 200) and tries the URL patterns of every service in
    turn, about 0.8 ms of the emulator's one CPU per call. The answer depends only on the host name and
    on moto's installed files, neither of which changes while the server runs, so it is remembered."""
    # Called under the dispatcher's own lock; the host names a run uses are a handful (a service and
    # region each), and a name no service answers (None) is looked up again, as moto does.
    def get_backend_for_host(self, host):
        found = self.__dict__.setdefault("_backend_by_host", {})
        if host not in found:
            backend = find_backend(self, host)
            if backend is None or host is None:
                return backend
            found[host] = backend
        return found[host]

    return get_backend_for_host


if __name__ == "__main__":
    if os.environ.get("AZEVAC_MOTO_UNFIXED") != "1":
        apply_fix()
    sys.argv[0] = "moto_server"
    sys.exit(main())
