//! The commands: each builds a plan, shows it, and (unless `--dry-run`) carries it out. What they
//! share — the connection, confirmation, bounded concurrency, read-back — is here, once.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};

use aws_config::SdkConfig;
use futures::StreamExt;

use crate::cli::{self, Output};
use crate::journal::{Audit, Journal, BATCH};
use crate::plan::{Item, Plan, Request, Status};
use crate::plugins::{self, eks, Plugin, Setup};
use crate::{Error, Result};

pub mod apply;
pub mod evacuate;
pub mod init;
pub mod recover;
pub mod shift;
pub mod status;

/// Exit code: everything done.
pub const EXIT_OK: i32 = 0;
/// Exit code: some resources failed (the others were done).
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or environment; nothing was changed.
pub const EXIT_BAD_INPUT: i32 = 2;

/// What every command works with: one SDK configuration, the journal, the output choices.
pub struct Context {
    /// The shared SDK configuration.
    pub sdk: SdkConfig,
    /// The region everything is in.
    pub region: String,
    /// The journal table.
    pub journal: Journal,
    /// Table or JSON.
    pub output: Output,
    /// How many resources change at once.
    pub concurrency: usize,
    /// `--stats`.
    pub stats: bool,
    /// Progress bars on a terminal (not with `--no-progress`).
    pub progress: bool,
}

impl Context {
    /// Load the SDK configuration from the flags and the SDK's own chain.
    pub async fn connect(global: &cli::Global) -> Result<Self> {
        let sdk = crate::aws::load(&crate::aws::Connection {
            region: global.region.clone(),
            profile: global.profile.clone(),
            endpoint_url: global.endpoint_url.clone(),
        })
        .await?;
        Ok(Context {
            region: crate::aws::region_of(&sdk),
            journal: Journal::new(&sdk, &global.table),
            output: global.output,
            concurrency: usize::from(global.concurrency),
            stats: global.stats,
            progress: !global.no_progress,
            sdk,
        })
    }

    /// The plugins for `--type` (every type when it is empty); `clusters` narrows ECS.
    pub fn plugins(&self, types: &[String], clusters: &[String]) -> Vec<Box<dyn Plugin>> {
        let setup = Setup {
            sdk: self.sdk.clone(),
            ecs_clusters: clusters.to_vec(),
        };
        plugins::select(&setup, types)
    }

    /// Who is running this, for the journal: the STS caller ARN, a fresh run ID, the reason.
    pub async fn audit(&self, reason: Option<String>) -> Audit {
        let caller = match crate::client!(aws_sdk_sts, &self.sdk)
            .get_caller_identity()
            .send()
            .await
        {
            Ok(out) => out.arn().unwrap_or("unknown").to_owned(),
            // Not worth stopping an evacuation for: the journal still records what changed.
            Err(e) => {
                tracing::warn!(error = %aws_sdk_sts::error::DisplayErrorContext(&e), "sts:GetCallerIdentity failed; recording the caller as unknown");
                "unknown".to_owned()
            }
        };
        let run_id = uuid::Uuid::new_v4().to_string();
        eprintln!("azevac: run {run_id} as {caller}");
        Audit { run_id, caller, reason }
    }
}

/// A plan ready to be carried out, with the plugins and clusters it was made with. `apply` compares
/// its plan with a saved one before carrying it out.
pub struct Prepared {
    /// The plan.
    pub plan: Plan,
    phases: Phases,
    plugins: Vec<Box<dyn Plugin>>,
    clusters: Vec<eks::Cluster>,
    kube: eks::Options,
}

impl Prepared {
    /// Print the plan without changing anything (a dry run, or nothing to do); returns the exit code.
    pub fn print_only(mut self, ctx: &Context, dry_run: bool) -> i32 {
        self.phases.report(ctx, &mut self.plan);
        crate::report::print(&self.plan, ctx.output, crate::report::Phase::Plan { dry_run });
        EXIT_OK
    }
}

