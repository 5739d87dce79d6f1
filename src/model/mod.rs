//! Plain values every layer shares: a resource as discovered, a plan line and a plan, the inputs a
//! plan is made from, a journal record. No IO and no behaviour beyond small accessors, so that the
//! journal, the planner, the plugins and the reports can all depend on it without depending on
//! each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod action;
pub mod arn;
pub mod check;
pub mod expiry;
mod failure;
mod finding;
pub mod headroom;
pub mod plan;
mod record;
pub mod stats;
pub mod text;
pub mod topology;

pub use expiry::Expiry;
pub use failure::{Failure, RecordFate, Stage};
pub use finding::{Finding, Headroom};
pub use record::{is_account_id, Audit, Record, State};

/// One resource's network placement as its service reports it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resource {
    /// The `--type` value of its plugin (`asg`).
    pub resource_type: &'static str,
    /// The identifier the journal keys on: the ARN.
    pub id: String,
    /// The short name an operator recognises.
    pub name: String,
    /// Its subnets, in the service's order.
    pub subnets: Vec<String>,
    /// Its tags, for `--tag` filters.
    pub tags: BTreeMap<String, String>,
    /// Why azevac cannot change this resource's subnets, if it cannot (shown as the skip reason).
    pub unsupported: Option<String>,
    /// Caveats the operator should read before this resource is changed.
    pub notes: Vec<String>,
    /// What the plugin needs to change the resource without losing other settings (security groups,
    /// cluster, revision...): the plugin's own type, serialised, opaque to everything else.
    pub detail: serde_json::Value,
    /// What tells this object from a later one of the same name (Kubernetes objects, and AWS
    /// resources whose API says when or as what they were created), journalled with the intent;
    /// `None` for kinds whose journal key names one object for good, or whose API tells nothing.
    pub identity: Option<Identity>,
}

/// What changes when an object is deleted and another is created under the same name (a node
/// replaced by a new instance, a service re-created by a stack replacement): the journal key
/// stays, so the record keeps this to tell them apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Identity {
    /// What only this object has: a Kubernetes `metadata.uid`, an AWS resource ID or UUID, or the
    /// creation time where AWS gives nothing else. Two identities are the same object when these agree.
    pub uid: String,
    /// The EC2 instance behind a node (from its `spec.providerID`), for the operator reading the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// When AWS says the object was created (RFC 3339), for the operator reading the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
}

impl Identity {
    /// An AWS resource known by `uid` (its resource ID, its UUID), created at `created`.
    pub fn aws(uid: &str, created: Option<String>) -> Option<Self> {
        (!uid.is_empty()).then(|| Identity {
            uid: uid.to_owned(),
            instance_id: None,
            created,
        })
    }

    /// An AWS resource known only by when it was created (`None`: AWS did not say).
    pub fn created_at(created: Option<String>) -> Option<Self> {
        let created = created.filter(|c| !c.is_empty())?;
        Self::aws(&created, Some(created.clone()))
    }

    /// `uid U, created C, instance I` (the uid left out when it is the creation time), for plan lines.
    pub fn describe(&self) -> String {
        let uid = (self.created.as_ref() != Some(&self.uid)).then(|| format!("uid {}", self.uid));
        let created = self.created.as_ref().map(|c| format!("created {c}"));
        let instance = self.instance_id.as_ref().map(|i| format!("instance {i}"));
        [uid, created, instance]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An AWS timestamp as the journal keeps it (RFC 3339, to the precision AWS gave).
pub fn timestamp(time: &aws_smithy_types::DateTime) -> Option<String> {
    time.fmt(aws_smithy_types::date_time::Format::DateTime).ok()
}

impl Resource {
    /// The plugin's own detail, as its type: a detail that does not parse fails the line that needs
    /// it (never read with a default).
    pub fn detail_as<T: serde::de::DeserializeOwned>(&self) -> crate::Result<T> {
        serde_json::from_value(self.detail.clone()).map_err(|e| {
            crate::Error::Internal(format!(
                "the {} detail of {} does not parse ({e}); nothing changed",
                self.resource_type, self.name
            ))
        })
    }

    /// Keep the plugin's own detail.
    pub fn set_detail<T: Serialize>(&mut self, detail: &T) {
        self.detail = serde_json::to_value(detail).unwrap_or_default();
    }
}

/// Which command a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// Take a zone's subnets away.
    Evacuate,
    /// Put journalled subnets back.
    Recover,
}

/// Where a resource stands in a plan or after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Will change (dry run, or not yet executed).
    Planned,
    /// Changed, journalled and read back.
    Done,
    /// Left alone; `reason` says why.
    Skipped,
    /// Tried and failed; `failure` says at what stage and what became of its record.
    Failed,
}

