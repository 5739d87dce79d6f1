"""moto_server with five fixes, three that make the services of issue 34's kinds closer to AWS, and one that
answers CloudWatch in the protocol the SDKs speak to it (below); each fix that changes what moto answers names
the AWS page it follows. Three of the five are to DynamoDB: a TransactWriteItems backs up the items it touches, not
the tables; an item already in DynamoDB's wire format is answered as it is, not walked member by member; and
each condition of a transaction is parsed once, not twice. The fourth is to the dispatcher: the service a host
name goes to is found once, not for every request. The fifth is to the server: it logs no line per request.
Only the first changes what moto answers (it is closer to DynamoDB); the other four are for speed alone, and
tests/it/docs/emulator.rs checks that they change no answer.

moto 5.2.5's `transact_write_items` deep-copies a whole table once per *item* of the transaction (its
rollback backup; moto/dynamodb/models/__init__.py), so a transaction of n items on a table of m items costs
O(n x m) and a 1,000-resource journal spends most of its time there. The fix keeps moto's own code for the
transaction and replaces only its backup: before the transaction runs, each item it names (at most 100) is
copied, and the table copies moto asks for are the live tables themselves. If the transaction is cancelled,
the named items are put back as they were and the stream records added since it began are dropped. A
transaction can change no item other than those it names, so that is the state the whole-table copy
restored, at O(n). (AWS: "Amazon DynamoDB Transactions: How it works", DynamoDB Developer Guide,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html: TransactWriteItems is
all or nothing, and its "Isolation levels" section makes a transaction serializable with the other writes.)

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
tests/it/docs/emulator.rs checks that moto answers the same items with and without the fixes.

The third, fourth and fifth are `_TransactionItemBackup.conditions_parsed_once`, `_remembered` and
`_no_request_line`.

A sixth fix makes moto's AWS Batch closer to the service (`_batch_updates_apply`): moto 5.2.5 accepts
`UpdateComputeEnvironment` but drops its `computeResources` and `updatePolicy`, and describes no update
policy and no default allocation strategy. With the fix an update applies the compute resources it names and
leaves the others as they are (an empty subnet or security group list of a Fargate environment is no change),
as AWS documents for ComputeResourceUpdate; an update of EC2 or Spot resources that needs an infrastructure
update (subnets, security groups, instance types...) is refused with a ClientException, as AWS refuses it,
when the environment's allocation strategy is BEST_FIT (the default) or its service role is not the
AWSServiceRoleForBatch service-linked role (the message is ours); a subnet that does not exist is refused;
and DescribeComputeEnvironments reports the update policy (AWS's defaults: terminateJobsOnUpdate false,
jobExecutionTimeoutMinutes 30, or what an update set) and BEST_FIT where no allocation
strategy was given. (AWS: Batch API Reference, ComputeResourceUpdate,
https://docs.aws.amazon.com/batch/latest/APIReference/API_ComputeResourceUpdate.html, and UpdateComputeEnvironment,
https://docs.aws.amazon.com/goto/WebAPI/batch/UpdateComputeEnvironment; AWS Batch User Guide, "Perform
infrastructure updates", https://docs.aws.amazon.com/batch/latest/userguide/infrastructure-updates.html.)
Besides these, moto's interface VPC endpoints are made closer to EC2 (`_endpoint_interfaces_as_ec2`, for
`--type vpc-endpoint`): moto 5.2.5 gives an endpoint's network interfaces an address outside their subnet,
and its ModifyVpcEndpoint changes the subnet list alone (no interface is made for an added subnet nor deleted
for a removed one, so `NetworkInterfaceIds` and the interfaces disagree with `SubnetIds`) and ignores
`SubnetConfigurations` (the address asked for in a subnet). As EC2 does, each subnet of the endpoint now has
one requester-managed interface of type `vpc_endpoint` with an address of the subnet: the one asked for, or a
free one; an address asked for that another interface holds is refused (`InvalidIPAddress.InUse`), one
outside the subnet too (`InvalidParameterValue`), before anything changes. (EC2 also keeps a changed
endpoint `pending` for a while; moto's stays `available`: azevac's wait for it is unit-tested instead.)
(AWS: EC2 API Reference, ModifyVpcEndpoint, and SubnetConfiguration,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SubnetConfiguration.html: an address asked for in a
subnet replaces the endpoint's network interface there with one holding that address.)
And moto's EventBridge Scheduler (issue 34), `_scheduler_update_replaces_the_schedule`: closer to the service. AWS's
UpdateSchedule replaces the whole schedule, every optional field left out reset to its default; moto 5.x's
keeps the ActionAfterCompletion it had (its update never reads the field) and sets State to nothing where AWS
enables the schedule. A caller that dropped either would pass against moto and reset the schedule on AWS.
(AWS: EventBridge Scheduler API Reference, UpdateSchedule: "if you do not set an optional field in your
request, that field will be set to its system-default value after the update".)

And CloudWatch speaks Smithy RPC v2 CBOR (`_cloudwatch_speaks_cbor`): the SDK for Rust calls CloudWatch with the
protocol first in its model, `POST /service/GraniteServiceVersion20100801/operation/OP` with a CBOR body and the
header `smithy-protocol: rpc-v2-cbor` (and so do azevac's `--alarm`, `--alarm-prefix` and `--pace-alarm`), and moto
5.2.5 reads CloudWatch's JSON and query protocols only (getmoto/moto#9195), so such a call found no route. The fix
hands it to moto as the JSON protocol's call, and moto's JSON answer, an error too, back as CBOR; the alarms and
metrics are moto's own. (AWS: the protocol is Smithy's "Smithy RPC v2 CBOR protocol",
https://smithy.io/2.0/additional-specs/protocols/smithy-rpc-v2.html, which AWS's pages on the protocols its
services support link to; a timestamp is CBOR's tag 1, epoch seconds; an error is a map with `__type`.) The tests'
proxy (tests/it/common/cbor.rs) bridges the same way for the calls it sees.

Run with the emulator's Python: .venv-moto/bin/python scripts/moto_server.py -H 127.0.0.1 -p 5000
Set AZEVAC_MOTO_UNFIXED=1 to serve moto unchanged, without any fix (the benchmark reports both).

Set AZEVAC_MOTO_IAM=1 to have moto check IAM (`_iam_checked_except_for_the_tests_own_key`) on every
request signed with any access key but the tests' own, `testing`, which stays the account's unchecked
root (as do the sessions it opens in other accounts under the session name `root`): a test seeds its
estate as root, then runs azevac as an IAM user with the policy under test.
moto checks the actions of a policy only (not its resources or conditions).
"""

