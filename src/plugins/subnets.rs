//! The adapter every subnet-placed type shares: it turns a [`SubnetService`] (list, read, set
//! subnets) into a [`Plugin`] — planning with the shared rules of `plan`, the fresh read under the
//! lock that every change is computed from (evacuate: live − zone; recover: live ∪ (removed ∩
//! existing) in the original order), the change itself, and the read-back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;

use super::{Acted, Demand, Evacuation, Finding, Place, Plugin, Refreshing, Scope, SubnetService};
use crate::error::describe;
use crate::journal::{Guard, Held};
use crate::model::action::{Action, NoAction};
use crate::model::plan::{self, Filters};
use crate::model::{Command, Item, Plan, Record, Resource, Site, Status};
use crate::Result;

/// A subnet-placed type as a plugin.
pub struct Subnets<S> {
    service: S,
    ec2: aws_sdk_ec2::Client,
    /// The operator's words for one of the service's journalled steps.
    words: fn(&str) -> String,
    /// Whether a resource's lines fold into one change ([`Plugin::folds_lines`]): only where a
    /// record holds nothing but subnets. A record's own steps (a VPC endpoint's addresses, an
    /// Auto Scaling group's suspended process) are carried out by its own line.
    folds: bool,
}

/// The operator's words for a step journalled as `A` (its own encoding: it always reads).
fn words_of<A: Action>(step: &str) -> String {
    crate::model::action::decode::<A>(step).map_or_else(|why| why, |action| action.describe())
}

impl<S: SubnetService + 'static> Subnets<S> {
    /// The plugin for `service`, reading subnets through EC2 with `sdk`; subnets are all it takes.
    pub fn plugin(service: S, sdk: &aws_config::SdkConfig) -> Box<dyn Plugin> {
        Box::new(Subnets {
            folds: true,
            ..Self::with_steps::<NoAction>(service, sdk)
        })
    }

    /// The plugin for a `service` whose evacuation takes steps besides subnets (ASG `--pace`),
    /// journalled as its action type `A`.
    pub fn journalling<A: Action>(service: S, sdk: &aws_config::SdkConfig) -> Box<dyn Plugin> {
        Box::new(Self::with_steps::<A>(service, sdk))
    }

    fn with_steps<A: Action>(service: S, sdk: &aws_config::SdkConfig) -> Subnets<S> {
        Subnets {
            service,
            ec2: crate::client!(aws_sdk_ec2, sdk),
            words: words_of::<A>,
            folds: false,
        }
    }

    /// Where each of `subnets` lies, for those that still exist (one batched read).
    async fn locate(&self, subnets: BTreeSet<String>) -> Result<BTreeMap<String, Site>> {
        if subnets.is_empty() {
            return Ok(BTreeMap::new());
        }
        crate::model::topology::locate_subnets(&self.ec2, &subnets).await
    }

    /// Plan one evacuation line from `resource` (as discovered or as read again).
    fn evacuation_line(
        &self,
        az_id: &str,
        resource: &Resource,
        zone_subnets: &BTreeSet<String>,
        filters: &Filters,
        record: Option<&Record>,
        how: &Evacuation,
    ) -> Result<Option<Item>> {
        let Some(mut item) = plan::evacuation(az_id, resource, zone_subnets, filters, record) else {
            return Ok(None);
        };
        // Steps besides the subnets (ASG `--pace`) ride in the target, and in the journal.
        if let (Status::Planned, Some(target)) = (item.status, item.target.as_mut()) {
            let steps = self.service.plan_evacuation(target, how)?;
            if !steps.is_empty() {
                item.actions = Some(steps.iter().map(|s| (self.words)(s)).collect());
                item.steps = steps;
            }
        }
        Ok(Some(item))
    }

    /// Plan one recovery line from the record and the resource's state (`None`: gone).
    fn recovery_line(
        &self,
        record: &Record,
        current: Option<&Resource>,
        existing: &BTreeMap<String, Site>,
        forget_missing: bool,
    ) -> Result<Item> {
        let mut item = plan::recovery(record, current, existing, forget_missing);
        // Checked here, where the plan and the fresh read under the lock both pass: the live
        // subnets can have grown since the plan.
        plan::limit_subnets(&mut item, current.and_then(|c| self.service.max_subnets(c)));
        // Steps besides the subnets that the record says azevac took (ASG: a suspended process).
        // A record the service cannot read fails this line only: nothing of it is undone.
        if let (Status::Planned, Some(target)) = (item.status, item.target.as_mut()) {
            match self.service.plan_recovery(target, record) {
                Ok(steps) if !steps.is_empty() => item.actions = Some(steps),
                Ok(_) => {}
                Err(e) => item.fail(crate::model::Failure::plan_kept(describe(&e))),
            }
        }
        Ok(item)
    }
}

