//! Zonal shifts' conformance fixture: load balancers registered with ARC's fake, `other` already
//! shifted away from use1-az1 by someone else.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Fixture, CHANGED, ZONES};
use crate::common::ZONE;
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct ZonalShift;

/// What the suite finds.
pub static FIXTURE: ZonalShift = ZonalShift;

/// The ARN ARC knows a load balancer by.
fn balancer(name: &str) -> String {
    format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/{name}/31")
}

#[async_trait(?Send)]
impl Fixture for ZonalShift {
    fn name(&self) -> &'static str {
        "zonal-shift"
    }

    fn keeps_a_vanished_record(&self) -> bool {
        false
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        let mut arc = world.proxy.arc.lock().expect("arc");
        for i in 0..CHANGED {
            arc.manage(&balancer(&format!("r{i}")), &format!("r{i}"), &ZONES);
        }
        arc.manage(&balancer("far"), "far", &["use1-az1", "use1-az4"]);
        arc.manage(&balancer("other"), "other", &ZONES);
        arc.start_by_hand(&balancer("other"), "use1-az1", "ZONAL_SHIFT");
        BTreeMap::new()
    }

    /// Each managed resource's active shifts: away from which zone, and whose (azevac's or the
    /// comment of whoever started it).
    async fn state(&self, world: &World) -> State {
        let arc = world.proxy.arc.lock().expect("arc");
        let active = arc.active();
        arc.managed
            .iter()
            .map(|m| {
                let shifts: Vec<Value> = active
                    .iter()
                    .filter(|s| s.resource == m.arn)
                    .map(|s| {
                        let by = if s.comment.starts_with("azevac run ") {
                            "azevac"
                        } else {
                            s.comment.as_str()
                        };
                        json!({ "away_from": s.away_from, "type": s.shift_type, "by": by })
                    })
                    .collect();
                (m.name.clone(), json!(shifts))
            })
            .collect()
    }

    fn evacuated(&self, _world: &World, _i: usize, resource: &mut Value) {
        *resource = json!([{ "away_from": ZONE, "type": "ZONAL_SHIFT", "by": "azevac" }]);
    }

    /// A shift of the operator's own started.
    async fn change_by_hand(&self, world: &World) {
        let mut arc = world.proxy.arc.lock().expect("arc");
        arc.start_by_hand(&balancer("r0"), "use1-az1", "ZONAL_SHIFT");
    }

    /// The resource no longer registered with ARC.
    async fn delete_by_hand(&self, world: &World) {
        let mut arc = world.proxy.arc.lock().expect("arc");
        let arn = balancer("r1");
        arc.managed.retain(|m| m.arn != arn);
    }
}
