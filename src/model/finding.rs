//! What `exposure` finds in a zone, and the headroom check of an evacuation line: plain values
//! the plan and the reports share.

use serde::{Deserialize, Serialize};

/// The headroom check of one evacuation line: the free IP addresses of the subnets that remain
/// against what moves there. Subnets shared with other lines are counted once: `free_ips` is the
/// sum over every subnet of the lines whose remaining subnets overlap this one's, and `ahead` is
/// what the lines before this one in the plan already take of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Headroom {
    /// What moves out of the zone for this line (`instances`, `tasks`, `network interfaces`).
    pub units: String,
    /// How many IP addresses this line takes in the remaining subnets.
    pub moving: usize,
    /// `AvailableIpAddressCount`, summed over the remaining subnets (each subnet once).
    pub free_ips: u64,
    /// What the lines ahead of this one that share those subnets take of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ahead: usize,
    /// The first few (at most 10) of the other lines (by `resource`) whose remaining subnets
    /// overlap this one's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_with: Vec<String>,
    /// How many other lines share subnets with this one, directly or through others (the lines
    /// whose addresses are counted together).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sharing: usize,
    /// Whether it fits (`false`: warned, and skipped unless `--force`).
    pub fits: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Headroom {
    /// The operator's words: `240 free IPs for 14 tasks`.
    pub fn describe(&self) -> String {
        let ahead = match self.ahead {
            0 => String::new(),
            n => format!(
                ", {n} of them taken by {} other line(s) sharing the subnets",
                // A plan saved before `sharing` existed names them all.
                self.sharing.max(self.shared_with.len())
            ),
        };
        format!("{} free IPs for {} {}{ahead}", self.free_ips, self.moving, self.units)
    }

    /// Why a line that does not fit is held back: `remaining subnets have 6 free IPs; 14 tasks
    /// would move`.
    pub fn shortfall(&self) -> String {
        let ahead = match self.ahead {
            0 => String::new(),
            n => format!(" ({n} taken by other lines sharing them)"),
        };
        format!(
            "remaining subnets have {} free IPs{ahead}; {} {} would move",
            self.free_ips, self.moving, self.units
        )
    }
}

/// One thing with presence in a zone, as `azevac exposure` lists it: what it is, what of it is in
/// the zone, and which `--type` moves it (or why nothing does, and what to do instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// What kind of thing (`asg`, `ec2-instance`, `vpc-endpoint`...).
    pub kind: String,
    /// Its ID or ARN.
    pub resource: String,
    /// The name an operator recognises (a Name tag, the service's name).
    pub name: String,
    /// What of it is in the zone: instance IDs, task ARNs, node names, subnet or ENI IDs.
    pub in_zone: Vec<String>,
    /// How many units it has in the zone (`in_zone` may name the subnets of a resource with none).
    pub count: usize,
    /// The `--type` that moves it out of the zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_by: Option<String>,
    /// Why azevac cannot move it, and what to do instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_movable: Option<String>,
    /// What already keeps its traffic away from the zone (a zonal shift in progress): listed, but
    /// not counted as exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub away: Option<String>,
    /// Anything else the operator should know.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The AWS account it is in, with `--accounts` (absent: the caller's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

impl Finding {
    /// A finding that `moved_by` moves (`None`: fill in `not_movable`).
    pub fn new(kind: &str, resource: &str, name: &str, in_zone: Vec<String>) -> Finding {
        Finding {
            kind: kind.to_owned(),
            resource: resource.to_owned(),
            name: name.to_owned(),
            count: in_zone.len(),
            in_zone,
            moved_by: None,
            not_movable: None,
            away: None,
            notes: Vec::new(),
            account: None,
        }
    }

    /// Moved by this `--type`.
    pub fn moved_by(mut self, resource_type: &str) -> Finding {
        self.moved_by = Some(resource_type.to_owned());
        self
    }

    /// Not movable by azevac: why, and what to do.
    pub fn not_movable(mut self, why: impl Into<String>) -> Finding {
        self.not_movable = Some(why.into());
        self
    }

    /// Whether azevac could move it and it is still there (what `--fail-if-exposed` counts).
    pub fn movable(&self) -> bool {
        self.moved_by.is_some() && self.not_movable.is_none() && self.away.is_none()
    }
}