import copy
import ipaddress
import json
import os
import random
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
import moto.batch.models as batch_models
import moto.batch.responses as batch_responses
from moto.batch.exceptions import ClientException as BatchClientException


def _item_key(table, op_type, op):
    """The (hash, range) key an operation of a transaction writes or checks; raises if it cannot be read."""
    attrs = op["Item"] if op_type == "Put" else op["Key"]
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


class _ItemBackup:
    """The items one transaction names, as they were before it ran, and how to put them back: all or nothing, as
    "Amazon DynamoDB Transactions: How it works" (DynamoDB Developer Guide) says of TransactWriteItems."""

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
    _batch_updates_apply()
    _endpoint_interfaces_as_ec2()
    _scheduler_update_replaces_the_schedule()
    _cloudwatch_speaks_cbor()


def _endpoint_interfaces_as_ec2():
    """Interface endpoints' network interfaces as EC2 keeps them (see the module's docstring; AWS: EC2 API
    Reference, ModifyVpcEndpoint and SubnetConfiguration)."""
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.responses.vpcs import VPCs

    def configurations(response):
        """`SubnetConfigurations` by subnet: (Ipv4, Ipv6), either None when not asked for."""
        found = {}
        for entry in response._get_param("SubnetConfigurations", []) or []:
            if isinstance(entry, dict) and entry.get("SubnetId"):
                found[entry["SubnetId"]] = (entry.get("Ipv4"), entry.get("Ipv6"))
        return found

    def held(backend, replaced=()):
        """Every address an interface holds, but those of the interfaces about to be replaced."""
        addresses = set()
        for eni in backend.enis.values():
            if eni.id in replaced:
                continue
            addresses.add(eni.private_ip_address)
            addresses.update(ip.get("PrivateIpAddress") for ip in eni.private_ip_addresses if isinstance(ip, dict))
            addresses.update(eni.ipv6_addresses)
        addresses.discard(None)
        return addresses

    def check(backend, subnet_id, ipv4, ipv6, replaced=()):
        subnet = backend.get_subnet(subnet_id)
        taken = held(backend, replaced)
        if ipv4 is not None:
            network = ipaddress.IPv4Network(subnet.cidr_block)
            try:
                address = ipaddress.IPv4Address(ipv4)
            except ValueError:
                raise EC2ClientError("InvalidParameterValue", f"Value ({ipv4}) for parameter Ipv4 is invalid.")
            # EC2 keeps the first four addresses of a subnet and its last.
            reserved = address in list(network)[:4] or address == network.broadcast_address
            if address not in network or reserved:
                raise EC2ClientError(
                    "InvalidParameterValue",
                    f"The IPv4 address {ipv4} is not a usable address of subnet {subnet_id} ({subnet.cidr_block}).",
                )
            if ipv4 in taken:
                raise EC2ClientError("InvalidIPAddress.InUse", f"The specified address {ipv4} is already in use.")
        if ipv6 is not None and ipv6 in taken:
            raise EC2ClientError("InvalidIPAddress.InUse", f"The specified address {ipv6} is already in use.")

    def interface(backend, endpoint, subnet_id, ipv4=None, ipv6=None):
        subnet = backend.get_subnet(subnet_id)
        if ipv4 is None:
            network = ipaddress.IPv4Network(subnet.cidr_block)
            taken = held(backend)
            free = [str(a) for a in list(network)[4:-1] if str(a) not in taken]
            ipv4 = random.choice(free)
        eni = backend.create_network_interface(
            subnet,
            ipv4,
            group_ids=list(endpoint.security_group_ids) or None,
            description=f"VPC Endpoint Interface {endpoint.id}",
        )
        if ipv6 is not None:
            eni.ipv6_addresses = [ipv6]
        eni.interface_type = "vpc_endpoint"
        eni.requester_managed = True
        return eni

    def is_interface(endpoint):
        return (endpoint.vpc_endpoint_type or "").lower() == "interface"

    create = VPCs.create_vpc_endpoint
    modify = VPCs.modify_vpc_endpoint

    def create_vpc_endpoint(self):
        asked = configurations(self)
        interface_type = (self._get_param("VpcEndpointType") or "").lower() == "interface"
        if interface_type:
            for subnet_id, (ipv4, ipv6) in asked.items():
                check(self.ec2_backend, subnet_id, ipv4, ipv6)
        result = create(self)
        endpoint = result.result["VpcEndpoint"]
        if is_interface(endpoint):
            # moto's own interfaces have addresses outside their subnets: made again as EC2 makes them.
            for eni_id in endpoint.network_interface_ids:
                self.ec2_backend.enis.pop(eni_id, None)
            endpoint.network_interface_ids = [
                interface(self.ec2_backend, endpoint, s, *asked.get(s, (None, None))).id
                for s in endpoint.subnet_ids or []
            ]
        return result

    def modify_vpc_endpoint(self):
        backend = self.ec2_backend
        endpoint = backend.describe_vpc_endpoints(vpc_end_point_ids=[self._get_param("VpcEndpointId")])[0]
        if not is_interface(endpoint):
            return modify(self)
        asked = configurations(self)
        by_subnet = {}
        for eni_id in endpoint.network_interface_ids:
            eni = backend.enis.get(eni_id)
            if eni is not None:
                by_subnet[eni.subnet.id] = eni
        # Refused before anything changes, as EC2 does. An address asked for in a subnet the endpoint
        # is in replaces that subnet's interface, whose own address is free for it.
        for subnet_id, (ipv4, ipv6) in asked.items():
            replaced = {by_subnet[subnet_id].id} if subnet_id in by_subnet else set()
            check(backend, subnet_id, ipv4, ipv6, replaced)
        result = modify(self)
        for subnet_id, eni in list(by_subnet.items()):
            if subnet_id not in (endpoint.subnet_ids or []) or subnet_id in asked:
                backend.enis.pop(eni.id, None)
                del by_subnet[subnet_id]
        for subnet_id in endpoint.subnet_ids or []:
            if subnet_id not in by_subnet:
                by_subnet[subnet_id] = interface(backend, endpoint, subnet_id, *asked.get(subnet_id, (None, None)))
        endpoint.network_interface_ids = [by_subnet[s].id for s in endpoint.subnet_ids or []]
        return result

    VPCs.create_vpc_endpoint = create_vpc_endpoint
    VPCs.modify_vpc_endpoint = modify_vpc_endpoint


