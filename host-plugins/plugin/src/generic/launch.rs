//! One kernel launch: the kernel's facts (its `<name>_kernel_environment`, read at its first
//! launch, and the parameters it declares), the arguments checked against them, the geometry
//! ([`crate::geometry`]), the launch environment and teams-reduction buffer, host calls served
//! while it runs.

use super::kernel::{Kernel, KernelFacts};
use super::shared::Allocation;
use super::{locked, Backend, GenericImage, KernelLaunch, KernelParameters};
use crate::diag;
use crate::geometry::{self, KernelShape};
use crate::layout;
use crate::{AllocKind, ErrorKind, KernelHandle, LaunchConfig, OffloadError, Result};
use core::ffi::c_void;
use rustomp_abi::{exec_mode, symbols, ConfigurationEnvironment};

impl<B: Backend> GenericImage<B> {
    pub(super) fn read_facts(&self, kernel: &Kernel<B>) -> Result<KernelFacts> {
        let label = &self.core.label;
        let environment_name = format!("{}{}", kernel.name, symbols::KERNEL_ENVIRONMENT_SUFFIX);
        let config = match self.lookup_global(&environment_name)? {
            Some(global) if global.size >= layout::KERNEL_ENVIRONMENT_SIZE => {
                let mut bytes = [0u8; layout::KERNEL_ENVIRONMENT_SIZE];
                self.core
                    .download(global.address, &mut bytes, &environment_name)?;
                layout::parse_kernel_environment(&bytes).unwrap_or_default()
            }
            Some(global) => {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{label}: {environment_name} has {} bytes, expected {}",
                        global.size,
                        layout::KERNEL_ENVIRONMENT_SIZE
                    ),
                ));
            }
            None => {
                // Not an OpenMP kernel (no environment): launched as given, like LLVM's bare mode.
                diag::debug(
                    self.core.plugin,
                    format_args!(
                        "{label}: kernel {} has no kernel environment; bare launch",
                        kernel.name
                    ),
                );
                ConfigurationEnvironment {
                    exec_mode: exec_mode::BARE,
                    ..Default::default()
                }
            }
        };
        let function_max_threads = self
            .core
            .backend
            .function_max_threads(kernel.function)
            .map_err(|e| e.context(format_args!("{label}: querying kernel {}", kernel.name)))?;
        let parameters = match self.core.backend.function_parameters(kernel.function) {
            Ok(Some(declared)) => Some(declared),
            Ok(None) => self.declared_parameters.get(&kernel.name).copied(),
            Err(e) => {
                return Err(e.context(format_args!(
                    "{label}: asking for the parameters of kernel {}",
                    kernel.name
                )))
            }
        };
        Ok(KernelFacts {
            parameters,
            config,
            shape: KernelShape {
                exec_mode: config.exec_mode,
                min_threads: config.min_threads,
                max_threads: config.max_threads,
                function_max_threads: function_max_threads.max(1),
            },
            reduction_bytes: layout::reduction_buffer_bytes(&config),
        })
    }

    /// The launch environment of one launch: a fresh one with its teams-reduction buffer, or
    /// the device's shared zeroed one. The returned allocations live until the launch ended.
    pub(super) fn launch_environment(
        &self,
        facts: &KernelFacts,
    ) -> Result<(u64, Vec<Allocation<B>>)> {
        let core = &self.core;
        if facts.reduction_bytes > 0 {
            let buffer = Allocation::new(
                core,
                facts.reduction_bytes,
                AllocKind::Device,
                "the teams-reduction buffer",
            )?;
            let environment = Allocation::new(
                core,
                layout::LAUNCH_ENVIRONMENT_SIZE,
                AllocKind::Device,
                "the launch environment",
            )?;
            core.upload(
                environment.address,
                &layout::launch_environment_bytes(buffer.address),
                "the launch environment",
            )?;
            return Ok((environment.address, vec![environment, buffer]));
        }
        let mut idle = locked(&core.idle_launch_environment);
        if let Some(address) = *idle {
            return Ok((address, Vec::new()));
        }
        // Owned by the core (freed in its `drop`), so not an `Allocation`.
        let address = core
            .backend
            .alloc(layout::LAUNCH_ENVIRONMENT_SIZE, AllocKind::Device)
            .map_err(|e| {
                e.context(format_args!(
                    "{}: allocating the launch environment",
                    core.label
                ))
            })?;
        if let Err(e) = core.upload(
            address,
            &layout::launch_environment_bytes(0),
            "the launch environment",
        ) {
            // SAFETY: allocated just above and not handed out.
            let _ = unsafe { core.backend.free(address, AllocKind::Device) };
            return Err(e);
        }
        *idle = Some(address);
        Ok((address, Vec::new()))
    }

    /// `LoadedImage::launch`: the kernel's facts (read at its first launch), the arguments
    /// checked against its parameters, the geometry, the launch environment, host calls
    /// served while it runs, the `printf` drain after.
    ///
    /// # Safety
    /// As `LoadedImage::launch`.
    pub(super) unsafe fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let core = &self.core;
        let label = &core.label;
        let found = locked(&self.kernels).get(&(kernel.raw() as usize)).cloned();
        let kernel = found.ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{label}: {:p} is not a kernel of the {}",
                    kernel.raw(),
                    self.kind.label()
                ),
            )
        })?;
        let facts = kernel
            .facts
            .get_or_init(|| self.read_facts(&kernel))
            .clone()?;
        let g = geometry::compute(&core.grid, &facts.shape, config);
        let dynamic_shared_bytes = config
            .dyn_shared_bytes
            .max(core.environment.dynamic_mem_size);
        let mode = geometry::mode_name(facts.config.exec_mode);
        let what = || {
            format!("kernel {} ({} blocks of {} threads, {mode} mode, {dynamic_shared_bytes} bytes of dynamic shared memory)", kernel.name, g.blocks, g.threads)
        };
        core.backend
            .reserve_dynamic_shared(kernel.function, dynamic_shared_bytes)
            .map_err(|e| e.context(format_args!("{label}: {}", what())))?;
        let (environment, _per_launch) = self
            .launch_environment(&facts)
            .map_err(|e| e.context(format_args!("preparing {}", what())))?;
        let mut values: Vec<u64> = Vec::with_capacity(args.len() + 1);
        values.push(environment);
        values.extend(args.iter().map(|&a| a as u64));
        check_arguments(&kernel.name, facts.parameters, values.len())
            .map_err(|e| e.context(format_args!("{label}")))?;
        if diag::info_enabled(diag::infotype::PLUGIN) {
            // LLVM's plugin layer names itself and the plugin's own device number.
            eprintln!(
                "\"PluginInterface\" device {} info: {}",
                core.index,
                format_args!(
                    "Launching kernel {} with [{},{},{}] blocks and [{},{},{}] threads in {mode} mode",
                    kernel.name, g.blocks, g.blocks_yz[0], g.blocks_yz[1], g.threads, g.threads_yz[0], g.threads_yz[1]
                ),
            );
        }
        let launch = KernelLaunch {
            blocks: [g.blocks, g.blocks_yz[0], g.blocks_yz[1]],
            threads: [g.threads, g.threads_yz[0], g.threads_yz[1]],
            dynamic_shared_bytes,
            args: &values,
        };
        // The kernel may call host functions: serve them while it runs.
        let mut server = self.host_call.as_ref().map(|port| {
            let port = port.address as *mut rustomp_abi::HostCallPort;
            // SAFETY: the image's live port, shared with its device runtime.
            move || unsafe { crate::host_call::serve(port) }
        });
        let while_running = server.as_mut().map(|s| s as &mut dyn FnMut() -> bool);
        // SAFETY: the caller's values follow the launch environment, which lives in
        // `_per_launch` or the device until the launch returned.
        unsafe { core.backend.launch(kernel.function, &launch, while_running) }
            .map_err(|e| e.context(format_args!("{label}: {}", what())))?;
        self.drain_printf()
    }
}

/// Refuses a launch whose values (the launch environment, then one per argument) are not what
/// the kernel declares: a driver would read past them (or ignore some) and the kernel would
/// run on garbage, or the host process die inside the driver. LLVM stops such a launch with
/// "mismatch in kernel arguments" too.
fn check_arguments(kernel: &str, declared: Option<KernelParameters>, given: usize) -> Result<()> {
    let Some(declared) = declared else {
        return Ok(());
    };
    let bytes = given * core::mem::size_of::<u64>();
    if declared.count == given && declared.bytes == bytes {
        return Ok(());
    }
    Err(OffloadError::new(
        ErrorKind::LaunchFailed,
        format!(
            "mismatch in kernel arguments: kernel {kernel} declares {} parameter(s) ({} bytes) \
             but the program passed {given} ({bytes} bytes: the launch environment and {} \
             argument(s)); not launched. The host and device compilations of the target region \
             disagree on what it captures (e.g. code under `#ifdef __NVPTX__` or \
             `#if defined(__AMDGCN__)` that uses a variable the host's code does not)",
            declared.count,
            declared.bytes,
            given.saturating_sub(1),
        ),
    ))
}
