//! The plan: for each resource, what changes and what is skipped and why, computed in full before
//! anything is changed. Planning is pure (subnet sets in, decision out) so its rules are unit-tested
//! without AWS; `--dry-run` prints the plan and a real run executes exactly it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::journal::Record;
use crate::plugins::Resource;

/// Which command a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// Take a zone's subnets away.
    Evacuate,
    /// Put journalled subnets back.
    Recover,
}

/// Where a resource stands in a plan or after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Will change (dry run, or not yet executed).
    Planned,
    /// Changed, journalled and read back.
    Done,
    /// Left alone; `reason` says why.
    Skipped,
    /// Tried and failed; `reason` says why. The journal still holds what was taken.
    Failed,
}

/// One resource's line in the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// The plugin's `--type` value.
    #[serde(rename = "type")]
    pub resource_type: String,
    /// The resource ARN (the journal's sort key).
    pub resource: String,
    /// The resource's short name.
    pub name: String,
    /// The AZ ID this line is about.
    pub az_id: String,
    /// The resource's subnets when the plan was made.
    pub current_subnets: Vec<String>,
    /// Subnets taken away (evacuate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_subnets: Option<Vec<String>>,
    /// Subnets put back (recover).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_subnets: Option<Vec<String>>,
    /// What is done to the resource besides subnets (Kubernetes nodes: taint, cordon; recover: untaint...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    /// The resource's subnets once the line is carried out.
    pub resulting_subnets: Vec<String>,
    /// Where the line stands.
    pub status: Status,
    /// Why it is skipped or failed, or what a no-op line does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Caveats for the operator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The resource as discovered, for the plugin to apply the change to.
    #[serde(skip)]
    pub target: Option<Resource>,
    /// The journal record this line builds on, if any.
    #[serde(skip)]
    pub record: Option<Record>,
}

impl Item {
    /// Whether this line changes a resource when carried out.
    pub fn changes_resource(&self) -> bool {
        self.status == Status::Planned
            && [&self.removed_subnets, &self.restored_subnets, &self.actions]
                .iter()
                .any(|change| change.as_ref().is_some_and(|c| !c.is_empty()))
    }

    /// Mark the line done.
    pub fn done(&mut self) {
        self.status = Status::Done;
    }

    /// Mark the line failed, with the error as the reason.
    pub fn fail(&mut self, reason: String) {
        self.status = Status::Failed;
        self.reason = Some(reason);
    }
}

/// A whole plan: one command, one or all zones, every resource it concerns.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The command.
    pub command: Command,
    /// The region.
    pub region: String,
    /// The AZ ID, when the command names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub az_id: Option<String>,
    /// This account's name for that AZ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub az_name: Option<String>,
    /// The lines, grouped by type in plugin order.
    pub items: Vec<Item>,
    /// Journal items that could not be used, with why (recover, status).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// `--stats`: AWS calls and phase times of this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<crate::stats::Stats>,
}

impl Plan {
    /// How many lines stand in each status.
    pub fn count(&self, status: Status) -> usize {
        self.items.iter().filter(|i| i.status == status).count()
    }
}

/// `--tag` and `--name-prefix`: which resources an evacuation may touch.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Every one of these tags must be on the resource with this value.
    pub tags: Vec<(String, String)>,
    /// The resource's name must start with this.
    pub name_prefix: Option<String>,
}

impl Filters {
    /// `None` when the resource passes, or why it does not.
    pub fn rejects(&self, resource: &Resource) -> Option<String> {
        if let Some(prefix) = &self.name_prefix {
            if !resource.name.starts_with(prefix.as_str()) {
                return Some(format!("filtered: name does not start with {prefix:?}"));
            }
        }
        self.tags
            .iter()
            .find(|(k, v)| resource.tags.get(k) != Some(v))
            .map(|(k, v)| format!("filtered: tag {k}={v} not set"))
    }
}

/// How the reason of a resource evacuated by an earlier run starts (counted in the summary).
pub const ALREADY_EVACUATED: &str = "already evacuated";

/// Reason shown for a resource that keeps its subnets because all of them are in the zone.
pub const WOULD_LEAVE_NO_SUBNETS: &str = "would leave no subnets (every subnet is in the zone)";