def _scheduler_update_replaces_the_schedule():
    """moto's UpdateSchedule sets every field it reads from the request, left out or not, but it does not read
    ActionAfterCompletion (the schedule keeps the old one) and stores a missing State as nothing. AWS resets
    both to their defaults: ActionAfterCompletion as CreateSchedule leaves it when not given, State ENABLED
    (AWS: EventBridge Scheduler API Reference, UpdateSchedule)."""
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


# The services whose SDKs speak Smithy RPC v2 CBOR to moto, by the service name in the path (which is also
# their JSON protocol's X-Amz-Target prefix), and their botocore model.
_RPC_V2_CBOR_SERVICES = {"GraniteServiceVersion20100801": "cloudwatch"}


def _cloudwatch_speaks_cbor():
    """CloudWatch answered in Smithy RPC v2 CBOR (see the module's docstring): moto 5.2.5 reads CloudWatch's JSON
    and query protocols only (getmoto/moto#9195), and the SDK for Rust speaks the first protocol of the service's
    model, CBOR (boto3 prefers the JSON protocol, which moto reads). A request `POST /service/SERVICE/operation/OP`
    with the header `smithy-protocol: rpc-v2-cbor` is handed to moto as the JSON protocol's `POST /` with
    `X-Amz-Target: SERVICE.OP` and the same input as JSON (a timestamp, CBOR's tag 1, as epoch seconds; bytes as
    base64). moto's JSON answer, an error too (`__type` and `message`), goes back as CBOR, with the header
    `smithy-protocol: rpc-v2-cbor`: each member as its shape in the service's model says (a timestamp as tag 1, a
    double as a float, a blob as bytes), a member moto answers null left out. Nothing else changes: the alarms are
    moto's own, and what moto answers in JSON is what the SDK reads. (AWS: Smithy's "Smithy RPC v2 CBOR protocol",
    https://smithy.io/2.0/additional-specs/protocols/smithy-rpc-v2.html.)"""
    import base64
    import datetime
    import io

    import cbor2
    from botocore.utils import parse_timestamp
    from moto.core.utils import get_service_model

    def output_shape(service, operation):
        # The botocore model moto itself answers from (loaded once, and kept).
        try:
            return get_service_model(_RPC_V2_CBOR_SERVICES[service]).operation_model(operation).output_shape
        except Exception:  # an operation the model lacks: moto answers it (an error), sent as it is
            return None

    def as_json(value):
        """A decoded CBOR input as the JSON protocol writes it."""
        if isinstance(value, dict):
            return {k: as_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [as_json(v) for v in value]
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, (bytes, bytearray)):
            return base64.b64encode(value).decode()
        if isinstance(value, cbor2.CBORTag):
            return as_json(value.value)
        if value is cbor2.undefined:
            return None
        return value

    def as_cbor(value, shape):
        """A JSON answer's value as the protocol writes it in CBOR, by its shape (none: as it is)."""
        kind = shape.type_name if shape is not None else None
        if isinstance(value, dict) and kind == "structure":
            return {k: as_cbor(v, shape.members.get(k)) for k, v in value.items() if v is not None}
        if isinstance(value, dict):
            inner = shape.value if kind == "map" else None
            return {k: as_cbor(v, inner) for k, v in value.items()}
        if isinstance(value, list):
            return [as_cbor(v, shape.member if kind == "list" else None) for v in value]
        if kind == "timestamp" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return cbor2.CBORTag(1, value)
        if kind == "timestamp" and isinstance(value, str):
            return cbor2.CBORTag(1, parse_timestamp(value).timestamp())
        if kind in ("double", "float") and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if kind == "blob" and isinstance(value, str):
            return base64.b64decode(value)
        return value

    dispatch = DomainDispatcherApplication.__call__

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        parts = path.split("/")
        if (
            environ.get("HTTP_SMITHY_PROTOCOL") != "rpc-v2-cbor"
            or len(parts) != 5
            or parts[:2] != ["", "service"]
            or parts[3] != "operation"
            or parts[2] not in _RPC_V2_CBOR_SERVICES
        ):
            return dispatch(self, environ, start_response)
        service, operation = parts[2], parts[4]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        document = as_json(cbor2.loads(body)) if body else {}
        text = json.dumps(document).encode()
        environ = dict(environ)
        environ.update({
            "PATH_INFO": "/",
            "CONTENT_TYPE": "application/x-amz-json-1.0",
            "CONTENT_LENGTH": str(len(text)),
            "HTTP_X_AMZ_TARGET": f"{service}.{operation}",
            "wsgi.input": io.BytesIO(text),
        })
        answered = {}

        def capture(status, headers, exc_info=None):
            answered["status"], answered["headers"] = status, headers
            return lambda data: answered.setdefault("written", []).append(data)

        chunks = dispatch(self, environ, capture)
        try:
            answer = b"".join(answered.get("written", [])) + b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        try:
            document = json.loads(answer) if answer.strip() else {}
        except ValueError:
            # Not JSON (moto could not route the call): passed on as moto answered it.
            start_response(answered["status"], answered["headers"])
            return [answer]
        error = int(answered["status"].split()[0]) >= 400
        encoded = cbor2.dumps(as_cbor(document, None if error else output_shape(service, operation)))
        headers = [(k, v) for k, v in answered["headers"] if k.lower() not in ("content-type", "content-length")]
        headers += [
            ("Content-Type", "application/cbor"),
            ("Content-Length", str(len(encoded))),
            ("smithy-protocol", "rpc-v2-cbor"),
        ]
        start_response(answered["status"], headers)
        return [encoded]

    DomainDispatcherApplication.__call__ = __call__


