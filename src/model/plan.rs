//! The plan: for each resource, what changes and what is skipped and why, computed in full before
//! anything is changed. Planning is pure (subnet sets in, decision out) so its rules are unit-tested
//! without AWS; `--dry-run` prints the plan and a real run executes exactly it.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::model::{Command, Item, Plan, Request, Status};
use crate::model::{Identity, Placement, Record, Resource, Site};

/// Where a saved plan and the plan made again from live state disagree, one line per resource (empty:
/// they agree). Only lines that change something in either plan are compared: a skipped line that
/// stays skipped changes nothing, whatever its reason says now.
pub fn differences(saved: &Plan, live: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    if saved.command != live.command || saved.az_id != live.az_id || saved.region != live.region {
        out.push(format!(
            "the plan is for {:?} {} in {}, the live plan for {:?} {} in {}",
            saved.command,
            saved.az_id.as_deref().unwrap_or("every zone"),
            saved.region,
            live.command,
            live.az_id.as_deref().unwrap_or("every zone"),
            live.region
        ));
        return out;
    }
    // A line is one resource in one zone (recover can hold several zones of one resource).
    let index = |plan: &Plan| -> BTreeMap<(String, String, String), Item> {
        plan.items
            .iter()
            .map(|i| {
                (
                    (i.resource_type.clone(), i.resource.clone(), i.az_id.clone()),
                    i.clone(),
                )
            })
            .collect()
    };
    let (saved_lines, live_lines) = (index(saved), index(live));
    for (k, s) in &saved_lines {
        match live_lines.get(k) {
            None if s.status == Status::Planned => out.push(format!(
                "{} {}: planned [{}], now not in the live plan",
                k.0,
                s.name,
                change(s)
            )),
            Some(l) if (s.status == Status::Planned || l.status == Status::Planned) && essence(s) != essence(l) => out
                .push(format!(
                    "{} {}: planned [{}], now [{}]",
                    k.0,
                    s.name,
                    change(s),
                    change(l)
                )),
            _ => {}
        }
    }
    for (k, l) in &live_lines {
        if !saved_lines.contains_key(k) && l.status == Status::Planned {
            out.push(format!("{} {}: not in the plan, now [{}]", k.0, l.name, change(l)));
        }
    }
    out
}

/// What a line does, for comparing two plans.
fn essence(i: &Item) -> impl PartialEq + '_ {
    (
        i.status,
        &i.current_subnets,
        &i.removed_subnets,
        &i.restored_subnets,
        &i.actions,
        &i.resulting_subnets,
    )
}

/// What a line does, in a few words, for the diff.
fn change(i: &Item) -> String {
    if i.status != Status::Planned {
        return format!("{}: {}", i.status.as_str(), i.reason.as_deref().unwrap_or("-"));
    }
    let mut text = format!(
        "subnets {} -> {}",
        i.current_subnets.join(","),
        i.resulting_subnets.join(",")
    );
    if let Some(actions) = i.actions.as_ref().filter(|a| !a.is_empty()) {
        text = format!("{}; {}", actions.join(", "), text);
    }
    text
}