impl Status {
    /// The word for it, as in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Planned => "planned",
            Status::Done => "done",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// One resource's line in the plan.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Item {
    /// The plugin's `--type` value.
    #[serde(rename = "type")]
    pub resource_type: String,
    /// The AWS account the resource is in, on runs across accounts (`--accounts`, or a recover of
    /// records written by one); absent on a run in the caller's own account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The resource ARN (the journal's sort key).
    pub resource: String,
    /// The resource's short name.
    pub name: String,
    /// The AZ ID this line is about.
    pub az_id: String,
    /// The resource's subnets when the plan was made.
    pub current_subnets: Vec<String>,
    /// Subnets taken away (evacuate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_subnets: Option<Vec<String>>,
    /// Subnets put back (recover).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_subnets: Option<Vec<String>>,
    /// What is done to the resource besides subnets, in the operator's words (Kubernetes nodes:
    /// taint, cordon; recover: untaint...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    /// Evacuate: the same actions as the journal stores them (the kind's typed actions, encoded by
    /// [`crate::model::action::encode`]), written ahead before the line is carried out.
    #[serde(skip)]
    pub steps: Vec<String>,
    /// The resource's subnets once the line is carried out.
    pub resulting_subnets: Vec<String>,
    /// Where the line stands.
    pub status: Status,
    /// Why it is skipped or failed, or what a no-op line does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A failed line's failure as a value (its stage, error and record); `reason` is its words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Caveats for the operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Lines (by `resource`) that must be done before this one is carried out: an Auto Scaling
    /// group behind a load balancer without cross-zone load balancing waits for that balancer's
    /// zonal shift, and is not changed if the shift could not be started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// The run whose live lock kept this line from being carried out (it is skipped, and the run
    /// exits 1: the operator must come back to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// Whether the zones that remain can take what moves out of this one (subnet-placed types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<Headroom>,
    /// The resource as discovered, for the plugin to apply the change to.
    #[serde(skip)]
    pub target: Option<Resource>,
    /// The journal record this line builds on, if any.
    #[serde(skip)]
    pub record: Option<Record>,
    /// Left for the operator to decide (a record kept for a resource that no longer exists): the run
    /// is not a success until they do (`--forget-missing`).
    #[serde(skip)]
    pub unfinished: bool,
    /// Recover: where what the record names lies now, as the line's kind read it.
    #[serde(skip)]
    pub placement: Placement,
    /// What the line does in a few words, as its kind says it for the plan table (`route ->
    /// nat-0d2f (use1-az1)`, `fail over to db-2 (use1-az4)`), where `reason` says it at length;
    /// none: the table counts the subnets, or shows the actions.
    #[serde(skip)]
    pub change: Option<String>,
}

impl Item {
    /// A planned line about one resource that changes nothing yet; callers fill in the rest.
    pub fn new(resource_type: &str, resource: &str, name: &str, az_id: &str) -> Item {
        Item {
            resource_type: resource_type.to_owned(),
            account: None,
            resource: resource.to_owned(),
            name: name.to_owned(),
            az_id: az_id.to_owned(),
            current_subnets: Vec::new(),
            removed_subnets: None,
            restored_subnets: None,
            actions: None,
            steps: Vec::new(),
            resulting_subnets: Vec::new(),
            status: Status::Planned,
            reason: None,
            failure: None,
            notes: Vec::new(),
            requires: Vec::new(),
            blocked_by: None,
            headroom: None,
            target: None,
            record: None,
            unfinished: false,
            placement: Placement::default(),
            change: None,
        }
    }

    /// Whether this line changes a resource when carried out.
    pub fn changes_resource(&self) -> bool {
        self.status == Status::Planned
            && [&self.removed_subnets, &self.restored_subnets, &self.actions]
                .iter()
                .any(|change| change.as_ref().is_some_and(|c| !c.is_empty()))
    }

    /// The actions this line takes: in the operator's words for the plan, encoded for the journal.
    pub fn take_actions<A: crate::model::action::Action>(&mut self, actions: &[A]) {
        self.actions = Some(crate::model::action::describe(actions));
        self.steps = crate::model::action::encode(actions);
    }

