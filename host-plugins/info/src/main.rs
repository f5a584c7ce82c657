//! `rustomp-info`: what the offload runtime finds on this machine, plugin by plugin, as LLVM's
//! `llvm-offload-device-info` lists it.
//!
//! It constructs the built-in plugins the way `libomptarget.so.22.1` does (the same crates, in
//! the same order, reading the same variables: `RUSTOMP_CUDA_DRIVER`, `RUSTOMP_HSA_RUNTIME`,
//! `RUSTOMP_HOST_DEVICES`), asks each for its devices, opens each device and prints its
//! properties ([`rustomp_plugin::Device::properties`]); a plugin without devices prints the
//! reason it gives ([`Plugin::unavailable_reason`]: no driver library, no GPU, ...). It probes
//! nothing itself: what it prints is what a program would see.
//!
//! Output, one block per plugin (labels are stable, values are the plugin's words):
//!
//! ```text
//! Plugin cuda: no devices
//!   Reason: no CUDA driver: ...
//! Plugin host: 4 devices
//!   Device 0
//!     Kind     CPU
//!     ...
//! ```
//!
//! Under `mpirun -np N rustomp-proxy : -np 1 rustomp-info` the remote plugin's block lists
//! every proxy rank's devices as `Device 2 (rank 1, device 0)`, in the runtime's order.
//!
//! Exit status 0 whatever was found; 2 for an unknown option. External
//! `libomptarget.rtl.<name>.so` plugins are not listed.

use rustomp_plugin::Plugin;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

const USAGE: &str = "\
usage: rustomp-info [--help | --version]

Lists each offload plugin of rustomp's libomptarget.so.22.1 and its devices (kind, name,
architecture, memory, limits, driver), or why the plugin has none. Reads the variables the
runtime reads: RUSTOMP_CUDA_DRIVER, RUSTOMP_HSA_RUNTIME, RUSTOMP_HOST_DEVICES, RUSTOMP_VGPU_LIBRARY.
The virtual GPU is listed always; programs use it under RUSTOMP_VGPU=1. Under
`mpirun -np N rustomp-proxy : -np 1 rustomp-info` it also lists the proxies' devices, each as
(rank, local device).";

/// The built-in plugins, constructed and ordered as the host library does.
fn plugins() -> Vec<Box<dyn Plugin>> {
    // Listed always; programs use them only under RUSTOMP_VGPU=1.
    let mut plugins = rustomp_vgpu_plugin::plugins();
    plugins.extend::<Vec<Box<dyn Plugin>>>(vec![
        Box::new(rustomp_cuda_plugin::CudaPlugin::new(
            rustomp_cuda_plugin::CudaDriver::new(),
        )),
        Box::new(rustomp_amdgpu_plugin::AmdgpuPlugin::new(
            rustomp_amdgpu_plugin::AmdgpuDriver::new(),
        )),
        Box::new(rustomp_host_plugin::HostPlugin::new()),
        // Other nodes' devices, under `mpirun -np N rustomp-proxy : -np 1 rustomp-info`.
        Box::new(rustomp_remote_plugin::RemotePlugin::new()),
    ]);
    plugins
}

/// The installed host library next to this program (`P/bin/../lib`), when there is one.
fn installed_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let lib = exe.parent()?.parent()?.join("lib/libomptarget.so.22.1");
    lib.is_file().then_some(lib)
}

/// The listing of `plugins`: one block per plugin, one per device.
fn report(plugins: &[Box<dyn Plugin>]) -> String {
    let mut out = String::new();
    for plugin in plugins {
        let name = plugin.name();
        let count = plugin.number_of_devices();
        if count == 0 {
            let _ = writeln!(out, "Plugin {name}: no devices");
            let reason = plugin
                .unavailable_reason()
                .unwrap_or_else(|| "the plugin gives no reason".to_string());
            let _ = writeln!(out, "  Reason: {reason}");
            continue;
        }
        let plural = if count == 1 { "" } else { "s" };
        let _ = writeln!(out, "Plugin {name}: {count} device{plural}");
        for index in 0..count {
            // Remote devices say where they are: `Device 0 (rank 1, device 0)`.
            match plugin.device_location(index) {
                Some(at) => {
                    let _ = writeln!(out, "  Device {index} ({at})");
                }
                None => {
                    let _ = writeln!(out, "  Device {index}");
                }
            }
            match plugin.open_device(index, index, count) {
                Ok(device) => {
                    let properties = device.properties();
                    let width = properties.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
                    for (label, value) in properties {
                        let _ = writeln!(out, "    {label:<width$}  {value}");
                    }
                }
                Err(e) => {
                    let _ = writeln!(out, "    Error: cannot open the device: {e}");
                }
            }
        }
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    if let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "-V" | "--version" => {
                println!("rustomp-info {}", env!("CARGO_PKG_VERSION"));
                return;
            }
            other => {
                eprintln!("rustomp-info: unknown option `{other}`\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let mut text = format!(
        "rustomp {} offload plugins, in the order the runtime tries them\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(lib) = installed_library() {
        let _ = writeln!(text, "Runtime library: {}", lib.display());
    }
    if std::env::var("OMP_TARGET_OFFLOAD").is_ok_and(|v| v.eq_ignore_ascii_case("disabled")) {
        text.push_str(
            "Note: OMP_TARGET_OFFLOAD=disabled is set: programs use none of these devices\n",
        );
    }
    text.push_str(&report(&plugins()));
    // A reader that stopped early (`rustomp-info | head`) is not an error.
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("rustomp-info: cannot write the listing: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustomp_plugin::{Device, ErrorKind, ImageInfo, OffloadError, Result};

    /// A plugin with `devices` devices that cannot be opened, or none and a reason.
    struct Fake {
        devices: usize,
    }

    impl Plugin for Fake {
        fn name(&self) -> &str {
            "fake"
        }
        fn number_of_devices(&self) -> usize {
            self.devices
        }
        fn unavailable_reason(&self) -> Option<String> {
            (self.devices == 0).then(|| "no fake driver".to_string())
        }
        fn is_compatible(&self, _image: &ImageInfo<'_>) -> bool {
            false
        }
        fn open_device(
            &self,
            index: usize,
            _global: usize,
            _total: usize,
        ) -> Result<Box<dyn Device>> {
            Err(OffloadError::new(
                ErrorKind::DeviceUnavailable,
                format!("fake device {index} is busy"),
            ))
        }
    }

    #[test]
    fn no_devices_prints_the_reason_and_open_failures_are_reported() {
        let plugins: Vec<Box<dyn Plugin>> =
            vec![Box::new(Fake { devices: 0 }), Box::new(Fake { devices: 2 })];
        let text = report(&plugins);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "Plugin fake: no devices",
                "  Reason: no fake driver",
                "Plugin fake: 2 devices",
                "  Device 0",
                "    Error: cannot open the device: fake device 0 is busy",
                "  Device 1",
                "    Error: cannot open the device: fake device 1 is busy",
            ]
        );
    }

    #[test]
    fn host_devices_list_their_properties() {
        let plugins: Vec<Box<dyn Plugin>> = vec![Box::new(rustomp_host_plugin::HostPlugin::new())];
        let text = report(&plugins);
        let count = plugins[0].number_of_devices();
        assert!(
            text.starts_with(&format!("Plugin host: {count} device")),
            "{text}"
        );
        assert_eq!(text.matches("\n    Kind  ").count(), count, "{text}");
    }
}
