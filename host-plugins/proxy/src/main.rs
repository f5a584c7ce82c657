//! `rustomp-proxy`: one rank of `mpirun -np N rustomp-proxy : -np 1 ./app` that lends its
//! node's offload devices to the application (the job's last rank).
//!
//! It builds the plugins the runtime builds (CUDA, AMDGPU, CPU: the same crates, reading the
//! same variables), answers the application's hello with their devices, and serves its
//! requests (`server`) on a pool of threads (`pool`) until the application says stop; then it
//! finalizes MPI and exits 0. It exits 1 when no application greets it within
//! `RUSTOMP_REMOTE_STARTUP` seconds (default 60) or MPI fails; a proxy whose application
//! died is ended by the launcher (Open MPI's mpirun ends the job when a rank fails).

mod memory;
mod pool;
mod server;
mod transfer;

use rustomp_plugin::Plugin;
use rustomp_remote_plugin::mpi::Mpi;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "\
usage: mpirun -np N rustomp-proxy : -np 1 ./app

Serves this node's offload devices (CPU, CUDA, AMDGPU, as rustomp-info lists them) to the
OpenMP application started as the last rank of the same mpirun. Variables:
RUSTOMP_REMOTE_TIMEOUT (seconds, default 10), RUSTOMP_REMOTE_STARTUP (seconds to wait for the
application, default 60), RUSTOMP_HOST_DEVICES, RUSTOMP_CUDA_DRIVER, RUSTOMP_HSA_RUNTIME.";

/// The runtime library installed beside this program (`P/bin/../lib`).
fn runtime_library() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let lib = exe.parent()?.parent()?.join("lib/libomptarget.so.22.1");
    lib.is_file().then_some(lib)
}

fn seconds(name: &str, default: f64) -> Duration {
    let value = std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(value)
}

fn main() {
    if let Some(arg) = std::env::args().nth(1) {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "-V" | "--version" => {
                println!("rustomp-proxy {}", env!("CARGO_PKG_VERSION"));
                return;
            }
            other => {
                eprintln!("rustomp-proxy: unknown option `{other}`\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    // This process serves; it never offloads elsewhere itself. Set before any thread starts:
    // the runtime library the application's images load here reads it.
    std::env::set_var("RUSTOMP_REMOTE", "0");
    // x86_64 offload images need libomptarget.so.22.1; load the one installed beside this
    // program so that they find it wherever their own run path points.
    if let Some(lib) = runtime_library() {
        if let Ok(path) = std::ffi::CString::new(lib.as_os_str().as_encoded_bytes()) {
            // SAFETY: a valid path; the library's initializers are ours and do nothing.
            unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        }
    }
    let mpi = match Mpi::get() {
        Ok(mpi) => mpi,
        Err(e) => {
            eprintln!("rustomp-proxy: {e}");
            std::process::exit(1);
        }
    };
    if mpi.rank == mpi.size - 1 {
        eprintln!(
            "rustomp-proxy: this is rank {} of {}, the last, where the application runs (`mpirun -np N rustomp-proxy : -np 1 ./app`)",
            mpi.rank, mpi.size
        );
        let _ = mpi.finalize(Duration::from_secs(5));
        std::process::exit(2);
    }
    let plugins: Vec<Box<dyn Plugin>> = vec![
        Box::new(rustomp_cuda_plugin::CudaPlugin::new(
            rustomp_cuda_plugin::CudaDriver::new(),
        )),
        Box::new(rustomp_amdgpu_plugin::AmdgpuPlugin::new(
            rustomp_amdgpu_plugin::AmdgpuDriver::new(),
        )),
        Box::new(rustomp_host_plugin::HostPlugin::new()),
    ];
    let timeout = rustomp_remote_plugin::link::timeout_from_env();
    let startup = seconds("RUSTOMP_REMOTE_STARTUP", 60.0);
    let server = Arc::new(server::Server::new(mpi, plugins, timeout, startup));
    let (receiver, handler) = (server.clone(), server.clone());
    pool::serve(
        move || receiver.next_request(),
        move |incoming| handler.handle(incoming),
    );
    let trouble = server
        .trouble
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(why) = &trouble {
        eprintln!("rustomp-proxy (rank {}): {why}", mpi.rank);
    }
    // Every thread finished its request; the application waits for this finalization.
    if let Err(e) = mpi.finalize(timeout) {
        eprintln!("rustomp-proxy (rank {}): {e}", mpi.rank);
    }
    std::process::exit(i32::from(trouble.is_some()));
}
