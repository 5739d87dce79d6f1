//! What a group's suspended processes make of an evacuation, for its plan line: removing the zone's
//! subnets moves the instances there out only through `AZRebalance`, which launches replacements in
//! the other zones before it terminates the zone's instances. A process suspended before azevac
//! came (by the group's owner, or by AWS after failed launches) holds that up, and the line must say
//! what will really happen instead of "replaced".
//!
//! What AWS documents (EC2 Auto Scaling User Guide, "How suspended processes affect other
//! processes", <https://docs.aws.amazon.com/autoscaling/ec2/userguide/understand-how-suspending-processes-affects-other-processes.html>,
//! and "Considerations for suspending processes",
//! <https://docs.aws.amazon.com/autoscaling/ec2/userguide/suspend-resume-considerations.html>):
//! with `Launch` suspended `AZRebalance` stops rebalancing, and nothing replaces what is
//! terminated; with `Terminate` suspended `AZRebalance` launches in the other zones (up to 10%
//! over MaxSize) but terminates nothing; with `AZRebalance` (or `Launch` and `Terminate`)
//! suspended, a change of the group's zones leaves it unbalanced until they are resumed.
//!
//! Whose suspension it is: azevac's own is journalled as an action of the zone's record
//! ([`Action::Suspend`]); any other is the owner's. A suspension azevac journalled in another
//! zone's record is not seen here and reads as the owner's: what it does to this zone is the same.

use super::{Action, GroupDetail, Member, AZ_REBALANCE};
use crate::model::Record;

/// The process that launches instances (and so every replacement).
pub(super) const LAUNCH: &str = "Launch";
/// The process that terminates instances on Auto Scaling's own account.
const TERMINATE: &str = "Terminate";

/// Whether `process` is suspended on the group.
pub(super) fn is_suspended(detail: &GroupDetail, process: &str) -> bool {
    detail.suspended.iter().any(|p| p == process)
}

/// Whether the zone's record says azevac suspended `AZRebalance` (an earlier paced evacuation). A
/// record this version cannot read says nothing here (its recovery line fails on it).
pub(super) fn suspended_by_azevac(record: Option<&Record>) -> bool {
    let suspend = Action::Suspend {
        process: AZ_REBALANCE.to_owned(),
    };
    record
        .and_then(|r| r.actions_as::<Action>().ok())
        .is_some_and(|actions| actions.contains(&suspend))
}

/// The group's instances in the zone named `az_name` that are not on their way out already.
pub(super) fn in_zone<'a>(detail: &'a GroupDetail, az_name: &str) -> Vec<&'a Member> {
    detail
        .instances
        .iter()
        .filter(|m| m.az == az_name && !m.state.starts_with("Terminat"))
        .collect()
}

/// What removing the zone's subnets does to the group's `in_zone` instances when a suspended
/// process keeps them there, in place of "replaced" (`None`: they are replaced, as the plan says).
/// `pace` is `--pace` (which terminates nothing while `Launch` is suspended: see [`paces`]);
/// `by_azevac` whether the zone's record says azevac suspended `AZRebalance`.
pub(super) fn staying(detail: &GroupDetail, in_zone: usize, pace: Option<u32>, by_azevac: bool) -> Option<String> {
    if in_zone == 0 {
        return None;
    }
    let n = format!("its {in_zone} instance(s) in the zone");
    if is_suspended(detail, LAUNCH) {
        let paced = if pace.is_some() {
            "; --pace terminates none of them (nothing would replace them)"
        } else {
            ""
        };
        return Some(format!(
            "{LAUNCH} is suspended by its owner: Auto Scaling launches no replacement, so {n} stay there until \
             {LAUNCH} is resumed{paced}"
        ));
    }
    if is_suspended(detail, TERMINATE) {
        return Some(match pace {
            Some(batch) => format!(
                "{TERMINATE} is suspended by its owner: Auto Scaling terminates nothing of its own accord; --pace \
                 terminates {n} itself, {batch} at a time"
            ),
            None => format!(
                "{TERMINATE} is suspended by its owner: Auto Scaling launches replacements in the other zones (up \
                 to 10% over MaxSize) but terminates nothing, so {n} stay there until {TERMINATE} is resumed; \
                 --pace N terminates them N at a time"
            ),
        });
    }
    if !is_suspended(detail, AZ_REBALANCE) {
        return None;
    }
    let whose = if by_azevac {
        "by azevac (journalled; recover resumes it)"
    } else {
        "by its owner"
    };
    Some(match pace {
        Some(batch) => format!(
            "{AZ_REBALANCE} is suspended {whose}: Auto Scaling would move none of {n} out; --pace terminates them, \
             {batch} at a time, and Auto Scaling replaces them in the other zones"
        ),
        None => format!(
            "{AZ_REBALANCE} is suspended {whose}: removing the subnets moves none of {n} out; they stay until \
             replaced (scale-in, health check, instance refresh); --pace N terminates them N at a time"
        ),
    })
}

