//! Runs the `rustomp-info` binary and checks the structure of its listing: one block per
//! plugin in the runtime's order, the host plugin's devices with their properties, and a reason
//! line for a plugin without devices.

use std::process::Command;

/// One `Plugin NAME: ...` block: the header's count (None for "no devices") and its lines.
struct Block {
    name: String,
    devices: Option<usize>,
    lines: Vec<String>,
}

fn run(env: &[(&str, &str)]) -> (String, Vec<Block>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rustomp-info"));
    for var in [
        "RUSTOMP_HOST_DEVICES",
        "RUSTOMP_HOST_FAULTS",
        "OMP_TARGET_OFFLOAD",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("rustomp-info runs");
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert!(
        out.status.success(),
        "rustomp-info failed: {:?}\n{text}",
        out.status
    );
    let mut blocks: Vec<Block> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Plugin ") {
            let (name, what) = rest.split_once(": ").expect("`Plugin NAME: ...`");
            let devices = if what == "no devices" {
                None
            } else {
                let n = what.split_whitespace().next().and_then(|n| n.parse().ok());
                Some(n.unwrap_or_else(|| panic!("bad device count in `{line}`")))
            };
            blocks.push(Block {
                name: name.to_string(),
                devices,
                lines: Vec::new(),
            });
        } else if let Some(block) = blocks.last_mut() {
            block.lines.push(line.to_string());
        }
    }
    (text, blocks)
}

fn names(blocks: &[Block]) -> Vec<&str> {
    blocks.iter().map(|b| b.name.as_str()).collect()
}

#[test]
fn lists_host_devices_and_why_gpu_plugins_have_none() {
    // Driver libraries that cannot exist: the GPU plugins have no devices on any machine.
    let (text, blocks) = run(&[
        ("RUSTOMP_VGPU_LIBRARY", "/nonexistent/librustomp_vgpu.so"),
        ("RUSTOMP_CUDA_DRIVER", "/nonexistent/libcuda.so.1"),
        ("RUSTOMP_HSA_RUNTIME", "/nonexistent/libhsa-runtime64.so.1"),
    ]);
    assert_eq!(
        names(&blocks),
        ["vgpu", "vgpu-amdgcn", "cuda", "amdgpu", "host", "remote"],
        "{text}"
    );
    for gpu in &blocks[..4] {
        assert_eq!(gpu.devices, None, "{text}");
        assert_eq!(gpu.lines.len(), 1, "{text}");
        let reason = gpu.lines[0]
            .strip_prefix("  Reason: ")
            .unwrap_or_else(|| panic!("no reason line:\n{text}"));
        assert!(
            reason.contains("/nonexistent/"),
            "the reason names the library: {reason}"
        );
    }
    let host = &blocks[4];
    assert_eq!(host.devices, Some(4), "{text}");
    let devices: Vec<&String> = host
        .lines
        .iter()
        .filter(|l| l.starts_with("  Device "))
        .collect();
    assert_eq!(
        devices,
        ["  Device 0", "  Device 1", "  Device 2", "  Device 3"],
        "{text}"
    );
    for label in ["Kind", "Triple", "CPUs", "Memory"] {
        let with_label = host
            .lines
            .iter()
            .filter(|l| l.trim_start().starts_with(&format!("{label} ")))
            .count();
        assert_eq!(
            with_label, 4,
            "each host device has a `{label}` line:\n{text}"
        );
    }
    let kinds = host
        .lines
        .iter()
        .filter(|l| l.split_whitespace().collect::<Vec<_>>() == ["Kind", "CPU"])
        .count();
    assert_eq!(kinds, 4, "{text}");
}

#[test]
fn host_device_count_follows_the_runtime_variable() {
    let (text, blocks) = run(&[("RUSTOMP_HOST_DEVICES", "2")]);
    let host = blocks
        .iter()
        .find(|b| b.name == "host")
        .unwrap_or_else(|| panic!("no host block:\n{text}"));
    assert_eq!(host.devices, Some(2), "{text}");
}

#[test]
fn every_plugin_has_devices_or_a_reason() {
    // Whatever this machine has: each block lists devices or says why there are none.
    let (text, blocks) = run(&[]);
    assert_eq!(
        names(&blocks),
        ["vgpu", "vgpu-amdgcn", "cuda", "amdgpu", "host", "remote"],
        "{text}"
    );
    // Not under mpirun: the remote plugin has no devices and says why.
    let remote = &blocks[5];
    assert_eq!(remote.devices, None, "{text}");
    assert!(
        remote.lines[0].contains("not started by an MPI launcher"),
        "{text}"
    );
    for b in &blocks {
        match b.devices {
            None => assert!(
                b.lines.first().is_some_and(|l| l.starts_with("  Reason: ")),
                "{text}"
            ),
            Some(n) => assert_eq!(
                b.lines
                    .iter()
                    .filter(|l| l.starts_with("  Device "))
                    .count(),
                n,
                "{text}"
            ),
        }
    }
}

#[test]
fn options() {
    let exe = env!("CARGO_BIN_EXE_rustomp-info");
    let version = Command::new(exe).arg("--version").output().expect("runs");
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("rustomp-info "));
    let bad = Command::new(exe).arg("--bogus").output().expect("runs");
    assert_eq!(bad.status.code(), Some(2));
}