/// The Kubernetes clusters of `--kube-context`, when the eks type is selected. Without a context the
/// type is left out with a notice (not an error): most runs are about AWS resources only.
pub async fn kube_clusters(request: &Request, kubeconfig: Option<std::path::PathBuf>) -> Result<Vec<eks::Cluster>> {
    let types = &request.types;
    let explicit = types.iter().any(|t| t == eks::TYPE);
    if !types.is_empty() && !explicit {
        return Ok(Vec::new());
    }
    if request.kube_contexts.is_empty() {
        if explicit {
            eprintln!("azevac: notice: --type eks needs --kube-context CONTEXT; Kubernetes nodes left out");
        } else {
            tracing::info!("no --kube-context: Kubernetes nodes left out");
        }
        return Ok(Vec::new());
    }
    eks::connect(&eks::Options {
        contexts: request.kube_contexts.clone(),
        kubeconfig,
        ..eks::Options::default()
    })
    .await
}

/// Ask the operator before changing anything. Refuses without a terminal unless `--yes` was given.
pub fn confirm(question: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::BadInput(
            "refusing to change anything without confirmation: stdin is not a terminal; \
             pass --yes to go ahead, or --dry-run to print the plan only"
                .into(),
        ));
    }
    eprint!("{question} Type 'yes' to go ahead: ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).ok();
    Ok(answer.trim().eq_ignore_ascii_case("yes"))
}

/// Carry out the plan's planned lines that `select` picks (commands order their phases this way),
/// at most `concurrency` resources at once. Lines about the same resource run one after another, in
/// plan order, so that they build on each other.
pub async fn execute<S, F, Fut>(plan: &mut Plan, concurrency: usize, progress: bool, select: S, run: F)
where
    S: Fn(&Item) -> bool,
    F: Fn(Item) -> Fut,
    Fut: Future<Output = Item>,
{
    // The same executor as the journalled one, with nothing to journal around the changes.
    execute_batched(
        plan,
        concurrency,
        progress,
        select,
        |items| async { items },
        run,
        |items| async { items },
    )
    .await;
}

/// Carry out the planned lines `select` picks with their journal writes batched, [`BATCH`] lines
/// at a time: `before` makes the writes that must come first, for the whole batch (the write-ahead:
/// one call), `change` changes each resource (at most `concurrency` at once; a resource's lines in
/// plan order) and marks it done, and `after` journals the outcome of the lines done (one call). A
/// stage returns every line it was given; a line that failed is left alone by the stages after it.
#[allow(clippy::too_many_arguments)]
pub async fn execute_batched<S, B, BF, C, CF, A, AF>(
    plan: &mut Plan,
    concurrency: usize,
    progress: bool,
    select: S,
    before: B,
    change: C,
    after: A,
) where
    S: Fn(&Item) -> bool,
    B: Fn(Vec<Item>) -> BF,
    BF: Future<Output = Vec<Item>>,
    C: Fn(Item) -> CF,
    CF: Future<Output = Item>,
    A: Fn(Vec<Item>) -> AF,
    AF: Future<Output = Vec<Item>>,
{
    let picked = |item: &Item| item.status == Status::Planned && select(item);
    let bar = progress_bar(progress, plan.items.iter().filter(|i| picked(i)).count());
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, item) in plan.items.iter().enumerate() {
        if picked(item) {
            groups.entry(item.resource.clone()).or_default().push(i);
        }
    }
    // A resource's lines stay in one batch, so that they run in order.
    let mut batches: Vec<Vec<Vec<usize>>> = vec![Vec::new()];
    let mut size = 0;
    for group in groups.into_values() {
        if size + group.len() > BATCH && size > 0 {
            batches.push(Vec::new());
            size = 0;
        }
        size += group.len();
        if let Some(batch) = batches.last_mut() {
            batch.push(group);
        }
    }
    for batch in batches.into_iter().filter(|b| !b.is_empty()) {
        let indices: Vec<usize> = batch.iter().flatten().copied().collect();
        let journalled = before(indices.iter().map(|&i| plan.items[i].clone()).collect()).await;
        for (&i, item) in indices.iter().zip(journalled) {
            plan.items[i] = item;
        }
        let items = &plan.items;
        let (change, bar) = (&change, &bar);
        let changed: Vec<(usize, Item)> = futures::stream::iter(batch)
            .map(|group| async move {
                let mut out = Vec::with_capacity(group.len());
                for i in group {
                    let item = items[i].clone();
                    let item = if item.status == Status::Planned {
                        change(item).await
                    } else {
                        item
                    };
                    bar.set_message(format!("{} {}", item.resource_type, item.name));
                    bar.inc(1);
                    out.push((i, item));
                }
                out
            })
            .buffer_unordered(concurrency)
            .flat_map(futures::stream::iter)
            .collect()
            .await;
        for (i, item) in changed {
            plan.items[i] = item;
        }
        let done: Vec<usize> = indices
            .into_iter()
            .filter(|&i| plan.items[i].status == Status::Done)
            .collect();
        if done.is_empty() {
            continue;
        }
        let journalled = after(done.iter().map(|&i| plan.items[i].clone()).collect()).await;
        for (&i, item) in done.iter().zip(journalled) {
            plan.items[i] = item;
        }
    }
    bar.finish_and_clear();
}

