//! The plugin seam: one file per kind of zonal action. A plugin plans evacuation lines from what it
//! discovers, carries one line out, plans recovery lines from journal records, reverts one line,
//! and may verify and settle. Everything shared — AZ resolution, the journal protocol (write-ahead,
//! locks, leases), concurrency, ordering and reporting — lives in the engine, once.
//!
//! Subnet-placed types (Auto Scaling, ECS, Lambda) implement the smaller [`SubnetService`] and share
//! one adapter ([`subnets::Subnets`]); Kubernetes nodes, Karpenter NodePools, zonal shifts, NAT
//! routes and database failovers implement [`Plugin`] directly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use futures::future::BoxFuture;

use crate::journal::{Guard, Held};
pub use crate::model::check::Check;
pub use crate::model::headroom::Demand;
use crate::model::plan::Filters;
pub use crate::model::plan::SubnetLimit;
use crate::model::topology::{Zone, Zones};
pub use crate::model::Finding;
pub use crate::model::Resource;
use crate::model::{Command, Item, Plan, Record, Request};
use crate::Result;

pub mod asg;
pub mod batch;
pub mod crosszone;
pub mod db;
pub mod ecs;
pub mod eks;
pub mod eventbridge;
pub mod karpenter;
pub mod kube;
pub mod lambda;
pub mod nat;
pub mod scheduler;
pub mod shifted;
pub mod subnets;
pub mod tags;
pub mod vpc_endpoint;
pub mod wait;
pub mod zonal_shift;

/// One kind of zonal action, as the registry knows it.
pub struct Registration {
    /// The `--type` value and the journal's `resource_type`.
    pub name: &'static str,
    /// The IAM service prefixes its calls are authorized under (for the IAM policy's drift test).
    pub services: &'static [&'static str],
    /// The services its changes are made through (the signing names pacing goes by).
    pub changes_through: &'static [&'static str],
    /// The IAM actions its calls need, in the account it acts in (`service:Action`; waiters and
    /// checks AWS makes on the caller's behalf included): the IAM policy and the member role grant
    /// these and the core ones, and nothing else (tests/it/registry.rs).
    pub iam_actions: &'static [&'static str],
    /// Builds the plugin from the run's setup; `None` when the type does not apply to this run.
    pub build: Constructor,
    /// The kind's own flags (`--pace`, `--failback`), if it has any.
    pub flags: Option<&'static Flags>,
    /// A record's actions in the operator's words, read as the kind's own action type
    /// ([`crate::model::action::words`]); an action that does not parse is an error, never shown as a guess.
    pub describe: fn(&Record) -> Result<Vec<String>>,
    /// What else a resource (by its journal key) belongs to that one bad change could take down
    /// with it, an EKS or ECS cluster: a recovery in waves spreads over them.
    pub cluster: fn(&str) -> Option<&str>,
}

/// [`Registration::cluster`] for kinds whose resources stand alone.
pub fn no_cluster(_resource: &str) -> Option<&str> {
    None
}

/// A kind's own flags: declared by the kind with clap, kept in the request's options under their
/// JSON keys ([`Request::options`]), read back by the kind with [`Request::options_as`], and
/// checked by the kind. No shared module names them.
pub struct Flags {
    /// Who declares them: a group two kinds share (the Kubernetes ones) is added once.
    pub name: &'static str,
    /// Adds the flags `command` takes to its clap definition.
    pub add: fn(clap::Command, Command) -> clap::Command,
    /// What the operator gave on the command line of `command`, as request options.
    pub read: fn(&clap::ArgMatches, Command) -> Options,
    /// Checks them, whether they came from flags or from a saved plan (which no flag parser saw):
    /// one line that says what is allowed.
    pub validate: fn(&Request) -> Result<()>,
    /// The options of an evacuation that is to act on this kind's resources again, as an operator
    /// who asked for the kind would give them (a kind that acts only when asked, `--zonal-shift`):
    /// a recovery in waves stopped by an alarm takes its last wave back out with these.
    pub asked: fn() -> Options,
}

