//! `azevac recover`: for every journal record (per type, one AZ or all), put the removed subnets
//! back as a union with the resource's current subnets, and only then delete the record.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    confirm, describe, execute, execute_batched, kube_clusters, records_of, report_result, settle, verify, Context,
    Phases, Prepared, EXIT_OK,
};
use crate::cli;
use crate::journal::Record;
use crate::plan::{self, Command, Item, Plan, Request};
use crate::plugins::zonal_shift::{self, Shifts};
use crate::plugins::{eks, Plugin, Resource};
use crate::report;
use crate::topology::{self, Zones};
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let request = Request {
        types: args.types.types.clone(),
        kube_contexts: args.kube.contexts.clone(),
        forget_missing: args.forget_missing,
        ..Request::default()
    };
    let prepared = prepare(ctx, args.az_id.as_deref(), &request, args.kube.kubeconfig.clone()).await?;
    if args.confirm.dry_run {
        return Ok(prepared.print_only(ctx, true));
    }
    carry_out(ctx, prepared, args.confirm.yes, &args.wait).await
}

/// Read the journal and the resources' current state, plan, and keep what carrying it out needs.
pub async fn prepare(
    ctx: &Context,
    az_id: Option<&str>,
    request: &Request,
    kubeconfig: Option<std::path::PathBuf>,
) -> Result<Prepared> {
    let mut phases = Phases::start();
    let ec2 = crate::client!(aws_sdk_ec2, &ctx.sdk);
    let zone = match az_id {
        Some(az_id) => Some(Zones::load(&ec2, &ctx.region).await?.resolve(az_id)?),
        None => None,
    };
    let plugins = ctx.plugins(&request.types, &[]);
    let clusters = kube_clusters(request, kubeconfig).await?;
    let with_nodes = request.types.is_empty() || request.types.iter().any(|t| t == eks::TYPE);
    let az_id = zone.as_ref().map(|z| z.id.as_str());
    let mut plan = make_plan(ctx, &ec2, az_id, &plugins, request.forget_missing).await?;
    if with_nodes {
        plan_nodes(ctx, az_id, &eks::by_name(&clusters), &mut plan).await?;
    }
    if request.types.is_empty() || request.names(zonal_shift::TYPE) {
        plan_shifts(ctx, az_id, &mut plan).await?;
    }
    plan.az_name = zone.map(|z| z.name);
    plan.request = request.clone();
    phases.end("discover and plan");
    Ok(Prepared {
        plan,
        phases,
        plugins,
        clusters,
        kube: eks::Options::default(),
    })
}

/// Show the plan, ask, and carry it out; returns the exit code.
pub async fn carry_out(ctx: &Context, prepared: Prepared, yes: bool, wait: &cli::Wait) -> Result<i32> {
    let planned = prepared.plan.count(plan::Status::Planned);
    if planned == 0 {
        return Ok(prepared.print_only(ctx, false));
    }
    let Prepared {
        mut plan,
        mut phases,
        plugins,
        clusters,
        ..
    } = prepared;
    let clusters = eks::by_name(&clusters);
    if ctx.output == cli::Output::Table {
        report::print(&plan, ctx.output, report::Phase::Plan { dry_run: false });
    }
    let changes = plan.items.iter().filter(|i| i.changes_resource()).count();
    let question = format!("Put subnets back into {changes} resources and clear {planned} journal records?");
    if !confirm(&question, yes)? {
        eprintln!("azevac: nothing changed");
        return Ok(EXIT_OK);
    }
    phases.end("confirm");
    let by_type: BTreeMap<&str, &dyn Plugin> = plugins.iter().map(|p| (p.resource_type(), p.as_ref())).collect();
    let shifts = Shifts::new(&ctx.sdk);
    let cancel = |item: Item| cancel_shift(ctx, &shifts, item);
    let is_shift = |i: &Item| i.resource_type == zonal_shift::TYPE;
    let is_node = |i: &Item| i.resource_type == eks::TYPE;
    // The safe order back: let capacity return to the zone (Auto Scaling and EKS shifts, then the
    // subnets and nodes), wait for it if asked, and only then send load-balancer traffic there again.
    execute(
        &mut plan,
        ctx.concurrency,
        ctx.progress,
        zonal_shift::cancelled_first,
        &cancel,
    )
    .await;
    // Subnets: records deleted in batches, each only after its resource is back.
    execute_batched(
        &mut plan,
        ctx.concurrency,
        ctx.progress,
        |i| !is_shift(i) && !is_node(i),
        |items| async { items },
        |item| put_back(&by_type, item),
        |items| forget(ctx, items),
    )
    .await;
    let undo = |item: Item| recover_node(ctx, &clusters, item);
    execute(&mut plan, ctx.concurrency, ctx.progress, is_node, undo).await;
    phases.end("apply (with journal writes)");
    verify(&mut plan, &plugins).await;
    phases.end("verify");
    settle(&mut plan, &plugins, wait).await;
    phases.end("wait");
    let traffic_last = |i: &Item| is_shift(i) && !zonal_shift::cancelled_first(i);
    if plan
        .items
        .iter()
        .any(|i| traffic_last(i) && i.status == plan::Status::Planned)
    {
        if wait.wait && plan.count(plan::Status::Failed) > 0 {
            // Capacity did not come back everywhere: keep the traffic away until it has.
            for item in plan
                .items
                .iter_mut()
                .filter(|i| traffic_last(i) && i.status == plan::Status::Planned)
            {
                item.fail(
                    "not cancelled: capacity did not come back into the zone (see the failed lines); \
                           journal record kept, run recover again once it has"
                        .into(),
                );
            }
        } else {
            execute(&mut plan, ctx.concurrency, ctx.progress, traffic_last, &cancel).await;
        }
        phases.end("cancel load-balancer shifts");
    }
    Ok(report_result(ctx, &mut plan, &phases))
}

