//! `azevac shift list` for people: the active shifts and autoshifts, and which azevac started.

use super::layout::Fitted;
use super::View;
use crate::model::Output;
use crate::plugins::shifted::Active;

/// `azevac shift list`: the active shifts and autoshifts, and which of them azevac started.
pub fn print_shifts(shifts: &[(String, Active, bool)], output: Output) {
    if output == Output::Json {
        let rows: Vec<serde_json::Value> = shifts
            .iter()
            .map(|(resource, a, ours)| {
                serde_json::json!({
                    "resource": resource, "zonal_shift_id": a.id, "away_from": a.away_from,
                    "shift_type": a.shift_type, "comment": a.comment, "started_by_azevac": ours,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "shifts": rows })).unwrap_or_default()
        );
        return;
    }
    print!("{}", render_shifts(shifts, &View::of(output)));
}

fn render_shifts(shifts: &[(String, Active, bool)], view: &View) -> String {
    if shifts.is_empty() {
        return "no zonal shift is active\n".to_owned();
    }
    // The comment (who started a shift, and why) only with `-o wide`: AZEVAC says whose it is.
    let mut header = vec!["RESOURCE", "AWAY FROM", "TYPE", "SHIFT", "AZEVAC"];
    if view.wide {
        header.push("COMMENT");
    }
    let mut table = Fitted::new(header, view.width).keep(&["AWAY FROM", "AZEVAC"]);
    for (resource, a, ours) in shifts {
        let mut row = vec![
            if view.wide {
                resource.clone()
            } else {
                short_resource(resource)
            },
            a.away_from.clone(),
            a.shift_type.clone(),
            a.id.clone().unwrap_or_default(),
            if *ours { "yes" } else { "no" }.to_owned(),
        ];
        if view.wide {
            row.push(a.comment.clone());
        }
        table.row(row);
    }
    format!("{}{} active\n", table.render(), shifts.len())
}

/// A resource's ARN as people name it: a load balancer's name (`loadbalancer/app/web/50dc…` is
/// `web`), else the last part of the ARN's resource.
fn short_resource(arn: &str) -> String {
    let resource = arn.splitn(6, ':').nth(5).unwrap_or(arn);
    let parts: Vec<&str> = resource.split('/').collect();
    match parts.as_slice() {
        ["loadbalancer", _, name, _] => (*name).to_owned(),
        [.., last] => (*last).to_owned(),
        [] => arn.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::layout::fitted;

    fn shifts() -> Vec<(String, Active, bool)> {
        let lb = |name: &str| {
            format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/{name}/50dc6c495c0c9188")
        };
        vec![
            (
                lb("web-frontend-production"),
                Active {
                    id: Some("2b1c7e4a-9d3f-4e8b-a6c5-1f0e9d8c7b6a".into()),
                    away_from: "use1-az2".into(),
                    shift_type: "ZONAL_SHIFT".into(),
                    comment: "azevac run 5f0c2a9e-4c1b-4f7e-9a2d-0b6e8c3d1a47: INC-4721".into(),
                    expires_at: None,
                },
                true,
            ),
            (
                lb("orders"),
                Active {
                    id: None,
                    away_from: "use1-az2".into(),
                    shift_type: "ZONAL_AUTOSHIFT".into(),
                    comment: String::new(),
                    expires_at: None,
                },
                false,
            ),
        ]
    }

    #[test]
    fn shift_list_fits_80_and_200_columns() {
        insta::assert_snapshot!("shift_list_80", fitted(80, |view| render_shifts(&shifts(), view)));
        let wide = fitted(200, |view| render_shifts(&shifts(), view));
        assert!(!wide.contains('…'), "{wide}");
        insta::assert_snapshot!("shift_list_200", wide);
    }
}
