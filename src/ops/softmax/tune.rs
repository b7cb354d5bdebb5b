//! The tunable softmax versions' launch configurations: each of v3, v8, v9 and v11 has a few
//! named configurations of its typed tuning ([`V3Tuning`], [`V8Tuning`], [`V9Tuning`],
//! [`V11Tuning`]), the default among them. `kernlab autotune softmax` measures every
//! (version, configuration) pair and caches the winners by name: a version's default run takes
//! the configuration cached for its input's device, dtype and shape bucket, else its default;
//! `auto` runs the cached overall winner in its configuration.

use super::*;
use crate::ops::Candidate;
use crate::runtime::device::CudaDevice;

/// v3's tuning: K, the slots (16-byte packs, or elements) a thread holds (rmsnorm v2's too).
pub type V3Tuning = crate::ops::row_slots::SlotsTuning;

/// One tunable version's launch configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    V3(V3Tuning),
    V8(V8Tuning),
    V9(V9Tuning),
    V11(V11Tuning),
}

/// A named configuration. The names are stable: the autotune cache stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub name: &'static str,
    pub tuning: Tuning,
}

const fn v3(name: &'static str, k: Option<usize>) -> Config {
    Config {
        name,
        tuning: Tuning::V3(V3Tuning { k }),
    }
}

/// v3: the slots-a-thread rule, or K forced (fewer threads a row with more loads in flight
/// each, or the reverse).
pub const V3_CONFIGS: [Config; 5] = [
    v3("default", None),
    v3("k1", Some(1)),
    v3("k2", Some(2)),
    v3("k4", Some(4)),
    v3("k8", Some(8)),
];

const fn v8(name: &'static str, t: V8Tuning) -> Config {
    Config {
        name,
        tuning: Tuning::V8(t),
    }
}

/// v8: its default shapes; CTAs sized for the most an SM ([`v8_fill_cta`]) everywhere, or
/// nowhere; rows held in clusters of at least 4 or 8 CTAs; the 16-bit and f32 cluster rules off.
pub const V8_CONFIGS: [Config; 6] = [
    v8("default", V8Tuning::DEFAULT),
    v8(
        "fill",
        V8Tuning {
            fill: Some(true),
            ..V8Tuning::DEFAULT
        },
    ),
    v8(
        "no_fill",
        V8Tuning {
            fill: Some(false),
            ..V8Tuning::DEFAULT
        },
    ),
    v8(
        "cluster4",
        V8Tuning {
            cluster: Some(4),
            ..V8Tuning::DEFAULT
        },
    ),
    v8(
        "cluster8",
        V8Tuning {
            cluster: Some(8),
            ..V8Tuning::DEFAULT
        },
    ),
    v8(
        "no_cluster_rules",
        V8Tuning {
            wide16: Some(false),
            f32c8: Some(false),
            ..V8Tuning::DEFAULT
        },
    ),
];

const fn v9(name: &'static str, t: V9Tuning) -> Config {
    Config {
        name,
        tuning: Tuning::V9(t),
    }
}

/// v9: its default forms; the ping-pong form forced on or off; the smpair form wherever it
/// runs; one 1024-thread CTA an SM; parts taking all the shared memory they can.
pub const V9_CONFIGS: [Config; 6] = [
    v9("default", V9Tuning::DEFAULT),
    v9(
        "pingpong",
        V9Tuning {
            pingpong: Some(true),
            smpair: Some(false),
            ..V9Tuning::DEFAULT
        },
    ),
    v9(
        "no_pingpong",
        V9Tuning {
            pingpong: Some(false),
            ..V9Tuning::DEFAULT
        },
    ),
    v9(
        "smpair",
        V9Tuning {
            pingpong: Some(true),
            smpair: Some(true),
            ..V9Tuning::DEFAULT
        },
    ),
    v9(
        "one_per_sm",
        V9Tuning {
            per_sm: 1,
            ..V9Tuning::DEFAULT
        },
    ),
    v9(
        "smem_all",
        V9Tuning {
            smem_kb: Some(0),
            ..V9Tuning::DEFAULT
        },
    ),
];