/// Cancel the shift azevac started (if it is still active), then delete the record.
async fn cancel_shift(ctx: &Context, shifts: &Shifts, mut item: Item) -> Item {
    let Some(record) = item.record.clone() else {
        item.fail("internal: no journal record".into());
        return item;
    };
    if let Some(id) = zonal_shift::to_cancel(&item) {
        if let Err(e) = shifts.cancel(id).await {
            item.fail(format!("{}; journal record kept", describe(&e)));
            return item;
        }
    }
    match ctx.journal.remove(&record).await {
        Ok(()) => item.done(),
        Err(e) => item.fail(format!("{}; shift cancelled, journal record kept", describe(&e))),
    }
    item
}

/// The zonal shift records: cancel the shifts azevac started that are still active. ARC is asked
/// only when there is a record, so a recovery without shifts never needs the ARC API.
async fn plan_shifts(ctx: &Context, az_id: Option<&str>, plan: &mut Plan) -> Result<()> {
    let mut records = Vec::new();
    for entry in ctx.journal.of_type(zonal_shift::TYPE, az_id).await? {
        match entry {
            Ok(record) => records.push(record),
            Err(e) => plan.problems.push(e.to_string()),
        }
    }
    if records.is_empty() {
        return Ok(());
    }
    let active = Shifts::new(&ctx.sdk).active(None).await?;
    for record in &records {
        let arn = zonal_shift::arn_of(&record.resource);
        let on_resource: Vec<zonal_shift::Active> = active
            .iter()
            .filter(|(resource, _)| resource == arn)
            .map(|(_, a)| a.clone())
            .collect();
        plan.items.push(zonal_shift::recovery(record, &on_resource));
    }
    Ok(())
}

