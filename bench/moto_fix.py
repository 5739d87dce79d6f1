"""The emulator fixes in scripts/moto_server.py, measured and checked, on unchanged moto and on the launcher's:
1. one TransactWriteItems of 100 puts on a table of N items; then a cancelled transaction that overwrote,
   updated, deleted and created items must leave the table exactly as it was (the fix must not change rollback);
2. a strongly consistent Query of R journal-shaped records (every page), which must answer the same items.

Usage: .venv-moto/bin/python bench/moto_fix.py [--items 3000] [--records 1000] [--runs 5]
"""

import argparse
import os
import statistics
import sys
import time

import boto3
import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, start_moto  # noqa: E402


def client(port):
    return boto3.client("dynamodb", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def snapshot(db):
    pages = db.get_paginator("scan").paginate(TableName="t", ConsistentRead=True)
    items = [item for page in pages for item in page["Items"]]
    return sorted(items, key=lambda item: item["pk"]["S"])


def check_rollback(db):
    """A cancelled transaction that overwrote, updated, deleted and created items leaves the table as it was."""
    before = snapshot(db)
    writes = ([{"Put": {"TableName": "t", "Item": {"pk": {"S": f"seed{j}"}, "v": {"S": "overwritten"}}}}
               for j in range(1, 30)]
              + [{"Update": {"TableName": "t", "Key": {"pk": {"S": f"seed{j}"}}, "UpdateExpression": "SET v = :v, w = :v",
                             "ExpressionAttributeValues": {":v": {"S": "updated"}}}} for j in range(30, 60)]
              + [{"Delete": {"TableName": "t", "Key": {"pk": {"S": f"seed{j}"}}}} for j in range(60, 80)]
              + [{"Put": {"TableName": "t", "Item": {"pk": {"S": f"cancelled{j}"}}}} for j in range(19)])
    try:
        db.transact_write_items(TransactItems=writes + [{"ConditionCheck": {
            "TableName": "t", "Key": {"pk": {"S": "seed0"}}, "ConditionExpression": "attribute_not_exists(pk)"}}])
        raise SystemExit("a transaction whose condition fails was not cancelled")
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "TransactionCanceledException", e.response
    after = snapshot(db)
    if after != before:
        changed = [a for a, b in zip(before, after) if a != b][:3]
        raise SystemExit(f"rollback broken: {len(before)} items before, {len(after)} after; first changed {changed}")


def measure(fixed, items, runs):
    moto, port = start_moto(os.path.join(ROOT, ".venv-moto", "bin", "python"), fixed=fixed)
    try:
        db = client(port)
        db.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
        for start in range(0, items, 25):
            db.batch_write_item(RequestItems={"t": [
                {"PutRequest": {"Item": {"pk": {"S": f"seed{j}"}, "v": {"S": "x" * 200}}}}
                for j in range(start, min(start + 25, items))]})
        times = []
        for run in range(runs):
            start = time.perf_counter()
            db.transact_write_items(TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": f"run{run}-{j}"}}}} for j in range(100)])
            times.append(time.perf_counter() - start)
        check_rollback(db)
        return times
    finally:
        moto.kill()


def journal_record(i):
    """An item shaped like a journal record of an Auto Scaling group (the attributes azevac writes)."""
    name = f"asg-{i:04d}"
    text = lambda v: {"S": v}  # noqa: E731
    return {"az_id": text("use1-az2"), "resource_type": text("asg"), "state": text("done"), "version": {"N": "2"},
            "resource": text(f"arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/{name}"),
            "removed_subnets": {"L": [text("subnet-0123456789abcdef0")]}, "actions": {"L": []},
            "original_subnets": {"L": [text(f"subnet-0123456789abcdef{k}") for k in range(3)]},
            "resource_name": text(name), "run_id": text("78d49f74-f97f-4a23-8a13-dce0a61f76c3"),
            "evacuated_by": text("arn:aws:sts::123456789012:user/moto"), "reason": text("az impaired"),
            "azevac_version": text("0.1.0"), "created_at": text("2026-12-02T07:28:30Z"),
            "updated_at": text("2026-12-02T07:28:30Z"), "account_id": text("123456789012")}


def measure_query(fixed, records, runs):
    """Seconds of each full Query of `records` records, and the items the last one answered."""
    moto, port = start_moto(os.path.join(ROOT, ".venv-moto", "bin", "python"), fixed=fixed)
    try:
        db = client(port)
        db.create_table(TableName="j", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "az_id", "KeyType": "HASH"},
                                   {"AttributeName": "resource", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("az_id", "resource")])
        for start in range(0, records, 25):
            db.batch_write_item(RequestItems={"j": [{"PutRequest": {"Item": journal_record(i)}}
                                                    for i in range(start, min(start + 25, records))]})
        times, items = [], []
        for _ in range(runs):
            start = time.perf_counter()
            pages = db.get_paginator("query").paginate(
                TableName="j", ConsistentRead=True, KeyConditionExpression="az_id = :az",
                ExpressionAttributeValues={":az": {"S": "use1-az2"}})
            items = [item for page in pages for item in page["Items"]]
            times.append(time.perf_counter() - start)
        if len(items) != records:
            raise SystemExit(f"the query answered {len(items)} of {records} records")
        return times, items
    finally:
        moto.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"| emulator | 100-item TransactWriteItems on {args.items} items: median (min-max) s | rollback "
          f"| Query of {args.records} journal records: median (min-max) s | items |")
    print("|---|---|---|---|---|")
    answered = {}
    for fixed in (False, True):
        t = measure(fixed, args.items, args.runs)
        q, answered[fixed] = measure_query(fixed, args.records, args.runs)
        same = "the same as unchanged" if fixed and answered[True] == answered[False] else "-"
        if fixed and same == "-":
            raise SystemExit("the launcher's Query answered other items than moto unchanged")
        name = "moto + scripts/moto_server.py" if fixed else "moto 5.2.5 unchanged"
        print(f"| {name} | {statistics.median(t):.3f} ({min(t):.3f}-{max(t):.3f}) | exact "
              f"| {statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f}) | {same} |")


if __name__ == "__main__":
    main()