/// A request's per-kind options by JSON key.
pub type Options = serde_json::Map<String, serde_json::Value>;

/// A kind's flags as clap reads them: the command that takes them, and what they say as the
/// kind's request options. [`Flags::of`] makes the registry's entry from them.
pub trait CommandFlags: clap::Args + clap::FromArgMatches {
    /// The command that declares them (the other one does not know them).
    const COMMAND: Command;

    /// What the operator gave, as the kind's request options.
    fn options(self) -> Options;
}

impl Flags {
    /// The registry's entry for flags `F` that `command` takes, checked by `validate`.
    pub const fn of<F: CommandFlags>(name: &'static str, validate: fn(&Request) -> Result<()>) -> Flags {
        Flags {
            name,
            add: add_flags::<F>,
            read: read_flags::<F>,
            validate,
            asked: Options::new,
        }
    }

    /// These flags, with `asked` as the options that ask for the kind ([`Flags::asked`]).
    pub const fn asked(self, asked: fn() -> Options) -> Flags {
        Flags { asked, ..self }
    }
}

/// The options an evacuation of `types` needs to act on their resources again ([`Flags::asked`]).
pub fn asked_for(types: &[String]) -> Options {
    let mut options = Options::new();
    for flags in REGISTRY
        .iter()
        .filter(|r| types.iter().any(|t| t == r.name))
        .filter_map(|r| r.flags)
    {
        options.extend((flags.asked)());
    }
    options
}

/// Adds flags `F` to the command that takes them.
fn add_flags<F: CommandFlags>(command: clap::Command, which: Command) -> clap::Command {
    if which == F::COMMAND {
        F::augment_args(command)
    } else {
        command
    }
}

/// Flags `F` as given, on the command that takes them: only that command may be asked for them
/// (clap refuses an id it does not know).
fn read_flags<F: CommandFlags>(matches: &clap::ArgMatches, which: Command) -> Options {
    if which != F::COMMAND {
        return Options::new();
    }
    F::from_arg_matches(matches).map(F::options).unwrap_or_default()
}

/// A kind's option values as request options (its serde type; what it leaves out stays out).
pub fn to_options<T: serde::Serialize>(values: &T) -> Options {
    match serde_json::to_value(values) {
        Ok(serde_json::Value::Object(options)) => options,
        _ => Options::new(),
    }
}

/// A kind's options out of a request, checked against `longest` where they are waits: a value of
/// the wrong shape (a hand-edited plan file) or a wait over a week is bad input.
pub fn wait_within(name: &str, seconds: Option<u64>) -> Result<()> {
    match seconds {
        Some(s) if s > LONGEST_WAIT_SECONDS => Err(crate::Error::BadInput(format!(
            "{name} is {s}; at most {LONGEST_WAIT_SECONDS} (7 days)"
        ))),
        _ => Ok(()),
    }
}

/// The longest wait a request may ask for: a week (and no overflow of the clock arithmetic).
pub const LONGEST_WAIT_SECONDS: u64 = 7 * 24 * 3600;

/// Every kind's flags, each group once, in registry order.
pub fn flags() -> Vec<&'static Flags> {
    let mut all: Vec<&'static Flags> = Vec::new();
    for flags in REGISTRY.iter().filter_map(|r| r.flags) {
        if !all.iter().any(|f| f.name == flags.name) {
            all.push(flags);
        }
    }
    all
}

impl Registration {
    /// Whether the type acts through Kubernetes contexts rather than AWS APIs.
    pub fn is_kubernetes(&self) -> bool {
        self.services.is_empty()
    }
}

