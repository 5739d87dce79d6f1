//! Discover and plan: every kind plans its lines from the live state and the journal before
//! anything changes; then the plan is reviewed across kinds and checked for headroom.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use aws_config::SdkConfig;

use super::validate::validate;
use super::Prepared;
use crate::aws::stats::Phases;
use crate::error::describe;
use crate::journal::Journal;
use crate::model::topology::{self, Zones};
use crate::model::{Command, Failure, Item, Plan, Record, Request, Status};
use crate::plugins::{self, Plugin, Scope, Setup};
use crate::{Error, Result};

/// Discover and plan: the whole plan, before anything is changed. `az_id` is required to evacuate;
/// recover takes one zone or every zone.
pub async fn prepare(
    sdk: &SdkConfig,
    journal: &Journal,
    command: Command,
    az_id: Option<&str>,
    request: &Request,
    kubeconfig: Option<PathBuf>,
    account: Option<&str>,
) -> Result<Prepared> {
    validate(request)?;
    let mut phases = Phases::start();
    let region = crate::aws::region_of(sdk);
    let ec2 = crate::client!(aws_sdk_ec2, sdk);
    let zones = match az_id {
        Some(_) => Zones::load(&ec2, &region).await?,
        None => Zones::new(region.clone(), Vec::new()),
    };
    let zone = az_id.map(|az| zones.resolve(az)).transpose()?;
    if command == Command::Evacuate && zone.is_none() {
        return Err(Error::BadInput("evacuate needs --az-id AZ_ID".into()));
    }
    let setup = Setup {
        sdk: sdk.clone(),
        request: request.clone(),
        kubeconfig,
        account: account.map(str::to_owned),
    };
    let plugins = plugins::select(&setup).await?;
    let mut plan = Plan {
        command,
        region: region.clone(),
        az_id: zone.as_ref().map(|z| z.id.clone()),
        az_name: zone.as_ref().map(|z| z.name.clone()),
        request: request.clone(),
        items: Vec::new(),
        problems: Vec::new(),
        stats: None,
    };
    let none = BTreeSet::new();
    let no_records = BTreeMap::new();
    match command {
        Command::Evacuate => {
            let zone_id = zone.as_ref().map(|z| z.id.as_str()).unwrap_or_default();
            let (zone_subnets, (records, problems)) =
                futures::try_join!(topology::subnets_in_zone(&ec2, zone_id), zone_records(journal, zone_id))?;
            plan.problems = problems;
            let scope = Scope {
                command,
                zone: zone.as_ref(),
                zones: &zones,
                zone_subnets: &zone_subnets,
                records: &records,
                request,
                still_evacuated: &none,
            };
            let planned = futures::future::join_all(plugins.iter().map(|p| p.plan_evacuation(&scope))).await;
            for (plugin, lines) in plugins.iter().zip(planned) {
                match isolate(lines)? {
                    Ok(lines) => plan.items.extend(lines),
                    Err(e) => plan.problems.push(format!(
                        "{}: could not be planned, so nothing of this type is changed: {}",
                        plugin.resource_type(),
                        describe(&e)
                    )),
                }
            }
            review(&plugins, &mut plan, &scope).await?;
            headroom(&plugins, &mut plan, &scope, &ec2).await;
        }
        Command::Recover => {
            let types: Vec<&str> = plugins.iter().map(|p| p.resource_type()).collect();
            // Side by side: the table's check, this run's records and the other types' zones are
            // each a round trip before the plan. The check's error comes first (a missing table or
            // someone else's: what to do), whatever the reads of that table said.
            let (required, records, still_evacuated) = tokio::join!(
                journal.require(),
                journal.records(&types, zone.as_ref().map(|z| z.id.as_str())),
                still_evacuated(journal, &types)
            );
            required?;
            let (mut by_type, problems) = records?;
            let still_evacuated = still_evacuated?;
            plan.problems = problems;
            let scope = Scope {
                command,
                zone: zone.as_ref(),
                zones: &zones,
                zone_subnets: &none,
                records: &no_records,
                request,
                still_evacuated: &still_evacuated,
            };
            // Each type reads its resources from its own service: side by side, as evacuate plans.
            let reads = plugins.iter().map(|plugin| {
                let records = by_type.remove(plugin.resource_type()).unwrap_or_default();
                let kept = records.len();
                let scope = &scope;
                async move { (kept, plugin.plan_recovery(records, scope).await) }
            });
            let planned = futures::future::join_all(reads.collect::<Vec<_>>()).await;
            for (plugin, (kept, lines)) in plugins.iter().zip(planned) {
                match isolate(lines)? {
                    Ok(lines) => plan.items.extend(lines),
                    Err(e) => plan.problems.push(format!(
                        "{}: could not be planned, so its {kept} journal record(s) are kept for the next recover: {}",
                        plugin.resource_type(),
                        describe(&e)
                    )),
                }
            }
            // A record is checked against where things lie before its line may change anything, for
            // every kind here: an odd one is reported and kept, never acted on.
            for item in plan.items.iter_mut().filter(|i| i.status == Status::Planned) {
                if let Some(why) = crate::model::plan::odd_record(item) {
                    item.fail(Failure::plan_kept(why));
                }
            }
            review(&plugins, &mut plan, &scope).await?;
        }
    }
    // The plan lists lines stage by stage, types in registry order: the order they are carried out
    // in with --concurrency 1 (otherwise a stage's types go side by side).
    let stage = |item: &Item| {
        plugins
            .iter()
            .find(|p| p.resource_type() == item.resource_type)
            .map(|p| p.stage(command, item))
    };
    plan.items.sort_by_key(|item| stage(item));
    for item in &mut plan.items {
        item.account = account.map(str::to_owned);
    }
    phases.end("discover and plan");
    Ok(Prepared {
        plan,
        phases,
        plugins: plugins.into(),
    })
}

