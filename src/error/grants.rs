//! Which policy grants a denied action: the journal's administration is `azevac init`'s alone (the
//! admin policy), everything else the operator's. The list lives here, in the floor, because the
//! error type words the denial; the registry's IAM lists re-export it.

/// The IAM actions of the journal's administration, `azevac init`'s alone (fixtures/iam-admin-policy.json):
/// creating the table and turning its deletion protection and point-in-time recovery on. An operator
/// who could call them could also turn both off.
pub const ADMIN_IAM_ACTIONS: &[&str] = &[
    "dynamodb:CreateTable",
    "dynamodb:UpdateTable",
    "dynamodb:UpdateContinuousBackups",
    "arc-zonal-shift:UpdateAutoshiftObserverNotificationStatus",
];

/// Which policy grants a denied action: the journal's administration is `init`'s alone (the admin
/// policy), so that no operator can turn the journal's protection off; everything else is the
/// operator's.
pub fn what_grants(operation: &str) -> &'static str {
    if ADMIN_IAM_ACTIONS.contains(&operation) {
        "creating and protecting the journal table is `azevac init`'s: run it once with the admin \
         policy (fixtures/iam-admin-policy.json), or pass --table with an existing journal"
    } else {
        "grant it to the caller (fixtures/iam-policy.json lists what azevac needs)"
    }
}
