//! C++ global constructors and destructors of an image, in either style clang-22 emits
//! ([`Initializers`]): an array the plugin builds from `__init_array_object_*` pointers in
//! priority order (NVPTX), or the linker's `.init_array` (AMDGPU); one thread runs them.

use super::shared::Allocation;
use super::{Backend, GenericImage, Initializers, KernelLaunch};
use crate::diag;
use crate::image;
use crate::{AllocKind, ErrorKind, OffloadError, Result};

impl<B: Backend> GenericImage<B> {
    /// Runs the image's global constructors (`init`) or destructors once, one thread.
    pub(super) fn run_initializers(&self, init: bool, image_bytes: &[u8]) -> Result<()> {
        let label = &self.core.label;
        let kernel = match (B::INITIALIZERS, init) {
            (
                Initializers::ObjectArray { init_kernel, .. }
                | Initializers::LinkedArray { init_kernel, .. },
                true,
            ) => init_kernel,
            (
                Initializers::ObjectArray { fini_kernel, .. }
                | Initializers::LinkedArray { fini_kernel, .. },
                false,
            ) => fini_kernel,
        };
        // The array the kernel walks, kept alive until it finished.
        let mut array_walked = None;
        if let Initializers::ObjectArray { .. } = B::INITIALIZERS {
            let objects = if init {
                image::symbols_with_prefix(image_bytes, &self.kind, "__init_array_object_")
            } else {
                self.destructors.clone()
            };
            if objects.is_empty() {
                return Ok(());
            }
            let Some(array) = self.object_array(&objects, kernel)? else {
                return Ok(());
            };
            let (start, end) = if init {
                ("__init_array_start", "__init_array_end")
            } else {
                ("__fini_array_start", "__fini_array_end")
            };
            self.write_global(start, &array.0.address.to_le_bytes())?;
            self.write_global(end, &(array.0.address + array.1 as u64 * 8).to_le_bytes())?;
            array_walked = Some(array.0);
        }
        let function = self
            .core
            .backend
            .function(self.module(), kernel)
            .map_err(|e| e.context(format_args!("{label}: looking up {kernel}")))?;
        let Some(function) = function else {
            if array_walked.is_some() {
                diag::debug(
                    self.core.plugin,
                    format_args!("{label}: constructor objects but no {kernel} kernel; not run"),
                );
            }
            return Ok(());
        };
        let one = KernelLaunch {
            blocks: [1, 1, 1],
            threads: [1, 1, 1],
            dynamic_shared_bytes: 0,
            args: &[],
        };
        // SAFETY: the initializer kernels take no parameters; the array they walk lives until
        // the launch returned.
        unsafe { self.core.backend.launch(function, &one, None) }.map_err(|e| {
            e.context(format_args!(
                "{label}: running {kernel} of the {}",
                self.kind.label()
            ))
            .with_kind(ErrorKind::LaunchFailed)
        })?;
        diag::debug(self.core.plugin, format_args!("{label}: ran {kernel}"));
        Ok(())
    }

    /// The `ObjectArray` constructor array: the objects' function pointers in priority order,
    /// in device memory, and how many; `None` when none of the objects is in the image.
    pub(super) fn object_array(
        &self,
        objects: &[String],
        kernel: &str,
    ) -> Result<Option<(Allocation<B>, usize)>> {
        let mut ordered: Vec<(u16, &String)> = objects
            .iter()
            .map(|n| (image::init_priority(n).unwrap_or(u16::MAX), n))
            .collect();
        ordered.sort_by_key(|(priority, _)| *priority);
        let mut pointers = Vec::with_capacity(ordered.len() * 8);
        for (_, name) in &ordered {
            let Some(global) = self.lookup_global(name)? else {
                continue;
            };
            if global.size != 8 {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{}: {name} has {} bytes, expected a pointer",
                        self.core.label, global.size
                    ),
                ));
            }
            let mut pointer = [0u8; 8];
            self.core.download(global.address, &mut pointer, name)?;
            pointers.extend_from_slice(&pointer);
        }
        if pointers.is_empty() {
            return Ok(None);
        }
        let array = Allocation::new(
            &self.core,
            pointers.len(),
            AllocKind::Device,
            format_args!("the array {kernel} walks"),
        )?;
        self.core.upload(
            array.address,
            &pointers,
            format_args!("the array {kernel} walks"),
        )?;
        Ok(Some((array, pointers.len() / 8)))
    }
}
