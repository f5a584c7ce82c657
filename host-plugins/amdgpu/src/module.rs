//! Code objects: a [`Module`] owns the executable a code object was loaded into and its reader,
//! and looks symbols up by kind: [`Module::global`] finds variables by name, [`Module::function`]
//! kernels by their descriptor `<name>.kd`.

use crate::hsa::result as r;
use crate::hsa::sys::*;
use crate::hsa::{failed, released};
use rustomp_plugin::generic::GlobalSymbol;
use rustomp_plugin::{ErrorKind, Result};
use std::ffi::CString;

/// A loaded code object: its executable and reader, destroyed together.
pub struct Module {
    api: &'static Api,
    executable: Executable,
    reader: CodeObjectReader,
}

impl Drop for Module {
    fn drop(&mut self) {
        released("an HSA executable", {
            // SAFETY: created in `load`, destroyed once; no kernel of it runs any more.
            unsafe { r::executable_destroy(self.api, self.executable) }
        });
        released("a code object reader", {
            // SAFETY: created in `load`, destroyed once, after its executable.
            unsafe { r::code_object_reader_destroy(self.api, self.reader) }
        });
    }
}

/// A kernel: its descriptor's address and the segment sizes a dispatch needs.
#[derive(Debug, Clone, Copy)]
pub struct Function {
    pub kernel_object: u64,
    pub kernarg_size: u32,
    pub group_size: u32,
    pub private_size: u32,
    pub dynamic_stack: bool,
}

impl Module {
    /// The code object in `bytes` loaded for `agent`, a GPU agent of `api`'s runtime, and frozen.
    pub fn load(api: &'static Api, agent: Agent, bytes: &[u8]) -> Result<Self> {
        let fail = failed(ErrorKind::InvalidImage);
        // SAFETY: `bytes` outlives this function, and the only load from the reader is below.
        let reader =
            unsafe { r::code_object_reader_create_from_memory(api, bytes) }.map_err(&fail)?;
        let executable =
            match r::executable_create_alt(api, profile::FULL, float_rounding_mode::DEFAULT) {
                Ok(executable) => executable,
                Err(e) => {
                    released("a code object reader", {
                        // SAFETY: created above, not used elsewhere.
                        unsafe { r::code_object_reader_destroy(api, reader) }
                    });
                    return Err(e.error(ErrorKind::InvalidImage));
                }
            };
        // Owned from here: an error below destroys both.
        let module = Module {
            api,
            executable,
            reader,
        };
        // SAFETY: live handles of this runtime and a GPU agent; `bytes` is still borrowed.
        unsafe { r::executable_load_agent_code_object(api, executable, agent, reader) }
            .map_err(&fail)?;
        // SAFETY: a live executable.
        unsafe { r::executable_freeze(api, executable) }.map_err(&fail)?;
        Ok(module)
    }

    /// The variable `name` as `agent` sees it, `None` when the code object has no such variable.
    pub fn global(&self, agent: Agent, name: &str) -> Result<Option<GlobalSymbol>> {
        let Some(symbol) = self.symbol(agent, name, symbol_kind::VARIABLE)? else {
            return Ok(None);
        };
        let address: u64 = self.symbol_info(symbol, symbol_info::VARIABLE_ADDRESS)?;
        let size: u32 = self.symbol_info(symbol, symbol_info::VARIABLE_SIZE)?;
        Ok(Some(GlobalSymbol {
            address,
            size: size as usize,
        }))
    }

    /// The kernel `name` (its descriptor, `<name>.kd`) for `agent`, `None` when the code object
    /// has no such kernel.
    pub fn function(&self, agent: Agent, name: &str) -> Result<Option<Function>> {
        let Some(symbol) = self.symbol(agent, &format!("{name}.kd"), symbol_kind::KERNEL)? else {
            return Ok(None);
        };
        Ok(Some(Function {
            kernel_object: self.symbol_info(symbol, symbol_info::KERNEL_OBJECT)?,
            kernarg_size: self.symbol_info(symbol, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE)?,
            group_size: self.symbol_info(symbol, symbol_info::KERNEL_GROUP_SEGMENT_SIZE)?,
            private_size: self.symbol_info(symbol, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE)?,
            dynamic_stack: self.symbol_info::<u8>(symbol, symbol_info::KERNEL_DYNAMIC_CALLSTACK)?
                != 0,
        }))
    }

    /// An executable symbol by name and kind, `None` when the code object has none.
    fn symbol(&self, agent: Agent, name: &str, kind: u32) -> Result<Option<ExecutableSymbol>> {
        let c = c_name(name);
        // SAFETY: a live, frozen executable and the GPU agent it was loaded for.
        let symbol =
            unsafe { r::executable_get_symbol_by_name(self.api, self.executable, &c, agent) }
                .map_err(failed(ErrorKind::SymbolNotFound))?;
        let Some(symbol) = symbol else {
            return Ok(None);
        };
        let found: u32 = self.symbol_info(symbol, symbol_info::TYPE)?;
        Ok((found == kind).then_some(symbol))
    }

    fn symbol_info<T: Default>(&self, symbol: ExecutableSymbol, attribute: u32) -> Result<T> {
        // SAFETY: a symbol of this live executable; callers pass the type each attribute
        // documents (hsa.h).
        unsafe { r::executable_symbol_get_info(self.api, symbol, attribute) }
            .map_err(failed(ErrorKind::SymbolNotFound))
    }
}

/// A name as C string; a name with an interior NUL cannot be in an image.
fn c_name(name: &str) -> CString {
    CString::new(name).unwrap_or_else(|_| CString::new("<invalid name>").expect("no NUL"))
}