/// Per type, the rate its changes are paced to: the paced rate of the service its changes go
/// through; of several (databases: RDS or ElastiCache), the fastest, so that no read is taken for
/// fresh longer than the quickest of them needs. A type with a change service that is not paced
/// (or none) is left out.
pub fn paced_rates(limits: &crate::aws::pacing::Limits) -> BTreeMap<String, f64> {
    REGISTRY
        .iter()
        .filter_map(|r| {
            let rates: Option<Vec<f64>> = r.changes_through.iter().map(|s| limits.rate(s)).collect();
            let fastest = rates?.into_iter().reduce(f64::max)?;
            Some((r.name.to_owned(), fastest))
        })
        .collect()
}

/// The types that act through Kubernetes contexts (not fanned out across accounts).
pub fn kubernetes_types() -> Vec<&'static str> {
    REGISTRY.iter().filter(|r| r.is_kubernetes()).map(|r| r.name).collect()
}

/// Builds a plugin (may connect, as Kubernetes does).
pub type Constructor = for<'a> fn(&'a Setup) -> BoxFuture<'a, Result<Option<Box<dyn Plugin>>>>;

/// Every kind of zonal action, in plan order within a stage. Adding one is a file in this folder
/// and a line here; nothing else lists the types.
pub const REGISTRY: &[Registration] = &[
    asg::REGISTRATION,
    ecs::REGISTRATION,
    lambda::REGISTRATION,
    eks::REGISTRATION,
    karpenter::REGISTRATION,
    zonal_shift::REGISTRATION,
    nat::REGISTRATION,
    db::REGISTRATION,
    batch::REGISTRATION,
    vpc_endpoint::REGISTRATION,
    eventbridge::REGISTRATION,
    scheduler::REGISTRATION,
];

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

/// The IAM actions of the journal's administration, `azevac init`'s alone (fixtures/iam-admin-policy.json):
/// creating the table and turning its deletion protection and point-in-time recovery on. An operator
/// who could call them could also turn both off.
pub const ADMIN_IAM_ACTIONS: &[&str] = &[
    "dynamodb:CreateTable",
    "dynamodb:UpdateTable",
    "dynamodb:UpdateContinuousBackups",
    "arc-zonal-shift:UpdateAutoshiftObserverNotificationStatus",
];

/// Every AWS service azevac calls (signing names; the same as the IAM prefixes here): the core
/// ones and each registered type's, for `--max-rate`.
pub fn services() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = CORE_SERVICES
        .iter()
        .chain(REGISTRY.iter().flat_map(|r| r.services.iter()))
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The `--type` values azevac knows, in registry order.
pub fn types() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.name).collect()
}

/// What plugins are built from: the SDK configuration and the request.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The shared SDK configuration (region, credentials, endpoint, retries).
    pub sdk: SdkConfig,
    /// What the operator asked for.
    pub request: Request,
    /// `--kubeconfig`, for the Kubernetes types.
    pub kubeconfig: Option<PathBuf>,
    /// The account reached by assuming a role there (`--accounts`); `None`: the caller's own.
    pub account: Option<String>,
}

/// The plugins for the request's types (every type when none is named), in registry order.
pub async fn select(setup: &Setup) -> Result<Vec<Box<dyn Plugin>>> {
    let mut plugins = Vec::new();
    for registration in REGISTRY {
        let wanted = setup.request.types.is_empty() || setup.request.names(registration.name);
        // Kubernetes types reach their clusters through kube contexts, not AWS accounts: a run
        // across accounts would act on the same clusters once per account.
        let reachable = setup.account.is_none() || !registration.is_kubernetes();
        if wanted && reachable {
            if let Some(plugin) = (registration.build)(setup).await? {
                plugins.push(plugin);
            }
        }
    }
    Ok(plugins)
}

/// When a line runs, relative to the others: traffic moves before capacity on the way out; on the
/// way back capacity returns first and load-balancer traffic last, once capacity is back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Before capacity changes (evacuate: zonal shifts; recover: shifts of groups and clusters).
    First,
    /// Capacity: subnets and nodes.
    Capacity,
    /// After capacity has been verified and has settled (recover: load-balancer shifts).
    Last,
}

