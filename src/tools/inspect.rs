//! `kernlab inspect`: read what the compiler made of a variant's kernels, so a reader sees at a
//! glance whether a kernel does what its summary claims.
//!
//! For every kernel symbol a variant may launch (the registry's `symbols`), for one dtype:
//! - the ptxas report: registers, spills, stack frame, static shared memory, barriers;
//! - a census of its PTX: global loads and stores by width (`ld.global.nc.v4.u32` is 16 bytes a
//!   thread), shared and local (spill) traffic, barriers, shuffles, special functions (`ex2`,
//!   `tanh`, `rcp`), `mma`/`wgmma`/`ldmatrix`, `cp.async` and TMA, atomics;
//! - the occupancy at a block size (blocks and warps per SM, from the driver's occupancy API),
//!   when a GPU is present and the report is for its own architecture;
//! - the same census at SASS level (`LDG.E.128`, `LDL`/`STL`, `HGMMA`, `MUFU.EX2`) when
//!   `cuobjdump` or `nvdisasm` can be found.
//!
//! Everything NVRTC alone can answer works without a GPU. The counts are static: an
//! instruction inside a loop counts once, and a fallback path (a scalar tail) counts too, so read
//! "4×16B 1×4B" as "the main path loads 16-byte packs, a tail loads single elements".

use crate::ops::{self as registry, Op, Params, Variant};
use crate::runtime::device::nvrtc::{self, ptx_entry_body, Compiled, PtxasInfo};
use crate::runtime::device::triton::{self, TritonSpec};
use crate::runtime::device::{self, CudaDevice, DeviceKind, DeviceSpec};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The architecture a report is for when no GPU is present and none is asked for.
pub const DEFAULT_ARCH: &str = "sm_90a";
/// The block size occupancy is computed at unless one is asked for (every GeLU launcher's).
pub const DEFAULT_BLOCK_SIZE: u32 = 256;

// ------------------------------------------------------------------------------------ request

/// What to inspect. Build one with [`InspectRequest::new`] and set what differs.
#[derive(Debug, Clone)]
pub struct InspectRequest {
    pub op: Op,
    /// Variant names (`v1_naive` or `gelu/v1_naive`); several are compared side by side, none
    /// means every CUDA variant of the op.
    pub variants: Vec<String>,
    pub dtype: DType,
    /// The op's parameters: only the kernels of their form are shown (GeLU's tanh kernels, not
    /// its erf ones).
    pub params: Params,
    /// NVRTC target such as `sm_80` or `sm_90a`; `None`: the GPU's own, else [`DEFAULT_ARCH`].
    pub arch: Option<String>,
    /// One kernel symbol only; `None`: every symbol the variants may launch for the dtype.
    pub kernel: Option<String>,
    /// Which GPU to ask for occupancy (`Auto`: the first one if any; `Cpu`: none).
    pub device: DeviceSpec,
    /// Threads per block for the occupancy figures (default [`DEFAULT_BLOCK_SIZE`]).
    pub block_size: Option<u32>,
    /// Disassemble the CUBIN (`cuobjdump`, else `nvdisasm`) and census the SASS too.
    pub sass: bool,
    /// Print each kernel's PTX in the report (it is always available from [`InspectReport::ptx`]).
    pub show_ptx: bool,
    /// Print each kernel's SASS in the report (needs `sass`).
    pub show_sass: bool,
    /// The shape a Triton variant's kernels are compiled for (their blocks follow it); `None`:
    /// the op's default GPU shape.
    pub shape: Option<Vec<usize>>,
    /// Print this IR stage of each Triton kernel (`ttir`, `ttgir`, `llir`, `ptx`).
    pub ir: Option<String>,
}

impl InspectRequest {
    /// One variant of an op, f32, the op's default parameters, the default architecture, no
    /// SASS.
    pub fn new(op: Op, variant: &str) -> Self {
        InspectRequest {
            op,
            variants: vec![variant.to_string()],
            dtype: DType::F32,
            params: op.default_params(),
            arch: None,
            kernel: None,
            device: DeviceSpec::Auto,
            block_size: None,
            sass: false,
            show_ptx: false,
            show_sass: false,
            shape: None,
            ir: None,
        }
    }
}

// ------------------------------------------------------------------------------------- census

/// Which listing a census was taken of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ptx,
    Sass,
}

/// What an instruction does, as far as reading a kernel's cost goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    GlobalLoad,
    GlobalStore,
    /// `ld`/`st` without a state space (generic addressing: global or shared, decided at run time).
    GenericLoad,
    GenericStore,
    SharedLoad,
    SharedStore,
    /// Per-thread local memory: register spills, or arrays indexed at run time.
    LocalLoad,
    LocalStore,
    Barrier,
    Fence,
    Mbarrier,
    /// Warp collectives: `shfl`, `vote`, `match`, `redux`.
    Shuffle,
    /// Special-function-unit work and its kin: `ex2`, `lg2`, `rcp`, `rsqrt`, `sqrt`, `sin`,
    /// `cos`, `tanh`, floating-point `div`.
    Special,
    Mma,
    Wgmma,
    Ldmatrix,
    CpAsync,
    /// Bulk and tensor (TMA) copies: `cp.async.bulk*`, `UTMALDG`, `UBLKCP`.
    Bulk,
    Atomic,
    Call,
}

impl Category {
    pub fn label(self) -> &'static str {
        match self {
            Category::GlobalLoad => "global load",
            Category::GlobalStore => "global store",
            Category::GenericLoad => "generic load",
            Category::GenericStore => "generic store",
            Category::SharedLoad => "shared load",
            Category::SharedStore => "shared store",
            Category::LocalLoad => "local load (spill?)",
            Category::LocalStore => "local store (spill?)",
            Category::Barrier => "barrier",
            Category::Fence => "fence",
            Category::Mbarrier => "mbarrier",
            Category::Shuffle => "warp shuffle/vote",
            Category::Special => "special function",
            Category::Mma => "mma (tensor core)",
            Category::Wgmma => "wgmma (Hopper tensor core)",
            Category::Ldmatrix => "ldmatrix/stmatrix",
            Category::CpAsync => "cp.async",
            Category::Bulk => "bulk copy / TMA",
            Category::Atomic => "atomic",
            Category::Call => "call",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One line of a census: how many instructions of one form a kernel's listing holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CensusRow {
    pub category: Category,
    /// The opcode with its qualifiers, as the listing spells it: `ld.global.nc.v4.u32`,
    /// `LDG.E.128.CONSTANT`.
    pub form: String,
    /// Bytes one thread moves with one such instruction (memory instructions only).
    pub bytes: Option<u32>,
    pub count: u32,
}

/// A static count of a kernel's instructions by category and form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Census {
    pub level: Level,
    /// Every instruction of the listing (SASS: NOPs left out).
    pub instructions: u32,
    /// Sorted by category, then widest first, then form.
    pub rows: Vec<CensusRow>,
}

