//! [`GenericImage`]: an image loaded on one device as the front's [`LoadedImage`]: its module,
//! the globals the generic layer writes (the device environment, the indirect-call table, the
//! host-call port), symbol lookups by kind, and the device `printf` drain.

use super::kernel::Kernel;
use super::shared::{Allocation, DeviceCore};
use super::{locked, Backend, GlobalSymbol, Initializers};
use crate::diag;
use crate::image::{self, ImageKind, KernelParameters};
use crate::layout::{self, IndirectTable};
use crate::{
    AllocKind, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig, LoadedImage,
    OffloadError, Result,
};
use core::ffi::c_void;
use core::ptr::NonNull;
use rustomp_abi::{symbols, DeviceEnvironment};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The environment published to the image and the memory behind its indirect tables (the
/// latest, and those it replaced: a kernel another thread launched may still read one).
pub(super) struct Published<B: Backend> {
    pub(super) environment: DeviceEnvironment,
    pub(super) tables: Vec<Allocation<B>>,
}

/// The device `printf` buffer's header: `u32 cursor`, `u32 truncated`, then the text.
const PRINTF_HEADER_BYTES: usize = 8;

/// An image loaded on one device.
pub struct GenericImage<B: Backend> {
    pub(super) core: Arc<DeviceCore<B>>,
    pub(super) module: Option<B::Module>,
    pub(super) kind: ImageKind,
    /// Destructor objects (`ObjectArray` style), run before unloading.
    pub(super) destructors: Vec<String>,
    /// Whether the constructors ran (the destructors run only then).
    pub(super) initialized: bool,
    /// The `__llvm_omp_host_call` port when the image's runtime can call host functions.
    pub(super) host_call: Option<Allocation<B>>,
    /// `__rustomp_printf_buffer` when the image prints through it (amdgcn).
    pub(super) printf_buffer: Option<GlobalSymbol>,
    /// Kernels by the handle given to the front (the address of their `Kernel`).
    pub(super) kernels: Mutex<HashMap<usize, Arc<Kernel<B>>>>,
    /// Each kernel's parameters as the image states them.
    pub(super) declared_parameters: HashMap<String, KernelParameters>,
    pub(super) published: Mutex<Published<B>>,
}

impl<B: Backend> GenericImage<B> {
    pub(super) fn load(core: &Arc<DeviceCore<B>>, image: &ImageInfo<'_>) -> Result<Self> {
        let label = &core.label;
        let invalid = |why: String| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!("{label}: cannot load image: {why}"),
            )
        };
        let kind = image::validate(image.bytes).map_err(|why| {
            invalid(format!(
                "{} bytes, corrupted or of no format the {} plugin runs: {why}",
                image.bytes.len(),
                core.plugin
            ))
        })?;
        let module = core
            .backend
            .load_module(image.bytes, &kind)
            .map_err(|e| e.context(format_args!("{label}: cannot load the {}", kind.label())))?;
        diag::debug(
            core.plugin,
            format_args!(
                "{label}: loaded a {} of {} bytes",
                kind.label(),
                image.bytes.len()
            ),
        );
        let destructor_prefix = match B::INITIALIZERS {
            Initializers::ObjectArray { .. } => Some("__fini_array_object_"),
            Initializers::LinkedArray { .. } => None,
        };
        let declared_parameters = image::kernel_parameters(image.bytes, &kind);
        let mut loaded = Self {
            core: Arc::clone(core),
            module: Some(module),
            destructors: destructor_prefix.map_or_else(Vec::new, |prefix| {
                image::symbols_with_prefix(image.bytes, &kind, prefix)
            }),
            kind,
            initialized: false,
            host_call: None,
            printf_buffer: None,
            kernels: Mutex::new(HashMap::new()),
            declared_parameters,
            published: Mutex::new(Published {
                environment: core.environment,
                tables: Vec::new(),
            }),
        };
        loaded.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&core.environment),
        )?;
        loaded.host_call = loaded.open_host_call_port()?;
        if loaded.host_call.is_some() {
            // Fortran `print` / `write` from the device reach the host through the port.
            loaded.write_global(
                rustomp_abi::fortran_output::SERVER_SYMBOL,
                &crate::fortran::output::server_address().to_le_bytes(),
            )?;
        }
        loaded.printf_buffer = loaded
            .lookup_global(PRINTF_BUFFER)?
            .filter(|g| g.size > PRINTF_HEADER_BYTES);
        loaded.run_initializers(true, image.bytes)?;
        loaded.initialized = true;
        Ok(loaded)
    }

    pub(super) fn module(&self) -> &B::Module {
        self.module
            .as_ref()
            .expect("the module lives until the image is dropped")
    }

    /// A global of the image, `None` when it does not define it.
    pub(super) fn lookup_global(&self, name: &str) -> Result<Option<GlobalSymbol>> {
        self.core.backend.global(self.module(), name).map_err(|e| {
            e.context(format_args!(
                "{}: looking up global {name}",
                self.core.label
            ))
        })
    }

    /// Writes `bytes` to global `name` if the image has it (`Ok(false)` when it does not); its
    /// size must match.
    pub(super) fn write_global(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let Some(global) = self.lookup_global(name)? else {
            diag::debug(
                self.core.plugin,
                format_args!(
                    "{}: the {} has no {name}; not written",
                    self.core.label,
                    self.kind.label()
                ),
            );
            return Ok(false);
        };
        if global.size != bytes.len() {
            return Err(OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "{}: global {name} of the {} has {} bytes, expected {}",
                    self.core.label,
                    self.kind.label(),
                    global.size,
                    bytes.len()
                ),
            ));
        }
        self.core.upload(global.address, bytes, name)?;
        Ok(true)
    }

    /// Allocates the `__llvm_omp_host_call` port in host memory the device reaches and
    /// publishes its address, when the image's runtime has the pointer for it.
    pub(super) fn open_host_call_port(&self) -> Result<Option<Allocation<B>>> {
        if self.lookup_global(symbols::HOST_CALL_PORT)?.is_none() {
            return Ok(None);
        }
        let bytes = core::mem::size_of::<rustomp_abi::HostCallPort>();
        let port = Allocation::new(&self.core, bytes, AllocKind::Host, "the host-call port")?;
        // SAFETY: fresh host-accessible memory of the port's size; all zero is a free port.
        unsafe { core::ptr::write_bytes(port.address as *mut u8, 0, bytes) };
        self.write_global(symbols::HOST_CALL_PORT, &port.address.to_le_bytes())?;
        Ok(Some(port))
    }

    /// Prints what device code wrote to the `printf` buffer and empties it.
    pub(super) fn drain_printf(&self) -> Result<()> {
        let Some(buffer) = self.printf_buffer else {
            return Ok(());
        };
        let mut header = [0u8; PRINTF_HEADER_BYTES];
        self.core
            .download(buffer.address, &mut header, PRINTF_BUFFER)?;
        let cursor = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let truncated = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if cursor == 0 && truncated == 0 {
            return Ok(());
        }
        let mut text = vec![0u8; cursor.min(buffer.size - PRINTF_HEADER_BYTES)];
        self.core.download(
            buffer.address + PRINTF_HEADER_BYTES as u64,
            &mut text,
            PRINTF_BUFFER,
        )?;
        self.core
            .upload(buffer.address, &[0u8; PRINTF_HEADER_BYTES], PRINTF_BUFFER)?;
        // Flushed at once: the output of a launch comes before what the host prints next.
        diag::c_stdout(&text, true);
        if truncated > 0 {
            eprintln!("omptarget warning: {}: device printf output of {truncated} call(s) was cut short (the buffer holds {} bytes per launch)", self.core.label, buffer.size - PRINTF_HEADER_BYTES);
        }
        Ok(())
    }
}

