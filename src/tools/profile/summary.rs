//! key_averages: the recording grouped by name, one row per kernel, copy kind or driver-API
//! call, sorted by GPU time, as torch.profiler's `key_averages().table()` prints it.

use super::{MemKind, Recording};
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
use serde::Serialize;
use std::collections::HashMap;

/// What a row groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    Kernel,
    Memcpy,
    Memset,
    /// A driver-API call on the CPU (no GPU time of its own).
    Api,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    pub kind: RowKind,
    pub calls: usize,
    pub gpu_total_ns: u64,
    pub gpu_min_ns: u64,
    pub gpu_max_ns: u64,
    /// Share of all GPU time (kernels, copies, memsets), 0..=100.
    pub gpu_pct: f64,
    /// Kernels and copies: the time of the driver calls that launched them. API rows: the
    /// calls' own time.
    pub cpu_total_ns: u64,
    pub cpu_calls: usize,
    /// Kernels: `grid (x,y,z) block (x,y,z) · N regs · S B smem`, or `varies`.
    pub launch: Option<String>,
}

impl Row {
    pub fn gpu_avg_ns(&self) -> u64 {
        if self.kind == RowKind::Api || self.calls == 0 {
            0
        } else {
            self.gpu_total_ns / self.calls as u64
        }
    }
    pub fn cpu_avg_ns(&self) -> u64 {
        if self.cpu_calls == 0 {
            0
        } else {
            self.cpu_total_ns / self.cpu_calls as u64
        }
    }
}

#[derive(Default)]
struct Acc {
    kind: Option<RowKind>,
    calls: usize,
    total: u64,
    min: u64,
    max: u64,
    cpu_total: u64,
    cpu_calls: usize,
    launch: Option<String>,
    varies: bool,
}

impl Acc {
    fn add_gpu(&mut self, kind: RowKind, dur: u64) {
        if self.calls == 0 {
            self.min = dur;
        }
        self.kind = Some(kind);
        self.calls += 1;
        self.total += dur;
        self.min = self.min.min(dur);
        self.max = self.max.max(dur);
    }
}

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("({x},{y})"),
        [x, y, z] => format!("({x},{y},{z})"),
    }
}

/// Group the recording by name: kernels by demangled name, copies by direction, memsets
/// together, driver-API calls by function. Sorted by GPU time, then CPU time, then name.
pub fn key_averages(rec: &Recording) -> Vec<Row> {
    let api_by_corr: HashMap<u32, u64> = rec
        .api
        .iter()
        .map(|a| (a.correlation, a.end_ns.saturating_sub(a.start_ns)))
        .collect();
    let mut order: Vec<String> = Vec::new();
    let mut acc: HashMap<String, Acc> = HashMap::new();
    fn entry<'a>(
        order: &mut Vec<String>,
        acc: &'a mut HashMap<String, Acc>,
        name: String,
    ) -> &'a mut Acc {
        if !acc.contains_key(&name) {
            order.push(name.clone());
        }
        acc.entry(name).or_default()
    }
    for k in &rec.kernels {
        let a = entry(&mut order, &mut acc, k.name.clone());
        a.add_gpu(RowKind::Kernel, k.end_ns.saturating_sub(k.start_ns));
        if let Some(&cpu) = api_by_corr.get(&k.correlation) {
            a.cpu_total += cpu;
            a.cpu_calls += 1;
        }
        let launch = format!(
            "grid {} · block {} · {} regs · {} B smem",
            dims(k.grid),
            dims(k.block),
            k.registers,
            k.static_smem + k.dynamic_smem
        );
        match &a.launch {
            None => a.launch = Some(launch),
            Some(l) if *l != launch => a.varies = true,
            _ => {}
        }
    }
    for m in &rec.memops {
        let a = entry(&mut order, &mut acc, m.label());
        let kind = match m.kind {
            MemKind::Memcpy => RowKind::Memcpy,
            MemKind::Memset => RowKind::Memset,
        };
        a.add_gpu(kind, m.end_ns.saturating_sub(m.start_ns));
        if let Some(&cpu) = api_by_corr.get(&m.correlation) {
            a.cpu_total += cpu;
            a.cpu_calls += 1;
        }
    }
    for c in &rec.api {
        let a = entry(&mut order, &mut acc, c.name.clone());
        if a.kind.is_some() && a.kind != Some(RowKind::Api) {
            continue; // a kernel named like a driver call: never in practice
        }
        a.kind = Some(RowKind::Api);
        a.calls += 1;
        a.cpu_calls += 1;
        a.cpu_total += c.end_ns.saturating_sub(c.start_ns);
    }
    let gpu_all: u64 = acc
        .values()
        .filter(|a| a.kind != Some(RowKind::Api))
        .map(|a| a.total)
        .sum();
    let mut rows: Vec<Row> = order
        .into_iter()
        .map(|name| {
            let a = acc.remove(&name).expect("every name has an accumulator");
            Row {
                kind: a.kind.unwrap_or(RowKind::Api),
                calls: a.calls,
                gpu_total_ns: a.total,
                gpu_min_ns: a.min,
                gpu_max_ns: a.max,
                gpu_pct: if gpu_all > 0 {
                    100.0 * a.total as f64 / gpu_all as f64
                } else {
                    0.0
                },
                cpu_total_ns: a.cpu_total,
                cpu_calls: a.cpu_calls,
                launch: if a.varies {
                    Some("varies".into())
                } else {
                    a.launch
                },
                name,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.gpu_total_ns
            .cmp(&a.gpu_total_ns)
            .then(b.cpu_total_ns.cmp(&a.cpu_total_ns))
            .then(a.name.cmp(&b.name))
    });
    rows
}