impl Census {
    fn from_counts(level: Level, instructions: u32, counts: BTreeMap<CensusKey, u32>) -> Census {
        let mut rows: Vec<CensusRow> = counts
            .into_iter()
            .map(|(k, count)| CensusRow {
                category: k.0,
                form: k.2,
                bytes: k.1,
                count,
            })
            .collect();
        rows.sort_by(|a, b| {
            (a.category, std::cmp::Reverse(a.bytes), &a.form).cmp(&(
                b.category,
                std::cmp::Reverse(b.bytes),
                &b.form,
            ))
        });
        Census {
            level,
            instructions,
            rows,
        }
    }

    /// The census of one PTX `.entry` (as [`ptx_entry_body`] returns it).
    pub fn of_ptx(entry: &str) -> Census {
        let mut counts = BTreeMap::new();
        let mut total = 0u32;
        for line in entry.lines() {
            let code = line.split("//").next().unwrap_or("");
            for stmt in code.split(';') {
                let Some((op, operands)) = ptx_statement(stmt) else {
                    continue;
                };
                total += 1;
                if let Some((cat, bytes)) = classify_ptx(op, operands) {
                    *counts.entry((cat, bytes, op.to_string())).or_insert(0) += 1;
                }
            }
        }
        Census::from_counts(Level::Ptx, total, counts)
    }

    /// The census of one function's SASS (as [`parse_sass`] returns it).
    pub fn of_sass(f: &SassFunction) -> Census {
        let mut counts = BTreeMap::new();
        let mut total = 0u32;
        for ins in &f.instructions {
            let Some(op) = sass_opcode(ins) else { continue };
            if op == "NOP" {
                continue;
            }
            total += 1;
            if let Some((cat, bytes)) = classify_sass(op) {
                *counts.entry((cat, bytes, op.to_string())).or_insert(0) += 1;
            }
        }
        Census::from_counts(Level::Sass, total, counts)
    }

    /// How many instructions of a category.
    pub fn count(&self, c: Category) -> u32 {
        self.rows
            .iter()
            .filter(|r| r.category == c)
            .map(|r| r.count)
            .sum()
    }

    /// Instructions of a category by bytes per thread, widest first (`[(16, 4), (4, 1)]`).
    pub fn widths(&self, c: Category) -> Vec<(u32, u32)> {
        let mut by: BTreeMap<std::cmp::Reverse<u32>, u32> = BTreeMap::new();
        for r in self.rows.iter().filter(|r| r.category == c) {
            *by.entry(std::cmp::Reverse(r.bytes.unwrap_or(0)))
                .or_insert(0) += r.count;
        }
        by.into_iter().map(|(b, n)| (b.0, n)).collect()
    }

    /// The widest access of a category in bytes per thread (`None` when there is none).
    pub fn widest(&self, c: Category) -> Option<u32> {
        self.widths(c).first().map(|w| w.0)
    }

    /// Every count by category (for JSON readers and quick checks).
    pub fn totals(&self) -> BTreeMap<Category, u32> {
        let mut t = BTreeMap::new();
        for r in &self.rows {
            *t.entry(r.category).or_insert(0) += r.count;
        }
        t
    }

    /// `4×16B 1×4B`: a category's instructions by width, or `–` when there are none.
    pub fn widths_text(&self, c: Category) -> String {
        let w = self.widths(c);
        if w.is_empty() {
            return "–".into();
        }
        w.iter()
            .map(|(b, n)| {
                if *b == 0 {
                    format!("{n}")
                } else {
                    format!("{n}×{b}B")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The census as a table: category, instruction form, bytes per thread, count.
    pub fn table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(vec!["what", "instruction", "bytes/thread", "count"]);
        for r in &self.rows {
            t.add_row(vec![
                r.category.label().to_string(),
                r.form.clone(),
                r.bytes.map(|b| b.to_string()).unwrap_or_default(),
                r.count.to_string(),
            ]);
        }
        t
    }
}

type CensusKey = (Category, Option<u32>, String);

/// Split one PTX statement into (opcode, operands); `None` for directives, labels, braces.
fn ptx_statement(stmt: &str) -> Option<(&str, &str)> {
    let mut s = stmt.trim().trim_start_matches('{').trim();
    s = s.trim_end_matches('}').trim();
    // A label may share the line with an instruction: `$L__BB0_2: ret`.
    if let Some((label, rest)) = s.split_once(':') {
        if label.starts_with('$') && !label.contains(char::is_whitespace) {
            s = rest.trim();
        }
    }
    if let Some(rest) = s.strip_prefix('@') {
        // Predicate guard `@%p1` or `@!%p1`.
        s = rest.split_once(char::is_whitespace)?.1.trim_start();
    }
    let first = s.chars().next()?;
    if !first.is_ascii_lowercase() {
        return None;
    }
    Some(match s.split_once(char::is_whitespace) {
        Some((op, rest)) => (op, rest.trim()),
        None => (s, ""),
    })
}

/// Bytes of one PTX type suffix: `u32` 4, `b128` 16, `f16x2` 4, `bf16` 2.
fn ptx_type_bytes(t: &str) -> Option<u32> {
    let digits: String = t
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let bits: u32 = digits.parse().ok()?;
    let lanes: u32 = t
        .split_once('x')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1);
    Some(bits * lanes / 8)
}

/// Bytes one thread moves with a PTX `ld`/`st`: vector width times the type's size.
fn ptx_access_bytes(parts: &[&str]) -> Option<u32> {
    let vec = parts
        .iter()
        .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u32>().ok()))
        .unwrap_or(1);
    Some(vec * ptx_type_bytes(parts.last()?)?)
}

