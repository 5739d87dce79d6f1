"""Seed an emulator (AWS_ENDPOINT_URL) with an estate described in a JSON file, with boto3 from the
emulator's own venv: `scripts/demo` uses it so that a first run builds nothing but azevac itself.

It creates exactly what tests/it/common/estate.rs (the integration tests' seeder) creates from the same
spec; tests/it/docs/demo_seed.rs seeds one emulator with each and compares the two estates.

Usage: .venv-moto/bin/python scripts/seed-estate.py [fixtures/sample-estate.json]
"""

import datetime
import json
import os
import sys

import boto3
import boto3.session

LAUNCH_TEMPLATE = "azevac-sample"
# The smallest valid zip archive: an empty end-of-central-directory record.
EMPTY_ZIP = b"PK\x05\x06" + b"\x00" * 18
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    },
    separators=(",", ":"),
)

BATCH_TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "batch.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    },
    separators=(",", ":"),
)


def seed(spec):
    # boto3 reads AWS_DEFAULT_REGION only; azevac and the SDK for Rust read AWS_REGION.
    session = boto3.session.Session(region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"))
    ec2 = session.client("ec2")
    subnets, security_groups, vpcs = {}, {}, {}
    for vpc in spec.get("vpcs", []):
        vpc_id = ec2.create_vpc(CidrBlock=vpc["cidr"])["Vpc"]["VpcId"]
        a, b = vpc["cidr"].split(".")[:2]
        for i, zone in enumerate(vpc["zones"]):
            # Named as people name them, for the tables that show names (`-o wide`).
            name = {"ResourceType": "subnet", "Tags": [{"Key": "Name", "Value": f"{vpc['name']}-{zone}"}]}
            subnet = ec2.create_subnet(
                VpcId=vpc_id, CidrBlock=f"{a}.{b}.{i * 16}.0/20", AvailabilityZoneId=zone, TagSpecifications=[name]
            )
            subnets[(vpc["name"], zone)] = subnet["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName=f"{vpc['name']}-app", Description="azevac sample", VpcId=vpc_id)
        security_groups[vpc["name"]] = group["GroupId"]
        vpcs[vpc["name"]] = vpc_id

    nats = {}
    for nat in spec.get("nat_gateways", []):
        request = {
            "SubnetId": subnets[(nat["vpc"], nat["zone"])],
            "TagSpecifications": [{"ResourceType": "natgateway", "Tags": [{"Key": "Name", "Value": nat["name"]}]}],
        }
        if nat.get("private"):
            request["ConnectivityType"] = "private"
        else:
            request["AllocationId"] = ec2.allocate_address(Domain="vpc")["AllocationId"]
        nats[nat["name"]] = ec2.create_nat_gateway(**request)["NatGateway"]["NatGatewayId"]
    for table in spec.get("route_tables", []):
        table_id = ec2.create_route_table(
            VpcId=vpcs[table["vpc"]],
            TagSpecifications=[{"ResourceType": "route-table", "Tags": [{"Key": "Name", "Value": table["name"]}]}],
        )["RouteTable"]["RouteTableId"]
        for zone in table["zones"]:
            ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnets[(table["vpc"], zone)])
        for destination, nat in sorted(table.get("routes", {}).items()):
            if destination.startswith("pl-"):
                where = {"DestinationPrefixListId": destination}
            elif ":" in destination:
                where = {"DestinationIpv6CidrBlock": destination}
            else:
                where = {"DestinationCidrBlock": destination}
            ec2.create_route(RouteTableId=table_id, NatGatewayId=nats[nat], **where)

    groups = spec.get("auto_scaling_groups", [])
    if groups:
        ec2.create_launch_template(
            LaunchTemplateName=LAUNCH_TEMPLATE,
            LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "t3.micro"},
        )
    autoscaling = session.client("autoscaling")
    for group in groups:
        desired = group.get("desired", 0)
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=group["name"],
            LaunchTemplate={"LaunchTemplateName": LAUNCH_TEMPLATE},
            MinSize=0,
            MaxSize=max(desired, 1),
            DesiredCapacity=desired,
            VPCZoneIdentifier=",".join(subnets[(group["vpc"], z)] for z in group["zones"]),
            Tags=[
                {
                    "Key": k,
                    "Value": v,
                    "ResourceId": group["name"],
                    "ResourceType": "auto-scaling-group",
                    "PropagateAtLaunch": False,
                }
                for k, v in group.get("tags", {}).items()
            ],
        )

    services = spec.get("ecs_services", [])
    if services:
        ecs = session.client("ecs")
        for mode in ["awsvpc", "bridge"]:
            ecs.register_task_definition(
                family=f"sample-{mode}",
                networkMode=mode,
                containerDefinitions=[{"name": "app", "image": "nginx", "memory": 128}],
            )
        for cluster in sorted({s["cluster"] for s in services}):
            ecs.create_cluster(clusterName=cluster)
        for service in services:
            mode = service.get("network_mode", "awsvpc")
            request = {
                "cluster": service["cluster"],
                "serviceName": service["name"],
                "taskDefinition": f"sample-{mode}",
                "desiredCount": service.get("desired", 0),
                "deploymentController": {"type": service.get("controller", "ECS")},
            }
            if mode == "awsvpc":
                request["launchType"] = "FARGATE"
                request["networkConfiguration"] = {
                    "awsvpcConfiguration": {
                        "subnets": [subnets[(service["vpc"], z)] for z in service["zones"]],
                        "securityGroups": [security_groups[service["vpc"]]],
                        "assignPublicIp": service.get("assign_public_ip", "DISABLED"),
                    }
                }
            tags = [{"key": k, "value": v} for k, v in service.get("tags", {}).items()]
            if tags:
                request["tags"] = tags
            ecs.create_service(**request)

    for endpoint in spec.get("vpc_endpoints", []):
        ec2.create_vpc_endpoint(
            VpcId=vpcs[endpoint["vpc"]],
            ServiceName=endpoint["service"],
            VpcEndpointType="Interface",
            SubnetIds=[subnets[(endpoint["vpc"], z)] for z in endpoint["zones"]],
            TagSpecifications=[{"ResourceType": "vpc-endpoint", "Tags": [{"Key": "Name", "Value": endpoint["name"]}]}],
        )
    functions = spec.get("lambda_functions", [])
    if functions:
        role = session.client("iam").create_role(RoleName="azevac-sample-lambda", AssumeRolePolicyDocument=TRUST)
        awslambda = session.client("lambda")
        for function in functions:
            request = {
                "FunctionName": function["name"],
                "Runtime": "python3.12",
                "Role": role["Role"]["Arn"],
                "Handler": "index.handler",
                "Code": {"ZipFile": EMPTY_ZIP},
            }
            if function.get("vpc"):
                request["VpcConfig"] = {
                    "SubnetIds": [subnets[(function["vpc"], z)] for z in function["zones"]],
                    "SecurityGroupIds": [security_groups[function["vpc"]]],
                }
            if function.get("tags"):
                request["Tags"] = function["tags"]
            awslambda.create_function(**request)
            if function.get("published_alias"):
                version = awslambda.publish_version(FunctionName=function["name"]).get("Version", "1")
                awslambda.create_alias(FunctionName=function["name"], Name="live", FunctionVersion=version)

    environments = spec.get("batch_compute_environments", [])
    if environments:
        iam = session.client("iam")
        # Batch's service-linked role, where AWS creates it (moto has no Batch name for CreateServiceLinkedRole).
        service_role = iam.create_role(
            RoleName="AWSServiceRoleForBatch",
            Path="/aws-service-role/batch.amazonaws.com/",
            AssumeRolePolicyDocument=BATCH_TRUST,
        )["Role"]["Arn"]
        own_role = None
        if any(e.get("own_service_role") for e in environments):
            own_role = iam.create_role(RoleName="azevac-sample-batch-service", AssumeRolePolicyDocument=BATCH_TRUST)
            own_role = own_role["Role"]["Arn"]
        profile = None
        if any(e.get("compute_type", "FARGATE") in ("EC2", "SPOT") for e in environments):
            profile = iam.create_instance_profile(InstanceProfileName="azevac-sample-batch")["InstanceProfile"]["Arn"]
        batch = session.client("batch")
        for environment in environments:
            request = {
                "computeEnvironmentName": environment["name"],
                "type": "MANAGED" if environment.get("managed", True) else "UNMANAGED",
                "serviceRole": own_role if environment.get("own_service_role") else service_role,
            }
            if environment.get("managed", True):
                kind = environment.get("compute_type", "FARGATE")
                resources = {
                    "type": kind,
                    "maxvCpus": 16,
                    "subnets": [subnets[(environment["vpc"], z)] for z in environment["zones"]],
                    "securityGroupIds": [security_groups[environment["vpc"]]],
                }
                if kind in ("EC2", "SPOT"):
                    # minvCpus 0: moto launches no instance for it.
                    resources.update(minvCpus=0, instanceTypes=["optimal"], instanceRole=profile)
                if environment.get("allocation_strategy"):
                    resources["allocationStrategy"] = environment["allocation_strategy"]
                request["computeResources"] = resources
            if environment.get("tags"):
                request["tags"] = environment["tags"]
            batch.create_compute_environment(**request)
    seed_events(session, spec, subnets, security_groups)
    seed_alarms(session, spec)
    return subnets


