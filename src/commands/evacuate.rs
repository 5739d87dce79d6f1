//! `azevac evacuate`: plan the removal of one AZ ID's subnets from every resource, then journal
//! (write-ahead), change, and mark done, resource by resource.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{
    conclude, confirm, describe, execute, execute_batched, kube_clusters, records_of, Context, Phases, Prepared,
    EXIT_OK,
};
use crate::cli;
use crate::crosszone;
use crate::journal::{Audit, Begin, Record};
use crate::plan::{self, Command, Filters, Item, Plan, Request, Status};
use crate::plugins::zonal_shift::{self, Shifts};
use crate::plugins::{asg, eks, Evacuation, Plugin, Resource};
use crate::report;
use crate::topology::{self, Zones};
use crate::{Error, Result};

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let prepared = prepare(ctx, &args.az_id, &request(args), args.kube.kubeconfig.clone()).await?;
    if args.confirm.dry_run {
        return Ok(prepared.print_only(ctx, true));
    }
    carry_out(ctx, prepared, args.confirm.yes, &args.wait).await
}

/// The plan's inputs as given on the command line.
fn request(args: &cli::Evacuate) -> Request {
    Request {
        types: args.types.types.clone(),
        ecs_clusters: args.clusters.clone(),
        tags: args.tags.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        name_prefix: args.name_prefix.clone(),
        kube_contexts: args.kube.contexts.clone(),
        k8s_mode: Some(args.k8s_mode),
        drain_timeout_seconds: Some(args.drain_timeout.as_secs()),
        reason: args.reason.clone(),
        forget_missing: false,
        zonal_shift: args.zonal_shift,
        expires_in: Some(args.expiry.expires_in.clone()),
        force: args.force,
        pace: args.pace,
        pace_timeout_seconds: args.pace.map(|_| args.wait.wait_timeout.as_secs()),
    }
}

/// Discover, plan, and keep what carrying the plan out needs.
pub async fn prepare(
    ctx: &Context,
    az_id: &str,
    request: &Request,
    kubeconfig: Option<std::path::PathBuf>,
) -> Result<Prepared> {
    let mut phases = Phases::start();
    let ec2 = crate::client!(aws_sdk_ec2, &ctx.sdk);
    let zones = Zones::load(&ec2, &ctx.region).await?;
    let zone = zones.resolve(az_id)?;
    let plugins = ctx.plugins(&request.types, &request.ecs_clusters);
    let clusters = kube_clusters(request, kubeconfig).await?;
    let kube = eks::Options {
        mode: request.k8s_mode.unwrap_or_default(),
        // The flag's own default (5m) when a hand-written request leaves it out.
        drain_timeout: Duration::from_secs(request.drain_timeout_seconds.unwrap_or(300)),
        ..eks::Options::default()
    };
    let filters = Filters {
        tags: request.tag_pairs(),
        name_prefix: request.name_prefix.clone(),
    };
    let how = Evacuation {
        az_name: zone.name.clone(),
        pace: request.pace,
        timeout: Duration::from_secs(request.pace_timeout_seconds.unwrap_or(900)),
    };
    let (mut plan, records) = make_plan(ctx, &ec2, &zone, &plugins, &filters, &how).await?;
    // Data plane first: the zonal shifts lead the plan, and the cross-zone check knows about them.
    let shifts = Shifts::new(&ctx.sdk);
    let managed = if request.zonal_shift || request.names(zonal_shift::TYPE) {
        Some(shifts.managed(&zones).await?)
    } else {
        None
    };
    let expires_in = request.expires_in.as_deref().unwrap_or(zonal_shift::DEFAULT_EXPIRES_IN);
    let shift_items = managed
        .as_deref()
        .map(|m| zonal_shift::evacuation(m, &zone.id, expires_in, &records))
        .unwrap_or_default();
    guard_cross_zone(ctx, &shifts, managed.as_deref(), &mut plan, &shift_items, request.force).await?;
    plan.items.splice(0..0, shift_items);
    // Kubernetes nodes are placed by labels, not subnets: planned by their own module.
    for cluster in &clusters {
        let nodes = cluster.nodes().await?;
        for mut item in eks::evacuation(&cluster.name, &nodes, &zone.id, &zones, kube.mode) {
            item.record = records.get(&item.resource).cloned();
            plan.items.push(item);
        }
    }
    plan.az_name = Some(zone.name.clone());
    plan.request = request.clone();
    phases.end("discover and plan");
    Ok(Prepared {
        plan,
        phases,
        plugins,
        clusters,
        kube,
    })
}

