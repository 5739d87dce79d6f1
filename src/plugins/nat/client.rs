//! The EC2 calls of the `nat` kind: NAT gateways, subnets and route tables read in batches (one
//! call per 200 filter values, through the topology's chunking), and `ReplaceRoute`.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_ec2::types::Filter;

use super::actions::Destination;
use super::decide::{table_id, Change};
use super::estate::{Estate, NatGateway, Route, RouteTable};
use crate::model::topology::chunked;
use crate::model::Record;
use crate::{Error, Result};

/// The EC2 calls of this type.
#[derive(Debug, Clone)]
pub struct Ec2 {
    pub(super) client: aws_sdk_ec2::Client,
    region: String,
}

impl Ec2 {
    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Ec2 {
            client: crate::client!(aws_sdk_ec2, sdk),
            region: crate::aws::region_of(sdk),
        }
    }

    /// The NAT gateways, subnets and route tables of every VPC with a NAT gateway in `az_id`.
    pub async fn estate(&self, az_id: &str) -> Result<Estate> {
        let mut nats = self.nat_gateways(None).await?;
        self.locate(&mut nats).await?;
        let vpcs: BTreeSet<String> = nats
            .iter()
            .filter(|n| n.az_id.as_deref() == Some(az_id) && n.state != "deleted")
            .map(|n| n.vpc_id.clone())
            .collect();
        let vpcs: Vec<String> = vpcs.into_iter().collect();
        if vpcs.is_empty() {
            return Ok(Estate {
                nats,
                ..Estate::default()
            });
        }
        let subnets = self.subnets("vpc-id", &vpcs).await?;
        let tables = self.route_tables("vpc-id", &vpcs).await?;
        Ok(Estate { nats, subnets, tables })
    }

    /// The tables these records name and the NAT gateways of their VPCs (recover).
    pub async fn for_records(&self, records: impl Iterator<Item = &Record>) -> Result<Estate> {
        let ids: Vec<String> = records.map(|r| table_id(&r.resource).to_owned()).collect();
        let tables = self.route_tables("route-table-id", &ids).await?;
        let vpcs: BTreeSet<String> = tables.iter().map(|t| t.vpc_id.clone()).collect();
        let vpcs: Vec<String> = vpcs.into_iter().collect();
        let mut nats = if vpcs.is_empty() {
            Vec::new()
        } else {
            self.nat_gateways(Some(("vpc-id", &vpcs))).await?
        };
        self.locate(&mut nats).await?;
        Ok(Estate {
            nats,
            subnets: BTreeMap::new(),
            tables,
        })
    }

    /// Each NAT gateway's AZ ID: its subnet's, through the topology's batched subnet reads.
    async fn locate(&self, nats: &mut [NatGateway]) -> Result<()> {
        let subnets: BTreeSet<String> = nats.iter().map(|n| n.subnet_id.clone()).collect();
        let located = crate::model::topology::locate_subnets(&self.client, &subnets).await?;
        for nat in nats {
            nat.az_id = located.get(&nat.subnet_id).map(|site| site.az_id.clone());
        }
        Ok(())
    }

    /// NAT gateways (all, or those matching one filter), paginated.
    async fn nat_gateways(&self, only: Option<(&str, &[String])>) -> Result<Vec<NatGateway>> {
        let read = |chunk: Option<Filter>| async move {
            let found: Vec<aws_sdk_ec2::types::NatGateway> = self
                .client
                .describe_nat_gateways()
                .set_filter(chunk.map(|f| vec![f]))
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeNatGateways", e))?;
            Ok(found)
        };
        let found = match only {
            None => read(None).await?,
            Some((name, values)) => chunked(name, values, |f| read(Some(f))).await?,
        };
        let mut out: Vec<NatGateway> = found
            .into_iter()
            .map(|n| NatGateway {
                id: n.nat_gateway_id().unwrap_or_default().to_owned(),
                vpc_id: n.vpc_id().unwrap_or_default().to_owned(),
                subnet_id: n.subnet_id().unwrap_or_default().to_owned(),
                az_id: None,
                state: n.state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
                connectivity: n
                    .connectivity_type()
                    .map_or("public".to_owned(), |c| c.as_str().to_owned()),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out.dedup_by(|a, b| a.id == b.id);
        Ok(out)
    }

    /// Subnets matching one filter: subnet → (VPC, AZ ID).
    async fn subnets(&self, name: &str, values: &[String]) -> Result<BTreeMap<String, (String, String)>> {
        let found = crate::model::topology::sites_where(&self.client, name, values).await?;
        Ok(found
            .into_iter()
            .map(|(subnet, site)| (subnet, (site.vpc, site.az_id)))
            .collect())
    }

    /// Route tables matching one filter (a filter, unlike `RouteTableIds`, does not fail the call
    /// for a table that has been deleted).
    pub(super) async fn route_tables(&self, name: &str, values: &[String]) -> Result<Vec<RouteTable>> {
        let found = chunked(name, values, |f| async move {
            let page = self.client.describe_route_tables().filters(f).into_paginator();
            let found: Vec<aws_sdk_ec2::types::RouteTable> = page
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeRouteTables", e))?;
            Ok(found)
        })
        .await?;
        let mut out: Vec<RouteTable> = found.iter().map(|t| self.to_table(t)).collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn to_table(&self, t: &aws_sdk_ec2::types::RouteTable) -> RouteTable {
        let id = t.route_table_id().unwrap_or_default().to_owned();
        let tags = crate::plugins::tags::fold(t.tags().iter().map(|t| (t.key(), t.value())));
        let live = |a: &&aws_sdk_ec2::types::RouteTableAssociation| {
            a.association_state()
                .and_then(|s| s.state())
                .is_none_or(|s| s.as_str() == "associated")
        };
        let associations: Vec<&aws_sdk_ec2::types::RouteTableAssociation> =
            t.associations().iter().filter(live).collect();
        let routes = t
            .routes()
            .iter()
            .filter_map(|r| {
                let destination = r
                    .destination_cidr_block()
                    .map(|c| Destination::Ipv4(c.to_owned()))
                    .or_else(|| r.destination_ipv6_cidr_block().map(|c| Destination::Ipv6(c.to_owned())))
                    .or_else(|| {
                        r.destination_prefix_list_id()
                            .map(|c| Destination::PrefixList(c.to_owned()))
                    })?;
                let nat = r.nat_gateway_id().map(str::to_owned);
                let target = [
                    r.nat_gateway_id(),
                    r.gateway_id(),
                    r.transit_gateway_id(),
                    r.network_interface_id(),
                    r.instance_id(),
                    r.vpc_peering_connection_id(),
                    r.egress_only_internet_gateway_id(),
                ]
                .into_iter()
                .flatten()
                .next()
                .unwrap_or("something else")
                .to_owned();
                Some(Route {
                    destination,
                    nat,
                    target,
                })
            })
            .collect();
        RouteTable {
            arn: format!(
                "arn:{}:ec2:{}:{}:route-table/{id}",
                crate::model::arn::partition(&self.region),
                self.region,
                t.owner_id().unwrap_or_default()
            ),
            name: tags.get("Name").cloned().unwrap_or_else(|| id.clone()),
            vpc_id: t.vpc_id().unwrap_or_default().to_owned(),
            main: associations.iter().any(|a| a.main() == Some(true)),
            subnets: associations
                .iter()
                .filter_map(|a| a.subnet_id().map(str::to_owned))
                .collect(),
            routes,
            tags,
            id,
        }
    }

    /// Point one route at `change.to`.
    pub(super) async fn replace_route(&self, table_id: &str, change: &Change) -> Result<()> {
        let call = self
            .client
            .replace_route()
            .route_table_id(table_id)
            .nat_gateway_id(&change.to);
        let call = match &change.destination {
            Destination::Ipv4(c) => call.destination_cidr_block(c),
            Destination::Ipv6(c) => call.destination_ipv6_cidr_block(c),
            Destination::PrefixList(p) => call.destination_prefix_list_id(p),
        };
        call.send().await.map_err(|e| Error::from_sdk("ec2:ReplaceRoute", e))?;
        Ok(())
    }
}