# What every ECS target of a rule or schedule runs, as tests/it/common/events.rs seeds it.
CLUSTER = "arn:aws:ecs:us-east-1:123456789012:cluster/prod"
TASK_DEFINITION = "arn:aws:ecs:us-east-1:123456789012:task-definition/report:3"
EVENTS_ROLE = "arn:aws:iam::123456789012:role/azevac-sample-events"
DLQ = "arn:aws:sqs:us-east-1:123456789012:azevac-sample-dlq"
SAMPLE_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:azevac-sample"


def seed_events(session, spec, subnets, security_groups):
    """EventBridge rule targets and Scheduler schedules that run ECS tasks (issue 34)."""
    targets = spec.get("eventbridge_targets", [])
    if targets:
        events = session.client("events")
        made = set()
        for t in targets:
            bus = t.get("bus", "default")
            if bus != "default" and ("bus", bus) not in made:
                made.add(("bus", bus))
                events.create_event_bus(Name=bus)
            if ("rule", bus, t["rule"]) not in made:
                made.add(("rule", bus, t["rule"]))
                # A schedule on the default bus, a pattern on another (only the default one takes schedules).
                when = (
                    {"ScheduleExpression": "rate(1 hour)"}
                    if bus == "default"
                    else {"EventPattern": '{"source":["azevac.sample"]}'}
                )
                events.put_rule(Name=t["rule"], EventBusName=bus, Description="azevac sample", **when)
            if not t.get("zones"):
                target = {"Id": t["id"], "Arn": SAMPLE_FUNCTION, "Input": '{"from":"azevac"}'}
            else:
                target = {
                    "Id": t["id"],
                    "Arn": CLUSTER,
                    "RoleArn": EVENTS_ROLE,
                    "InputTransformer": {"InputPathsMap": {"time": "$.time"}, "InputTemplate": '{"at":<time>}'},
                    "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 600},
                    "DeadLetterConfig": {"Arn": DLQ},
                    "EcsParameters": {
                        "TaskDefinitionArn": TASK_DEFINITION,
                        "TaskCount": 2,
                        "LaunchType": "FARGATE",
                        "PlatformVersion": "1.4.0",
                        "Group": "reports",
                        "NetworkConfiguration": {
                            "awsvpcConfiguration": {
                                "Subnets": [subnets[(t["vpc"], z)] for z in t["zones"]],
                                "SecurityGroups": [security_groups[t["vpc"]]],
                                "AssignPublicIp": "DISABLED",
                            }
                        },
                    },
                }
            answer = events.put_targets(Rule=t["rule"], EventBusName=bus, Targets=[target])
            assert answer["FailedEntryCount"] == 0, answer
    schedules = spec.get("schedules", [])
    if schedules:
        scheduler = session.client("scheduler")
        groups = set()
        for s in schedules:
            group = s.get("group", "default")
            if group != "default" and group not in groups:
                groups.add(group)
                scheduler.create_schedule_group(Name=group)
            if not s.get("zones"):
                target = {"Arn": SAMPLE_FUNCTION, "RoleArn": EVENTS_ROLE}
            else:
                target = {
                    "Arn": CLUSTER,
                    "RoleArn": EVENTS_ROLE,
                    "Input": '{"from":"azevac"}',
                    "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 600},
                    "DeadLetterConfig": {"Arn": DLQ},
                    "EcsParameters": {
                        "TaskDefinitionArn": TASK_DEFINITION,
                        "TaskCount": 2,
                        "LaunchType": "FARGATE",
                        "PlatformVersion": "1.4.0",
                        "Group": "reports",
                        "NetworkConfiguration": {
                            "awsvpcConfiguration": {
                                "Subnets": [subnets[(s["vpc"], z)] for z in s["zones"]],
                                "SecurityGroups": [security_groups[s["vpc"]]],
                                "AssignPublicIp": "DISABLED",
                            }
                        },
                    },
                }
            scheduler.create_schedule(
                Name=s["name"],
                GroupName=group,
                ScheduleExpression="rate(1 hour)",
                ScheduleExpressionTimezone="Europe/Paris",
                Description="azevac sample",
                State="DISABLED",
                KmsKeyArn="arn:aws:kms:us-east-1:123456789012:key/azevac-sample",
                EndDate=datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc),
                ActionAfterCompletion="DELETE",
                FlexibleTimeWindow={"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15},
                Target=target,
            )