/// Show the plan, ask, create the journal if needed, and carry the plan out; returns the exit code.
pub async fn carry_out(ctx: &Context, prepared: Prepared, yes: bool, wait: &cli::Wait) -> Result<i32> {
    let changes = prepared.plan.items.iter().filter(|i| i.changes_resource()).count();
    if changes == 0 {
        return Ok(prepared.print_only(ctx, false));
    }
    let Prepared {
        mut plan,
        mut phases,
        plugins,
        clusters,
        kube,
    } = prepared;
    if ctx.output == cli::Output::Table {
        report::print(&plan, ctx.output, report::Phase::Plan { dry_run: false });
    }
    let zone = plan.az_id.clone().unwrap_or_default();
    let question = format!("Evacuate {zone} from {changes} resources?");
    if !confirm(&question, yes)? {
        eprintln!("azevac: nothing changed");
        return Ok(EXIT_OK);
    }
    if ctx.journal.create().await? {
        eprintln!("azevac: created journal table {}", ctx.journal.table());
    }
    let audit = ctx.audit(plan.request.reason.clone()).await;
    phases.end("confirm and prepare the journal");
    let by_type: BTreeMap<&str, &dyn Plugin> = plugins.iter().map(|p| (p.resource_type(), p.as_ref())).collect();
    let clusters = eks::by_name(&clusters);
    let shifts = Shifts::new(&ctx.sdk);
    let expires_in = plan.request.expires_in.clone();
    let expires_in = expires_in.as_deref().unwrap_or(zonal_shift::DEFAULT_EXPIRES_IN);
    let is_shift = |i: &Item| i.resource_type == zonal_shift::TYPE;
    let is_node = |i: &Item| i.resource_type == eks::TYPE;
    // Traffic first, then capacity: a line that waits for a shift that did not start stays as it is.
    let start = |item: Item| start_shift(ctx, &shifts, expires_in, &audit, item);
    execute(&mut plan, ctx.concurrency, ctx.progress, is_shift, start).await;
    verify_shifts(&shifts, &mut plan).await;
    plan::hold_back(&mut plan);
    // Subnets: journal writes batched around the changes (write-ahead for each batch first).
    execute_batched(
        &mut plan,
        ctx.concurrency,
        ctx.progress,
        |i| !is_shift(i) && !is_node(i),
        |items| journal_ahead(ctx, &audit, items),
        |item| change_one(&by_type, item),
        |items| journal_done(ctx, items),
    )
    .await;
    let evacuate = |item: Item| evacuate_node(ctx, &clusters, &kube, &audit, item);
    execute(&mut plan, ctx.concurrency, ctx.progress, is_node, evacuate).await;
    phases.end("apply (with journal writes)");
    Ok(conclude(ctx, &mut plan, &plugins, wait, phases).await)
}