/// The device runtime's `printf` buffer (amdgcn; nvptx prints through the CUDA driver).
const PRINTF_BUFFER: &str = "__rustomp_printf_buffer";

impl<B: Backend> LoadedImage for GenericImage<B> {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        let function = self
            .core
            .backend
            .function(self.module(), name)
            .map_err(|e| {
                e.context(format_args!(
                    "{}: looking up kernel {name}",
                    self.core.label
                ))
            })?;
        let Some(function) = function else {
            diag::debug(
                self.core.plugin,
                format_args!(
                    "{}: the {} has no kernel {name}",
                    self.core.label,
                    self.kind.label()
                ),
            );
            return Ok(None);
        };
        let mut kernels = locked(&self.kernels);
        if let Some(known) = kernels.values().find(|k| k.name == name) {
            return Ok(Some(NonNull::from(&**known).cast()));
        }
        let kernel = Arc::new(Kernel {
            name: name.to_string(),
            function,
            facts: OnceLock::new(),
        });
        let handle = NonNull::from(&*kernel).cast();
        kernels.insert(handle.as_ptr() as usize, kernel);
        Ok(Some(handle))
    }

    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        Ok(self.lookup_global(name)?.map(|g| DeviceGlobal {
            address: g.address as *mut c_void,
            size: g.size,
        }))
    }

    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_kernel(kernel, args, config) }
    }

    fn set_indirect_table(&self, table: &IndirectTable) -> Result<()> {
        if table.is_empty() {
            return Ok(());
        }
        let core = &self.core;
        let block = table.block();
        let memory = Allocation::new(
            core,
            block.len(),
            AllocKind::Device,
            "the indirect-call table",
        )?;
        core.upload(memory.address, &block, "the indirect-call table")?;
        let entries = memory.address + IndirectTable::ENTRIES_OFFSET as u64;
        let mut published = locked(&self.published);
        // Our device runtime reads the one pointer to the whole block, so a kernel that runs
        // while this changes sees the old table or the new one, each with its own size. The
        // two-field forms stay for LLVM's device runtime and seed 000's readers.
        self.write_global(symbols::INDIRECT_CALL_TABLE, &memory.address.to_le_bytes())?;
        published.environment.indirect_call_table = entries as usize;
        published.environment.indirect_call_table_size = table.len() as u64;
        self.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&published.environment),
        )?;
        self.write_global(symbols::FPTR_MAP_POINTER, &entries.to_le_bytes())?;
        self.write_global(symbols::FPTR_MAP_SIZE, &(table.len() as u64).to_le_bytes())?;
        diag::debug(
            core.plugin,
            format_args!(
                "{}: indirect-call table of {} entries at {:#x}",
                core.label,
                table.len(),
                memory.address
            ),
        );
        // A previous table (the front publishes again when another library's image is loaded
        // on the device) is freed with the image: a running kernel may still read it.
        published.tables.push(memory);
        Ok(())
    }
}

impl<B: Backend> Drop for GenericImage<B> {
    fn drop(&mut self) {
        // Destructors before the module goes; at process exit the driver may already be shut
        // down, which leaves nothing to do but say so.
        if self.initialized {
            if let Err(e) = self.run_initializers(false, &[]) {
                diag::debug(self.core.plugin, format_args!("{e}"));
            }
        }
        // The kernels' handles die with the module.
        locked(&self.kernels).clear();
        self.module = None;
    }
}