/// What a read under the lock ([`Plugin::refresh`]) has of the run besides its lines, taken from the
/// plan, so that nothing a plugin learnt while planning has to live on it until then.
#[derive(Debug, Clone, Copy)]
pub struct Refreshing<'a> {
    /// Evacuate or recover.
    pub command: Command,
    /// What the operator asked for.
    pub request: &'a Request,
    /// The zone (evacuate always; recover with `--az-id`).
    pub zone: Option<&'a Zone>,
}

/// What planning sees besides the plugin's own discovery.
#[derive(Debug)]
pub struct Scope<'a> {
    /// Evacuate or recover.
    pub command: Command,
    /// The zone (evacuate always; recover with `--az-id`).
    pub zone: Option<&'a Zone>,
    /// The region's zones, to map names to IDs.
    pub zones: &'a Zones,
    /// The subnets of the zone (evacuate).
    pub zone_subnets: &'a BTreeSet<String>,
    /// This zone's journal records by resource key (evacuate).
    pub records: &'a BTreeMap<String, Record>,
    /// What the operator asked for.
    pub request: &'a Request,
    /// AZ IDs that stay evacuated after this run (recover with `--failback`): the journal holds
    /// records there of types this run does not recover, so nothing may move back into them.
    pub still_evacuated: &'a BTreeSet<String>,
}

impl Scope<'_> {
    /// `--tag` and `--name-prefix`.
    pub fn filters(&self) -> Filters {
        Filters {
            tags: self.request.tag_pairs(),
            name_prefix: self.request.name_prefix.clone(),
        }
    }

    /// The zone's AZ ID ("" for a recovery of every zone).
    pub fn az_id(&self) -> &str {
        self.zone.map_or("", |z| z.id.as_str())
    }
}

/// What carrying a line out did.
#[derive(Debug, Default)]
pub struct Acted {
    /// The actions actually done, as the journal stores them ([`crate::model::action::encode`] of the
    /// kind's action type; `None`: as planned and written ahead).
    pub actions: Option<Vec<String>>,
    /// Done and journalled, but not all of it took (pods a drain could not evict): fails the line.
    pub problem: Option<String>,
    /// What carrying it out showed, in the operator's words (the shift ID started).
    pub shown: Option<Vec<String>>,
    /// Whether `actions` replace what earlier runs journalled instead of joining it.
    pub replace_actions: bool,
}

