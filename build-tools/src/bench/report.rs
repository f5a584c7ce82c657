//! Statistics and the tables: medians with their spread, ours/LLVM, and the header line.

use super::plan::{Failure, Row, Variant, FLAG_MARGIN};
use std::process::Command;

/// (median, min, max) of a non-empty slice.
pub(super) fn stats(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    Some((median, v[0], v[n - 1]))
}

/// Whether smaller is better: a time per operation (`ns/region`, `us/launch`, ...).
pub(super) fn lower_is_better(unit: &str) -> bool {
    matches!(unit.split('/').next(), Some("ns" | "us" | "ms" | "s"))
}

/// Three significant digits, with k / M / G for large values.
pub(super) fn num(v: f64) -> String {
    // Thresholds sit just below the powers of ten so that rounding never prints `1000k`.
    let (scaled, suffix) = match v.abs() {
        a if a >= 999.5e6 => (v / 1e9, "G"),
        a if a >= 999.5e3 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = match scaled.abs() {
        a if a >= 99.95 => 0,
        a if a >= 9.995 => 1,
        a if a >= 0.9995 => 2,
        _ => 3,
    };
    format!("{scaled:.digits$}{suffix}")
}

/// `median (min-max)`, or `-` without values.
pub(super) fn cell(values: &[f64]) -> String {
    match stats(values) {
        Some((median, min, max)) => format!("{} ({}-{})", num(median), num(min), num(max)),
        None => "-".into(),
    }
}

/// ours/reference and whether ours is clearly worse or better.
pub(super) fn ratio(row: &Row) -> (String, &'static str) {
    let (Some((a, _, _)), Some((b, _, _))) = (stats(&row.values[0]), stats(&row.values[1])) else {
        return ("-".into(), "");
    };
    if b == 0.0 {
        return ("-".into(), "");
    }
    let r = a / b;
    let worse = if lower_is_better(&row.unit) {
        r
    } else {
        1.0 / r
    };
    let verdict = if worse > FLAG_MARGIN {
        "slower"
    } else if worse < 1.0 / FLAG_MARGIN {
        "faster"
    } else {
        ""
    };
    (format!("{r:.2}"), verdict)
}

pub(super) fn print_group(
    title: &str,
    variants: &[Variant],
    rows: &[Row],
    failures: &[Failure],
    runs: usize,
) {
    if rows.is_empty() && failures.is_empty() {
        return; // a filter left nothing of this group
    }
    println!("\n{title}");
    let a = variants.first().map_or("ours", |v| v.label);
    let b = variants.get(1).map_or("LLVM", |v| v.label);
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(9).max(9);
    let unit_w = rows.iter().map(|r| r.unit.len()).max().unwrap_or(4).max(4);
    let ha = format!("{a} median (min-max)");
    let hb = format!("{b} median (min-max)");
    let ratio_h = format!("{a}/{b}");
    let ratio_w = ratio_h.len().max(6);
    println!(
        "  {:name_w$}  {:unit_w$}  {ha:26}  {hb:26}  {ratio_h:>ratio_w$}  {:>6}",
        "benchmark", "unit", "paired"
    );
    for row in rows {
        let (r, verdict) = ratio(row);
        println!(
            "  {:name_w$}  {:unit_w$}  {:26}  {:26}  {r:>ratio_w$}  {:>6}  {verdict}",
            row.name,
            row.unit,
            cell(&row.values[0]),
            cell(&row.values[1]),
            paired_ratio(row)
        );
    }
    for (column, v) in variants.iter().enumerate() {
        let mine: Vec<&Failure> = failures.iter().filter(|f| f.column == column).collect();
        if let Some(first) = mine.first() {
            println!(
                "  {}: {} of {} runs failed ({}: {})",
                v.label,
                mine.len(),
                runs * mine
                    .iter()
                    .map(|f| &f.program)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                first.program,
                first.why
            );
        }
    }
}

/// The median of the rounds' ratios ours/reference over the rounds where both columns ran. A
/// round runs each column once, one right after the other, so when the machine changes speed
/// between rounds (the shared development VMs run a whole process at full or at half speed)
/// both values of a pair move together, where each column's median alone depends on how its
/// runs fell.
pub(super) fn paired_ratio(row: &Row) -> String {
    let reference: std::collections::HashMap<usize, f64> = row.rounds[1]
        .iter()
        .copied()
        .zip(row.values[1].iter().copied())
        .collect();
    let ratios: Vec<f64> = row.rounds[0]
        .iter()
        .zip(&row.values[0])
        .filter_map(|(round, ours)| {
            let theirs = *reference.get(round)?;
            (theirs != 0.0).then(|| ours / theirs)
        })
        .collect();
    stats(&ratios).map_or("-".into(), |(median, _, _)| format!("{median:.2}"))
}

/// `machine: 2 CPUs (AMD EPYC), load average 0.50, 2025-01-01 12:00 UTC`: for the report's header.
pub(super) fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // The 1-minute load average: how busy the (shared) machine was when the runs started.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    format!("bench: machine: {cpus} CPUs ({model}), load average {load}, {date}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_spread() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(stats(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(stats(&[]), None);
    }

    #[test]
    fn numbers_keep_three_digits() {
        assert_eq!(num(423.4), "423");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(0.8766), "0.877");
        assert_eq!(num(270186.0), "270k");
        assert_eq!(num(1.4864e6), "1.49M");
        assert_eq!(num(2.1e8), "210M");
        assert_eq!(num(999_700.0), "1.00M");
        assert_eq!(num(99.97), "100");
        assert_eq!(num(9.999), "10.0");
    }

    #[test]
    fn paired_ratios_follow_the_rounds() {
        // Ours ran at half speed from round 4, the reference from round 5: each column's
        // median is a slow run, the reference's a fast one, and their ratio (0.20) says less
        // than the rounds, of which all but one give 0.10.
        let row = Row {
            name: "x".into(),
            unit: "ns/region".into(),
            values: [
                vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0],
                vec![10.0, 10.0, 10.0, 10.0, 20.0, 20.0, 20.0],
            ],
            rounds: [(0..7).collect(), (0..7).collect()],
        };
        assert_eq!(ratio(&row).0, "0.20");
        assert_eq!(paired_ratio(&row), "0.10");
        // Failed runs: only the rounds where both columns ran count (here rounds 1 and 3).
        let gaps = Row {
            values: [vec![1.0, 3.0, 2.0], vec![10.0, 20.0]],
            rounds: [vec![1, 2, 3], vec![1, 3]],
            ..row.clone()
        };
        assert_eq!(paired_ratio(&gaps), "0.10");
        let none = Row {
            rounds: [vec![0], vec![1]],
            values: [vec![1.0], vec![2.0]],
            ..row
        };
        assert_eq!(paired_ratio(&none), "-");
    }

    #[test]
    fn direction_of_the_ratio() {
        let row = |unit: &str, a: f64, b: f64| Row {
            name: "x".into(),
            unit: unit.into(),
            values: [vec![a], vec![b]],
            rounds: [vec![0], vec![0]],
        };
        assert_eq!(ratio(&row("ns/region", 200.0, 100.0)).1, "slower");
        assert_eq!(ratio(&row("regions/s", 200.0, 100.0)).1, "faster");
        assert_eq!(ratio(&row("GB/s", 100.0, 105.0)).1, "");
        assert_eq!(ratio(&row("ns/region", 1.0, 2.0)).0, "0.50");
        assert_eq!(
            ratio(&Row {
                values: [vec![1.0], vec![]],
                ..row("ns", 0.0, 0.0)
            })
            .0,
            "-"
        );
    }
}
