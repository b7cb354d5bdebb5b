//! Fuzzing (proptest) of what reads text or bytes from a user or a file: the shape and size
//! parsers, the expression parser, the cache readers, and random command lines. Each must
//! answer Ok or a clear error; a panic fails the test.

use proptest::prelude::*;

/// Strings near the grammars (digits, separators, powers, ranges, signs, spaces) and some
/// arbitrary ones.
fn texty(alphabet: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(proptest::sample::select(alphabet.chars().collect::<Vec<_>>()), 0..24)
            .prop_map(|v| v.into_iter().collect::<String>()),
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn shapes_parse_or_say_why(s in texty("0123456789xX,*×^_ -.")) {
        if let Ok(dims) = kernlab::runtime::tensor::parse_shape(&s) {
            prop_assert!(!dims.is_empty() && dims.iter().all(|&d| d >= 1), "{s:?} → {dims:?}");
            prop_assert!(dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).is_some());
        }
    }

    #[test]
    fn size_lists_parse_or_say_why(s in texty("0123456789.,:xX*^_ -")) {
        use kernlab::tools::sweep::{parse_sizes, MAX_POINTS};
        if let Ok(v) = parse_sizes(&s) {
            prop_assert!(!v.is_empty() && v.len() <= MAX_POINTS, "{s:?}: {} sizes", v.len());
            prop_assert!(v.iter().all(|&n| n >= 1));
            let mut sorted = v.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), v.len(), "repeats in {:?}", s);
        }
    }

    #[test]
    fn expressions_parse_or_say_why(s in texty("xwab01.5+-*/^()<=>, eptanhsigmoidlogsumexpmatmulwhere")) {
        let g = kernlab::compiler::Graph::new();
        if let Ok(y) = kernlab::compiler::parse::parse(&g, &s, &[]) {
            prop_assert!(y.id < g.len());
        }
        let _ = kernlab::compiler::parse::input_layout(&s);
    }

    #[test]
    fn cache_files_with_any_bytes_are_read_or_ignored(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.json");
        std::fs::write(&path, &bytes).unwrap();
        let _ = kernlab::runtime::tuning::lookup_in(&path, "key");
        let _ = kernlab::tools::bench::ceiling::load(&path, "key");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Random command lines from the CLI's own words. Each either runs or errors without a
    /// panic; none does real work (`list`, `--help`, and `compile` for an architecture too old
    /// to compile for, which parses and builds the expression first).
    #[test]
    fn random_command_lines_do_not_panic(
        words in proptest::collection::vec(proptest::sample::select(vec![
            "--shape", "4x4", "-5x3", "0x1", "x", "--dtype", "bf16", "f64", "--variants", "fused,nope",
            "--seed", "-1", "--device", "cuda:99", "cpu", "--rotate", "auto", "--graph", "0", "--op",
            "softmax", "gelu", "--json", "--gelu", "erf", "--eps", "nan", "--layers", "--expr",
            "silu(a) * b", "matmul(x, w) + x", "sum(", "--input", "w:col", "b:nope", "--help",
            "--log-softmax", "--activation", "relu", "--rep-ms", "-3", "=", "",
        ]), 0..8),
        head in proptest::sample::select(vec!["list", "compile", "nope", "--version"]),
    ) {
        let mut args: Vec<&str> = vec![head];
        args.extend(words.iter().copied());
        if head == "compile" {
            args.extend(["--arch", "sm_75"]);
        }
        let _ = crate::common::run_cli(&args);
    }
}