/// Fail the planned lines whose prerequisite lines (`requires`) were not done: the change they
/// wait for (a zonal shift) did not happen, so neither may they. `done` holds the resources whose
/// change happened (done when it was made, whatever its read-back then found).
pub fn hold_back(plan: &mut Plan, done: &BTreeSet<String>) {
    for item in plan.items.iter_mut().filter(|i| i.status == Status::Planned) {
        let missing: Vec<String> = item.requires.iter().filter(|r| !done.contains(*r)).cloned().collect();
        if !missing.is_empty() {
            item.fail(crate::model::Failure::new(
                crate::model::Stage::HeldBack,
                crate::model::RecordFate::Untouched,
                format!(
                    "it waits for {} first, which did not happen (see that line)",
                    missing.join(", ")
                ),
            ));
        }
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

/// The tag that keeps a resource out of every run, whatever its value: the watcher's own ECS
/// service and cluster carry it (fixtures/watcher-service.cfn.yaml and .tf), so that a watcher
/// never moves the tasks it runs in. Every kind that reads a resource's tags honours it (each
/// through [`Filters::rejects`] or [`recovery`]); the ECS kind reads the cluster's too.
pub const SKIP_TAG: &str = "azevac:skip";

/// Why a resource is left alone by its own tags (`tagged azevac:skip=VALUE`), if it is.
pub fn opted_out(tags: &BTreeMap<String, String>) -> Option<String> {
    tags.get(SKIP_TAG).map(|value| format!("tagged {SKIP_TAG}={value}"))
}

impl Filters {
    /// `None` when the resource passes, or why it does not: first its own [`SKIP_TAG`], which no
    /// filter overrides, then `--name-prefix` and `--tag`.
    pub fn rejects(&self, resource: &Resource) -> Option<String> {
        if let Some(why) = opted_out(&resource.tags) {
            return Some(why);
        }
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
    // A record of another resource of the same name (deleted and created again since) took
    // nothing from this one; this run's intent takes its place (`journal::writes::begin_write`).
    let record = record.filter(|r| r.is_about(resource.identity.as_ref()));
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
        current_subnets: resource.subnets.clone(),
        removed_subnets: Some(in_zone.clone()),
        resulting_subnets: remaining.clone(),
        notes: resource.notes.clone(),
        target: Some(resource.clone()),
        record: record.cloned(),
        ..Item::new(resource.resource_type, &resource.id, &resource.name, az_id)
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
/// it no longer exists) and where the subnets that still exist lie (the record's and the
/// resource's current ones, at least).
pub fn recovery(
    record: &Record,
    current: Option<&Resource>,
    existing_subnets: &BTreeMap<String, Site>,
    forget_missing: bool,
) -> Item {
    let mut item = Item {
        restored_subnets: Some(Vec::new()),
        target: current.cloned(),
        record: Some(record.clone()),
        ..Item::new(
            &record.resource_type,
            &record.resource,
            record.resource_name.as_deref().unwrap_or(&record.resource),
            &record.az_id,
        )
    };
    let Some(current) = current else {
        missing(&mut item, "resource", forget_missing);
        return item;
    };
    // Deleted and created again under the same name since (a stack replacement): not the resource
    // azevac changed, so nothing of the record is put on it; the record waits for the operator as
    // that of a vanished resource does.
    if !record.is_about(current.identity.as_ref()) {
        item.current_subnets = current.subnets.clone();
        item.resulting_subnets = current.subnets.clone();
        item.target = None;
        recreated(&mut item, record, current.identity.as_ref(), forget_missing);
        return item;
    }
    // What azevac cannot change it cannot put back either (an ECS service being deleted refuses
    // UpdateService): the line says why and the record stays, for the operator to decide on (once
    // the resource is gone, `--forget-missing` deletes it).
    if let Some(why) = opted_out(&current.tags).or_else(|| current.unsupported.clone()) {
        item.current_subnets = current.subnets.clone();
        item.resulting_subnets = current.subnets.clone();
        item.status = Status::Skipped;
        item.unfinished = true;
        item.reason = Some(format!("not put back: {why}; journal record kept"));
        return item;
    }
    let (restorable, gone): (Vec<String>, Vec<String>) = record
        .removed_subnets
        .iter()
        .cloned()
        .partition(|s| existing_subnets.contains_key(s));
    // The resource's VPC: that of the subnets it has now, when they agree (every subnet kind keeps
    // a resource in one VPC).
    let mut vpcs = current
        .subnets
        .iter()
        .filter_map(|s| existing_subnets.get(s))
        .map(|site| &site.vpc);
    let first = vpcs.next();
    item.placement = Placement {
        named: restorable
            .iter()
            .filter_map(|s| Some((s.clone(), existing_subnets.get(s)?.clone())))
            .collect(),
        vpc: first.filter(|vpc| vpcs.all(|other| other == *vpc)).cloned(),
    };
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
    item.resulting_subnets = put_back(&current.subnets, &to_add, &record.original_subnets);
    if to_add.is_empty() {
        item.reason = Some("nothing to put back (subnets already present): journal record will be deleted".into());
    }
    item.restored_subnets = Some(to_add);
    item
}

/// The most subnets AWS takes in one resource's configuration, as a kind declares it
/// ([`crate::plugins::SubnetService::max_subnets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubnetLimit {
    /// The most subnets AWS takes.
    pub most: usize,
    /// What takes them, in the operator's words: `an ECS service`.
    pub what: &'static str,
}

/// Fail a recovery line that would give its resource more subnets than `limit` allows (pure).
/// Recover puts back the union of the live subnets and the journalled ones, so a subnet someone
/// added during the incident can take it over the limit: AWS would refuse the whole update, so
/// nothing is sent, the record is kept, and the operator is told what to remove. Evacuation only
/// removes subnets, so it never reaches a limit; a line with nothing to put back changes nothing.
pub fn limit_subnets(item: &mut Item, limit: Option<SubnetLimit>) {
    let Some(limit) = limit else {
        return;
    };
    let restores = item.restored_subnets.as_ref().is_some_and(|r| !r.is_empty());
    let count = item.resulting_subnets.len();
    if item.status != Status::Planned || !restores || count <= limit.most {
        return;
    }
    let over = count - limit.most;
    item.fail(crate::model::Failure::plan_kept(format!(
        "not possible: putting back {} would give it {count} subnets, and {} takes at most {}: remove {over} \
         of its subnets, then run recover again; nothing changed, journal record kept",
        item.restored_subnets.as_deref().unwrap_or_default().join(", "),
        limit.what,
        limit.most,
    )));
}

/// `current` with `restored` put back where they stood in `original` (pure): each right after the
/// subnet that came before it there (first, if none did), then the subnets `original` knows in its
/// order, in the places they hold; subnets it does not know (added since, or put back from another
/// zone's record) keep their places. Every subnet of `current` and `restored` is in it once.
pub fn put_back(current: &[String], restored: &[String], original: &[String]) -> Vec<String> {
    let position = |s: &String| original.iter().position(|o| o == s);
    let mut result = current.to_vec();
    let mut restored: Vec<&String> = restored.iter().collect();
    restored.sort_by_key(|s| position(s).unwrap_or(usize::MAX));
    for subnet in restored {
        if result.contains(subnet) {
            continue;
        }
        let at = match position(subnet) {
            Some(p) => result
                .iter()
                .rposition(|r| position(r).is_some_and(|q| q < p))
                .map_or(0, |i| i + 1),
            None => result.len(),
        };
        result.insert(at, subnet.clone());
    }
    let slots: Vec<usize> = (0..result.len()).filter(|&i| position(&result[i]).is_some()).collect();
    let mut known: Vec<String> = slots.iter().map(|&i| result[i].clone()).collect();
    known.sort_by_key(|s| position(s));
    for (slot, subnet) in slots.into_iter().zip(known) {
        result[slot] = subnet;
    }
    result
}

/// A recovery line whose `what` no longer exists: with `--forget-missing` its record goes (the line
/// is carried out as a no-op); otherwise it is kept, and the run is not a success until the operator
/// decides (one rule for every kind whose change outlives the object).
pub fn missing(item: &mut Item, what: &str, forget_missing: bool) {
    if forget_missing {
        item.reason = Some(format!(
            "{what} no longer exists: journal record will be deleted (--forget-missing)"
        ));
    } else {
        item.status = Status::Skipped;
        item.unfinished = true;
        item.reason = Some(format!(
            "{what} no longer exists: journal record kept (pass --forget-missing to delete it)"
        ));
    }
}

/// A recovery line whose resource was deleted and created again under the same name since the
/// record was written (`live`: the newcomer's identity): it is as good as gone, so [`missing`]'s
/// rule holds (record kept until `--forget-missing`), and the newcomer is never changed.
pub fn recreated(item: &mut Item, record: &Record, live: Option<&Identity>, forget_missing: bool) {
    let was = record.identity.as_ref().map(Identity::describe).unwrap_or_default();
    let now = live.map(Identity::describe).unwrap_or_default();
    let what = format!("re-created since azevac changed it ({was}; now {now}), left untouched");
    if forget_missing {
        item.reason = Some(format!("{what}: journal record will be deleted (--forget-missing)"));
    } else {
        item.status = Status::Skipped;
        item.unfinished = true;
        item.reason = Some(format!(
            "{what}: journal record kept (pass --forget-missing to delete it)"
        ));
    }
}

/// Why a recovery line's journal record cannot be trusted, if it cannot: something it names lies
/// outside the record's own zone, or outside the VPC of the resource the line acts on (a record
/// written by hand, or by a faulty version). Judged on where things lie now ([`Item::placement`]),
/// for every kind alike; what no longer exists is not named there, and stays the line's business.
pub fn odd_record(item: &Item) -> Option<String> {
    let record = item.record.as_ref()?;
    let wrong: Vec<String> = item
        .placement
        .named
        .iter()
        .filter_map(|(what, site)| {
            if site.az_id != record.az_id {
                return Some(format!(
                    "it names {what}, which lies in {}, not in the record's zone {}",
                    site.az_id, record.az_id
                ));
            }
            let vpc = item.placement.vpc.as_ref().filter(|vpc| **vpc != site.vpc)?;
            Some(format!(
                "it names {what}, which lies in {}, not in {vpc} where {} is",
                site.vpc, item.name
            ))
        })
        .collect();
    (!wrong.is_empty()).then(|| {
        format!(
            "odd journal record: {}; not acted on, journal record kept (fix or delete it by hand)",
            wrong.join("; ")
        )
    })
}

/// A recovery's records in the order they are undone: each resource's together, its last
/// evacuation first, so that each record's change is undone on the state it was made on (a value
/// put back where it stood, a subnet list in its original order, a writer failed back the way it
/// came). Two evacuations in the same second (`created_at` counts seconds) go by the original with
/// fewer subnets (the later one, for the subnet kinds), then by their runs' IDs, which are
/// time-ordered (UUIDv7, to the millisecond; older records' random IDs change nothing above them).
pub fn latest_first(records: &mut [Record]) {
    records.sort_by(|a, b| {
        (a.resource.cmp(&b.resource))
            .then_with(|| b.created_at.cmp(&a.created_at))
            .then_with(|| a.original_subnets.len().cmp(&b.original_subnets.len()))
            .then_with(|| b.run_id.cmp(&a.run_id))
            .then_with(|| a.az_id.cmp(&b.az_id))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::State;
    use proptest::prelude::*;

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
            account_id: None,
            identity: None,
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

    /// Issue 51: a resource tagged `azevac:skip` (whatever the value) is listed as skipped with
    /// the tag, before any filter, and a filter that would select it does not override it.
    #[test]
    fn issue_51_a_resource_tagged_azevac_skip_is_left_alone_with_the_reason() {
        let mut watcher = asg(&["a", "b"]);
        watcher.tags.insert(SKIP_TAG.into(), "the watcher".into());
        let selecting = Filters {
            tags: vec![(SKIP_TAG.into(), "the watcher".into())],
            name_prefix: None,
        };
        for filters in [Filters::default(), selecting] {
            let item = evacuation("use1-az2", &watcher, &zone(&["b"]), &filters, None).expect("in zone");
            assert_eq!(item.status, Status::Skipped);
            assert_eq!(item.reason.as_deref(), Some("tagged azevac:skip=the watcher"));
            assert_eq!(item.resulting_subnets, ["a", "b"]);
            assert!(!item.changes_resource());
        }
        // Nothing in the zone: not listed at all, as any resource outside it.
        assert!(evacuation("use1-az2", &watcher, &zone(&["c"]), &Filters::default(), None).is_none());
        // A record written before the tag was set is not acted on either: the line says why and
        // the record is kept.
        let mut tagged = asg(&["a"]);
        tagged.tags.insert(SKIP_TAG.into(), String::new());
        let item = recovery(&record(&["b"]), Some(&tagged), &sites(&[("b", "use1-az2")]), true);
        assert_eq!(item.status, Status::Skipped);
        assert!(item.unfinished);
        assert_eq!(
            item.reason.as_deref(),
            Some("not put back: tagged azevac:skip=; journal record kept")
        );
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

    fn plan_of(items: Vec<Item>) -> Plan {
        Plan {
            command: Command::Evacuate,
            region: "us-east-1".into(),
            az_id: Some("use1-az2".into()),
            az_name: None,
            request: Request::default(),
            items,
            problems: vec![],
            stats: None,
        }
    }

    fn planned(subnets: &[&str]) -> Item {
        evacuation("use1-az2", &asg(subnets), &zone(&["b"]), &Filters::default(), None).expect("in zone")
    }

    #[test]
    fn a_saved_plan_matches_the_same_live_state() {
        let saved = plan_of(vec![planned(&["a", "b"])]);
        assert!(differences(&saved, &saved.clone()).is_empty());
        // A skipped line that stays skipped changes nothing, whatever its reason says now.
        let mut skipped = planned(&["b"]);
        skipped.reason = Some("other words".into());
        let mut live = plan_of(vec![planned(&["b"])]);
        live.items[0].reason = Some("different words".into());
        assert!(differences(&plan_of(vec![skipped]), &live).is_empty());
    }

    #[test]
    fn a_saved_plan_differs_when_a_resource_moved_appeared_or_went() {
        let saved = plan_of(vec![planned(&["a", "b"])]);
        let moved = differences(&saved, &plan_of(vec![planned(&["a", "b", "c"])]));
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert!(
            moved[0].contains("subnets a,b -> a") && moved[0].contains("a,b,c -> a,c"),
            "{moved:?}"
        );
        let gone = differences(&saved, &plan_of(vec![]));
        assert!(gone[0].contains("now not in the live plan"), "{gone:?}");
        let mut other = planned(&["x", "b"]);
        other.resource = "arn:other".into();
        let appeared = differences(&saved, &plan_of(vec![planned(&["a", "b"]), other]));
        assert!(appeared[0].contains("not in the plan, now"), "{appeared:?}");
        let now_skipped = differences(&saved, &plan_of(vec![planned(&["b"])]));
        assert!(
            now_skipped[0].contains("skipped: would leave no subnets"),
            "{now_skipped:?}"
        );
        let mut elsewhere = saved.clone();
        elsewhere.az_id = Some("use1-az1".into());
        assert_eq!(differences(&saved, &elsewhere).len(), 1);
    }

    #[test]
    fn the_request_round_trips_through_json() {
        let request = Request {
            tags: vec!["team=a=b".into()],
            options: crate::plugins::to_options(&serde_json::json!({ "k8s_mode": "drain" })),
            ..Request::default()
        };
        let text = serde_json::to_string(&request).expect("json");
        assert_eq!(text, r#"{"tags":["team=a=b"],"k8s_mode":"drain"}"#);
        let back: Request = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, request);
        assert_eq!(back.tag_pairs(), [("team".to_string(), "a=b".to_string())]);
        // A kind's options, read back as its own type.
        let kube: crate::plugins::kube::flags::Options = back.options_as().expect("kube options");
        assert_eq!(kube.k8s_mode, Some(crate::plugins::kube::Mode::Drain));
        let wrong = serde_json::from_str::<Request>(r#"{"k8s_mode":7}"#).expect("any JSON value");
        assert!(
            wrong.options_as::<crate::plugins::kube::flags::Options>().is_err(),
            "never a default"
        );
    }

    /// Issue 36: a saved recover keeps its role without `--accounts` (it reaches the accounts its
    /// records name with it), so that apply assumes, and shows, the role that was reviewed.
    #[test]
    fn issue_36_a_saved_request_keeps_its_role_without_accounts() {
        let request = Request {
            fleet: crate::model::Fleet {
                role_name: Some("ops".into()),
                ..crate::model::Fleet::default()
            },
            ..Request::default()
        };
        let text = serde_json::to_string(&request).expect("json");
        assert_eq!(text, r#"{"fleet":{"role_name":"ops"}}"#);
        assert_eq!(serde_json::from_str::<Request>(&text).expect("parse"), request);
        assert_eq!(serde_json::to_string(&Request::default()).expect("json"), "{}");
    }

    /// Where subnets lie: each in its AZ ID, all in vpc-1.
    fn sites(list: &[(&str, &str)]) -> BTreeMap<String, Site> {
        list.iter()
            .map(|(subnet, az_id)| {
                let site = Site {
                    az_id: az_id.to_string(),
                    vpc: "vpc-1".into(),
                };
                (subnet.to_string(), site)
            })
            .collect()
    }

    #[test]
    fn recovery_is_a_union_with_what_changed_since() {
        let existing = sites(&[("b", "use1-az2")]);
        // Someone added "e" after the evacuation: it stays where it is, "b" comes back after "a".
        let mut rec = record(&["b"]);
        rec.original_subnets = vec!["a".into(), "b".into(), "c".into()];
        let item = recovery(&rec, Some(&asg(&["e", "a"])), &existing, false);
        assert_eq!(item.restored_subnets, Some(vec!["b".to_string()]));
        // "c" was removed by someone since and stays removed.
        assert_eq!(item.resulting_subnets, ["e", "a", "b"]);
        assert!(item.changes_resource());
    }

    /// Issue 50: a resource azevac can no longer change (an ECS service being deleted) is not
    /// acted on by recover either: its line says why, and its record is kept for the operator.
    #[test]
    fn issue_50_a_record_of_a_resource_that_cannot_be_changed_is_reported_not_acted_on() {
        let existing = sites(&[("b", "use1-az2")]);
        let mut draining = asg(&["a"]);
        draining.unsupported = Some("being deleted (status DRAINING)".into());
        let item = recovery(&record(&["b"]), Some(&draining), &existing, true);
        assert_eq!(item.status, Status::Skipped);
        assert!(
            item.unfinished,
            "the record is kept for the operator, even with --forget-missing"
        );
        let reason = item.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("being deleted") && reason.contains("journal record kept"),
            "{reason}"
        );
        assert_eq!(item.resulting_subnets, ["a"]);
        assert!(!item.changes_resource());
    }

    /// Issue 50: putting a journalled subnet back next to one added during the incident would
    /// exceed what AWS takes: the line fails, naming the count and the limit, and sends nothing;
    /// at the limit, or with nothing to put back, or for a kind without one, it goes on.
    #[test]
    fn issue_50_a_recovery_over_the_kinds_subnet_limit_fails_naming_both() {
        const ECS: SubnetLimit = SubnetLimit {
            most: 16,
            what: "an ECS service",
        };
        let live: Vec<String> = (1..=16).map(|i| format!("s{i}")).collect();
        let existing = sites(&[("z1", "use1-az2"), ("z2", "use1-az2")]);
        let resource = |subnets: &[String]| Resource {
            subnets: subnets.to_vec(),
            ..asg(&[])
        };
        // 16 live (one added by hand during the incident) + the journalled one = 17.
        let mut item = recovery(&record(&["z1"]), Some(&resource(&live)), &existing, false);
        limit_subnets(&mut item, Some(ECS));
        assert_eq!(item.status, Status::Failed);
        let reason = item.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("would give it 17 subnets, and an ECS service takes at most 16: remove 1 of its subnets"),
            "{reason}"
        );
        assert!(
            reason.contains("journal record kept") && reason.contains("z1"),
            "{reason}"
        );
        // Two journalled: 18, two to remove.
        let mut item = recovery(&record(&["z1", "z2"]), Some(&resource(&live)), &existing, false);
        limit_subnets(&mut item, Some(ECS));
        assert!(item.reason.unwrap_or_default().contains("18 subnets"), "two over");
        // 15 live + 1 = 16: within the limit.
        let mut item = recovery(&record(&["z1"]), Some(&resource(&live[..15])), &existing, false);
        limit_subnets(&mut item, Some(ECS));
        assert_eq!(item.status, Status::Planned);
        assert_eq!(item.resulting_subnets.len(), 16);
        // Nothing to put back (the subnet is there already): the record just goes.
        let mut back = live[..15].to_vec();
        back.push("z1".into());
        let mut item = recovery(&record(&["z1"]), Some(&resource(&back)), &existing, false);
        limit_subnets(&mut item, Some(ECS));
        assert_eq!(item.status, Status::Planned);
        // A kind without a limit (Auto Scaling) puts all 17 back.
        let mut item = recovery(&record(&["z1"]), Some(&resource(&live)), &existing, false);
        limit_subnets(&mut item, None);
        assert_eq!(item.status, Status::Planned);
        assert_eq!(item.resulting_subnets.len(), 17);
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn put_back_places_each_subnet_after_the_one_before_it() {
        let original = strings(&["a", "b", "c", "d"]);
        assert_eq!(
            put_back(&strings(&["a", "d"]), &strings(&["c", "b"]), &original),
            original
        );
        assert_eq!(
            put_back(&strings(&["b", "d"]), &strings(&["a"]), &original),
            ["a", "b", "d"]
        );
        // "x" was added since: it keeps its place between the subnets around it.
        assert_eq!(
            put_back(&strings(&["a", "x", "d"]), &strings(&["b", "c"]), &original),
            ["a", "b", "c", "x", "d"]
        );
        // Reordered by someone since: the subnets the record knows go back into its order.
        assert_eq!(
            put_back(&strings(&["d", "a"]), &strings(&["b"]), &original),
            ["a", "b", "d"]
        );
        // A subnet the record's original does not list (a hand-made record) goes last.
        assert_eq!(put_back(&strings(&["a"]), &strings(&["z"]), &original), ["a", "z"]);
    }

    proptest! {
        #[test]
        fn put_back_keeps_every_subnet_once_and_the_original_order(
            original in proptest::sample::subsequence((0..8).map(|i| format!("s{i}")).collect::<Vec<_>>(), 0..=8)
                .prop_shuffle(),
            kept in proptest::collection::vec(any::<bool>(), 8),
            gone in proptest::collection::vec(any::<bool>(), 8),
            added in proptest::collection::vec("x[0-3]", 0..3),
            at in proptest::collection::vec(0..10usize, 3),
        ) {
            // current: some of the original in its order, plus subnets added since, anywhere;
            // restored: some of the rest of the original (those still missing), any order.
            let mut current: Vec<String> =
                original.iter().zip(&kept).filter(|(_, k)| **k).map(|(s, _)| s.clone()).collect();
            for (x, at) in added.iter().zip(&at) {
                if !current.contains(x) {
                    current.insert((*at).min(current.len()), x.clone());
                }
            }
            let restored: Vec<String> = original
                .iter()
                .zip(&gone)
                .filter(|(s, g)| **g && !current.contains(s))
                .map(|(s, _)| s.clone())
                .rev()
                .collect();
            let result = put_back(&current, &restored, &original);
            let mut want: Vec<&String> = current.iter().chain(&restored).collect();
            want.sort();
            let mut got: Vec<&String> = result.iter().collect();
            got.sort();
            prop_assert_eq!(got, want, "every subnet of current and restored, once");
            let added_since: Vec<&String> = current.iter().filter(|s| !original.contains(s)).collect();
            let stayed: Vec<&String> = result.iter().filter(|s| !original.contains(s)).collect();
            prop_assert_eq!(&stayed, &added_since, "subnets added since keep their order");
            if added_since.is_empty() {
                let in_order: Vec<&String> = original.iter().filter(|s| result.contains(s)).collect();
                prop_assert_eq!(result.iter().collect::<Vec<_>>(), in_order, "the original order");
            }
        }
    }

    #[test]
    fn recovery_leaves_out_deleted_subnets_and_says_so() {
        let existing = sites(&[("b", "use1-az2")]);
        let item = recovery(&record(&["b", "gone"]), Some(&asg(&["a"])), &existing, false);
        assert_eq!(item.resulting_subnets, ["a", "b"]);
        assert!(item.notes[0].contains("gone"), "{:?}", item.notes);
    }

    #[test]
    fn recovery_of_a_resource_already_back_only_clears_the_record() {
        let existing = sites(&[("b", "use1-az2")]);
        let item = recovery(&record(&["b"]), Some(&asg(&["a", "b"])), &existing, false);
        assert_eq!(item.status, Status::Planned);
        assert!(!item.changes_resource());
        assert_eq!(item.resulting_subnets, ["a", "b"]);
    }

    /// Issue 31: a use1-az2 record naming a subnet of use1-az3, or of another VPC than the
    /// resource's, is odd, naming the subnet and where it lies; one naming only subnets of its own
    /// zone (or deleted ones) is not.
    #[test]
    fn a_record_naming_a_subnet_outside_its_zone_or_the_resources_vpc_is_odd() {
        let mut existing = sites(&[("a", "use1-az1"), ("b", "use1-az2"), ("c", "use1-az3")]);
        let fine = recovery(&record(&["b", "gone"]), Some(&asg(&["a"])), &existing, false);
        assert_eq!(fine.placement.vpc.as_deref(), Some("vpc-1"));
        assert_eq!(odd_record(&fine), None);

        let elsewhere = recovery(&record(&["b", "c"]), Some(&asg(&["a"])), &existing, false);
        let why = odd_record(&elsewhere).expect("c is in use1-az3");
        assert!(
            why.contains("c, which lies in use1-az3, not in the record's zone use1-az2"),
            "{why}"
        );
        assert!(!why.contains(" b,"), "{why}");

        existing.insert(
            "d".into(),
            Site {
                az_id: "use1-az2".into(),
                vpc: "vpc-2".into(),
            },
        );
        let other_vpc = recovery(&record(&["d"]), Some(&asg(&["a"])), &existing, false);
        let why = odd_record(&other_vpc).expect("d is in vpc-2");
        assert!(
            why.contains("d, which lies in vpc-2, not in vpc-1 where web is"),
            "{why}"
        );
        // Where the resource's VPC is not known (its subnets were not located), the zone still counts.
        let unknown = recovery(&record(&["d"]), Some(&asg(&["x"])), &existing, false);
        assert_eq!(unknown.placement.vpc, None);
        assert_eq!(odd_record(&unknown), None);
    }

    #[test]
    fn recovery_of_a_deleted_resource_keeps_the_record_unless_told() {
        let kept = recovery(&record(&["b"]), None, &BTreeMap::new(), false);
        assert_eq!(kept.status, Status::Skipped);
        let forgotten = recovery(&record(&["b"]), None, &BTreeMap::new(), true);
        assert_eq!(forgotten.status, Status::Planned);
        assert!(!forgotten.changes_resource());
    }

    fn created(at: &str) -> Option<Identity> {
        Identity::created_at(Some(at.to_owned()))
    }

    /// Issue 50: a resource deleted and created again under the same name since the evacuation is
    /// not the one azevac changed: nothing is put on it, the line names both identities, and the
    /// record is kept as a vanished resource's is, until `--forget-missing` deletes it.
    #[test]
    fn issue_50_a_record_of_a_recreated_resource_is_reported_and_kept_not_acted_on() {
        let existing = sites(&[("b", "use1-az2")]);
        let mut rec = record(&["b"]);
        rec.identity = created("2026-03-01T10:00:00Z");
        let mut newcomer = asg(&["a"]);
        newcomer.identity = created("2026-03-02T11:00:00Z");
        let kept = recovery(&rec, Some(&newcomer), &existing, false);
        assert_eq!(kept.status, Status::Skipped);
        assert!(kept.unfinished, "the run is not a success while the record waits");
        assert!(!kept.changes_resource());
        assert_eq!(kept.target, None, "the newcomer is never changed");
        assert_eq!(
            kept.resulting_subnets,
            ["a"],
            "the next line of the resource starts from it as it is"
        );
        let why = kept.reason.as_deref().unwrap_or_default();
        assert!(
            why.starts_with(
                "re-created since azevac changed it (created 2026-03-01T10:00:00Z; now created 2026-03-02T11:00:00Z)"
            ) && why.ends_with("journal record kept (pass --forget-missing to delete it)"),
            "{why}"
        );
        let forgotten = recovery(&rec, Some(&newcomer), &existing, true);
        assert_eq!(forgotten.status, Status::Planned);
        assert!(!forgotten.changes_resource());
        assert_eq!(forgotten.target, None);
        assert!(forgotten
            .reason
            .as_deref()
            .unwrap_or_default()
            .ends_with("(--forget-missing)"));
        // An ID with a creation time names both.
        rec.identity = Identity::aws("cluster-OLD", Some("2026-03-01T10:00:00Z".into()));
        newcomer.identity = Identity::aws("cluster-NEW", None);
        let why = recovery(&rec, Some(&newcomer), &existing, false)
            .reason
            .unwrap_or_default();
        assert!(
            why.contains("(uid cluster-OLD, created 2026-03-01T10:00:00Z; now uid cluster-NEW)"),
            "{why}"
        );
    }

    /// Issue 50: the same resource (same identity), and records written before identities were
    /// kept (or a live read that gives none), recover as before.
    #[test]
    fn issue_50_a_record_of_the_same_resource_or_without_identity_recovers_as_before() {
        let existing = sites(&[("b", "use1-az2")]);
        for (ours, live) in [
            (created("2026-03-01T10:00:00Z"), created("2026-03-01T10:00:00Z")),
            (None, created("2026-03-02T11:00:00Z")),
            (created("2026-03-01T10:00:00Z"), None),
        ] {
            let mut rec = record(&["b"]);
            rec.identity = ours;
            let mut live_asg = asg(&["a"]);
            live_asg.identity = live;
            let item = recovery(&rec, Some(&live_asg), &existing, false);
            assert_eq!(item.status, Status::Planned);
            assert_eq!(item.restored_subnets, Some(vec!["b".to_string()]));
            assert!(item.changes_resource());
        }
    }

    /// Issue 50: a record of an earlier resource of the same name is not this one's evacuation:
    /// the newcomer is planned as if none were there.
    #[test]
    fn issue_50_an_evacuation_ignores_the_record_of_a_recreated_resource() {
        let mut rec = record(&["b"]);
        rec.identity = created("2026-03-01T10:00:00Z");
        let mut newcomer = asg(&["a", "b"]);
        newcomer.identity = created("2026-03-02T11:00:00Z");
        let item = evacuation("use1-az2", &newcomer, &zone(&["b"]), &Filters::default(), Some(&rec)).expect("in zone");
        assert_eq!(item.status, Status::Planned);
        assert_eq!(item.record, None);
    }
}
