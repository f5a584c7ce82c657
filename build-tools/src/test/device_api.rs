//! The device API check: every function of LLVM 22's device runtime (the list kept in
//! `devicertl/llvm-device-functions.txt`, which says where it came from) must be defined by
//! both of our runtime bitcodes. On nvptx the CUDA driver may provide `malloc`, `free` and
//! `vprintf`; what is not provided yet is named in NOT_YET with the reason.
use crate::devicertl::{self, TARGETS};
use crate::util::{self, at, Result};
use std::collections::BTreeSet;

const LIST: &str = "devicertl/llvm-device-functions.txt";

/// LLVM functions rustomp does not provide yet, and why. A program calling one fails to link
/// with the name (rather than trapping at run time).
const NOT_YET: [(&str, &str); 0] = [];

pub fn run() -> Result<()> {
    let text = util::read(&at(LIST))?;
    let wanted: BTreeSet<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let not_yet: BTreeSet<&str> = NOT_YET.iter().map(|(n, _)| *n).collect();
    let mut failing = Vec::new();
    for t in &TARGETS {
        let archive = crate::paths::dist_lib()
            .join(t.triple)
            .join("libompdevice.a");
        let (defined, _) = devicertl::nm(&archive)?;
        let from_driver: BTreeSet<&str> = if t.triple.starts_with("nvptx") {
            ["malloc", "free", "vprintf"].into()
        } else {
            BTreeSet::new()
        };
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|f| !defined.contains(*f) && !from_driver.contains(f) && !not_yet.contains(f))
            .collect();
        let ours = wanted
            .iter()
            .filter(|f| defined.contains(**f) || from_driver.contains(*f))
            .count();
        println!(
            "device API, {}: {ours} of LLVM's {} functions defined{}{}",
            t.triple,
            wanted.len(),
            if from_driver.is_empty() {
                String::new()
            } else {
                " (malloc/free/vprintf from the CUDA driver)".to_string()
            },
            if missing.is_empty() {
                String::new()
            } else {
                format!("; MISSING: {}", missing.join(" "))
            }
        );
        if !missing.is_empty() {
            failing.push(t.triple);
        }
    }
    for (name, why) in NOT_YET {
        println!("device API: not provided yet: {name} ({why})");
    }
    if !failing.is_empty() {
        crate::bail!(
            "the device runtime lacks functions of LLVM's for {}",
            failing.join(", ")
        );
    }
    Ok(())
}
