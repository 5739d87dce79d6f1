"""The emulator fix in scripts/moto_server.py, measured and checked: one TransactWriteItems of 100 puts on a
table of N items, on unchanged moto and on the launcher's; then a cancelled transaction that overwrote,
updated, deleted and created items must leave the table exactly as it was (the fix must not change rollback).

Usage: .venv-moto/bin/python bench/moto_fix.py [--items 3000] [--runs 5]
"""

import argparse
import os
import statistics
import sys
import time

import boto3
import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, start_moto  # noqa: E402


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"| emulator | 100-item TransactWriteItems on {args.items} items: median (min-max) s | rollback |")
    print("|---|---|---|")
    for fixed in (False, True):
        t = measure(fixed, args.items, args.runs)
        name = "moto + scripts/moto_server.py" if fixed else "moto 5.2.5 unchanged"
        print(f"| {name} | {statistics.median(t):.3f} ({min(t):.3f}-{max(t):.3f}) | exact |")


if __name__ == "__main__":
    main()