/// The cross-zone check on every planned Auto Scaling group line that has target groups: costs ELB
/// reads only for those, and an ARC read only when a balancer without cross-zone load balancing
/// is found and this plan does not list the zone's shifts already.
async fn guard_cross_zone(
    ctx: &Context,
    shifts: &Shifts,
    managed: Option<&[zonal_shift::Managed]>,
    plan: &mut Plan,
    shift_items: &[Item],
    force: bool,
) -> Result<()> {
    let groups_of = |item: &Item| item.target.as_ref().map(asg::target_groups).unwrap_or_default();
    let target_groups: BTreeSet<String> = plan
        .items
        .iter()
        .filter(|i| i.resource_type == asg::TYPE && i.status == Status::Planned)
        .flat_map(groups_of)
        .collect();
    if target_groups.is_empty() {
        return Ok(());
    }
    let zonal = crosszone::zonal_balancers(&ctx.sdk, &target_groups).await?;
    if zonal.values().all(Vec::is_empty) {
        return Ok(());
    }
    let az_id = plan.az_id.clone().unwrap_or_default();
    let mut shifted = crosszone::Shifted::default();
    for item in shift_items {
        // A skipped shift line has a shift (ours or not) in progress: the active list below decides.
        if item.status == Status::Planned {
            let arn = zonal_shift::arn_of(&item.resource).to_owned();
            shifted.planned.insert(arn, item.resource.clone());
        }
    }
    // With --zonal-shift the managed resources were listed with their shifts (and autoshifts).
    let active = match managed {
        Some(managed) => Ok(managed
            .iter()
            .flat_map(|m| m.active.iter().map(|a| (m.arn.clone(), a.clone())))
            .collect()),
        None => shifts.active(None).await,
    };
    match active {
        Ok(active) => shifted.active.extend(
            active
                .into_iter()
                .filter(|(_, a)| a.away_from == az_id)
                .map(|(arn, _)| arn),
        ),
        Err(e) => shifted.unknown = Some(describe(&e)),
    }
    for item in plan.items.iter_mut().filter(|i| i.resource_type == asg::TYPE) {
        let balancers: Vec<crosszone::Zonal> = groups_of(item)
            .iter()
            .filter_map(|tg| zonal.get(tg))
            .flatten()
            .cloned()
            .collect();
        crosszone::check(item, &balancers, &shifted, force);
    }
    Ok(())
}

/// Journal the intent, start the shift, record its ID. The comment carries the run ID, so that
/// `recover` finds the shift even if azevac dies before the ID is journalled.
async fn start_shift(ctx: &Context, shifts: &Shifts, expires_in: &str, audit: &Audit, mut item: Item) -> Item {
    let Some(target) = item.target.clone() else {
        item.fail(format!("internal: no managed resource for {}", item.resource));
        return item;
    };
    let comment = zonal_shift::comment(&audit.run_id, audit.reason.as_deref());
    let (arn, az_id) = (zonal_shift::arn_of(&item.resource).to_owned(), item.az_id.clone());
    let start = async {
        let id = shifts.start(&arn, &az_id, expires_in, &comment).await?;
        Ok((vec![zonal_shift::started_action(&id)], Vec::new()))
    };
    let (mut item, _) = act_journalled(ctx, audit, item, &target, start).await;
    if let Some(id) = item.record.as_ref().and_then(zonal_shift::started_id) {
        item.actions = Some(vec![format!("started zonal shift {id} away from {az_id}")]);
    }
    item
}

/// Trust, but verify: every shift this run started must be listed as active now.
async fn verify_shifts(shifts: &Shifts, plan: &mut Plan) {
    let started: Vec<usize> = plan
        .items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.resource_type == zonal_shift::TYPE && i.status == Status::Done)
        .map(|(n, _)| n)
        .collect();
    if started.is_empty() {
        return;
    }
    let active = match shifts.active(None).await {
        Ok(active) => active,
        Err(e) => {
            tracing::warn!(error = %describe(&e), "could not read back the zonal shifts");
            return;
        }
    };
    for n in started {
        let item = &mut plan.items[n];
        let id = item
            .record
            .as_ref()
            .and_then(zonal_shift::started_id)
            .map(str::to_owned);
        let listed = active.iter().any(|(_, a)| a.id.is_some() && a.id == id);
        if !listed {
            item.fail(format!(
                "read back: zonal shift {} is not listed as active; the journal still holds it",
                id.unwrap_or_default()
            ));
        }
    }
}