def seed_alarms(session, spec):
    """CloudWatch alarms, each on a load balancer's 5XX count, its state set by hand, as
    tests/it/common/estate.rs seeds them (the reason: its SEEDED)."""
    cloudwatch = session.client("cloudwatch")
    for alarm in spec.get("alarms", []):
        cloudwatch.put_metric_alarm(
            AlarmName=alarm["name"],
            Namespace="AWS/ApplicationELB",
            MetricName="HTTPCode_Target_5XX_Count",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1.0,
            ComparisonOperator="GreaterThanThreshold",
        )
        cloudwatch.set_alarm_state(AlarmName=alarm["name"], StateValue=alarm["state"], StateReason="seeded")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "fixtures/sample-estate.json"
    if not os.environ.get("AWS_ENDPOINT_URL"):
        sys.exit("seed-estate: AWS_ENDPOINT_URL is not set; this seeds an emulator, never a real account")
    with open(path) as f:
        spec = json.load(f)
    subnets = seed(spec)
    print(
        f"seeded {len(spec.get('vpcs', []))} VPCs, {len(subnets)} subnets, "
        f"{len(spec.get('nat_gateways', []))} NAT gateways, {len(spec.get('route_tables', []))} route tables, "
        f"{len(spec.get('auto_scaling_groups', []))} Auto Scaling groups, {len(spec.get('ecs_services', []))} ECS "
        f"services, {len(spec.get('lambda_functions', []))} Lambda functions, "
        f"{len(spec.get('batch_compute_environments', []))} Batch compute environments, "
        f"{len(spec.get('vpc_endpoints', []))} VPC endpoints, {len(spec.get('alarms', []))} CloudWatch alarms "
        f"from {path}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