/// Whether `--pace` may terminate the group's instances in the zone: not while `Launch` is
/// suspended, when nothing would replace them (every batch would be capacity lost, and the
/// pacing would wait for replacements that never come).
pub(super) fn paces(detail: &GroupDetail) -> bool {
    !is_suspended(detail, LAUNCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(suspended: &[&str], zones: &[&str]) -> GroupDetail {
        GroupDetail {
            suspended: suspended.iter().map(|p| p.to_string()).collect(),
            instances: zones
                .iter()
                .enumerate()
                .map(|(n, az)| Member {
                    id: format!("i-{n}"),
                    az: az.to_string(),
                    state: "InService".into(),
                })
                .collect(),
            ..GroupDetail::default()
        }
    }

    /// Issue 50: a group whose owner suspended AZRebalance keeps its instances in the zone when its
    /// subnets are removed; the line says so, and how --pace moves them.
    #[test]
    fn issue_50_an_owners_suspended_az_rebalance_keeps_the_instances_in_the_zone() {
        let detail = group(&["AZRebalance"], &["us-east-1c", "us-east-1c", "us-east-1b"]);
        let count = in_zone(&detail, "us-east-1c").len();
        assert_eq!(count, 2);
        let note = staying(&detail, count, None, false).unwrap_or_default();
        assert!(
            note.starts_with("AZRebalance is suspended by its owner")
                && note.contains("moves none of its 2 instance(s) in the zone out")
                && note.contains("--pace N"),
            "{note}"
        );
        let paced = staying(&detail, count, Some(1), false).unwrap_or_default();
        assert!(paced.contains("--pace terminates them, 1 at a time"), "{paced}");
        assert!(paces(&detail));
    }

    /// Issue 50: azevac's own suspension (journalled in the zone's record by an earlier paced run)
    /// is told apart from the owner's.
    #[test]
    fn issue_50_azevacs_own_suspension_is_not_the_owners() {
        let detail = group(&["AZRebalance"], &["us-east-1c"]);
        let note = staying(&detail, 1, None, true).unwrap_or_default();
        assert!(
            note.starts_with("AZRebalance is suspended by azevac (journalled"),
            "{note}"
        );
        let mut record = crate::model::Record {
            az_id: "use1-az2".into(),
            resource: "arn:web".into(),
            resource_type: "asg".into(),
            removed_subnets: vec!["subnet-c".into()],
            state: crate::model::State::Done,
            version: 2,
            resource_name: Some("web".into()),
            original_subnets: vec![],
            actions: crate::model::action::encode(&[Action::Suspend {
                process: "AZRebalance".into(),
            }]),
            run_id: None,
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        };
        assert!(suspended_by_azevac(Some(&record)));
        record.actions.clear();
        assert!(!suspended_by_azevac(Some(&record)));
        assert!(!suspended_by_azevac(None));
    }

    /// Issue 50: with Launch suspended nothing is replaced: the instances stay, and --pace
    /// terminates none; with Terminate suspended Auto Scaling launches but never terminates.
    #[test]
    fn issue_50_suspended_launch_or_terminate_keep_the_instances_too() {
        let launch = group(&["Launch"], &["us-east-1c"]);
        let note = staying(&launch, 1, Some(2), false).unwrap_or_default();
        assert!(
            note.starts_with("Launch is suspended by its owner") && note.contains("--pace terminates none"),
            "{note}"
        );
        assert!(!paces(&launch));
        let terminate = group(&["Terminate"], &["us-east-1c"]);
        let note = staying(&terminate, 1, None, false).unwrap_or_default();
        assert!(note.contains("terminates nothing, so its 1 instance(s)"), "{note}");
    }

    /// Nothing suspended, or nothing in the zone: the line's replacement note stands.
    #[test]
    fn without_a_suspension_or_instances_in_the_zone_nothing_is_said() {
        assert_eq!(staying(&group(&[], &["us-east-1c"]), 1, None, false), None);
        assert_eq!(staying(&group(&["AZRebalance"], &[]), 0, None, false), None);
        let leaving = GroupDetail {
            instances: vec![Member {
                id: "i-0".into(),
                az: "us-east-1c".into(),
                state: "Terminating:Wait".into(),
            }],
            ..GroupDetail::default()
        };
        assert!(in_zone(&leaving, "us-east-1c").is_empty());
    }
}