fn classify_ptx(op: &str, operands: &str) -> Option<(Category, Option<u32>)> {
    let parts: Vec<&str> = op.split('.').collect();
    let has = |space: &str| {
        parts
            .iter()
            .any(|p| *p == space || p.starts_with(&format!("{space}::")))
    };
    let c = match parts[0] {
        "ld" | "ldu" => {
            let cat = if has("global") {
                Category::GlobalLoad
            } else if has("shared") {
                Category::SharedLoad
            } else if has("local") {
                Category::LocalLoad
            } else if has("param") || has("const") {
                return None;
            } else {
                Category::GenericLoad
            };
            return Some((cat, ptx_access_bytes(&parts)));
        }
        "st" => {
            let cat = if has("global") {
                Category::GlobalStore
            } else if has("shared") {
                Category::SharedStore
            } else if has("local") {
                Category::LocalStore
            } else if has("param") {
                return None;
            } else {
                Category::GenericStore
            };
            return Some((cat, ptx_access_bytes(&parts)));
        }
        "ldmatrix" | "stmatrix" => Category::Ldmatrix,
        "bar" | "barrier" => Category::Barrier,
        "membar" | "fence" => Category::Fence,
        "mbarrier" => Category::Mbarrier,
        "shfl" | "vote" | "match" | "redux" => Category::Shuffle,
        "ex2" | "lg2" | "rcp" | "rsqrt" | "sqrt" | "sin" | "cos" | "tanh" => Category::Special,
        "div" if matches!(parts.last(), Some(&"f32") | Some(&"f64")) => Category::Special,
        "mma" => Category::Mma,
        "wgmma" => Category::Wgmma,
        "cp" if parts.get(1) == Some(&"async") => {
            if parts.get(2) == Some(&"bulk") {
                Category::Bulk
            } else {
                // `cp.async.ca.shared.global [dst], [src], 16`: the copy size is the third operand.
                let bytes = operands
                    .split(',')
                    .nth(2)
                    .and_then(|n| n.trim().parse::<u32>().ok());
                return Some((Category::CpAsync, bytes));
            }
        }
        "cp" if parts.get(1) == Some(&"reduce") => Category::Bulk,
        "atom" | "red" => Category::Atomic,
        "call" => Category::Call,
        _ => return None,
    };
    Some((c, None))
}

/// Bytes one thread moves with a SASS memory instruction: `.128` 16, `.64` 8, `.U16` 2, else 4.
fn sass_access_bytes(parts: &[&str]) -> u32 {
    for p in parts {
        match *p {
            "256" => return 32,
            "128" => return 16,
            "64" => return 8,
            "U16" | "S16" => return 2,
            "U8" | "S8" => return 1,
            _ => {}
        }
    }
    4
}

fn classify_sass(op: &str) -> Option<(Category, Option<u32>)> {
    let parts: Vec<&str> = op.split('.').collect();
    let mem = |c: Category| Some((c, Some(sass_access_bytes(&parts))));
    let c = match parts[0] {
        "LDG" => return mem(Category::GlobalLoad),
        "STG" => return mem(Category::GlobalStore),
        "LD" => return mem(Category::GenericLoad),
        "ST" => return mem(Category::GenericStore),
        "LDS" => return mem(Category::SharedLoad),
        "STS" => return mem(Category::SharedStore),
        "LDL" => return mem(Category::LocalLoad),
        "STL" => return mem(Category::LocalStore),
        "LDSM" | "STSM" => Category::Ldmatrix,
        "BAR" => Category::Barrier,
        "MEMBAR" | "FENCE" => Category::Fence,
        "SYNCS" => Category::Mbarrier,
        "SHFL" | "VOTE" | "VOTEU" | "MATCH" | "REDUX" => Category::Shuffle,
        "MUFU" => Category::Special,
        "HMMA" | "IMMA" | "DMMA" | "BMMA" => Category::Mma,
        "HGMMA" | "IGMMA" | "QGMMA" | "BGMMA" | "WARPGROUP" => Category::Wgmma,
        "LDGSTS" => return mem(Category::CpAsync),
        "LDGDEPBAR" => Category::CpAsync,
        "UTMALDG" | "UTMASTG" | "UTMAPF" | "UTMAREDG" | "UBLKCP" | "UBLKRED" | "UBLKPF" => {
            Category::Bulk
        }
        "ATOM" | "ATOMG" | "ATOMS" | "RED" | "REDG" | "REDAS" => Category::Atomic,
        "CALL" => Category::Call,
        _ => return None,
    };
    Some((c, None))
}

// --------------------------------------------------------------------------------------- SASS

/// One function of a disassembled CUBIN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassFunction {
    pub name: String,
    /// Each instruction's text after its address, predicate included (`@P0 EXIT`), up to `;`.
    pub instructions: Vec<String>,
    /// The listing as the tool printed it.
    pub text: String,
}

/// Split a `cuobjdump -sass` or `nvdisasm` listing into its functions.
///
/// cuobjdump opens each with `Function : NAME` and ends it with a row of dots; nvdisasm opens
/// each code section with a `.text.NAME:` label. Instruction lines are `/*ADDR*/ [@P] OP ...;`
/// (cuobjdump follows each with a `/* 0x... */` encoding line, which is skipped).
pub fn parse_sass(listing: &str) -> Vec<SassFunction> {
    let mut out: Vec<SassFunction> = Vec::new();
    let mut open = false;
    for line in listing.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function :") {
            out.push(SassFunction {
                name: name.trim().to_string(),
                instructions: Vec::new(),
                text: String::new(),
            });
            open = true;
        } else if let Some(name) = t.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
            out.push(SassFunction {
                name: name.to_string(),
                instructions: Vec::new(),
                text: String::new(),
            });
            open = true;
        } else if t.starts_with("//----") || (t.starts_with("..........") && !t.contains('/')) {
            // nvdisasm's next section header, cuobjdump's end of a function.
            if open {
                if let Some(f) = out.last_mut() {
                    f.text.push_str(line);
                    f.text.push('\n');
                }
            }
            open = false;
            continue;
        }
        if !open {
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        f.text.push_str(line);
        f.text.push('\n');
        if let Some(ins) = sass_instruction(t) {
            f.instructions.push(ins.to_string());
        }
    }
    out
}

/// The instruction of a `/*0110*/  LDG.E R0, desc[UR4][R2.64] ;  /* 0x... */` line.
fn sass_instruction(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let ins = rest.split(';').next()?.trim();
    (!ins.is_empty()).then_some(ins)
}

/// The opcode of an instruction text: `@!P0 LDG.E.128 R4, ...` → `LDG.E.128`.
fn sass_opcode(ins: &str) -> Option<&str> {
    let mut s = ins.trim();
    if s.starts_with('@') {
        s = s.split_once(char::is_whitespace)?.1.trim_start();
    }
    let op = s.split(|c: char| c.is_whitespace() || c == ';').next()?;
    (!op.is_empty()).then_some(op)
}

/// A disassembler found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassTool {
    /// `cuobjdump` or `nvdisasm`.
    pub name: &'static str,
    pub path: PathBuf,
}