    /// Leave the resource alone, saying why (shown as "skipped: reason").
    pub fn skip(&mut self, reason: impl Into<String>) {
        self.status = Status::Skipped;
        self.reason = Some(reason.into());
    }

    /// Mark the line done.
    pub fn done(&mut self) {
        self.status = Status::Done;
    }

    /// Mark the line failed: the failure as a value, and its words (the phrase table's) as the
    /// reason.
    pub fn fail(&mut self, failure: Failure) {
        self.status = Status::Failed;
        self.reason = Some(failure.to_string());
        self.failure = Some(failure);
    }
}

/// Where something lies now, as EC2 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The AZ ID.
    pub az_id: String,
    /// The VPC ID.
    pub vpc: String,
}

/// What a recovery line's journal record names (subnets, NAT gateways) and where each lies now, as
/// the line's kind read it from its service, never as the record says: recover checks it against
/// the record's own zone before the line may change anything ([`crate::model::plan::odd_record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Each thing the record names that still exists, with where it lies (what no longer exists is
    /// absent: the line leaves it out and says so).
    pub named: BTreeMap<String, Site>,
    /// The VPC of the resource the line acts on, where its kind knows it.
    pub vpc: Option<String>,
}

/// A whole plan: one command, one or all zones, every resource it concerns.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// The command.
    pub command: Command,
    /// The region.
    pub region: String,
    /// The AZ ID, when the command names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub az_id: Option<String>,
    /// This account's name for that AZ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub az_name: Option<String>,
    /// What the plan was made from, so that `azevac apply` can make it again from live state.
    pub request: Request,
    /// The lines, grouped by type in plugin order.
    pub items: Vec<Item>,
    /// Journal items that could not be used, with why (recover, status).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// `--stats`: AWS calls and phase times of this run (not read back from a saved plan).
    #[serde(skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub stats: Option<stats::Stats>,
}

impl Plan {
    /// A plan for `command` with no lines yet.
    pub fn empty(command: Command) -> Plan {
        Plan {
            command,
            region: String::new(),
            az_id: None,
            az_name: None,
            request: Request::default(),
            items: Vec::new(),
            problems: Vec::new(),
            stats: None,
        }
    }

    /// How many lines stand in each status.
    pub fn count(&self, status: Status) -> usize {
        self.items.iter().filter(|i| i.status == status).count()
    }
}

/// The inputs a plan is made from besides the zone: saved in `--dry-run --output json`, so that
/// `azevac apply` plans again from the same inputs and can tell whether the live state moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Request {
    /// `--type` (every type when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    /// `--tag`, as `KEY=VALUE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `--name-prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// `--kube-context`: the Kubernetes clusters whose nodes the plan covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kube_contexts: Vec<String>,
    /// `--reason` (evacuate): written into every journal record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `--forget-missing` (recover).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forget_missing: bool,
    /// `--force` (evacuate): go ahead past the cross-zone check, with a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// `--wait-timeout` in seconds: how long a database failover may take to show its new writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout_seconds: Option<u64>,
    /// `--accounts` and how to reach them: a saved plan re-plans every account it named.
    // Kept whenever anything of it is set: a recover without `--accounts` still reaches the
    // accounts its records name, with this role (and `apply` compares it with the command line's).
    #[serde(default, skip_serializing_if = "Fleet::is_unset")]
    pub fleet: Fleet,
    /// `recover --waves` and its gates: a saved plan keeps them, and `apply` carries it out in the
    /// same waves behind the same alarms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<WavesRequest>,
    /// Each kind's own options (`--pace`, `--failback`...), by the JSON key the kind declares: kept
    /// beside the others in a saved plan, read by the kind ([`Request::options_as`]).
    #[serde(flatten)]
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// `KEY=VALUE` (`--tag`, `--first-tag`, `--last-tag`, and a saved plan's tags): the key not empty,
/// the value may be, and may hold `=`.
pub fn parse_tag(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE (e.g. --tag team=payments), got {text:?}")),
    }
}

/// A recovery in waves, as asked (`--waves`, `--bake`, `--alarm`, `--alarm-prefix`, `--on-alarm`,
/// `--first-tag`, `--last-tag`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
// A key misspelt in an edited plan (`alarm`) must not drop a gate silently.
#[serde(deny_unknown_fields)]
pub struct WavesRequest {
    /// `--waves`, counted from the start (e.g. `1,10%,50%,100%`).
    pub steps: String,
    /// `--bake`, in seconds.
    pub bake_seconds: u64,
    /// `--alarm`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<String>,
    /// `--alarm-prefix`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarm_prefixes: Vec<String>,
    /// `--on-alarm`.
    pub on_alarm: OnAlarm,
    /// `--first-tag`, as `KEY=VALUE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_tags: Vec<String>,
    /// `--last-tag`, as `KEY=VALUE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_tags: Vec<String>,
}