/// Read the journal per type, the resources' current state and which journalled subnets still
/// exist, and decide per record what recovering means.
async fn make_plan(
    ctx: &Context,
    ec2: &aws_sdk_ec2::Client,
    az_id: Option<&str>,
    plugins: &[Box<dyn Plugin>],
    forget_missing: bool,
) -> Result<Plan> {
    ctx.journal.require().await?;
    let mut problems = Vec::new();
    let mut per_type: Vec<(&dyn Plugin, Vec<Record>)> = Vec::new();
    for plugin in plugins {
        let mut records = Vec::new();
        for entry in ctx.journal.of_type(plugin.resource_type(), az_id).await? {
            match entry {
                Ok(record) => records.push(record),
                Err(e) => problems.push(e.to_string()),
            }
        }
        per_type.push((plugin.as_ref(), records));
    }
    let journalled: BTreeSet<String> = per_type
        .iter()
        .flat_map(|(_, records)| records.iter().flat_map(|r| r.removed_subnets.clone()))
        .collect();
    let existing = if journalled.is_empty() {
        BTreeMap::new()
    } else {
        topology::locate_subnets(ec2, &journalled).await?
    };

    let mut items = Vec::new();
    for (plugin, mut records) in per_type {
        let ids: Vec<String> = records
            .iter()
            .map(|r| r.resource.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut current: BTreeMap<String, Resource> = if ids.is_empty() {
            BTreeMap::new()
        } else {
            plugin.read(&ids).await?
        };
        // One resource can have records in several zones: each line starts from the previous
        // line's result, so no line undoes another.
        records.sort_by(|a, b| (&a.resource, &a.az_id).cmp(&(&b.resource, &b.az_id)));
        for record in &records {
            let mut item = plan::recovery(record, current.get(&record.resource), &existing, forget_missing);
            if let Some(resource) = current.get_mut(&record.resource) {
                resource.subnets = item.resulting_subnets.clone();
            }
            // Steps besides the subnets that the record says azevac took (ASG: a suspended process).
            if let (plan::Status::Planned, Some(target)) = (item.status, item.target.as_mut()) {
                let steps = plugin.plan_recovery(target, record);
                if !steps.is_empty() {
                    item.actions = Some(steps);
                }
            }
            items.push(item);
        }
    }
    Ok(Plan {
        command: Command::Recover,
        region: ctx.region.clone(),
        az_id: az_id.map(str::to_owned),
        az_name: None,
        request: Request::default(),
        items,
        problems,
        stats: None,
    })
}

/// Put the journalled subnets back (and undo the other journalled steps); the record stays until
/// [`forget`] deletes it.
async fn put_back(plugins: &BTreeMap<&str, &dyn Plugin>, mut item: Item) -> Item {
    if item.changes_resource() {
        let (Some(plugin), Some(target)) = (plugins.get(item.resource_type.as_str()), item.target.as_ref()) else {
            item.fail(format!("internal: no plugin or current state for {}", item.resource));
            return item;
        };
        if let Err(e) = plugin.apply(target, &item.resulting_subnets).await {
            item.fail(format!("{}; journal record kept", describe(&e)));
            return item;
        }
    }
    item.done();
    item
}

/// Delete the records of a batch of recovered lines in one call, each only if nobody wrote it
/// since it was read.
async fn forget(ctx: &Context, mut items: Vec<Item>) -> Vec<Item> {
    let Some(records) = records_of(&mut items) else {
        return items;
    };
    for (item, outcome) in items.iter_mut().zip(ctx.journal.remove_many(&records).await) {
        if let Err(e) = outcome {
            item.fail(format!("{}; subnets are back, journal record kept", describe(&e)));
        }
    }
    items
}

/// The journalled Kubernetes nodes: undo what azevac did to each, where it is still in place.
async fn plan_nodes(
    ctx: &Context,
    az_id: Option<&str>,
    clusters: &BTreeMap<String, eks::Cluster>,
    plan: &mut Plan,
) -> Result<()> {
    for entry in ctx.journal.of_type(eks::TYPE, az_id).await? {
        let record = match entry {
            Ok(record) => record,
            Err(e) => {
                plan.problems.push(e.to_string());
                continue;
            }
        };
        let cluster_name = eks::cluster_of(&record.resource);
        let item = match clusters.get(cluster_name) {
            Some(cluster) => eks::recovery(&record, cluster.node(eks::node_of(&record.resource)).await?.as_ref()),
            None => {
                let mut item = eks::recovery(&record, None);
                item.status = plan::Status::Skipped;
                item.actions = Some(Vec::new());
                item.reason = Some(format!(
                    "no --kube-context for cluster {cluster_name}: journal record kept"
                ));
                item
            }
        };
        plan.items.push(item);
    }
    Ok(())
}

/// Undo the node actions still in place, then delete the record.
async fn recover_node(ctx: &Context, clusters: &BTreeMap<String, eks::Cluster>, mut item: Item) -> Item {
    let Some(record) = item.record.clone() else {
        item.fail("internal: no journal record".into());
        return item;
    };
    if item.changes_resource() {
        let Some(cluster) = clusters.get(eks::cluster_of(&record.resource)) else {
            item.fail("internal: no cluster".into());
            return item;
        };
        if let Err(e) = cluster.recover(eks::node_of(&record.resource), &record).await {
            item.fail(format!("{}; journal record kept", describe(&e)));
            return item;
        }
    }
    match ctx.journal.remove(&record).await {
        Ok(()) => item.done(),
        Err(e) => item.fail(format!("{}; node restored, journal record kept", describe(&e))),
    }
    item
}