/// `cuobjdump`, else `nvdisasm`: on `PATH`, else in `$CUDA_HOME/bin`, `$CUDA_PATH/bin` or
/// `/usr/local/cuda/bin`.
pub fn find_sass_tool() -> Option<SassTool> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(d) = std::env::var_os(var) {
            dirs.push(PathBuf::from(d).join("bin"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    for name in ["cuobjdump", "nvdisasm"] {
        for d in &dirs {
            let p = d.join(name);
            if is_executable(&p) {
                return Some(SassTool { name, path: p });
            }
        }
    }
    None
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Disassemble a CUBIN with a tool: its listing, split per function.
pub fn disassemble(tool: &SassTool, cubin: &[u8]) -> Result<Vec<SassFunction>> {
    if cubin.is_empty() {
        return Err(Error::Invalid(
            "NVRTC returned no CUBIN to disassemble".into(),
        ));
    }
    let mut file = tempfile::Builder::new()
        .prefix("kernlab-")
        .suffix(".cubin")
        .tempfile()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    std::io::Write::write_all(&mut file, cubin).map_err(|e| Error::io(file.path(), e))?;
    let mut cmd = std::process::Command::new(&tool.path);
    match tool.name {
        "cuobjdump" => cmd.arg("-sass"),
        _ => cmd.arg("-c"),
    };
    let out = cmd
        .arg(file.path())
        .output()
        .map_err(|e| Error::io(&tool.path, e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Invalid(format!(
            "{} failed ({}): {}",
            tool.path.display(),
            out.status,
            err.trim()
        )));
    }
    Ok(parse_sass(&String::from_utf8_lossy(&out.stdout)))
}

// ------------------------------------------------------------------------------------- report

/// Occupancy at one block size, or why it was not computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Occupancy {
    Computed {
        block_size: u32,
        blocks_per_sm: u32,
        warps_per_sm: u32,
        max_warps_per_sm: u32,
    },
    NotComputed {
        why: String,
    },
}

impl fmt::Display for Occupancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Occupancy::Computed {
                block_size,
                blocks_per_sm,
                warps_per_sm,
                max_warps_per_sm,
            } => write!(
                f,
                "{blocks_per_sm} blocks/SM of {block_size} threads: {warps_per_sm} of {max_warps_per_sm} warps ({:.0}%)",
                100.0 * *warps_per_sm as f64 / (*max_warps_per_sm).max(1) as f64
            ),
            Occupancy::NotComputed { why } => write!(f, "not computed: {why}"),
        }
    }
}

impl Occupancy {
    fn short(&self) -> String {
        match self {
            Occupancy::Computed {
                warps_per_sm,
                max_warps_per_sm,
                blocks_per_sm,
                ..
            } => format!("{blocks_per_sm}, {warps_per_sm}/{max_warps_per_sm}"),
            Occupancy::NotComputed { .. } => "–".into(),
        }
    }
}

/// The SASS of one kernel: which tool listed it, and its census.
#[derive(Debug, Clone, Serialize)]
pub struct SassReport {
    pub tool: String,
    pub census: Census,
    #[serde(skip)]
    pub text: String,
}

/// Everything inspect found about one kernel symbol.
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// `op/variant`.
    pub variant: String,
    pub kernel: String,
    pub source: String,
    /// The ptxas report (`None` if ptxas printed no line for it).
    pub ptxas: Option<PtxasInfo>,
    pub occupancy: Occupancy,
    pub ptx_census: Census,
    /// Global loads in the PTX and the widest of them, in bytes per thread.
    pub global_load_instructions: u32,
    pub widest_global_load_bytes: Option<u32>,
    pub sass: Option<SassReport>,
    /// The PTX of this entry (printed when asked; see [`InspectReport::ptx`]).
    #[serde(skip)]
    pub ptx: String,
    /// A Triton kernel's IR stages (ttir, ttgir, llir, ptx), in compile order.
    #[serde(skip)]
    pub ir: Vec<(&'static str, String)>,
    /// A Triton kernel's launch: warps, shared memory and the stages Triton compiled it with.
    pub triton: Option<TritonLaunch>,
}

impl KernelReport {
    /// The report of one kernel from its PTX entry `body`: the census and the global-load
    /// figures derived from it; no IR stages and no Triton launch (set them where they exist).
    fn new(
        variant: String,
        kernel: String,
        source: String,
        ptxas: Option<PtxasInfo>,
        occupancy: Occupancy,
        body: &str,
        sass: Option<SassReport>,
    ) -> KernelReport {
        let ptx_census = Census::of_ptx(body);
        KernelReport {
            variant,
            kernel,
            source,
            ptxas,
            occupancy,
            global_load_instructions: ptx_census.count(Category::GlobalLoad),
            widest_global_load_bytes: ptx_census.widest(Category::GlobalLoad),
            ptx_census,
            sass,
            ptx: body.to_string(),
            ir: Vec::new(),
            triton: None,
        }
    }
}

/// What Triton's compiler decided for a kernel (its metadata).
#[derive(Debug, Clone, Serialize)]
pub struct TritonLaunch {
    pub num_warps: u32,
    pub num_stages: u32,
    pub shared_bytes: u32,
    pub triton_version: String,
}

/// What [`inspect`] returns: print it (`Display`) or serialize it (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    pub op: Op,
    pub dtype: DType,
    /// What the op computes beyond its name (GeLU's `tanh`: only its kernels are shown).
    pub form: Option<String>,
    pub arch: String,
    /// NVRTC's version, `13.0`.
    pub nvrtc: String,
    /// The GPU asked for occupancy, when there is one.
    pub device: Option<String>,
    /// Why occupancy is missing for every kernel, when it is (one line).
    pub occupancy_note: Option<String>,
    /// The disassembler used, or why there is no SASS (one line); `None` when not asked.
    pub sass_note: Option<String>,
    pub kernels: Vec<KernelReport>,
    #[serde(skip)]
    show_ptx: bool,
    #[serde(skip)]
    show_sass: bool,
    #[serde(skip)]
    show_ir: Option<String>,
}

impl InspectReport {
    /// The PTX of every inspected entry, each under a comment naming it (for `--out`).
    pub fn ptx(&self) -> String {
        let mut s = String::new();
        for k in &self.kernels {
            s.push_str(&format!(
                "// {} ({}, {}, {})\n{}\n",
                k.kernel, k.variant, k.source, self.arch, k.ptx
            ));
        }
        s
    }

    /// The SASS of every inspected kernel, when it was disassembled.
    pub fn sass(&self) -> Option<String> {
        let mut s = String::new();
        for k in &self.kernels {
            let r = k.sass.as_ref()?;
            s.push_str(&format!("// {} ({})\n{}\n", k.kernel, k.variant, r.text));
        }
        Some(s)
    }

