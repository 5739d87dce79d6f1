//! The trait a kind of zonal action implements, and what the engine hands it: the scope of a
//! plan, a read under the lock, the stage a line runs in, what an act did.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;

use super::Check;
use super::Demand;
use super::Finding;
use crate::journal::{Guard, Held};
use crate::model::plan::Filters;
use crate::model::topology::{Zone, Zones};
use crate::model::{Command, Item, Plan, Record, Request};
use crate::Result;

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
