//! Database failovers' conformance fixture: Aurora clusters whose writer is in the zone.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_rds::types::DbCluster;
use serde_json::{json, Value};

use super::{Fixture, CHANGED, ZONE_NAMES};
use crate::common;
use crate::protocol::conformance::{Phase, State, World};

/// The fixture.
pub struct Db;

/// What the suite finds.
pub static FIXTURE: Db = Db;

#[async_trait(?Send)]
impl Fixture for Db {
    fn name(&self) -> &'static str {
        "db"
    }

    /// By default a writer stays where it was failed over to: failing back restores it.
    fn flags(&self, phase: Phase) -> &'static [&'static str] {
        match phase {
            Phase::Evacuate => &[],
            Phase::Recover => &["--failback"],
        }
    }

    /// Database clusters `r0`..`r5`, each with its writer `rN-1` in the zone and a reader `rN-2`
    /// in use1-az4; `far`, with its writer in use1-az1.
    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        let rds = aws_sdk_rds::Client::new(&world.sdk);
        let clusters = (0..CHANGED)
            .map(|i| (format!("r{i}"), ZONE_NAMES[1]))
            .chain([("far".to_owned(), ZONE_NAMES[0])]);
        for (id, writer_zone) in clusters {
            let (writer, reader) = (format!("{id}-1"), format!("{id}-2"));
            let members = [
                (writer.as_str(), writer_zone, 1, "db.r6g.large"),
                (reader.as_str(), ZONE_NAMES[2], 1, "db.r6g.large"),
            ];
            common::rds::cluster(&rds, &id, &members).await;
        }
        BTreeMap::new()
    }

    /// Every database cluster's writer.
    async fn state(&self, world: &World) -> State {
        let clusters: Vec<DbCluster> = aws_sdk_rds::Client::new(&world.sdk)
            .describe_db_clusters()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .expect("DescribeDBClusters");
        clusters
            .iter()
            .map(|c| {
                let writer = c
                    .db_cluster_members()
                    .iter()
                    .find(|m| m.is_cluster_writer() == Some(true))
                    .and_then(|m| m.db_instance_identifier());
                (c.db_cluster_identifier().unwrap_or_default().to_owned(), json!(writer))
            })
            .collect()
    }

    fn evacuated(&self, _world: &World, i: usize, resource: &mut Value) {
        *resource = json!(format!("r{i}-2"));
    }

    /// The writer failed over by hand.
    async fn change_by_hand(&self, world: &World) {
        aws_sdk_rds::Client::new(&world.sdk)
            .failover_db_cluster()
            .db_cluster_identifier("r0")
            .target_db_instance_identifier("r0-2")
            .send()
            .await
            .expect("FailoverDBCluster");
    }

    async fn delete_by_hand(&self, world: &World) {
        let rds = aws_sdk_rds::Client::new(&world.sdk);
        for instance in ["r1-1", "r1-2"] {
            rds.delete_db_instance()
                .db_instance_identifier(instance)
                .skip_final_snapshot(true)
                .send()
                .await
                .expect("DeleteDBInstance");
        }
        rds.delete_db_cluster()
            .db_cluster_identifier("r1")
            .skip_final_snapshot(true)
            .send()
            .await
            .expect("DeleteDBCluster");
    }
}