/// The journal records of a batch of lines, for one batched journal write. A line without a record
/// (never expected: the write-ahead or the plan gave each one) is failed, and nothing is written.
pub fn records_of(items: &mut [Item]) -> Option<Vec<crate::journal::Record>> {
    let records: Vec<_> = items.iter().filter_map(|i| i.record.clone()).collect();
    if records.len() == items.len() {
        return Some(records);
    }
    for item in items.iter_mut().filter(|i| i.record.is_none()) {
        item.fail("internal: no journal record for this line".into());
    }
    None
}

/// A progress bar on a terminal (unless `--no-progress`); hidden otherwise, where the result table
/// and the stderr lines say all there is.
fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    let style =
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// Trust, but verify: read every changed resource back (batched per type) and fail the lines whose
/// live subnets are not what was set.
pub async fn verify(plan: &mut Plan, plugins: &[Box<dyn Plugin>]) {
    for plugin in plugins {
        let ids: Vec<String> = plan
            .items
            .iter()
            .filter(|i| i.status == Status::Done && i.resource_type == plugin.resource_type() && i.target.is_some())
            .map(|i| i.resource.clone())
            .collect();
        if ids.is_empty() {
            continue;
        }
        let live = match plugin.read(&ids).await {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!(error = %describe(&e), "could not read back {} resources", plugin.resource_type());
                continue;
            }
        };
        // Only the last line of a resource says what it should look like now.
        let mut last: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, item) in plan.items.iter().enumerate() {
            if ids.contains(&item.resource) {
                last.insert(&item.resource, i);
            }
        }
        let checks: Vec<(usize, Option<Vec<String>>)> = last
            .values()
            .map(|&i| (i, live.get(&plan.items[i].resource).map(|r| r.subnets.clone())))
            .collect();
        for (i, found) in checks {
            let item = &mut plan.items[i];
            let mut expected = item.resulting_subnets.clone();
            expected.sort();
            match found {
                Some(mut found) => {
                    found.sort();
                    if found != expected {
                        item.fail(format!(
                            "read back shows subnets [{}], expected [{}]; the journal still holds what was taken",
                            found.join(", "),
                            expected.join(", ")
                        ));
                    }
                }
                None => item.fail("read back: the resource no longer exists".into()),
            }
        }
    }
}