const fn v11(name: &'static str, chunk: usize, max_slots: usize) -> Config {
    Config {
        name,
        tuning: Tuning::V11(V11Tuning { chunk, max_slots }),
    }
}

/// v11: 16 KB chunks (the default), 8 or 32 KB ones; 16 KB ones in at most 8 slots a CTA.
pub const V11_CONFIGS: [Config; 4] = [
    v11("default", 1024, V11Tuning::DEFAULT.max_slots),
    v11("chunk8k", 512, V11Tuning::DEFAULT.max_slots),
    v11("chunk32k", 2048, V11Tuning::DEFAULT.max_slots),
    v11("slots8", 1024, 8),
];

/// The versions with named configurations.
pub const TUNABLE: [&str; 4] = ["v3_block_regs", "v8_onchip", "v9_gridsync", "v11_deal"];

/// A version's named configurations (none for a version without a tuning).
pub fn configs(variant: &str) -> &'static [Config] {
    match variant {
        "v3_block_regs" => &V3_CONFIGS,
        "v8_onchip" => &V8_CONFIGS,
        "v9_gridsync" => &V9_CONFIGS,
        "v11_deal" => &V11_CONFIGS,
        _ => &[],
    }
}

/// The configurations `kernlab autotune softmax` measures for a version: its named ones, or for
/// a version without a tuning its one form, "".
pub fn config_names(variant: &str) -> Vec<&'static str> {
    match configs(variant) {
        [] => vec![""],
        cs => cs.iter().map(|c| c.name).collect(),
    }
}

/// `config` as one of `variant`'s: "" (the version's default run) or one of its named
/// configurations; `None` for a name it does not have.
pub fn known_config(variant: &str, config: &str) -> Option<&'static str> {
    if config.is_empty() {
        return Some("");
    }
    configs(variant)
        .iter()
        .find(|c| c.name == config)
        .map(|c| c.name)
}

/// Run a version in a tuning.
pub fn run_tuning(t: Tuning, p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match t {
        Tuning::V3(t) => run_v3_tuned(p, x, y, t),
        Tuning::V8(t) => run_v8_tuned(p, x, y, t),
        Tuning::V9(t) => run_v9_tuned(p, x, y, t),
        Tuning::V11(t) => run_v11_tuned(p, x, y, t),
    }
}

/// Run `variant` (one of [`AUTO_CANDIDATES`]) in `config`: one of its named configurations, or
/// "" for its default run ([`run_named`]). A name it does not have is an error naming those it
/// has.
pub fn run_config(
    variant: &str,
    config: &str,
    p: &SoftmaxParams,
    x: &Tensor,
    y: &mut Tensor,
) -> Result<()> {
    if config.is_empty() {
        return run_named(variant, p, x, y);
    }
    match configs(variant).iter().find(|c| c.name == config) {
        Some(c) => run_tuning(c.tuning, p, x, y),
        None => Err(Error::Invalid(format!(
            "softmax/{variant} has no configuration '{config}' (known: {})",
            config_names(variant).join(", ")
        ))),
    }
}

/// The tuning of `variant` that `kernlab autotune` cached for this input's device, dtype and
/// shape bucket, where the cache names one of the version's configurations.
pub(super) fn cached_tuning(variant: &str, x: &Tensor) -> Option<Tuning> {
    let e = OP.tuned(variant, x)?;
    configs(variant)
        .iter()
        .find(|c| c.name == e.config)
        .map(|c| c.tuning)
}

