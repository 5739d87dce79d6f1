//! The smaller trait of subnet-placed kinds (Auto Scaling, ECS, Lambda, Batch, VPC endpoints):
//! list, read, set subnets; the shared adapter ([`super::subnets::Subnets`]) makes a plugin of it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;

use super::plugin::{Scope, Stage};
use super::{Check, Resource, SubnetLimit};
use crate::model::topology::Zone;
use crate::model::{Command, Plan, Record, Request};
use crate::Result;

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