/// `--wait`: let every plugin wait for its changed resources to settle, and fail the lines of those
/// that did not within the timeout.
pub async fn settle(plan: &mut Plan, plugins: &[Box<dyn Plugin>], wait: &cli::Wait) {
    if !wait.wait {
        return;
    }
    for plugin in plugins {
        let changed: Vec<_> = plan
            .items
            .iter()
            .filter(|i| i.status == Status::Done && i.resource_type == plugin.resource_type())
            .filter_map(|i| i.target.clone())
            .collect();
        if changed.is_empty() {
            continue;
        }
        let unsettled = match plugin.settle(&changed, wait.wait_timeout).await {
            Ok(unsettled) => unsettled,
            Err(e) => changed.iter().map(|r| (r.id.clone(), describe(&e))).collect(),
        };
        for (id, why) in unsettled {
            for item in plan
                .items
                .iter_mut()
                .filter(|i| i.resource == id && i.status == Status::Done)
            {
                item.fail(format!("changed and journalled, but {why}"));
            }
        }
    }
}

/// An error with every cause, on one line.
pub fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Wall-clock phases of one command, for `--stats`.
#[derive(Debug)]
pub struct Phases {
    last: std::time::Instant,
    done: Vec<(&'static str, std::time::Duration)>,
}

impl Phases {
    /// Start timing the first phase.
    pub fn start() -> Self {
        Phases {
            last: std::time::Instant::now(),
            done: Vec::new(),
        }
    }

    /// The phase that just ended.
    pub fn end(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.done.push((name, now - self.last));
        self.last = now;
    }

    /// With `--stats`: attach the counts and times to the plan and print them on stderr.
    pub fn report(&self, ctx: &Context, plan: &mut Plan) {
        if ctx.stats {
            let stats = crate::stats::Stats::collect(&self.done);
            eprint!("{}", stats.render());
            plan.stats = Some(stats);
        }
    }
}

/// After the changes: read everything back, wait if asked, report, and return the exit code.
pub async fn conclude(
    ctx: &Context,
    plan: &mut Plan,
    plugins: &[Box<dyn Plugin>],
    wait: &cli::Wait,
    mut phases: Phases,
) -> i32 {
    verify(plan, plugins).await;
    phases.end("verify");
    settle(plan, plugins, wait).await;
    phases.end("wait");
    report_result(ctx, plan, &phases)
}

/// Print a run's outcome (and `--stats`); returns the exit code.
pub fn report_result(ctx: &Context, plan: &mut Plan, phases: &Phases) -> i32 {
    phases.report(ctx, plan);
    crate::report::print(plan, ctx.output, crate::report::Phase::Result);
    exit_code(plan)
}

/// Exit code for a finished plan.
pub fn exit_code(plan: &Plan) -> i32 {
    if plan.count(Status::Failed) > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// Connect and run the parsed command; returns the exit code.
pub async fn run(cli: &cli::Cli) -> Result<i32> {
    // Commands about azevac itself need no AWS connection.
    match &cli.command {
        cli::Command::Completions { shell } => {
            let mut command = <cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut command, "azevac", &mut std::io::stdout());
            return Ok(EXIT_OK);
        }
        cli::Command::Man => {
            let page = clap_mangen::Man::new(<cli::Cli as clap::CommandFactory>::command());
            page.render(&mut std::io::stdout())
                .map_err(|e| Error::BadInput(format!("cannot write the man page: {e}")))?;
            return Ok(EXIT_OK);
        }
        _ => {}
    }
    let ctx = Context::connect(&cli.global).await?;
    match &cli.command {
        cli::Command::Init => init::run(&ctx).await,
        cli::Command::Evacuate(args) => evacuate::run(&ctx, args).await,
        cli::Command::Recover(args) => recover::run(&ctx, args).await,
        cli::Command::Apply(args) => apply::run(&ctx, args).await,
        cli::Command::Shift(command) => shift::run(&ctx, command).await,
        cli::Command::Status(args) => status::run(&ctx, args).await,
        cli::Command::Completions { .. } | cli::Command::Man => Ok(EXIT_OK),
    }
}
