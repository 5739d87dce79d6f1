//! The IAM actions and services azevac needs whatever the kinds (each kind lists its own in its
//! registration): what the IAM policies and the drift test are built from.

/// The IAM service prefixes azevac calls whatever the types: zones and subnets and the journal on
/// every run; the caller's identity and the roles it assumes (`--accounts`), the organization's
/// accounts (`--accounts org`), the `--notify` topics and the alarms of `recover --waves` when asked,
/// and the queue and ARC's autoshifts `watch` reads.
pub const CORE_SERVICES: &[&str] = &[
    "ec2",
    "dynamodb",
    "sts",
    "organizations",
    "sns",
    "cloudwatch",
    "sqs",
    "arc-zonal-shift",
];

/// The IAM actions every run needs in each account it acts in, whatever the types: the zones, and
/// the zone's subnets (planning, and the free addresses of the headroom check).
pub const CORE_IAM_ACTIONS: &[&str] = &["ec2:DescribeAvailabilityZones", "ec2:DescribeSubnets"];

/// The IAM actions needed in the operator's account only (never in a member account's role): the
/// journal (a transaction is authorized by the actions of its writes and checks), the caller's
/// identity and the roles it assumes (`--accounts`), the organization's accounts (`--accounts org`),
/// the `--notify` topics and the alarms `recover --waves` is gated on; the queue `watch` reads and
/// ARC's autoshifts it follows.
pub const OPERATOR_IAM_ACTIONS: &[&str] = &[
    "dynamodb:DescribeTable",
    "dynamodb:DescribeContinuousBackups",
    "dynamodb:Query",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
    "sts:GetCallerIdentity",
    "sts:AssumeRole",
    "organizations:ListAccounts",
    "organizations:ListAccountsForParent",
    "organizations:ListOrganizationalUnitsForParent",
    "sns:Publish",
    "cloudwatch:DescribeAlarms",
    "sqs:GetQueueAttributes",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "arc-zonal-shift:ListAutoshifts",
    "arc-zonal-shift:GetAutoshiftObserverNotificationStatus",
];

/// The IAM actions of the journal's administration, `azevac init`'s alone: kept with the error type,
/// which tells the operator which policy grants a denied action ([`crate::error::grants`]).
pub use crate::error::grants::ADMIN_IAM_ACTIONS;