/// Decide what evacuating `zone_subnets` (one AZ ID's subnets) means for one resource.
/// `None`: the resource has nothing in the zone and no journal record there, so it is not listed.
pub fn evacuation(
    az_id: &str,
    resource: &Resource,
    zone_subnets: &BTreeSet<String>,
    filters: &Filters,
    record: Option<&Record>,
) -> Option<Item> {
    let (in_zone, remaining): (Vec<String>, Vec<String>) =
        resource.subnets.iter().cloned().partition(|s| zone_subnets.contains(s));
    let filtered = filters.rejects(resource);
    // A resource azevac cannot change and whose placement it cannot see (an ECS service in bridge
    // mode follows its container instances) is listed, so that nobody thinks it was handled.
    let unplaced = resource.subnets.is_empty() && resource.unsupported.is_some();
    if in_zone.is_empty() && !unplaced && (record.is_none() || filtered.is_some()) {
        return None;
    }
    if unplaced && filtered.is_some() {
        return None;
    }
    let mut item = Item {
        resource_type: resource.resource_type.to_owned(),
        resource: resource.id.clone(),
        name: resource.name.clone(),
        az_id: az_id.to_owned(),
        current_subnets: resource.subnets.clone(),
        removed_subnets: Some(in_zone.clone()),
        restored_subnets: None,
        actions: None,
        resulting_subnets: remaining.clone(),
        status: Status::Planned,
        reason: None,
        notes: resource.notes.clone(),
        target: Some(resource.clone()),
        record: record.cloned(),
    };
    let skip = if let Some(why) = filtered {
        Some(why)
    } else if let Some(why) = &resource.unsupported {
        Some(why.clone())
    } else if in_zone.is_empty() {
        record.map(|r| format!("{ALREADY_EVACUATED}: {} journalled", r.removed_subnets.join(", ")))
    } else if remaining.is_empty() {
        Some(WOULD_LEAVE_NO_SUBNETS.to_owned())
    } else {
        None
    };
    if let Some(why) = skip {
        item.status = Status::Skipped;
        item.reason = Some(why);
        item.removed_subnets = Some(Vec::new());
        item.resulting_subnets = resource.subnets.clone();
        item.notes.clear();
    }
    Some(item)
}