/// Every (version, configuration) `kernlab autotune softmax` measures on this device, as
/// candidates the tuner can run (`only`: restrict to these versions). A version that needs a
/// newer architecture than the device's is left out.
pub fn candidates(
    dev: &std::sync::Arc<CudaDevice>,
    _dtype: DType,
    only: Option<&[String]>,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for v in AUTO_CANDIDATES {
        if only.is_some_and(|o| !o.iter().any(|n| n == v)) {
            continue;
        }
        let variant = crate::ops::find(OP, v, DeviceKind::Cuda)?;
        if variant.min_arch / 10 > dev.props.compute_capability.0 as u32 {
            continue;
        }
        for name in config_names(v) {
            out.push(Candidate {
                variant: v,
                config: name.to_string(),
                run: Box::new(move |p, x, y| run_config(v, name, p.get()?, x[0], y)),
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!(
            "no softmax version to tune on this device among {} (versions: {})",
            only.map_or("all".to_string(), |o| o.join(", ")),
            AUTO_CANDIDATES.join(", ")
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tunable_version_has_a_default_and_distinct_stable_names() {
        for v in TUNABLE {
            assert!(AUTO_CANDIDATES.contains(&v), "{v}");
            let names = config_names(v);
            assert_eq!(names[0], "default", "{v}");
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{v}: {names:?}");
            assert!(
                names.iter().all(|n| !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')),
                "{v}: {names:?}"
            );
            // Each configuration's tuning is its own version's.
            for c in configs(v) {
                let ok = matches!(
                    (v, c.tuning),
                    ("v3_block_regs", Tuning::V3(_))
                        | ("v8_onchip", Tuning::V8(_))
                        | ("v9_gridsync", Tuning::V9(_))
                        | ("v11_deal", Tuning::V11(_))
                );
                assert!(ok, "{v}/{}: {:?}", c.name, c.tuning);
            }
        }
        // The defaults are the typed defaults, so a version's "default" is its uncached run.
        assert_eq!(V3_CONFIGS[0].tuning, Tuning::V3(V3Tuning::DEFAULT));
        assert_eq!(V8_CONFIGS[0].tuning, Tuning::V8(V8Tuning::DEFAULT));
        assert_eq!(V9_CONFIGS[0].tuning, Tuning::V9(V9Tuning::DEFAULT));
        assert_eq!(V11_CONFIGS[0].tuning, Tuning::V11(V11Tuning::DEFAULT));
        // Versions without a tuning are measured in their one form.
        for v in AUTO_CANDIDATES.iter().filter(|v| !TUNABLE.contains(v)) {
            assert_eq!(config_names(v), vec![""], "{v}");
        }
    }

    #[test]
    fn config_names_are_checked_against_their_version() {
        assert_eq!(known_config("v9_gridsync", "smpair"), Some("smpair"));
        assert_eq!(known_config("v9_gridsync", ""), Some(""));
        assert_eq!(known_config("v2_warp_row", ""), Some(""));
        assert_eq!(known_config("v3_block_regs", "smpair"), None);
        assert_eq!(known_config("v2_warp_row", "default"), None);
        let x = Tensor::empty(&[2, 8], DType::F32, &crate::runtime::device::Device::Cpu).unwrap();
        let mut y =
            Tensor::empty(&[2, 8], DType::F32, &crate::runtime::device::Device::Cpu).unwrap();
        let e = run_config("v8_onchip", "k4", &SoftmaxParams::default(), &x, &mut y).unwrap_err();
        assert!(
            e.to_string().contains("no configuration 'k4'") && e.to_string().contains("no_fill"),
            "{e}"
        );
    }

    #[test]
    fn v3_forces_k_only_where_it_is_built_and_fits() {
        let k = |k| V3Tuning { k: Some(k) };
        assert_eq!(V3Tuning::DEFAULT.slots_per_thread(100), None);
        assert_eq!(k(2).slots_per_thread(2048), Some(2));
        // 1024 threads of one slot hold 1024 slots, not 1025.
        assert_eq!(k(1).slots_per_thread(1024), Some(1));
        assert_eq!(k(1).slots_per_thread(1025), None);
        // K = 3 is not built.
        assert_eq!(k(3).slots_per_thread(30), None);
    }
}