/// The zones that keep records of types this run does not recover (a `--type` that leaves some
/// out): moving anything back into one of them (a database writer's failback) would put it into a
/// zone that is still evacuated.
pub(super) async fn still_evacuated(journal: &Journal, recovered: &[&str]) -> Result<BTreeSet<String>> {
    let others: Vec<&str> = plugins::types()
        .into_iter()
        .filter(|t| !recovered.contains(t))
        .collect();
    if others.is_empty() {
        return Ok(BTreeSet::new());
    }
    let (by_type, _) = journal.records_of_every_account(&others, None).await?;
    Ok(by_type.values().flatten().map(|r| r.az_id.clone()).collect())
}

/// One type's planning outcome, split by what it calls for. An error that needs the operator to
/// change the input or the environment (exit 2: access denied, an endpoint that does not serve the
/// API) stops the run before any change, as bad input does; any other failure of one type (a
/// throttled or failing service, a resource that could not be read) is that type's problem only,
/// and the other types carry on. A service that cannot be reached is one of those: the region was
/// reached by the run's first calls (EC2's zones, the journal's table), so a service that drops
/// its connections now is failing, as services do in a zonal incident, not misconfigured.
pub(super) fn isolate<T>(outcome: Result<T>) -> Result<Result<T>> {
    match outcome {
        Err(e @ Error::Unreachable { .. }) => Ok(Err(e)),
        Err(e) if e.exit_code() == 2 => Err(e),
        other => Ok(other),
    }
}

/// Let every plugin review the whole plan. A review is a safety check (the cross-zone guard), so a
/// review that fails fails its type's planned lines rather than letting them go ahead unchecked.
pub(super) async fn review(plugins: &[Box<dyn Plugin>], plan: &mut Plan, scope: &Scope<'_>) -> Result<()> {
    for plugin in plugins {
        if let Err(e) = isolate(plugin.review(plan, scope).await)? {
            let why = format!("could not be checked before the change: {}", describe(&e));
            for item in plan
                .items
                .iter_mut()
                .filter(|i| i.resource_type == plugin.resource_type() && i.status == Status::Planned)
            {
                item.fail(Failure::plan(why.clone()));
            }
        }
    }
    Ok(())
}

/// The headroom check (evacuate): every type's demand on the subnets its planned lines keep, the
/// free addresses of all those subnets in batched reads, and the verdicts on the lines. A check that
/// cannot be made (access denied included: a policy from before the check lacks `ecs:ListTasks`) is
/// a note on the lines it concerns, never a stop: in an incident the reads may be failing too, and
/// the check guards capacity, not correctness.
pub(super) async fn headroom(
    plugins: &[Box<dyn Plugin>],
    plan: &mut Plan,
    scope: &Scope<'_>,
    ec2: &aws_sdk_ec2::Client,
) {
    let mut demands = Vec::new();
    let mut unchecked: Vec<(String, String)> = Vec::new();
    // Each type's reads go to its own service and quota: side by side, the check takes as long as
    // the slowest type's reads, not their sum (ECS tasks and Lambda interfaces behind their rates).
    let reads = plugins.iter().filter_map(|plugin| {
        let lines: Vec<&Item> = plan
            .items
            .iter()
            .filter(|i| {
                i.resource_type == plugin.resource_type()
                    && i.status == Status::Planned
                    && i.removed_subnets.as_ref().is_some_and(|r| !r.is_empty())
            })
            .collect();
        (!lines.is_empty()).then_some(async move { (plugin.resource_type(), plugin.demand(&lines, scope).await) })
    });
    for (resource_type, found) in futures::future::join_all(reads).await {
        match found {
            Ok(found) => demands.extend(found),
            Err(e) => unchecked.push((resource_type.to_owned(), describe(&e))),
        }
    }
    let subnets: BTreeSet<String> = demands.iter().flat_map(|d| d.remaining.iter().cloned()).collect();
    let free = if subnets.is_empty() {
        Ok(BTreeMap::new())
    } else {
        topology::free_ips(ec2, &subnets).await
    };
    match free {
        Ok(free) => crate::model::headroom::apply(plan, &demands, &free, scope.request.force),
        Err(e) => unchecked.extend(demands.iter().map(|d| (d.resource.clone(), describe(&e)))),
    }
    for (what, why) in unchecked {
        for item in plan
            .items
            .iter_mut()
            .filter(|i| i.status == Status::Planned && (i.resource_type == what || i.resource == what))
        {
            item.notes.push(format!("headroom not checked: {why}"));
        }
    }
}

/// This zone's records by journal key, and the items that could not be read. A missing table
/// means nothing was journalled yet (a real run creates it before the first write).
pub(super) async fn zone_records(journal: &Journal, az_id: &str) -> Result<(BTreeMap<String, Record>, Vec<String>)> {
    // Someone else's table under the journal's name is refused before the plan. Checked alongside
    // the read (a read changes nothing, and what it found is dropped): one round trip, not two.
    let (schema, entries) = tokio::join!(journal.check_schema(), journal.in_zone(az_id));
    match schema {
        Ok(()) => {}
        Err(Error::TableMissing { .. }) => return Ok((BTreeMap::new(), Vec::new())),
        Err(e) => return Err(e),
    }
    let entries = match entries {
        Ok(entries) => entries,
        Err(Error::TableMissing { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut records = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in entries {
        match entry {
            Ok(record) => {
                records.insert(record.resource.clone(), record);
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    Ok((records, problems))
}