    /// One row per kernel: the figures to compare variants by.
    pub fn summary_table(&self) -> Table {
        type Col = (&'static str, Box<dyn Fn(&KernelReport) -> String>);
        let mut cols: Vec<Col> = vec![
            (
                "variant",
                Box::new(|k| {
                    let v = k.variant.as_str();
                    v.split_once('/').map_or(v, |s| s.1).to_string()
                }),
            ),
            ("kernel", Box::new(|k| k.kernel.clone())),
            (
                "regs",
                Box::new(|k| {
                    k.ptxas
                        .as_ref()
                        .map_or("?".into(), |p| p.registers.to_string())
                }),
            ),
            (
                "spill/stack B",
                Box::new(|k| {
                    k.ptxas.as_ref().map_or("?".into(), |p| {
                        let spill = p.spill_store_bytes.max(p.spill_load_bytes);
                        format!("{spill}/{}", p.stack_frame_bytes)
                    })
                }),
            ),
            (
                "smem B",
                Box::new(|k| {
                    k.ptxas
                        .as_ref()
                        .map_or("?".into(), |p| p.smem_bytes.to_string())
                }),
            ),
        ];
        let any = |f: &dyn Fn(&KernelReport) -> bool| self.kernels.iter().any(f);
        if any(&|k| matches!(k.occupancy, Occupancy::Computed { .. })) {
            cols.push(("blocks, warps/SM", Box::new(|k| k.occupancy.short())));
        }
        cols.extend::<Vec<Col>>(vec![
            (
                "ld.global",
                Box::new(|k| k.ptx_census.widths_text(Category::GlobalLoad)),
            ),
            (
                "st.global",
                Box::new(|k| k.ptx_census.widths_text(Category::GlobalStore)),
            ),
            (
                "shared ld/st",
                Box::new(|k| pair(&k.ptx_census, Category::SharedLoad, Category::SharedStore)),
            ),
            (
                "local ld/st",
                Box::new(|k| pair(&k.ptx_census, Category::LocalLoad, Category::LocalStore)),
            ),
            (
                "bar",
                Box::new(|k| k.ptx_census.count(Category::Barrier).to_string()),
            ),
            (
                "shfl",
                Box::new(|k| k.ptx_census.count(Category::Shuffle).to_string()),
            ),
            (
                "special",
                Box::new(|k| k.ptx_census.count(Category::Special).to_string()),
            ),
        ]);
        let tensor = [
            Category::Mma,
            Category::Wgmma,
            Category::Ldmatrix,
            Category::Bulk,
        ];
        if any(&|k| tensor.iter().any(|c| k.ptx_census.count(*c) > 0)) {
            cols.push((
                "mma/wgmma",
                Box::new(|k| pair(&k.ptx_census, Category::Mma, Category::Wgmma)),
            ));
            cols.push((
                "TMA",
                Box::new(|k| k.ptx_census.count(Category::Bulk).to_string()),
            ));
        }
        if any(&|k| k.sass.is_some()) {
            let sass = |f: fn(&Census) -> String| -> Box<dyn Fn(&KernelReport) -> String> {
                Box::new(move |k| k.sass.as_ref().map_or("?".into(), |s| f(&s.census)))
            };
            cols.push(("LDG (SASS)", sass(|c| c.widths_text(Category::GlobalLoad))));
            cols.push(("STG (SASS)", sass(|c| c.widths_text(Category::GlobalStore))));
            cols.push((
                "LDL/STL (SASS)",
                sass(|c| pair(c, Category::LocalLoad, Category::LocalStore)),
            ));
        }
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(cols.iter().map(|c| c.0).collect::<Vec<_>>());
        for k in &self.kernels {
            t.add_row(cols.iter().map(|c| (c.1)(k)).collect::<Vec<_>>());
        }
        t
    }
}

/// `3/1`: the counts of two categories.
fn pair(c: &Census, a: Category, b: Category) -> String {
    format!("{}/{}", c.count(a), c.count(b))
}

fn ptxas_line(p: &PtxasInfo) -> String {
    format!(
        "{} registers, {} B spill stores, {} B spill loads, {} B stack frame, {} B smem, {} barriers",
        p.registers,
        p.spill_store_bytes,
        p.spill_load_bytes,
        p.stack_frame_bytes,
        p.smem_bytes,
        p.barriers
    )
}

impl fmt::Display for InspectReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gelu = self
            .form
            .as_ref()
            .map(|g| format!(", {g}"))
            .unwrap_or_default();
        writeln!(
            f,
            "inspect {} ({}{gelu}) for {}, NVRTC {}: {} kernel{}",
            self.op,
            self.dtype,
            self.arch,
            self.nvrtc,
            self.kernels.len(),
            if self.kernels.len() == 1 { "" } else { "s" }
        )?;
        match (&self.device, &self.occupancy_note) {
            (_, Some(note)) => writeln!(f, "occupancy: {note}")?,
            (Some(d), None) => writeln!(f, "occupancy: from the driver on {d}")?,
            (None, None) => {}
        }
        if let Some(note) = &self.sass_note {
            writeln!(f, "SASS: {note}")?;
        }
        writeln!(
            f,
            "counts are static (a loop body counts once); B = bytes per thread per instruction"
        )?;
        writeln!(f, "{}", self.summary_table())?;
        for k in &self.kernels {
            writeln!(f)?;
            writeln!(
                f,
                "== {}: {} ({}, {}) ==",
                k.variant, k.kernel, k.source, self.arch
            )?;
            match &k.ptxas {
                Some(p) => writeln!(f, "ptxas: {}", ptxas_line(p))?,
                None => writeln!(f, "ptxas: no report line for this kernel")?,
            }
            if let Occupancy::Computed { .. } = k.occupancy {
                writeln!(f, "occupancy: {}", k.occupancy)?;
            }
            let c = &k.ptx_census;
            writeln!(
                f,
                "global loads: {} instruction{}, widest {}",
                k.global_load_instructions,
                if k.global_load_instructions == 1 {
                    ""
                } else {
                    "s"
                },
                k.widest_global_load_bytes
                    .map(|b| format!("{b} bytes"))
                    .unwrap_or_else(|| "–".into())
            )?;
            writeln!(f, "PTX census ({} instructions):", c.instructions)?;
            writeln!(f, "{}", c.table())?;
            if let Some(s) = &k.sass {
                writeln!(
                    f,
                    "SASS census ({}, {} instructions):",
                    s.tool, s.census.instructions
                )?;
                writeln!(f, "{}", s.census.table())?;
            }
            if let Some(t) = &k.triton {
                writeln!(
                    f,
                    "triton {}: {} warps ({} threads), {} pipeline stage(s), {} bytes of shared memory",
                    t.triton_version,
                    t.num_warps,
                    t.num_warps * 32,
                    t.num_stages,
                    t.shared_bytes
                )?;
            }
            if let Some(stage) = &self.show_ir {
                match k.ir.iter().find(|(s, _)| s == stage) {
                    Some((s, text)) => writeln!(f, "{}:\n{text}", s.to_uppercase())?,
                    None => writeln!(f, "{stage}: not a stage of this kernel (Triton's only)")?,
                }
            }
            if self.show_ptx {
                writeln!(f, "PTX:\n{}", k.ptx)?;
            }
            if self.show_sass {
                if let Some(s) = &k.sass {
                    writeln!(f, "SASS:\n{}", s.text)?;
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------ inspect

/// The CUDA variants of an op (those with kernels to inspect).
fn cuda_variants(op: Op) -> impl Iterator<Item = &'static Variant> {
    registry::all().filter(move |v| v.op == op && v.has_kernels())
}

/// Look a variant up among those with CUDA kernels, with an error that lists them.
pub fn find_variant(op: Op, name: &str) -> Result<&'static Variant> {
    let known = || {
        cuda_variants(op)
            .map(|v| v.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match registry::find(op, name, DeviceKind::Cuda) {
        Ok(v) if v.has_kernels() => Ok(v),
        Ok(v) => Err(Error::Invalid(format!(
            "{} runs on the CPU: it has no CUDA kernel to inspect (CUDA variants of {op}: {})",
            v.id(),
            known()
        ))),
        Err(e) => {
            let bare = name.trim();
            let bare = bare.strip_prefix(&format!("{op}/")).unwrap_or(bare);
            if let Some(v) =
                registry::all().find(|v| v.op == op && v.name == bare && !v.has_kernels())
            {
                return Err(Error::Invalid(format!(
                    "{} runs on the CPU: it has no CUDA kernel to inspect (CUDA variants of {op}: {})",
                    v.id(),
                    known()
                )));
            }
            match e {
                Error::UnknownVariant { op, variant, .. } => Err(Error::UnknownVariant {
                    op,
                    variant,
                    known: known(),
                }),
                other => Err(other),
            }
        }
    }
}

/// The kernels a variant may launch for a dtype, of the parameters' form
/// (`OpDef::kernel_in_form`): each source, and the symbols in it.
pub fn variant_symbols(
    v: &Variant,
    dtype: DType,
    params: &Params,
) -> Result<Vec<(&'static KernelSource, Vec<String>)>> {
    Ok(v.kernels_for(dtype, params)?
        .into_iter()
        .map(|(src, symbols)| {
            (
                src,
                symbols
                    .into_iter()
                    .filter(|s| v.op.kernel_in_form(s, params))
                    .collect(),
            )
        })
        .collect())
}

pub fn check_arch(arch: &str) -> Result<()> {
    let number = arch
        .strip_prefix("sm_")
        .map(|n| n.trim_end_matches(['a', 'f']))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.parse::<u32>().ok());
    match number {
        None => Err(Error::Invalid(format!(
            "bad architecture '{arch}' (use an NVRTC target such as sm_80, sm_90a)"
        ))),
        // The kernels use sm_80 instructions (cvt.*x2 packs, cp.async, bf16 arithmetic).
        Some(n) if n < 80 => Err(Error::Invalid(format!(
            "architecture {arch}: kernlab's kernels need sm_80 or newer (Ampere, Hopper: sm_80, \
             sm_86, sm_89, sm_90a)"
        ))),
        Some(_) => Ok(()),
    }
}

/// Open the GPU the request asks for: `Ok(Err(why))` when there is none to use, an error when
/// `cuda:N` was asked for and cannot be opened.
fn open_gpu(spec: DeviceSpec) -> Result<std::result::Result<Arc<CudaDevice>, String>> {
    match spec {
        DeviceSpec::Cpu => Ok(Err("no GPU asked for (device cpu)".into())),
        DeviceSpec::Cuda(n) => Ok(Ok(CudaDevice::open(n)?)),
        DeviceSpec::Auto => match device::cuda_probe() {
            Ok(_) => Ok(CudaDevice::open(0).map_err(|e| e.to_string())),
            Err(why) => Ok(Err(format!("no GPU ({why})"))),
        },
    }
}

/// Compile the variants' sources with NVRTC and read what came out. Never panics without a GPU.
pub fn inspect(req: &InspectRequest) -> Result<InspectReport> {
    // Which variants and symbols, checked before anything is compiled.
    let variants: Vec<&'static Variant> = if req.variants.is_empty() {
        // Every CUDA variant that has this dtype (a named one without it is an error below).
        let all: Vec<_> = cuda_variants(req.op).collect();
        let fit: Vec<_> = all
            .iter()
            .copied()
            .filter(|v| v.dtypes.contains(&req.dtype))
            .collect();
        if fit.is_empty() {
            // The dtypes any of them takes, in DType::ALL's order.
            let any: Vec<String> = DType::ALL
                .iter()
                .filter(|d| all.iter().any(|v| v.dtypes.contains(d)))
                .map(|d| d.to_string())
                .collect();
            return Err(Error::Invalid(format!(
                "no CUDA variant of {} takes {} (--dtype {})",
                req.op,
                req.dtype,
                any.join(", ")
            )));
        }
        // Triton's kernels where Triton is at hand (named, one is compiled or refused).
        let triton_here = triton::triton_version().is_ok();
        fit.into_iter()
            .filter(|v| v.triton.is_none() || triton_here)
            .collect()
    } else {
        req.variants
            .iter()
            .map(|n| find_variant(req.op, n))
            .collect::<Result<_>>()?
    };
    let mut targets: Vec<(&'static Variant, &'static KernelSource, String)> = Vec::new();
    for v in &variants {
        if !v.dtypes.contains(&req.dtype) {
            return Err(Error::UnsupportedDtype {
                op: v.op.to_string(),
                variant: v.name.to_string(),
                dtype: req.dtype,
                supported: v
                    .dtypes
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        for (src, symbols) in variant_symbols(v, req.dtype, &req.params)? {
            for s in symbols {
                if req.kernel.as_ref().is_none_or(|k| *k == s) {
                    targets.push((v, src, s));
                }
            }
        }
    }
    // Triton's kernels for the shape (their blocks follow it).
    let shape = match &req.shape {
        Some(s) => {
            req.op.check_shape(s, None)?;
            s.clone()
        }
        None => req.op.default_shape(DeviceKind::Cuda),
    };
    let mut triton_targets: Vec<(&'static Variant, TritonSpec)> = Vec::new();
    for v in &variants {
        if let Some(specs) = v.triton {
            for spec in specs(&req.params, req.dtype, &shape)? {
                if req.kernel.as_ref().is_none_or(|k| k == spec.kernel) {
                    triton_targets.push((v, spec));
                }
            }
        }
    }
    if let Some(k) = &req.kernel {
        if targets.is_empty() && triton_targets.is_empty() {
            let mut known: Vec<String> = Vec::new();
            for v in &variants {
                for (_, symbols) in variant_symbols(v, req.dtype, &req.params)? {
                    known.extend(symbols);
                }
            }
            return Err(Error::Invalid(format!(
                "kernel '{k}' is not one that {} launches for {} (its kernels: {})",
                variants
                    .iter()
                    .map(|v| v.id())
                    .collect::<Vec<_>>()
                    .join(", "),
                req.dtype,
                known.join(", ")
            )));
        }
    }
    if let Some(a) = &req.arch {
        check_arch(a)?;
    }
    if !targets.is_empty() {
        nvrtc::nvrtc_available()?;
    }

    // The GPU, if any, decides the default architecture and gives occupancy.
    let gpu = open_gpu(req.device)?;
    let arch = match (&req.arch, &gpu) {
        (Some(a), _) => a.clone(),
        (None, Ok(d)) => d.arch.clone(),
        (None, Err(_)) => DEFAULT_ARCH.to_string(),
    };
    let occupancy_note = match &gpu {
        Err(why) => Some(format!("{why}: occupancy not computed")),
        Ok(d) if d.arch != arch => Some(format!(
            "the GPU is {} but this report is for {arch}: occupancy not computed",
            d.arch
        )),
        Ok(_) => None,
    };
    let block = req.block_size.unwrap_or(DEFAULT_BLOCK_SIZE);
    if block == 0 || block > 1024 {
        return Err(Error::Invalid(format!(
            "block size {block}: use 1 to 1024 threads"
        )));
    }

    // One compile (and one disassembly) per source file.
    let mut compiled: BTreeMap<&'static str, Compiled> = BTreeMap::new();
    let mut sass: BTreeMap<&'static str, std::result::Result<Vec<SassFunction>, String>> =
        BTreeMap::new();
    let tool = if req.sass { find_sass_tool() } else { None };
    let mut sass_note = if !req.sass {
        None
    } else {
        Some(match &tool {
            Some(t) => format!("{} ({})", t.name, t.path.display()),
            None => "neither cuobjdump nor nvdisasm was found (PATH, $CUDA_HOME/bin, \
                     /usr/local/cuda/bin): SASS census skipped"
                .into(),
        })
    };
    let mut kernels = Vec::new();
    for &(v, src, ref sym) in &targets {
        if !compiled.contains_key(src.file) {
            compiled.insert(src.file, nvrtc::compile_cached(src, &arch, sym)?);
        }
        let c = &compiled[src.file];
        let body = ptx_entry_body(&c.ptx, sym).ok_or_else(|| Error::MissingSymbol {
            file: src.file.into(),
            kernel: sym.clone(),
        })?;
        let occupancy = match (&gpu, &occupancy_note) {
            (Ok(d), None) => occupancy_of(d, &d.function(src, sym)?, block, 0)?,
            (_, note) => Occupancy::NotComputed {
                why: note.clone().unwrap_or_default(),
            },
        };
        let sass_report = tool.as_ref().and_then(|t| {
            let listing = sass
                .entry(src.file)
                .or_insert_with(|| disassemble(t, &c.cubin).map_err(|e| e.to_string()));
            sass_of(t, listing, sym, &mut sass_note)
        });
        kernels.push(KernelReport::new(
            v.id(),
            sym.clone(),
            src.file.to_string(),
            c.ptxas_info(sym),
            occupancy,
            body,
            sass_report,
        ));
    }
    for (v, spec) in &triton_targets {
        // On the GPU the kernel is loaded (and its compile read from the cache) once, for both
        // the report and the occupancy.
        let (k, occupancy) = match (&gpu, &occupancy_note) {
            (Ok(d), None) => {
                let t = d.triton(spec)?;
                let m = &t.kernel.meta;
                let occ = occupancy_of(d, &t.f, m.num_warps * 32, m.shared as usize)?;
                (t.kernel.clone(), occ)
            }
            (_, note) => (
                Arc::new(triton::compile_cached(spec, &arch)?),
                Occupancy::NotComputed {
                    why: note.clone().unwrap_or_default(),
                },
            ),
        };
        let name = &k.meta.name;
        let ptx = k.stage("ptx").unwrap_or_default();
        let body = ptx_entry_body(ptx, name).ok_or_else(|| Error::MissingSymbol {
            file: spec.source.file.into(),
            kernel: name.clone(),
        })?;
        let sass_report = tool.as_ref().and_then(|t| {
            let listing = disassemble(t, &k.cubin).map_err(|e| e.to_string());
            sass_of(t, &listing, name, &mut sass_note)
        });
        let mut report = KernelReport::new(
            v.id(),
            spec.label(),
            format!("triton/{}", spec.source.file),
            nvrtc::parse_ptxas_log(&k.meta.ptxas_log)
                .into_iter()
                .find(|p| p.kernel == *name),
            occupancy,
            body,
            sass_report,
        );
        report.ir = k.ir.clone();
        report.triton = Some(TritonLaunch {
            num_warps: k.meta.num_warps,
            num_stages: k.meta.num_stages,
            shared_bytes: k.meta.shared,
            triton_version: k.meta.triton_version.clone(),
        });
        kernels.push(report);
    }
    let nvrtc_version = if targets.is_empty() {
        "not used".to_string()
    } else {
        let (major, minor) = nvrtc::nvrtc_version()?;
        format!("{major}.{minor}")
    };
    Ok(InspectReport {
        op: req.op,
        dtype: req.dtype,
        form: req.params.form(),
        arch,
        nvrtc: nvrtc_version,
        device: gpu
            .as_ref()
            .ok()
            .map(|d| format!("cuda:{} ({}, {})", d.ordinal, d.props.name, d.arch)),
        occupancy_note,
        sass_note,
        kernels,
        show_ptx: req.show_ptx,
        show_sass: req.show_sass,
        show_ir: req.ir.clone(),
    })
}

/// The SASS report of kernel `name` from a cubin's disassembly (`None` when it is not in it);
/// a disassembly that failed leaves its reason in `note`.
fn sass_of(
    t: &SassTool,
    listing: &std::result::Result<Vec<SassFunction>, String>,
    name: &str,
    note: &mut Option<String>,
) -> Option<SassReport> {
    match listing {
        Ok(fns) => fns.iter().find(|f| f.name == name).map(|f| SassReport {
            tool: t.name.to_string(),
            census: Census::of_sass(f),
            text: f.text.clone(),
        }),
        Err(e) => {
            *note = Some(format!("{}: {e}", t.name));
            None
        }
    }
}

/// Blocks and warps per SM for one loaded kernel at one block size and dynamic shared memory,
/// from the driver.
fn occupancy_of(
    dev: &CudaDevice,
    f: &cudarc::driver::CudaFunction,
    block: u32,
    dynamic_smem: usize,
) -> Result<Occupancy> {
    let blocks = f
        .occupancy_max_active_blocks_per_multiprocessor(block, dynamic_smem, None)
        .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
    Ok(Occupancy::Computed {
        block_size: block,
        blocks_per_sm: blocks,
        warps_per_sm: blocks * block.div_ceil(32),
        max_warps_per_sm: dev.props.max_threads_per_sm / 32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_census_counts_by_category_and_width() {
        let body = "\
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .f32 \t%f<4>;
\tld.param.u64 \t%rd1, [k_param_0];
\t// begin inline asm
\tld.global.nc.L1::no_allocate.v4.u32 {%r1,%r2,%r3,%r4}, [%rd1];
\t// end inline asm
\t@%p1 bra \t$L__BB0_2;
\tld.global.nc.f32 \t%f1, [%rd2];
\tld.global.nc.u16 \t%rs1, [%rd2];
\tst.global.cs.v4.u32 [%rd3], {%r1,%r2,%r3,%r4};
\tld.shared.v2.f32 \t{%f1, %f2}, [%r5];
\tst.local.b64 \t[%rd4], %rd5;
\tbar.sync \t0;
\tshfl.sync.bfly.b32\t%r6|%p2, %r7, 16, 31, -1;
\tex2.approx.ftz.f32 %f3, %f2;
\tdiv.approx.f32 \t%f3, %f2, %f1;
\tdiv.u32 \t%r1, %r2, %r3;
\tcp.async.cg.shared.global [%r1], [%rd1], 16;
\t{ .reg .b16 lo; mov.b32 {lo, hi}, %r1; }
$L__BB0_2:
\tret;

}
";
        let c = Census::of_ptx(body);
        assert_eq!(
            c.widths(Category::GlobalLoad),
            vec![(16, 1), (4, 1), (2, 1)]
        );
        assert_eq!(c.widest(Category::GlobalLoad), Some(16));
        assert_eq!(c.widths(Category::GlobalStore), vec![(16, 1)]);
        assert_eq!(c.widths(Category::SharedLoad), vec![(8, 1)]);
        assert_eq!(c.widths(Category::LocalStore), vec![(8, 1)]);
        assert_eq!(c.count(Category::Barrier), 1);
        assert_eq!(c.count(Category::Shuffle), 1);
        assert_eq!(
            c.count(Category::Special),
            2,
            "ex2 and the f32 div, not div.u32"
        );
        assert_eq!(c.widths(Category::CpAsync), vec![(16, 1)]);
        // ld.param, ld.global x3, st, ld.shared, st.local, bar, shfl, ex2, div x2, cp.async,
        // bra, mov, ret: directives (the inline asm's `.reg` too) and labels are not counted.
        assert_eq!(c.instructions, 16);
        assert_eq!(c.widths_text(Category::GlobalLoad), "1×16B 1×4B 1×2B");
        assert_eq!(c.widths_text(Category::Atomic), "–");
    }

    #[test]
    fn sass_instructions_and_opcodes_parse() {
        let l = "        /*0110*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;    /* 0x0000000402047981 */";
        let ins = sass_instruction(l.trim()).unwrap();
        assert_eq!(ins, "LDG.E.128.CONSTANT R4, desc[UR4][R2.64]");
        assert_eq!(sass_opcode(ins), Some("LDG.E.128.CONSTANT"));
        assert_eq!(sass_opcode("@!P0 BRA 0x1c60"), Some("BRA"));
        assert_eq!(sass_opcode("NOP"), Some("NOP"));
        assert!(sass_instruction("/* 0x000fe20000000800 */").is_none());
        assert_eq!(
            classify_sass("LDG.E.NA.128.CONSTANT"),
            Some((Category::GlobalLoad, Some(16)))
        );
        assert_eq!(
            classify_sass("STG.E.U16"),
            Some((Category::GlobalStore, Some(2)))
        );
        assert_eq!(
            classify_sass("LDL.LU"),
            Some((Category::LocalLoad, Some(4)))
        );
        assert_eq!(
            classify_sass("HGMMA.64x8x16.F32"),
            Some((Category::Wgmma, None))
        );
        assert_eq!(classify_sass("FMUL"), None);
    }

    #[test]
    fn gelu_symbols_follow_the_approximation() {
        use crate::ops::gelu;
        let v = find_variant(gelu::OP, "manual").unwrap();
        let tanh: Vec<String> = variant_symbols(v, DType::BF16, &gelu::OP.default_params())
            .unwrap()
            .into_iter()
            .flat_map(|(_, s)| s)
            .collect();
        // The manual tier's kernels are the compiler's, one a node of the tanh graph: x to
        // f32, nine operations (each in a packed and a scalar form), back to bf16.
        assert_eq!(tanh.len(), 20, "{tanh:?}");
        assert!(
            tanh.contains(&"kl_eager_gelu_tanh_bf16_tanh10".to_string()),
            "{tanh:?}"
        );
        assert!(tanh.contains(&"kl_eager_gelu_tanh_bf16_float_scalar".to_string()));
        assert!(!tanh.iter().any(|s| s.contains("erf")), "{tanh:?}");
        let erf = Params::new(gelu::GeluParams {
            gelu: gelu::GeluApprox::Erf,
        });
        let v1 = find_variant(gelu::OP, "gelu/v1_naive").unwrap();
        assert_eq!(
            variant_symbols(v1, DType::F32, &erf).unwrap()[0].1,
            vec!["gelu_v1_naive_erf_f32".to_string()]
        );
    }

    #[test]
    fn cpu_variants_and_bad_arches_are_clear_errors() {
        let e = find_variant(crate::ops::gelu::OP, "fused")
            .map(|v| v.id())
            .unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("runs on the CPU") && e.contains("v1_naive"),
            "{e}"
        );
        let e = find_variant(crate::ops::softmax::OP, "reference")
            .map(|v| v.id())
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("runs on the CPU"), "{e}");
        assert!(check_arch("sm_90a").is_ok() && check_arch("sm_80").is_ok());
        assert!(check_arch("hopper").is_err() && check_arch("sm_").is_err());
        let e = check_arch("sm_75").unwrap_err().to_string();
        assert!(e.contains("need sm_80 or newer"), "{e}");
    }
}
