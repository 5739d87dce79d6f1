//! EventBridge rule targets' conformance fixture: ECS task targets whose network configuration
//! names the zone's subnet, the even ones on the default bus, the odd ones on another.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use super::{keep, out_of_the_zone, placed_state, seed_subnet_kind, Fixture};
use crate::common::events::{self, EventTargetSpec};
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct EventBridge;

/// What the suite finds.
pub static FIXTURE: EventBridge = EventBridge;

#[async_trait(?Send)]
impl Fixture for EventBridge {
    fn name(&self) -> &'static str {
        "eventbridge"
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        // Two rules: the even targets on the default bus, the odd ones on another.
        seed_subnet_kind(world, |spec, name, zones| {
            let odd = name.ends_with(['1', '3', '5']) || name == "far";
            spec.eventbridge_targets.push(EventTargetSpec {
                bus: if odd { "ops" } else { "default" }.into(),
                rule: if odd { "odd" } else { "even" }.into(),
                id: name,
                vpc: "main".into(),
                zones,
            })
        })
        .await
    }

    /// By target Id (`r0`), what else they hold as text beside.
    async fn state(&self, world: &World) -> State {
        placed_state(events::live_rule_targets(&world.sdk).await)
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        events::change_rule_target(&world.sdk, "default", "even", "r0", |subnets| keep(world, subnets)).await
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_eventbridge::Client::new(&world.sdk)
            .remove_targets()
            .event_bus_name("ops")
            .rule("odd")
            .ids("r1")
            .send()
            .await
            .expect("RemoveTargets");
    }
}