/// A duration as torch.profiler prints it: `850ns`, `12.345us`, `1.234ms`, `2.500s`.
pub fn fmt_ns(ns: u64) -> String {
    let n = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.3}us", n / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3}ms", n / 1e6)
    } else {
        format!("{:.3}s", n / 1e9)
    }
}

/// The key_averages table, `row_limit` rows at most (the rest summed up in one line).
pub fn table(rows: &[Row], row_limit: Option<usize>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "Name",
        "Calls",
        "GPU total",
        "GPU avg",
        "GPU min",
        "GPU max",
        "% GPU",
        "CPU launch total",
        "CPU launch avg",
        "Launch",
    ]);
    let n = row_limit.unwrap_or(rows.len()).min(rows.len());
    for r in &rows[..n] {
        let gpu = r.kind != RowKind::Api;
        let g = |v: u64| if gpu { fmt_ns(v) } else { "-".into() };
        let cpu = |v: u64| {
            if r.cpu_calls > 0 {
                fmt_ns(v)
            } else {
                "-".into()
            }
        };
        t.add_row(vec![
            r.name.clone(),
            r.calls.to_string(),
            g(r.gpu_total_ns),
            g(r.gpu_avg_ns()),
            g(r.gpu_min_ns),
            g(r.gpu_max_ns),
            if gpu {
                format!("{:.2}%", r.gpu_pct)
            } else {
                "-".into()
            },
            cpu(r.cpu_total_ns),
            cpu(r.cpu_avg_ns()),
            r.launch.clone().unwrap_or_default(),
        ]);
    }
    for i in 1..=8 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The table and the lines under it: totals, kernels per iteration, what was left out.
pub fn render(rec: &Recording, iters: usize, row_limit: Option<usize>) -> String {
    let rows = key_averages(rec);
    let mut s = format!("{}\n", table(&rows, row_limit));
    if let Some(n) = row_limit.filter(|&n| n < rows.len()) {
        s += &format!(
            "({} more rows not shown; --row-limit {} shows them)\n",
            rows.len() - n,
            rows.len()
        );
    }
    let gpu: u64 = rows
        .iter()
        .filter(|r| r.kind != RowKind::Api)
        .map(|r| r.gpu_total_ns)
        .sum();
    let launch: u64 = rec
        .api
        .iter()
        .filter(|a| a.is_launch())
        .map(|a| a.end_ns.saturating_sub(a.start_ns))
        .sum();
    let n_launch = rec.api.iter().filter(|a| a.is_launch()).count();
    s += &format!(
        "Self GPU time total: {} · CPU time in {} launch calls: {} · {} kernels, {} copies/memsets\n",
        fmt_ns(gpu),
        n_launch,
        fmt_ns(launch),
        rec.kernels.len(),
        rec.memops.len()
    );
    if let (Some(first), Some(last)) = (
        rec.kernels.iter().map(|k| k.start_ns).min(),
        rec.kernels.iter().map(|k| k.end_ns).max(),
    ) {
        let span = last.saturating_sub(first);
        if span > 0 {
            let busy: u64 = rec
                .kernels
                .iter()
                .map(|k| k.end_ns.saturating_sub(k.start_ns))
                .sum();
            s += &format!(
                "GPU busy {:.1}% of the {} from the first kernel's start to the last one's end ({} idle)\n",
                100.0 * busy as f64 / span as f64,
                fmt_ns(span),
                fmt_ns(span.saturating_sub(busy))
            );
        }
    }
    if let Some((max, mean)) = rec.queue_summary() {
        s += &format!(
            "host ahead of the GPU: up to {max} kernels launched and not yet finished, {mean:.1} on average (the trace's \"queued kernels\" track)\n"
        );
    }
    let per_iter: Vec<usize> = rec
        .kernels_per_iteration()
        .iter()
        .map(|k| k.len())
        .collect();
    if !per_iter.is_empty() {
        let same = per_iter.iter().all(|&n| n == per_iter[0]);
        let walls: Vec<u64> = rec
            .iterations()
            .iter()
            .map(|r| r.end_ns.saturating_sub(r.start_ns))
            .collect();
        let avg_wall = walls.iter().sum::<u64>() / walls.len() as u64;
        s += &format!(
            "kernel launches per iteration: {} · host time per iteration (launches only): {} avg\n",
            if same {
                format!("{} (all {} iterations)", per_iter[0], per_iter.len())
            } else {
                format!("{per_iter:?}")
            },
            fmt_ns(avg_wall)
        );
    } else if iters > 0 && !rec.kernels.is_empty() {
        s += &format!(
            "kernels per iteration: {:.1} (no iteration ranges recorded)\n",
            rec.kernels.len() as f64 / iters as f64
        );
    }
    if rec.dropped > 0 {
        s += &format!(
            "warning: CUPTI dropped {} records (buffers full); the figures above miss them\n",
            rec.dropped
        );
    }
    s
}
