//! What moto lacks of RDS failovers, answered by the test proxy: moto reports no standby zone for
//! a Multi-AZ instance and ignores `RebootDBInstance` `ForceFailover`. The fake adds the standby
//! zone the test gives to `DescribeDBInstances`, swaps primary and standby zones on a forced
//! failover moto accepted, and refuses as RDS does (in the query protocol's XML error shape): a
//! forced failover of an instance that is not Multi-AZ, a cluster already failing over, a target
//! that is not available.

use std::collections::{BTreeMap, BTreeSet};

use super::query::{between, param, Refusal};

/// The proxy's view of RDS beyond moto's.
#[derive(Debug, Default)]
pub struct FakeRds {
    /// Multi-AZ instance -> its standby's zone name (the test places it, as RDS would).
    pub standby: BTreeMap<String, String>,
    /// Instances whose forced failover moto accepted (an odd count: primary and standby swapped).
    pub failed_over: BTreeMap<String, usize>,
    /// Instances moto last described as not Multi-AZ.
    single_az: BTreeSet<String>,
    /// Clusters the test says are failing over now.
    pub failing_over: BTreeSet<String>,
    /// Instances the test says are not available.
    pub unavailable: BTreeSet<String>,
    /// Instances the test says were just made single-AZ (RDS refuses their forced failover while
    /// the answer read before still said Multi-AZ).
    pub converted: BTreeSet<String>,
}

impl FakeRds {
    /// Refuse the call as RDS would, before it reaches moto; `None`: forward it.
    pub fn refuse(&self, service: &str, action: &str, body: &str) -> Option<Refusal> {
        match (service, action) {
            ("rds", "RebootDBInstance") if param(body, "ForceFailover").as_deref() == Some("true") => {
                let id = param(body, "DBInstanceIdentifier").unwrap_or_default();
                if self.single_az.contains(&id) || self.converted.contains(&id) {
                    return Some((
                        400,
                        "InvalidDBInstanceState",
                        format!("ForceFailover cannot be specified: {id} is not a Multi-AZ DB instance."),
                    ));
                }
                self.unavailable.contains(&id).then(|| {
                    (
                        400,
                        "InvalidDBInstanceState",
                        format!("DB instance {id} is not in available state."),
                    )
                })
            }
            ("rds", "FailoverDBCluster") => {
                let id = param(body, "DBClusterIdentifier").unwrap_or_default();
                if self.failing_over.contains(&id) {
                    return Some((
                        400,
                        "InvalidDBClusterStateFault",
                        format!("DB cluster {id} is in failing-over state; wait for it to finish."),
                    ));
                }
                let target = param(body, "TargetDBInstanceIdentifier")?;
                self.unavailable.contains(&target).then(|| {
                    (
                        400,
                        "InvalidDBInstanceState",
                        format!("Target DB instance {target} is not available."),
                    )
                })
            }
            _ => None,
        }
    }

    /// After moto answered: note a forced failover it accepted, and add or swap standby zones in
    /// what it describes. Returns the body to send (`None`: moto's, unchanged).
    pub fn answered(&mut self, service: &str, action: &str, request: &str, status: u16, body: &str) -> Option<String> {
        if service != "rds" || status != 200 {
            return None;
        }
        match action {
            "RebootDBInstance" if param(request, "ForceFailover").as_deref() == Some("true") => {
                let id = param(request, "DBInstanceIdentifier").unwrap_or_default();
                *self.failed_over.entry(id).or_default() += 1;
                None
            }
            "DescribeDBInstances" => Some(self.describe(body)),
            _ => None,
        }
    }

    /// Whether the instance's primary now runs in its standby's original zone.
    pub fn swapped(&self, id: &str) -> bool {
        self.failed_over.get(id).is_some_and(|n| n % 2 == 1)
    }

    fn describe(&mut self, body: &str) -> String {
        let mut instances = body.split("<DBInstance>");
        let mut out = instances.next().unwrap_or_default().to_owned();
        for instance in instances {
            out.push_str("<DBInstance>");
            let id = between(instance, "<DBInstanceIdentifier>", "</DBInstanceIdentifier>").unwrap_or_default();
            if between(instance, "<MultiAZ>", "</MultiAZ>") == Some("true") {
                self.single_az.remove(id);
            } else {
                self.single_az.insert(id.to_owned());
            }
            let (Some(standby), Some(zone)) = (
                self.standby.get(id),
                between(instance, "<AvailabilityZone>", "</AvailabilityZone>"),
            ) else {
                out.push_str(instance);
                continue;
            };
            let (primary, secondary) = if self.swapped(id) {
                (standby.as_str(), zone)
            } else {
                (zone, standby.as_str())
            };
            out.push_str(&instance.replacen(
                &format!("<AvailabilityZone>{zone}</AvailabilityZone>"),
                &format!(
                    "<AvailabilityZone>{primary}</AvailabilityZone><SecondaryAvailabilityZone>{secondary}</SecondaryAvailabilityZone>"
                ),
                1,
            ));
        }
        out
    }
}

/// An Aurora PostgreSQL cluster `id` with these members (name, zone name, promotion tier, class);
/// the first is the writer.
pub async fn cluster(rds: &aws_sdk_rds::Client, id: &str, members: &[(&str, &str, i32, &str)]) {
    rds.create_db_cluster()
        .db_cluster_identifier(id)
        .engine("aurora-postgresql")
        .master_username("admin")
        .master_user_password("password-123")
        .send()
        .await
        .expect("CreateDBCluster");
    for (name, az, tier, class) in members {
        rds.create_db_instance()
            .db_instance_identifier(*name)
            .db_cluster_identifier(id)
            .engine("aurora-postgresql")
            .db_instance_class(*class)
            .availability_zone(*az)
            .promotion_tier(*tier)
            .send()
            .await
            .expect("CreateDBInstance");
    }
}
