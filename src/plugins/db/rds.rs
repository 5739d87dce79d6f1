//! The RDS API as the `db` kind reads and moves writers: DB clusters and the instances outside
//! them, with their members' zones as AZ IDs, and the two calls that move a writer.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_rds::types::{DbCluster, DbInstance, Tag};

use super::cache::FailoverSettings;
use super::types::{Database, Failover, Kind, Member, Target};
use crate::model::topology::Zones;
use crate::model::{timestamp, Identity};
use crate::{Error, Result};

/// The RDS API.
#[derive(Debug, Clone)]
pub struct Rds {
    client: aws_sdk_rds::Client,
    ec2: Option<aws_sdk_ec2::Client>,
    region: String,
    /// How often a failover's progress is read.
    pub poll: Duration,
}

/// An RDS tag list as one map.
fn tags(list: &[Tag]) -> BTreeMap<String, String> {
    crate::plugins::tags::fold(list.iter().map(|t| (t.key(), t.value())))
}

impl Rds {
    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Rds {
            client: crate::client!(aws_sdk_rds, sdk),
            ec2: Some(crate::client!(aws_sdk_ec2, sdk)),
            region: crate::aws::region_of(sdk),
            poll: Duration::from_secs(5),
        }
    }

    /// A client as given (tests), with these zones.
    pub fn from_client(client: aws_sdk_rds::Client, poll: Duration) -> Self {
        Rds {
            client,
            ec2: None,
            region: String::new(),
            poll,
        }
    }

    /// `azevac doctor`: one page of DB clusters (20 is the least a page may ask for).
    pub async fn probe(&self) -> crate::model::check::Check {
        let listed = self.client.describe_db_clusters().max_records(20).send().await;
        crate::model::check::Check::answered(super::TYPE, "rds:DescribeDBClusters", listed)
    }

    /// The region's zones (recover plans without a zone; RDS speaks in zone names).
    pub async fn zones(&self) -> Result<Zones> {
        match &self.ec2 {
            Some(ec2) => Zones::load(ec2, &self.region).await,
            None => Ok(Zones::new(self.region.clone(), Vec::new())),
        }
    }

    /// Every DB cluster and every instance outside a cluster, with their instances' zones as AZ IDs.
    pub async fn databases(&self, zones: &Zones) -> Result<Vec<Database>> {
        let clusters: Vec<DbCluster> = self
            .client
            .describe_db_clusters()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("rds:DescribeDBClusters", e))?;
        let instances: Vec<DbInstance> = self
            .client
            .describe_db_instances()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("rds:DescribeDBInstances", e))?;
        Ok(assemble(&clusters, &instances, zones))
    }

    /// Start a failover of a DB cluster or a Multi-AZ DB instance.
    pub async fn start(&self, failover: &Failover) -> Result<()> {
        if failover.target == Target::RdsCluster {
            self.client
                .failover_db_cluster()
                .db_cluster_identifier(&failover.id)
                .target_db_instance_identifier(&failover.to)
                .send()
                .await
                .map_err(|e| Error::from_sdk("rds:FailoverDBCluster", e))?;
        } else {
            self.client
                .reboot_db_instance()
                .db_instance_identifier(&failover.id)
                .force_failover(true)
                .send()
                .await
                .map_err(|e| Error::from_sdk("rds:RebootDBInstance", e))?;
        }
        Ok(())
    }
}

/// Clusters with their members' placement, and instances outside clusters (pure).
pub fn assemble(clusters: &[DbCluster], instances: &[DbInstance], zones: &Zones) -> Vec<Database> {
    let az_of = |name: Option<&str>| name.map(|n| zones.id_of(n).unwrap_or(n).to_owned());
    let member = |i: &DbInstance, writer: bool, tier: i32| Member {
        id: i.db_instance_identifier().unwrap_or_default().to_owned(),
        az_id: az_of(i.availability_zone()),
        writer,
        tier,
        class: i.db_instance_class().unwrap_or_default().to_owned(),
        status: i.db_instance_status().unwrap_or_default().to_owned(),
    };
    let mut out = Vec::new();
    for c in clusters {
        let members = c
            .db_cluster_members()
            .iter()
            .map(|m| {
                let id = m.db_instance_identifier().unwrap_or_default();
                let writer = m.is_cluster_writer().unwrap_or(false);
                let tier = m.promotion_tier().unwrap_or(1);
                match instances.iter().find(|i| i.db_instance_identifier() == Some(id)) {
                    Some(i) => member(i, writer, tier),
                    None => Member {
                        id: id.to_owned(),
                        az_id: None,
                        writer,
                        tier,
                        class: String::new(),
                        status: "unknown".to_owned(),
                    },
                }
            })
            .collect();
        out.push(Database {
            arn: c.db_cluster_arn().unwrap_or_default().to_owned(),
            id: c.db_cluster_identifier().unwrap_or_default().to_owned(),
            kind: Kind::Cluster,
            status: c.status().unwrap_or_default().to_owned(),
            members,
            tags: tags(c.tag_list()),
            failover_settings: FailoverSettings::default(),
            // `DbClusterResourceId`, "the Amazon Web Services Region-unique, immutable identifier
            // for the DB cluster" (<https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DBCluster.html>).
            identity: c
                .db_cluster_resource_id()
                .and_then(|id| Identity::aws(id, c.cluster_create_time().and_then(timestamp))),
        });
    }
    for i in instances.iter().filter(|i| i.db_cluster_identifier().is_none()) {
        let kind = if i.multi_az().unwrap_or(false) {
            Kind::MultiAz {
                standby_az: az_of(i.secondary_availability_zone()),
            }
        } else {
            Kind::SingleAz
        };
        out.push(Database {
            arn: i.db_instance_arn().unwrap_or_default().to_owned(),
            id: i.db_instance_identifier().unwrap_or_default().to_owned(),
            kind,
            status: i.db_instance_status().unwrap_or_default().to_owned(),
            members: vec![member(i, true, 0)],
            tags: tags(i.tag_list()),
            failover_settings: FailoverSettings::default(),
            // `DbiResourceId`, "the Amazon Web Services Region-unique, immutable identifier for the
            // DB instance" (<https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DBInstance.html>).
            identity: i
                .dbi_resource_id()
                .and_then(|id| Identity::aws(id, i.instance_create_time().and_then(timestamp))),
        });
    }
    out
}
