//! Amazon Resource Names: the one place that knows which partition a region is in, for every ARN
//! azevac builds (route tables, role ARNs), so that no two copies can disagree.

/// The AWS partition a region is in (`aws`, `aws-cn`, `aws-us-gov`, `aws-iso`, `aws-iso-b`).
pub fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else if region.starts_with("us-iso-") {
        "aws-iso"
    } else if region.starts_with("us-isob-") {
        "aws-iso-b"
    } else {
        "aws"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_region_prefix_has_its_partition() {
        for (region, partition_) in [
            ("us-east-1", "aws"),
            ("eu-west-1", "aws"),
            ("cn-north-1", "aws-cn"),
            ("us-gov-west-1", "aws-us-gov"),
            ("us-iso-east-1", "aws-iso"),
            ("us-isob-east-1", "aws-iso-b"),
        ] {
            assert_eq!(partition(region), partition_, "{region}");
        }
    }
}