def _iam_checked_except_for_the_tests_own_key():
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    from moto.core.exceptions import AccessDeniedError, JsonRESTError
    from moto.iam.access_control import IAMPolicyStatement, IAMRequestBase
    from moto.iam.policy_conditions import TrustCondition

    # moto checks IAM once it has served INITIAL_NO_AUTH_ACTION_COUNT requests; from the first here.
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    # What is checked is authorization, not the signature: moto 5.2.5 computes some REST paths'
    # signatures differently from the SDKs (Lambda's /2015-03-31/functions/ among them) and would
    # refuse them as SignatureDoesNotMatch.
    IAMRequestBase.check_signature = lambda self: None
    # IAM compares actions without regard to case; moto names some REST calls in lower case
    # (Batch's `batch:describecomputeenvironments`) and compares them with a policy's as written.
    matches = IAMPolicyStatement._check_element_matches

    def action_matches(self, element, value):
        if element in ("Action", "NotAction"):
            named = self._statement[element]
            folded = [a.lower() for a in named] if isinstance(named, list) else named.lower()
            return IAMPolicyStatement({element: folded})._check_element_matches_as_moto(element, value.lower())
        return matches(self, element, value)

    IAMPolicyStatement._check_element_matches_as_moto = matches
    IAMPolicyStatement._check_element_matches = action_matches
    # A condition on a key the request lacks is false in IAM (but for the ...IfExists operators);
    # moto 5.2.5 checks only the keys present, so a role whose trust policy asks for an external
    # ID could be assumed without one.
    verify = TrustCondition.verify_condition

    def verify_every_key(self, actual_values):
        if not self._condition.endswith("IfExists") and len(actual_values) < len(self.context_keys):
            return False
        return verify(self, actual_values)

    TrustCondition.verify_condition = verify_every_key
    # moto looks a role to be assumed up in the caller's account, so another account's role is never
    # found and its trust policy never read: look it up in the account its ARN names.
    for method in ("_is_assuming_role_operation", "_check_role_trust_relationship"):
        setattr(IAMRequestBase, method, _in_the_roles_account(getattr(IAMRequestBase, method)))
    check = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def unchecked(self):
        key = self.headers.get("Authorization", "").partition("Credential=")[2].partition("/")[0]
        if key == "testing":
            return True
        # A session of the root's in another account (AssumeRole with session name `root`), which a
        # test seeds that account with.
        from moto.sts.models import sts_backends

        sessions = sts_backends[self.current_account]["aws"].assumed_roles
        return any(s.access_key_id == key and s.session_name == "root" for s in sessions)

    def checked(self, iam_request_cls, resource="*"):
        if unchecked(self):
            return
        try:
            check(self, iam_request_cls, resource)
        except AccessDeniedError as denied:
            # moto answers a denial in the query protocol's XML whatever the service; the JSON
            # protocols' services (DynamoDB, Lambda, ECS...) answer AccessDeniedException in JSON,
            # which is what the SDKs read as an access denied.
            if "x-www-form-urlencoded" in self.headers.get("Content-Type", ""):
                raise
            answer = JsonRESTError("AccessDeniedException", denied.message)
            answer.code = 403
            raise answer from denied

    ActionAuthenticatorMixin._authenticate_and_authorize_action = checked