/// A kind of zonal action. Implementations make plain service calls; the engine journals, locks,
/// orders, bounds concurrency and reports.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The `--type` value and the journal's `resource_type`.
    fn resource_type(&self) -> &'static str;

    /// When `line` runs (default: with capacity).
    fn stage(&self, _command: Command, _line: &Item) -> Stage {
        Stage::Capacity
    }

    /// Discover what this type acts on and plan each evacuation line (skipped lines with the reason).
    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>>;

    /// Plan a recovery line for each of this type's records.
    async fn plan_recovery(&self, records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>>;

    /// Look at the whole plan once every type has planned (Auto Scaling: the cross-zone check
    /// against the plan's zonal shifts).
    async fn review(&self, _plan: &mut Plan, _scope: &Scope<'_>) -> Result<()> {
        Ok(())
    }

    /// Under the lock, right before acting: read these lines' resources again and compute each
    /// change from the live state (a line whose change is now nothing is marked skipped; lines of
    /// one resource come in order and build on each other). Default: the act reads live state itself.
    async fn refresh(&self, _run: Refreshing<'_>, _lines: &mut [&mut Item], _held: &[&Held]) -> Result<()> {
        Ok(())
    }

    /// Whether a resource's lines in one run make one change (a recovery of several zones): the
    /// last line still planned carries what all of them put back, computed from the one fresh read
    /// under the lock, and the others share its outcome and its read-back. Default: each line is a
    /// change of its own.
    fn folds_lines(&self) -> bool {
        false
    }

    /// Carry one evacuation line out. Before each changing call, `held.cover(...)` with what that
    /// call may do, unless it is exactly the line's planned change (the engine journalled that
    /// before the act): a change computed again inside the act (after a 409, or the next step of
    /// several) is written ahead that way. What the act reports done must be covered; the engine
    /// fails a line whose outcome is not.
    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted>;

    /// Carry one recovery line out (`held.cover(&[], &[])` before each changing call checks that the
    /// lock is still safe to act under).
    async fn recover(&self, line: &Item, held: &Guard<'_>) -> Result<Acted>;

    /// Trust, but verify: read the done lines back and fail those whose resource is not as the line
    /// says. Default: the act read back what it wrote.
    async fn verify(&self, _lines: &mut [&mut Item]) {}

    /// Wait until the changed resources have settled (`--wait`), at most `timeout`. Returns the
    /// resources that did not, with why.
    async fn settle(&self, _lines: &[&Item], _timeout: Duration) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    /// `azevac doctor`: one cheap read per service this type calls (a page of one), proving the
    /// read permission and that the endpoint serves it; never a change. Default: nothing checked.
    async fn probe(&self) -> Vec<Check> {
        vec![Check::skip(
            self.resource_type(),
            "this type defines no read check",
            "nothing to do",
        )]
    }

    /// `azevac exposure`: what this type finds in `scope.zone` now, each finding with the `--type`
    /// that moves it or why nothing does. Read-only: never a change, never a journal read. A new
    /// kind adds its findings here and nowhere else. Default: nothing.
    async fn exposure(&self, _scope: &Scope<'_>) -> Result<Vec<Finding>> {
        Ok(Vec::new())
    }

    /// The headroom check (evacuate): what each of these planned lines moves into the subnets it
    /// keeps. Default: nothing (the type moves no IP addresses).
    async fn demand(&self, _lines: &[&Item], _scope: &Scope<'_>) -> Result<Vec<Demand>> {
        Ok(Vec::new())
    }
}

/// The zone a presence read looks at, and EC2 to look with (network interfaces).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The zone.
    pub zone: &'a Zone,
    /// Its subnets.
    pub zone_subnets: &'a BTreeSet<String>,
    /// EC2, through the shared configuration.
    pub ec2: &'a aws_sdk_ec2::Client,
}

impl Place<'_> {
    /// Whether an ECS task runs in the zone: the subnet of its network interface, else its zone's
    /// name (ECS services' tasks, and Batch jobs on Fargate).
    pub fn holds_task(&self, task: &aws_sdk_ecs::types::Task) -> bool {
        let subnet = task
            .attachments()
            .iter()
            .filter(|a| a.r#type() == Some("ElasticNetworkInterface"))
            .flat_map(|a| a.details())
            .find(|d| d.name() == Some("subnetId"))
            .and_then(|d| d.value());
        match subnet {
            Some(subnet) => self.zone_subnets.contains(subnet),
            None => task.availability_zone() == Some(self.zone.name.as_str()),
        }
    }
}

/// What of one subnet-placed resource is in the zone now, and what moving it takes elsewhere: read
/// once, it serves `exposure` (the list) and the headroom check (the count).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Presence {
    /// Its units in the zone: instance IDs, task ARNs, network interface IDs.
    pub in_zone: Vec<String>,
    /// One key per IP address moving it takes in its remaining subnets; a key several resources
    /// share (a Lambda interface of one subnet and security-group set) is one address.
    pub needs: Vec<String>,
    /// What the units are, in the operator's words (`instances`, `tasks`).
    pub units: &'static str,
    /// A caveat for the plan line (Auto Scaling: the group is at its MaxSize).
    pub note: Option<String>,
}

/// A subnet-placed resource type: how to list its resources with their subnets, read some back, and
/// set new subnets. The shared adapter turns it into a [`Plugin`].
#[async_trait]
pub trait SubnetService: Send + Sync {
    /// The `--type` value and the journal's `resource_type` (`asg`).
    fn resource_type(&self) -> &'static str;

