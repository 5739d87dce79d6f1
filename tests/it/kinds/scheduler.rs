//! EventBridge Scheduler schedules' conformance fixture: ECS task schedules of group `reports`
//! whose network configuration names the zone's subnet.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use super::{keep, out_of_the_zone, placed_state, seed_subnet_kind, Fixture};
use crate::common::events::{self, ScheduleSpec};
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Scheduler;

/// What the suite finds.
pub static FIXTURE: Scheduler = Scheduler;

#[async_trait(?Send)]
impl Fixture for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        seed_subnet_kind(world, |spec, name, zones| {
            spec.schedules.push(ScheduleSpec {
                group: "reports".into(),
                name,
                vpc: "main".into(),
                zones,
            })
        })
        .await
    }

    /// By schedule name (`r0`), what else they hold as text beside.
    async fn state(&self, world: &World) -> State {
        placed_state(events::live_schedules(&world.sdk).await)
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        events::change_schedule(&world.sdk, "reports", "r0", |subnets| keep(world, subnets)).await
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_scheduler::Client::new(&world.sdk)
            .delete_schedule()
            .group_name("reports")
            .name("r1")
            .send()
            .await
            .expect("DeleteSchedule");
    }
}
