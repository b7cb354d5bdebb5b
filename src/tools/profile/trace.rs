//! The recording as a Chrome trace-event file (`{"traceEvents": [...]}`), which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open.
//!
//! Tracks: process 1 is the host, with thread 1 for kernlab's ranges (the workload, each
//! iteration) and thread 2 for the driver-API calls; process 2 is the GPU, one thread per
//! CUDA stream, holding its kernels, copies and memsets. Every slice is an `X` (complete)
//! event, `ts` and `dur` in µs from the recording's first timestamp; `M` events name the
//! tracks; a flow (`s` → `f`) joins each launch call to the kernel it launched; a `C` (counter)
//! track on the host, "queued kernels", counts the kernels launched and not yet finished.

use super::Recording;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub const HOST_PID: u32 = 1;
pub const GPU_PID: u32 = 2;
pub const RANGES_TID: u32 = 1;
pub const API_TID: u32 = 2;

fn us(ns: u64, t0: u64) -> f64 {
    ns.saturating_sub(t0) as f64 / 1e3
}

fn dur_us(start: u64, end: u64) -> f64 {
    end.saturating_sub(start) as f64 / 1e3
}

fn meta(name: &str, pid: u32, tid: Option<u32>, value: Value) -> Value {
    let mut e = json!({"ph": "M", "name": name, "pid": pid, "args": value});
    if let Some(t) = tid {
        e["tid"] = json!(t);
    }
    e
}

/// The trace of a recording; `title` names the host process (the workload).
pub fn chrome_trace(rec: &Recording, title: &str) -> Value {
    let t0 = rec.t0();
    let mut ev: Vec<Value> = Vec::new();
    ev.push(meta(
        "process_name",
        HOST_PID,
        None,
        json!({"name": format!("kernlab (host): {title}")}),
    ));
    ev.push(meta(
        "process_sort_index",
        HOST_PID,
        None,
        json!({"sort_index": 0}),
    ));
    ev.push(meta(
        "thread_name",
        HOST_PID,
        Some(RANGES_TID),
        json!({"name": "kernlab ranges"}),
    ));
    ev.push(meta(
        "thread_sort_index",
        HOST_PID,
        Some(RANGES_TID),
        json!({"sort_index": 0}),
    ));
    ev.push(meta(
        "thread_name",
        HOST_PID,
        Some(API_TID),
        json!({"name": "CUDA driver API"}),
    ));
    ev.push(meta(
        "thread_sort_index",
        HOST_PID,
        Some(API_TID),
        json!({"sort_index": 1}),
    ));
    let devices: BTreeSet<u32> = rec
        .kernels
        .iter()
        .map(|k| k.device)
        .chain(rec.memops.iter().map(|m| m.device))
        .collect();
    let dev_name = devices
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",");
    ev.push(meta(
        "process_name",
        GPU_PID,
        None,
        json!({"name": format!("GPU {dev_name}")}),
    ));
    ev.push(meta(
        "process_sort_index",
        GPU_PID,
        None,
        json!({"sort_index": 1}),
    ));
    let streams: BTreeSet<u32> = rec
        .kernels
        .iter()
        .map(|k| k.stream)
        .chain(rec.memops.iter().map(|m| m.stream))
        .collect();
    for s in &streams {
        ev.push(meta(
            "thread_name",
            GPU_PID,
            Some(*s),
            json!({"name": format!("stream {s}")}),
        ));
    }
    for r in &rec.ranges {
        ev.push(json!({
            "ph": "X", "cat": "kernlab", "name": r.name,
            "pid": HOST_PID, "tid": RANGES_TID,
            "ts": us(r.start_ns, t0), "dur": dur_us(r.start_ns, r.end_ns),
            "args": {"depth": r.depth},
        }));
    }
    let launched: BTreeSet<u32> = rec.kernels.iter().map(|k| k.correlation).collect();
    for a in &rec.api {
        ev.push(json!({
            "ph": "X", "cat": "cuda_driver", "name": a.name,
            "pid": HOST_PID, "tid": API_TID,
            "ts": us(a.start_ns, t0), "dur": dur_us(a.start_ns, a.end_ns),
            "args": {"correlation": a.correlation, "cbid": a.cbid, "thread": a.thread},
        }));
        if launched.contains(&a.correlation) {
            ev.push(json!({
                "ph": "s", "cat": "launch", "name": "launch", "id": a.correlation,
                "pid": HOST_PID, "tid": API_TID, "ts": us(a.start_ns, t0),
            }));
        }
    }
    for k in &rec.kernels {
        let mut args = json!({
            "grid": k.grid, "block": k.block, "registers per thread": k.registers,
            "static smem (B)": k.static_smem, "dynamic smem (B)": k.dynamic_smem,
            "stream": k.stream, "device": k.device, "correlation": k.correlation,
        });
        if let Some(m) = &k.mangled {
            args["mangled"] = json!(m);
        }
        ev.push(json!({
            "ph": "X", "cat": "kernel", "name": k.name,
            "pid": GPU_PID, "tid": k.stream,
            "ts": us(k.start_ns, t0), "dur": dur_us(k.start_ns, k.end_ns),
            "args": args,
        }));
        ev.push(json!({
            "ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": k.correlation,
            "pid": GPU_PID, "tid": k.stream, "ts": us(k.start_ns, t0),
        }));
    }
    for m in &rec.memops {
        let d = dur_us(m.start_ns, m.end_ns);
        let mut args = json!({"bytes": m.bytes, "correlation": m.correlation});
        if d > 0.0 {
            args["GB/s"] = json!(m.bytes as f64 / (d * 1e3));
        }
        ev.push(json!({
            "ph": "X",
            "cat": match m.kind { super::MemKind::Memcpy => "memcpy", super::MemKind::Memset => "memset" },
            "name": m.label(),
            "pid": GPU_PID, "tid": m.stream,
            "ts": us(m.start_ns, t0), "dur": d,
            "args": args,
        }));
    }
    // A counter track on the host: kernels launched and not yet finished (how far the host
    // runs ahead of the GPU).
    for (t, depth) in rec.queue_depth() {
        ev.push(json!({
            "ph": "C", "name": "queued kernels", "pid": HOST_PID,
            "ts": us(t, t0), "args": {"kernels": depth},
        }));
    }
    json!({
        "traceEvents": ev,
        "displayTimeUnit": "ns",
        "otherData": {
            "producer": format!("kernlab {}", env!("CARGO_PKG_VERSION")),
            "workload": title,
            "note": format!(
                "kernlab ranges are recorded on the host with CUPTI's clock; {}",
                match super::nvtx::library() {
                    Some(lib) => format!("they were also emitted as NVTX ranges ({lib})"),
                    None => "no NVTX library loaded, so they were not emitted as NVTX ranges".into(),
                }
            ),
        },
    })
}