/// What a recovery in waves does when an alarm stops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnAlarm {
    /// Stop: the waves not started stay journalled, for a later recover.
    Stop,
    /// Stop, and take the last wave back out of the zone.
    Evacuate,
}

/// The accounts a run fans out to (`--accounts`, `--ou`, `--exclude-account`) and the role it
/// assumes in each. Empty: the caller's own account, with its own credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fleet {
    /// Twelve-digit account IDs, or `org` for the organization's active accounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
    /// `--ou`: with `org`, only the accounts under these organizational units (at any depth).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ous: Vec<String>,
    /// `--exclude-account`: left out, whatever else names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// `--role-name` (default `azevac`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_name: Option<String>,
    /// `--role-arn-template`, with `{account}` (and optionally `{partition}`) in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn_template: Option<String>,
    /// `--external-id`, passed to every AssumeRole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
}

impl Fleet {
    /// Whether the run stays in the caller's own account.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    /// Whether nothing of it is set (accounts, OUs, exclusions, role, external ID).
    pub fn is_unset(&self) -> bool {
        *self == Fleet::default()
    }
}

impl Request {
    /// Whether `--type` names this type (an empty `--type` means every type).
    pub fn names(&self, resource_type: &str) -> bool {
        self.types.iter().any(|t| t == resource_type)
    }

    /// A kind's options as its own type (serde; fields it does not name are other kinds'). A value
    /// of the wrong shape (a hand-edited plan file) is bad input, never read as a default.
    pub fn options_as<T: serde::de::DeserializeOwned>(&self) -> crate::Result<T> {
        serde_json::from_value(serde_json::Value::Object(self.options.clone())).map_err(|e| {
            // Name the option at fault: the one that does not parse on its own (every kind's
            // options are optional, so each parses alone unless it is the bad one).
            let alone = |key: &String, value: &serde_json::Value| {
                let one = serde_json::Map::from_iter([(key.clone(), value.clone())]);
                serde_json::from_value::<T>(serde_json::Value::Object(one)).is_err()
            };
            let key = self.options.iter().find(|(k, v)| alone(k, v)).map(|(k, _)| k.as_str());
            crate::Error::BadInput(format!("request option {}: {e}", key.unwrap_or("?")))
        })
    }

    /// The `--tag` filters as key/value pairs.
    pub fn tag_pairs(&self) -> Vec<(String, String)> {
        self.tags
            .iter()
            .map(|t| match t.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (t.clone(), String::new()),
            })
            .collect()
    }
}

/// How results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A table that fits the screen, and a summary.
    Table,
    /// The same table with every identifier in full (ARNs, subnet IDs and their Name tags).
    Wide,
    /// One JSON document.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_azevac_moves_and_is_still_there_counts_as_exposed() {
        let unit = || Finding::new("asg", "arn:web", "web", vec!["i-1".into()]);
        assert!(unit().moved_by("asg").movable());
        assert!(!unit().not_movable("no group").movable());
        let mut shifted = unit().moved_by("zonal-shift");
        shifted.away = Some("ZONAL_SHIFT z-1 active".into());
        assert!(!shifted.movable());
    }

    /// A failed line carries its failure beside its words, and a saved plan from before failures
    /// were values (a failed line with a reason and no `failure`) still parses.
    #[test]
    fn a_failed_line_keeps_its_failure_and_old_saved_lines_still_parse() {
        let mut item = Item::new("asg", "arn:asg/web", "web", "use1-az2");
        item.fail(Failure::plan_kept("cannot read the record"));
        assert_eq!(item.status, Status::Failed);
        assert_eq!(item.reason.as_deref(), Some("cannot read the record"));
        let saved = serde_json::to_value(&item).expect("json");
        assert_eq!(saved["failure"]["stage"], "plan");
        assert_eq!(saved["failure"]["record"], "kept");
        let mut old = saved.clone();
        old.as_object_mut().map(|o| o.remove("failure"));
        let old: Item = serde_json::from_value(old).expect("an old saved line");
        assert_eq!((old.status, old.failure), (Status::Failed, None));
        let again: Item = serde_json::from_value(saved).expect("a saved line");
        assert_eq!(again.failure, item.failure);
    }
}