/// Discover every resource of the chosen types and decide, for each, what evacuating the zone means.
/// Returns the plan and the zone's journal records by resource.
async fn make_plan(
    ctx: &Context,
    ec2: &aws_sdk_ec2::Client,
    zone: &topology::Zone,
    plugins: &[Box<dyn Plugin>],
    filters: &Filters,
    how: &Evacuation,
) -> Result<(Plan, BTreeMap<String, Record>)> {
    let (zone_subnets, journal, discovered) = futures::try_join!(
        topology::subnets_in_zone(ec2, &zone.id),
        journalled(ctx, &zone.id),
        futures::future::try_join_all(plugins.iter().map(|p| p.discover())),
    )?;
    let (records, problems) = journal;
    let mut items = Vec::new();
    for (plugin, resources) in plugins.iter().zip(discovered) {
        // Only what may be planned is inspected further (tags, caveats): it can cost a call each.
        let mut candidates: Vec<_> = resources
            .into_iter()
            .filter(|r| {
                r.subnets.iter().any(|s| zone_subnets.contains(s))
                    || r.subnets.is_empty()
                    || records.contains_key(&r.id)
            })
            .collect();
        plugin.inspect(&mut candidates, !filters.tags.is_empty()).await?;
        for resource in &candidates {
            let Some(mut item) =
                plan::evacuation(&zone.id, resource, &zone_subnets, filters, records.get(&resource.id))
            else {
                continue;
            };
            // Steps besides the subnets (ASG `--pace`) ride in the target for `apply`, and in the journal.
            if let (Status::Planned, Some(target)) = (item.status, item.target.as_mut()) {
                let steps = plugin.plan_evacuation(target, how);
                if !steps.is_empty() {
                    item.actions = Some(steps);
                }
            }
            items.push(item);
        }
    }
    let plan = Plan {
        command: Command::Evacuate,
        region: ctx.region.clone(),
        az_id: Some(zone.id.clone()),
        az_name: None,
        request: Request::default(),
        items,
        problems,
        stats: None,
    };
    Ok((plan, records))
}