    /// Every resource of this type, with its current subnets (paginated, batched reads).
    async fn discover(&self) -> Result<Vec<Resource>>;

    /// The current state of the resources with these ids (ARNs); ids that no longer exist are absent.
    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>>;

    /// Set the resource's subnets to exactly `subnets`, keeping every other setting as it is.
    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()>;

    /// [`apply`](Self::apply), and what the operator must read about how it went, shown in the line
    /// in place of its planned steps (VPC endpoints: an address asked for again that was taken);
    /// `None`: as planned. What the adapter calls; default: `apply`, nothing to say.
    async fn apply_and_tell(&self, resource: &Resource, subnets: &[String]) -> Result<Option<Vec<String>>> {
        self.apply(resource, subnets).await.map(|()| None)
    }

    /// The most subnets AWS takes in `resource`'s configuration, with a link to where AWS says
    /// so; `None` (the default): no limit that putting subnets back can reach. The adapter fails a
    /// recovery line that would exceed it, before anything is sent ([`crate::model::plan::limit_subnets`]).
    fn max_subnets(&self, _resource: &Resource) -> Option<SubnetLimit> {
        None
    }

    /// When its lines run (default: with capacity). Traffic kinds (VPC endpoints) leave first and
    /// come back last.
    fn stage(&self, _command: Command) -> Stage {
        Stage::Capacity
    }

    /// Add what discovery leaves out, for the resources about to be planned only: tags when
    /// `want_tags` (a `--tag` filter is set) and caveats. Most types have it all from discovery.
    async fn inspect(&self, _resources: &mut [Resource], _want_tags: bool) -> Result<()> {
        Ok(())
    }

    /// Add the steps an evacuation of this resource takes besides its subnets (ASG: `--pace`),
    /// recorded in its `detail`; returns them as journal actions. Most types have none.
    fn plan_evacuation(&self, _resource: &mut Resource, _how: &Evacuation) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Add what recovering this resource undoes besides its subnets, from the journal record's
    /// actions (ASG: resume what azevac suspended), recorded in its `detail`; returns the steps as
    /// shown in the plan. Most types have none.
    fn plan_recovery(&self, _resource: &mut Resource, _record: &Record) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Look at the whole plan (Auto Scaling: the cross-zone check).
    async fn review(&self, _plan: &mut Plan, _scope: &Scope<'_>) -> Result<()> {
        Ok(())
    }

    /// Wait until the changed resources have settled (`--wait`), at most `timeout`.
    async fn settle(&self, _resources: &[Resource], _timeout: Duration) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    /// What of each of these resources is in the zone now, by resource id (absent: nothing known
    /// beyond its subnets). Serves `exposure` and the headroom check. Default: nothing known.
    async fn presence(&self, _resources: &[Resource], _place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        Ok(BTreeMap::new())
    }

    /// `azevac doctor`: one cheap read per service this type calls (see [`Plugin::probe`]).
    async fn probe(&self) -> Vec<Check> {
        vec![Check::skip(
            self.resource_type(),
            "this type defines no read check",
            "nothing to do",
        )]
    }
}

/// How an evacuation is carried out, for the plugins that pace it.
#[derive(Debug, Clone, Default)]
pub struct Evacuation {
    /// This account's name of the zone being evacuated.
    pub az_name: String,
    /// How long a change may wait for what it waits on (`--wait-timeout`), per resource.
    pub timeout: Duration,
}

impl Evacuation {
    /// The pacing the request asks for, in this zone.
    pub fn of(request: &Request, zone: Option<&Zone>) -> Evacuation {
        Evacuation {
            az_name: zone.map(|z| z.name.clone()).unwrap_or_default(),
            timeout: Duration::from_secs(request.wait_timeout_seconds.unwrap_or(900)),
        }
    }
}