/// Take a line planned again from live state in place of the one planned earlier, keeping what
/// only planning knew (caveats, prerequisites, headroom).
fn replace(line: &mut Item, fresh: Item) {
    let notes = std::mem::take(&mut line.notes);
    let requires = std::mem::take(&mut line.requires);
    let record = line.record.take();
    let headroom = line.headroom.take();
    let planned = fresh.status == Status::Planned;
    *line = Item {
        notes: if planned { notes } else { Vec::new() },
        headroom: if planned { headroom } else { None },
        requires,
        record,
        ..fresh
    };
}

#[async_trait]
impl<S: SubnetService + 'static> Plugin for Subnets<S> {
    fn resource_type(&self) -> &'static str {
        self.service.resource_type()
    }

    fn stage(&self, command: Command, _line: &Item) -> super::Stage {
        self.service.stage(command)
    }

    /// One update sets a resource's whole subnet list, so a resource's lines fold into one: two
    /// updates in a row would send the second with settings read before the first (a Lambda
    /// function's revision, which AWS changes on every update). Kinds whose records hold steps of
    /// their own do not fold (see `folds`).
    fn folds_lines(&self) -> bool {
        self.folds
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let filters = scope.filters();
        let how = Evacuation::of(scope.request, scope.zone);
        let resources = self.service.discover().await?;
        // Only what may be planned is inspected further (tags, caveats): it can cost a call each.
        let mut candidates: Vec<Resource> = resources
            .into_iter()
            .filter(|r| {
                r.subnets.iter().any(|s| scope.zone_subnets.contains(s))
                    || r.subnets.is_empty()
                    || scope.records.contains_key(&r.id)
            })
            .collect();
        self.service.inspect(&mut candidates, !filters.tags.is_empty()).await?;
        let mut items = Vec::new();
        for resource in &candidates {
            let record = scope.records.get(&resource.id);
            if let Some(item) =
                self.evacuation_line(scope.az_id(), resource, scope.zone_subnets, &filters, record, &how)?
            {
                items.push(item);
            }
        }
        Ok(items)
    }

    async fn plan_recovery(&self, mut records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let ids: Vec<String> = records
            .iter()
            .map(|r| r.resource.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut current = if ids.is_empty() {
            BTreeMap::new()
        } else {
            self.service.read(&ids).await?
        };
        // Where the journalled subnets lie (and whether they still exist), and the resources' own
        // subnets, whose VPC is theirs: in one batched read, to check each record against its zone.
        let subnets: BTreeSet<String> = records
            .iter()
            .flat_map(|r| r.removed_subnets.iter())
            .chain(current.values().flat_map(|r| r.subnets.iter()))
            .cloned()
            .collect();
        let existing = self.locate(subnets).await?;
        let forget_missing = scope.request.forget_missing;
        // One resource can have records in several zones: each line starts from the previous
        // line's result, so no line undoes another. The last evacuation is undone first: each
        // record's original is then the state it is put back into, in its order.
        crate::model::plan::latest_first(&mut records);
        let mut items = Vec::new();
        for record in &records {
            let item = self.recovery_line(record, current.get(&record.resource), &existing, forget_missing)?;
            // The next line of the same resource builds on this one's result, if it is to happen
            // (as under the lock: a failed line changes nothing).
            if let (Status::Planned, Some(resource)) = (item.status, current.get_mut(&record.resource)) {
                resource.subnets = item.resulting_subnets.clone();
            }
            items.push(item);
        }
        Ok(items)
    }

    async fn review(&self, plan: &mut Plan, scope: &Scope<'_>) -> Result<()> {
        self.service.review(plan, scope).await
    }

    async fn refresh(&self, run: Refreshing<'_>, lines: &mut [&mut Item], held: &[&Held]) -> Result<()> {
        let command = run.command;
        let ids: Vec<String> = lines
            .iter()
            .map(|l| l.resource.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut live = self.service.read(&ids).await?;
        // The subnets as read: the change that carries a resource's lines is computed from these.
        let read: BTreeMap<String, Vec<String>> = live.iter().map(|(id, r)| (id.clone(), r.subnets.clone())).collect();
        // Where subnets lie is read again too, as the resources are: a subnet made in the zone
        // since the plan is taken with the others, and one deleted since is not put back.
        let az_id = run.zone.map_or("", |z| z.id.as_str());
        let how = Evacuation::of(run.request, run.zone);
        let (zone_subnets, existing) = match command {
            Command::Evacuate => (
                crate::model::topology::subnets_in_zone(&self.ec2, az_id).await?,
                BTreeMap::new(),
            ),
            Command::Recover => {
                let subnets = held
                    .iter()
                    .flat_map(|h| h.record().removed_subnets.iter())
                    .chain(live.values().flat_map(|r| r.subnets.iter()))
                    .cloned()
                    .collect();
                (BTreeSet::new(), self.locate(subnets).await?)
            }
        };
        let forget_missing = run.request.forget_missing;
        let outcome = (|| -> Result<()> {
            for (line, held) in lines.iter_mut().zip(held) {
                let current = live.get(&line.resource);
                let fresh = match command {
                    Command::Evacuate => {
                        let Some(current) = current else {
                            line.status = Status::Skipped;
                            line.reason = Some("the resource no longer exists: nothing changed".into());
                            continue;
                        };
                        // Deleted and created again since it was planned: the intent is about the old one.
                        if !held.record().is_about(current.identity.as_ref()) {
                            line.status = Status::Skipped;
                            line.reason =
                                Some("the resource was re-created since it was planned: nothing changed".into());
                            continue;
                        }
                        self.evacuation_line(
                            az_id,
                            current,
                            &zone_subnets,
                            &Filters::default(),
                            Some(held.record()),
                            &how,
                        )?
                    }
                    Command::Recover => Some(self.recovery_line(held.record(), current, &existing, forget_missing)?),
                };
                let Some(fresh) = fresh else {
                    line.status = Status::Skipped;
                    line.reason = Some("nothing of it is in the zone any more: nothing changed".into());
                    continue;
                };
                replace(line, fresh);
                // The next line of the same resource builds on this one's result.
                if let (Status::Planned, Some(resource)) = (line.status, live.get_mut(&line.resource)) {
                    resource.subnets = line.resulting_subnets.clone();
                }
            }
            // The last planned line of each resource carries the one change (folds_lines): from the
            // subnets as read, to the result of every line.
            let mut carriers: BTreeMap<String, usize> = BTreeMap::new();
            for (n, line) in lines.iter().enumerate() {
                if line.status == Status::Planned {
                    carriers.insert(line.resource.clone(), n);
                }
            }
            for (resource, n) in carriers
                .into_iter()
                .filter(|_| self.folds && command == Command::Recover)
            {
                if let (Some(target), Some(subnets)) = (lines[n].target.as_mut(), read.get(&resource)) {
                    target.subnets = subnets.clone();
                }
            }
            Ok(())
        })();
        outcome
    }

    async fn evacuate(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        self.change(line).await
    }

    async fn recover(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        self.change(line).await
    }

    async fn verify(&self, lines: &mut [&mut Item]) {
        let ids: Vec<String> = lines
            .iter()
            .filter(|l| l.status == Status::Done && l.target.is_some())
            .map(|l| l.resource.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return;
        }
        let live = match self.service.read(&ids).await {
            Ok(live) => live,
            Err(e) => {
                let why = format!(
                    "could not read back ({}); the journal holds what was taken",
                    describe(&e)
                );
                for line in lines.iter_mut().filter(|l| l.status == Status::Done) {
                    line.fail(crate::model::Failure::read_back(why.clone()));
                }
                return;
            }
        };
        // Only the last line of a resource says what it should look like now.
        let mut last: BTreeMap<String, usize> = BTreeMap::new();
        for (i, line) in lines.iter().enumerate() {
            if line.status == Status::Done && line.target.is_some() {
                last.insert(line.resource.clone(), i);
            }
        }
        for i in last.into_values() {
            let line = &mut lines[i];
            let mut expected = line.resulting_subnets.clone();
            expected.sort();
            match live.get(&line.resource) {
                Some(found) => {
                    let mut found = found.subnets.clone();
                    found.sort();
                    if found != expected {
                        line.fail(crate::model::Failure::read_back(format!(
                            "read back shows subnets [{}], expected [{}]; the journal still holds what was taken",
                            found.join(", "),
                            expected.join(", ")
                        )));
                    }
                }
                None => line.fail(crate::model::Failure::read_back(
                    "read back: the resource no longer exists",
                )),
            }
        }
    }

    async fn settle(&self, lines: &[&Item], timeout: Duration) -> Result<Vec<(String, String)>> {
        let changed: Vec<Resource> = lines.iter().filter_map(|l| l.target.clone()).collect();
        if changed.is_empty() {
            return Ok(Vec::new());
        }
        self.service.settle(&changed, timeout).await
    }

    async fn probe(&self) -> Vec<super::Check> {
        self.service.probe().await
    }

    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<Finding>> {
        let Some(zone) = scope.zone else {
            return Ok(Vec::new());
        };
        // Every placed resource: units can stay in the zone after its subnets left it.
        let resources: Vec<Resource> = self
            .service
            .discover()
            .await?
            .into_iter()
            .filter(|r| !r.subnets.is_empty())
            .collect();
        let place = Place {
            zone,
            zone_subnets: scope.zone_subnets,
            ec2: &self.ec2,
        };
        let presence = self.service.presence(&resources, &place).await?;
        Ok(resources
            .iter()
            .filter_map(|r| finding(r, presence.get(&r.id), scope.zone_subnets))
            .collect())
    }

    async fn demand(&self, lines: &[&Item], scope: &Scope<'_>) -> Result<Vec<Demand>> {
        let (Some(zone), false) = (scope.zone, lines.is_empty()) else {
            return Ok(Vec::new());
        };
        let targets: Vec<Resource> = lines.iter().filter_map(|l| l.target.clone()).collect();
        let place = Place {
            zone,
            zone_subnets: scope.zone_subnets,
            ec2: &self.ec2,
        };
        let presence = self.service.presence(&targets, &place).await?;
        Ok(lines
            .iter()
            .filter_map(|line| {
                let p = presence.get(&line.resource)?;
                Some(Demand {
                    resource: line.resource.clone(),
                    units: p.units,
                    needs: p.needs.clone(),
                    remaining: line.resulting_subnets.clone(),
                    note: p.note.clone(),
                })
            })
            .collect())
    }
}

/// One resource's exposure finding: listed when it has a subnet or a unit in the zone.
fn finding(
    resource: &Resource,
    presence: Option<&super::Presence>,
    zone_subnets: &BTreeSet<String>,
) -> Option<Finding> {
    let (in_zone, remaining): (Vec<String>, Vec<String>) =
        resource.subnets.iter().cloned().partition(|s| zone_subnets.contains(s));
    let units = presence.map(|p| p.in_zone.clone()).unwrap_or_default();
    if in_zone.is_empty() && units.is_empty() {
        return None;
    }
    let count = units.len();
    let word = presence.map_or("units", |p| p.units);
    let listed = if units.is_empty() { in_zone.clone() } else { units };
    let mut found = Finding::new(resource.resource_type, &resource.id, &resource.name, listed);
    found.count = count;
    found = match &resource.unsupported {
        Some(why) => found.not_movable(why.clone()),
        None if remaining.is_empty() => found.not_movable(format!(
            "{}: give it a subnet in another zone first",
            plan::WOULD_LEAVE_NO_SUBNETS
        )),
        None => found.moved_by(resource.resource_type),
    };
    if in_zone.is_empty() {
        found.notes.push(format!(
            "its subnets are out of the zone already; {count} {word} still there until replaced"
        ));
    } else {
        found.notes.push(format!("subnets in the zone: {}", in_zone.join(", ")));
    }
    Some(found)
}

impl<S: SubnetService> Subnets<S> {
    /// Set the line's resulting subnets on its resource (and its other planned steps).
    async fn change(&self, line: &Item) -> Result<Acted> {
        let Some(target) = line.target.as_ref() else {
            return Err(crate::Error::Internal(format!("no live state for {}", line.resource)));
        };
        let shown = self.service.apply_and_tell(target, &line.resulting_subnets).await?;
        Ok(Acted {
            shown,
            ..Acted::default()
        })
    }
}
