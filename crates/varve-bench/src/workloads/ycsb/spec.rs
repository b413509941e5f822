//! The YCSB core workloads A–F and the load phase: their mixes, request
//! distributions and parameters, as YCSB's `workloads/workload[a-f]` files
//! set `site.ycsb.workloads.CoreWorkload`'s properties.
//!
//! Plain data, shared read-only by every thread of a workload. Invariants:
//! a mix's proportions are positive and sum to 1; `name` is the
//! `--benchmarks` name; `distribution` is one of `zipfian`, `latest` or
//! (the load phase) `sequential` key numbers.

use serde::Serialize;

use super::generators::Op;

/// YCSB's `fieldcount` default: a record is 10 fields.
pub const FIELD_COUNT: usize = 10;
/// YCSB's `fieldlength` default: 100 bytes per field, so 1000-byte values.
pub const DEFAULT_VALUE_SIZE: usize = FIELD_COUNT * 100;
/// Workload E's `maxscanlength` (YCSB's `minscanlength` default is 1).
pub const MAX_SCAN_LENGTH: u64 = 100;

/// How a workload picks the records it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// `ScrambledZipfianGenerator`, constant 0.99, over the key numbers.
    Zipfian,
    /// `SkewedLatestGenerator`: skewed to the newest inserted record.
    Latest,
    /// Key numbers in order (the load phase's `CounterGenerator`).
    Sequential,
}

impl Distribution {
    /// Its name in YCSB's `requestdistribution` spelling.
    pub fn label(self) -> &'static str {
        match self {
            Distribution::Zipfian => "zipfian",
            Distribution::Latest => "latest",
            Distribution::Sequential => "sequential",
        }
    }
}

/// One YCSB workload.
#[derive(Debug, Clone)]
pub struct Spec {
    /// `--benchmarks` name: `ycsb_load`, `ycsb_a`, ...
    pub name: &'static str,
    /// YCSB's letter (`load` for the load phase).
    pub workload: &'static str,
    /// Operation proportions, in YCSB's order.
    pub mix: &'static [(f64, Op)],
    /// Request distribution.
    pub distribution: Distribution,
}

impl Spec {
    /// Whether the workload scans (has `maxscanlength`).
    pub fn scans(&self) -> bool {
        self.proportion(Op::Scan) > 0.0
    }

    /// The proportion of `op` (0 when absent).
    pub fn proportion(&self, op: Op) -> f64 {
        self.mix
            .iter()
            .filter(|(_, o)| *o == op)
            .map(|(w, _)| w)
            .sum()
    }

    /// The mix as `read 50% update 50%`.
    pub fn mix_text(&self) -> String {
        self.mix
            .iter()
            .map(|(w, op)| format!("{} {}%", op.label(), w * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every YCSB workload, load phase first.
pub const SPECS: &[Spec] = &[
    Spec {
        name: "ycsb_load",
        workload: "load",
        mix: &[(1.0, Op::Insert)],
        distribution: Distribution::Sequential,
    },
    Spec {
        name: "ycsb_a",
        workload: "a",
        mix: &[(0.5, Op::Read), (0.5, Op::Update)],
        distribution: Distribution::Zipfian,
    },
    Spec {
        name: "ycsb_b",
        workload: "b",
        mix: &[(0.95, Op::Read), (0.05, Op::Update)],
        distribution: Distribution::Zipfian,
    },
    Spec {
        name: "ycsb_c",
        workload: "c",
        mix: &[(1.0, Op::Read)],
        distribution: Distribution::Zipfian,
    },
    Spec {
        name: "ycsb_d",
        workload: "d",
        mix: &[(0.95, Op::Read), (0.05, Op::Insert)],
        distribution: Distribution::Latest,
    },
    Spec {
        name: "ycsb_e",
        workload: "e",
        mix: &[(0.95, Op::Scan), (0.05, Op::Insert)],
        distribution: Distribution::Zipfian,
    },
    Spec {
        name: "ycsb_f",
        workload: "f",
        mix: &[(0.5, Op::Read), (0.5, Op::ReadModifyWrite)],
        distribution: Distribution::Zipfian,
    },
];

/// The workload named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_sum_to_one() {
        for s in SPECS {
            let sum: f64 = s.mix.iter().map(|(w, _)| w).sum();
            assert!((sum - 1.0).abs() < 1e-12, "{}", s.name);
        }
        assert!(spec("ycsb_e").is_some_and(Spec::scans));
        assert_eq!(
            spec("ycsb_a").map(Spec::mix_text).as_deref(),
            Some("read 50% update 50%")
        );
    }
}
