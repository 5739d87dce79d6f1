//! Where ECS tasks run: what ECS services and Batch jobs on Fargate share, owned by neither kind.

use super::Place;

/// Whether an ECS task runs in `place`'s zone: the subnet of its network interface, else its zone's
/// name (ECS services' tasks, and Batch jobs on Fargate).
pub fn holds_task(place: &Place<'_>, task: &aws_sdk_ecs::types::Task) -> bool {
    let subnet = task
        .attachments()
        .iter()
        .filter(|a| a.r#type() == Some("ElasticNetworkInterface"))
        .flat_map(|a| a.details())
        .find(|d| d.name() == Some("subnetId"))
        .and_then(|d| d.value());
    match subnet {
        Some(subnet) => place.zone_subnets.contains(subnet),
        None => task.availability_zone() == Some(place.zone.name.as_str()),
    }
}