/// Decide what recovering one journal record means, given the resource's current state (`None`:
/// it no longer exists) and which subnets still exist (subnet → AZ ID).
pub fn recovery(
    record: &Record,
    current: Option<&Resource>,
    existing_subnets: &BTreeMap<String, String>,
    forget_missing: bool,
) -> Item {
    let mut item = Item {
        resource_type: record.resource_type.clone(),
        resource: record.resource.clone(),
        name: record.resource_name.clone().unwrap_or_else(|| record.resource.clone()),
        az_id: record.az_id.clone(),
        current_subnets: Vec::new(),
        removed_subnets: None,
        restored_subnets: Some(Vec::new()),
        actions: None,
        resulting_subnets: Vec::new(),
        status: Status::Planned,
        reason: None,
        notes: Vec::new(),
        target: current.cloned(),
        record: Some(record.clone()),
    };
    let Some(current) = current else {
        if forget_missing {
            item.reason = Some("resource no longer exists: journal record will be deleted (--forget-missing)".into());
        } else {
            item.status = Status::Skipped;
            item.reason =
                Some("resource no longer exists: journal record kept (pass --forget-missing to delete it)".into());
        }
        return item;
    };
    let (restorable, gone): (Vec<String>, Vec<String>) = record
        .removed_subnets
        .iter()
        .cloned()
        .partition(|s| existing_subnets.contains_key(s));
    if !gone.is_empty() {
        item.notes.push(format!(
            "journalled subnet(s) no longer exist, left out: {}",
            gone.join(", ")
        ));
    }
    // Union, never replacement: whatever was changed since the evacuation stays.
    let to_add: Vec<String> = restorable
        .into_iter()
        .filter(|s| !current.subnets.contains(s))
        .collect();
    item.current_subnets = current.subnets.clone();
    item.resulting_subnets = current.subnets.iter().chain(&to_add).cloned().collect();
    // Put subnets back where they were: the original order first, anything added since after it.
    let position = |s: &String| {
        record
            .original_subnets
            .iter()
            .position(|o| o == s)
            .unwrap_or(usize::MAX)
    };
    item.resulting_subnets.sort_by_key(position);
    if to_add.is_empty() {
        item.reason = Some("nothing to put back (subnets already present): journal record will be deleted".into());
    }
    item.restored_subnets = Some(to_add);
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::State;

    fn asg(subnets: &[&str]) -> Resource {
        Resource {
            resource_type: "asg",
            id: "arn:web".into(),
            name: "web".into(),
            subnets: subnets.iter().map(|s| s.to_string()).collect(),
            tags: BTreeMap::from([("team".into(), "a".into())]),
            ..Resource::default()
        }
    }

    fn zone(subnets: &[&str]) -> BTreeSet<String> {
        subnets.iter().map(|s| s.to_string()).collect()
    }

    fn record(removed: &[&str]) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: "arn:web".into(),
            resource_type: "asg".into(),
            removed_subnets: removed.iter().map(|s| s.to_string()).collect(),
            state: State::Done,
            version: 2,
            resource_name: Some("web".into()),
            original_subnets: vec![],
            actions: vec![],
            run_id: None,
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
        }
    }

    #[test]
    fn removes_only_the_zones_subnets_and_keeps_the_order() {
        let item = evacuation(
            "use1-az2",
            &asg(&["a", "b", "c", "d"]),
            &zone(&["b", "d"]),
            &Filters::default(),
            None,
        )
        .expect("in zone");
        assert_eq!(item.status, Status::Planned);
        assert_eq!(item.removed_subnets, Some(vec!["b".to_string(), "d".to_string()]));
        assert_eq!(item.resulting_subnets, ["a", "c"]);
    }

    #[test]
    fn a_resource_outside_the_zone_is_not_listed() {
        assert!(evacuation("use1-az2", &asg(&["a"]), &zone(&["b"]), &Filters::default(), None).is_none());
    }

    #[test]
    fn never_leaves_a_resource_without_subnets() {
        let item =
            evacuation("use1-az2", &asg(&["b"]), &zone(&["b"]), &Filters::default(), None).expect("listed as skipped");
        assert_eq!(item.status, Status::Skipped);
        assert_eq!(item.reason.as_deref(), Some(WOULD_LEAVE_NO_SUBNETS));
        assert_eq!(item.resulting_subnets, ["b"]);
        assert!(!item.changes_resource());
    }

    #[test]
    fn an_already_evacuated_resource_is_listed_but_left_alone() {
        let rec = record(&["b"]);
        let item =
            evacuation("use1-az2", &asg(&["a"]), &zone(&["b"]), &Filters::default(), Some(&rec)).expect("journalled");
        assert_eq!(item.status, Status::Skipped);
        assert!(item
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("already evacuated"));
    }

    #[test]
    fn an_unsupported_resource_without_subnets_is_listed_as_skipped() {
        let mut bridge = asg(&[]);
        bridge.unsupported = Some("network mode bridge".into());
        let item = evacuation("use1-az2", &bridge, &zone(&["b"]), &Filters::default(), None).expect("listed");
        assert_eq!(item.status, Status::Skipped);
        assert_eq!(item.reason.as_deref(), Some("network mode bridge"));
        let mut outside = asg(&["a"]);
        outside.unsupported = Some("controller CODE_DEPLOY".into());
        assert!(evacuation("use1-az2", &outside, &zone(&["b"]), &Filters::default(), None).is_none());
    }

    #[test]
    fn filters_skip_with_the_reason() {
        let by_tag = Filters {
            tags: vec![("team".into(), "b".into())],
            name_prefix: None,
        };
        let item = evacuation("use1-az2", &asg(&["a", "b"]), &zone(&["b"]), &by_tag, None).expect("in zone");
        assert_eq!(item.reason.as_deref(), Some("filtered: tag team=b not set"));
        let by_prefix = Filters {
            tags: vec![],
            name_prefix: Some("api".into()),
        };
        let item = evacuation("use1-az2", &asg(&["a", "b"]), &zone(&["b"]), &by_prefix, None).expect("in zone");
        assert_eq!(item.status, Status::Skipped);
        let matching = Filters {
            tags: vec![("team".into(), "a".into())],
            name_prefix: Some("we".into()),
        };
        let item = evacuation("use1-az2", &asg(&["a", "b"]), &zone(&["b"]), &matching, None).expect("in zone");
        assert_eq!(item.status, Status::Planned);
    }

    #[test]
    fn recovery_is_a_union_with_what_changed_since() {
        let existing = BTreeMap::from([("b".to_string(), "use1-az2".to_string())]);
        // Someone added "e" after the evacuation: it stays, "b" comes back after it.
        let mut rec = record(&["b"]);
        rec.original_subnets = vec!["a".into(), "b".into(), "c".into()];
        let item = recovery(&rec, Some(&asg(&["e", "a"])), &existing, false);
        assert_eq!(item.restored_subnets, Some(vec!["b".to_string()]));
        // The original order comes back; "c" was removed by someone since and stays removed.
        assert_eq!(item.resulting_subnets, ["a", "b", "e"]);
        assert!(item.changes_resource());
    }

    #[test]
    fn recovery_leaves_out_deleted_subnets_and_says_so() {
        let existing = BTreeMap::from([("b".to_string(), "use1-az2".to_string())]);
        let item = recovery(&record(&["b", "gone"]), Some(&asg(&["a"])), &existing, false);
        assert_eq!(item.resulting_subnets, ["a", "b"]);
        assert!(item.notes[0].contains("gone"), "{:?}", item.notes);
    }

    #[test]
    fn recovery_of_a_resource_already_back_only_clears_the_record() {
        let existing = BTreeMap::from([("b".to_string(), "use1-az2".to_string())]);
        let item = recovery(&record(&["b"]), Some(&asg(&["a", "b"])), &existing, false);
        assert_eq!(item.status, Status::Planned);
        assert!(!item.changes_resource());
        assert_eq!(item.resulting_subnets, ["a", "b"]);
    }

    #[test]
    fn recovery_of_a_deleted_resource_keeps_the_record_unless_told() {
        let kept = recovery(&record(&["b"]), None, &BTreeMap::new(), false);
        assert_eq!(kept.status, Status::Skipped);
        let forgotten = recovery(&record(&["b"]), None, &BTreeMap::new(), true);
        assert_eq!(forgotten.status, Status::Planned);
        assert!(!forgotten.changes_resource());
    }
}