/// The zone's journal records by resource, and the items that could not be read. A missing table
/// means nothing was journalled yet (a real run creates it before the first write).
async fn journalled(ctx: &Context, az_id: &str) -> Result<(BTreeMap<String, Record>, Vec<String>)> {
    let entries = match ctx.journal.in_zone(az_id).await {
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

/// The write-ahead of a batch of lines, in one call: each line gets its record in state intent, or
/// fails with nothing changed (a lost race).
async fn journal_ahead(ctx: &Context, audit: &Audit, mut items: Vec<Item>) -> Vec<Item> {
    let removed: Vec<Vec<String>> = items
        .iter()
        .map(|i| i.removed_subnets.clone().unwrap_or_default())
        .collect();
    let steps: Vec<Vec<String>> = items.iter().map(|i| i.actions.clone().unwrap_or_default()).collect();
    let outcomes = {
        let entries: Vec<Begin<'_>> = items
            .iter()
            .zip(removed.iter().zip(&steps))
            .filter_map(|(item, (removed, steps))| {
                Some(Begin {
                    az_id: &item.az_id,
                    resource: item.target.as_ref()?,
                    removed,
                    actions: steps,
                    existing: item.record.as_ref(),
                })
            })
            .collect();
        ctx.journal.begin_many(&entries, audit).await
    };
    let mut outcomes = outcomes.into_iter();
    for item in items.iter_mut() {
        if item.target.is_none() {
            item.fail(format!("internal: no discovered state for {}", item.resource));
            continue;
        }
        match outcomes.next() {
            Some(Ok(record)) => item.record = Some(record),
            Some(Err(e)) => item.fail(format!("{}; nothing changed", describe(&e))),
            None => item.fail("internal: no journal outcome".into()),
        }
    }
    items
}

/// Change one resource whose removal is journalled; a failure keeps the record in state intent.
async fn change_one(plugins: &BTreeMap<&str, &dyn Plugin>, mut item: Item) -> Item {
    let (Some(plugin), Some(target)) = (plugins.get(item.resource_type.as_str()), item.target.as_ref()) else {
        item.fail(format!("internal: no plugin or discovered state for {}", item.resource));
        return item;
    };
    match plugin.apply(target, &item.resulting_subnets).await {
        Ok(()) => item.done(),
        Err(e) => {
            let taken = item
                .record
                .as_ref()
                .map(|r| r.removed_subnets.join(", "))
                .unwrap_or_default();
            item.fail(format!(
                "{}; journal record kept in state intent with {taken} (recover reconciles it)",
                describe(&e)
            ));
            tracing::warn!(resource = %item.resource, "evacuation failed");
        }
    }
    item
}

/// Mark a batch of changed lines done in the journal, in one call.
async fn journal_done(ctx: &Context, mut items: Vec<Item>) -> Vec<Item> {
    let Some(records) = records_of(&mut items) else {
        return items;
    };
    for (item, outcome) in items.iter_mut().zip(ctx.journal.finish_many(&records).await) {
        match outcome {
            Ok(done) => item.record = Some(done),
            Err(e) => item.fail(format!(
                "{}; changed, but the journal record stays in state intent (recover reconciles it)",
                describe(&e)
            )),
        }
    }
    items
}

/// Journal the planned node actions, act on the node, then record what was actually done.
async fn evacuate_node(
    ctx: &Context,
    clusters: &BTreeMap<String, eks::Cluster>,
    options: &eks::Options,
    audit: &Audit,
    mut item: Item,
) -> Item {
    let node = eks::node_of(&item.resource).to_owned();
    let Some(cluster) = clusters.get(eks::cluster_of(&item.resource)) else {
        item.fail(format!("internal: no cluster for {}", item.resource));
        return item;
    };
    let target = Resource {
        resource_type: eks::TYPE,
        id: item.resource.clone(),
        name: item.name.clone(),
        ..Resource::default()
    };
    let az_id = item.az_id.clone();
    let evacuate = cluster.evacuate(&node, &az_id, options);
    let (mut item, notes) = act_journalled(ctx, audit, item, &target, evacuate).await;
    if !notes.is_empty() {
        item.fail(format!("cordoned, but {}", notes.join("; ")));
    }
    item
}

/// The journalled flow of one resource that is not placed by subnets (a node, a zonal shift): write
/// the planned actions ahead, `act`, then record the actions it reports as done (with its notes).
/// Whatever fails, the record stays in state intent for `recover` to reconcile.
async fn act_journalled<F>(
    ctx: &Context,
    audit: &Audit,
    mut item: Item,
    target: &Resource,
    act: F,
) -> (Item, Vec<String>)
where
    F: std::future::Future<Output = Result<(Vec<String>, Vec<String>)>>,
{
    let planned = item.actions.clone().unwrap_or_default();
    let record = match ctx
        .journal
        .begin(&item.az_id, target, &[], &planned, item.record.as_ref(), audit)
        .await
    {
        Ok(record) => record,
        Err(e) => {
            item.fail(format!("{}; nothing changed", describe(&e)));
            return (item, Vec::new());
        }
    };
    let outcome = match act.await {
        Ok((actions, notes)) => ctx.journal.finish(&record, Some(&actions)).await.map(|r| (r, notes)),
        Err(e) => Err(e),
    };
    match outcome {
        Ok((done, notes)) => {
            item.actions = Some(done.actions.clone());
            item.record = Some(done);
            item.done();
            (item, notes)
        }
        Err(e) => {
            item.fail(format!(
                "{}; journal record kept in state intent (recover reconciles it)",
                describe(&e)
            ));
            item.record = Some(record);
            (item, Vec::new())
        }
    }
}
