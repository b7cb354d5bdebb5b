//! `kernlab list`: every registered variant.

use crate::ops::Op;
use anyhow::Result;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::io::Write;

#[derive(Args)]
pub(super) struct ListArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
    /// Only this op
    #[arg(long)]
    op: Option<String>,
}

pub(super) fn run(a: ListArgs, out: &mut dyn Write) -> Result<()> {
    let json = a.json;
    let op = a.op.map(|o| o.parse::<Op>()).transpose()?;
    let rows: Vec<_> = crate::ops::all()
        .filter(|v| op.is_none_or(|o| v.op == o))
        .map(|v| v.info())
        .collect();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["op", "variant", "tier", "device", "dtypes", "summary"]);
    for r in rows {
        t.add_row(vec![
            r.op.to_string(),
            r.variant.to_string(),
            r.tier.to_string(),
            r.device.to_string(),
            r.dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(","),
            r.summary.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}