def _in_the_roles_account(method):
    def in_account(self, role_arn, *rest):
        parts = role_arn.split(":")
        caller, self.account_id = self.account_id, parts[4] if len(parts) > 4 and parts[4] else self.account_id
        try:
            return method(self, role_arn, *rest)
        finally:
            self.account_id = caller

    return in_account


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


# ComputeResourceUpdate fields whose change is an infrastructure update on EC2 and Spot (AWS Batch User Guide,
# "Perform infrastructure updates").
_BATCH_INFRASTRUCTURE_FIELDS = {
    "subnets", "securityGroupIds", "allocationStrategy", "instanceTypes", "ec2KeyPair", "instanceRole", "tags",
    "placementGroup", "bidPercentage", "launchTemplate", "ec2Configuration", "updateToLatestImageVersion", "type",
    "imageId",
}
_BATCH_DEFAULT_UPDATE_POLICY = {"terminateJobsOnUpdate": False, "jobExecutionTimeoutMinutes": 30}


def _batch_updates_apply():
    """UpdateComputeEnvironment applies its computeResources and updatePolicy (see the module's docstring; AWS:
    Batch API Reference, ComputeResourceUpdate and UpdateComputeEnvironment; AWS Batch User Guide, "Perform
    infrastructure updates")."""
    backend = batch_models.BatchBackend
    moto_update = backend.update_compute_environment
    moto_describe = backend.describe_compute_environments

    def update_compute_environment(self, compute_environment_name, state, compute_resources, service_role):
        env = self.get_compute_environment(compute_environment_name)
        given = {}
        if env is not None and compute_resources:
            current = env.compute_resources or {}
            fargate = "FARGATE" in current.get("type", "")
            # Fargate: an empty list of subnets or security groups is handled as no change.
            given = {k: v for k, v in compute_resources.items()
                     if not (fargate and k in ("subnets", "securityGroupIds") and v == [])}
            infrastructure = not fargate and any(
                k in _BATCH_INFRASTRUCTURE_FIELDS and v != current.get(k) for k, v in given.items())
            role = env.service_role or ""
            if infrastructure and (current.get("allocationStrategy", "BEST_FIT") == "BEST_FIT"
                                   or (role and "/aws-service-role/batch.amazonaws.com/" not in role)):
                raise BatchClientException(
                    "Infrastructure updates need the AWSServiceRoleForBatch service-linked role and an "
                    "allocation strategy other than BEST_FIT")
            for subnet in given.get("subnets", []):
                try:
                    self.ec2_backend.get_subnet(subnet)
                except batch_models.InvalidSubnetIdError:
                    raise batch_models.InvalidParameterValueException(f"subnet {subnet} does not exist")
        answer = moto_update(self, compute_environment_name, state, compute_resources, service_role)
        if given:
            env.compute_resources.update(given)
        return answer

    def describe_compute_environments(self, environments=None):
        described = moto_describe(self, environments)
        for entry in described:
            env = self.get_compute_environment(entry["computeEnvironmentArn"])
            entry["updatePolicy"] = {**_BATCH_DEFAULT_UPDATE_POLICY, **getattr(env, "update_policy", {})}
            resources = entry.get("computeResources")
            if resources is not None and "FARGATE" not in resources.get("type", ""):
                entry["computeResources"] = {"allocationStrategy": "BEST_FIT", **resources}
        return described

    def keeping_update_policy(handler):
        def handle(self):
            answer = handler(self)
            policy = self._get_param("updatePolicy")
            if policy:
                env = self.batch_backend.get_compute_environment(json.loads(answer)["computeEnvironmentArn"])
                env.update_policy = {**getattr(env, "update_policy", {}), **policy}
            return answer
        return handle

    backend.update_compute_environment = update_compute_environment
    backend.describe_compute_environments = describe_compute_environments
    responses = batch_responses.BatchResponse
    responses.updatecomputeenvironment = keeping_update_policy(responses.updatecomputeenvironment)


if __name__ == "__main__":
    if os.environ.get("AZEVAC_MOTO_UNFIXED") != "1":
        apply_fix()
    if os.environ.get("AZEVAC_MOTO_IAM") == "1":
        _iam_checked_except_for_the_tests_own_key()
    sys.argv[0] = "moto_server"
    sys.exit(main())
