//! `rustomp-indirect-calls`: an LLVM pass plugin for clang-22 that makes calls through host
//! function pointers work in OpenMP device code (issue 25, seed 000).
//!
//! clang-22 compiles `fns[i](x)` in a target region as a plain indirect call, so a GPU jumps to
//! the host's address of the function. This pass rewrites, in OpenMP device modules only (the
//! module flag `openmp-device`: nvptx64, amdgcn and the host-offload x86_64 images), every call
//! and invoke whose callee is not a known function into
//!
//! ```llvm
//! %dev = call ptr @__kmpc_target_translate_fptr(ptr %fptr)
//! call i32 %dev(i32 %x)
//! ```
//!
//! and, for C++ virtual calls, translates the object's vtable pointer before the slot is read
//! (an object mapped from the host points to the host's vtable, which the device cannot read;
//! the runtime's table maps every slot of a `declare target indirect` vtable).
//!
//! What it leaves alone: direct calls and calls through constant function pointers (casts
//! included), inline assembly, intrinsics, calls of the translation itself (so running twice
//! changes nothing), the device runtime's own functions ([`translate`]), and, unless
//! `RUSTOMP_INDIRECT_CALLS=all`, every module without a `declare target indirect` entry: such a
//! module comes out exactly as it came in. An LTO pre-link compile is left to the LTO link,
//! which sees every translation unit of the device image.
//!
//! Host-offload (x86_64) modules call the translation through an internal helper that checks a
//! weak reference first: the CPU plugin binds it per loaded image; another libomptarget leaves
//! it unbound and the call goes where the pointer points, as before.
//!
//! The plugin's C++ part (`plugin/plugin.cpp`) only registers the pass with LLVM's pass
//! builder and calls [`rustomp_translate_indirect_calls`]. Environment, read by the pass:
//! `RUSTOMP_INDIRECT_CALLS=auto|all|off` (default auto), `RUSTOMP_INDIRECT_CALLS_TRACE=1` (one
//! line per module on stderr: the phase, the target, what was translated).

pub mod ir;
pub mod translate;

use llvm_sys::prelude::LLVMModuleRef;
use translate::{Action, Mode, Outcome, Phase};

/// The pass over one module, from the C++ plugin. `phase`: 0 at the end of a unit's
/// optimization pipeline, 1 at the end of an LTO pre-link compile, 2 at the end of the LTO
/// link. Returns whether the module changed. A bad `RUSTOMP_INDIRECT_CALLS` or a panic ends
/// the compiler with a message: silently skipping the rewrite would leave device code that
/// faults at run time.
///
/// # Safety
/// `module` is a live module that nothing else uses during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rustomp_translate_indirect_calls(
    module: LLVMModuleRef,
    phase: u32,
) -> bool {
    let result = std::panic::catch_unwind(|| {
        let Some(phase) = Phase::from_code(phase) else {
            return Err(format!("unknown phase {phase}"));
        };
        let mode = Mode::parse(std::env::var("RUSTOMP_INDIRECT_CALLS").ok().as_deref())?;
        // SAFETY: the caller's contract.
        let module = unsafe { ir::Module::from_raw(module) };
        let outcome = translate::run(&module, phase, mode);
        if std::env::var_os("RUSTOMP_INDIRECT_CALLS_TRACE").is_some_and(|v| v != "0")
            && outcome.action != Action::NotDevice
        {
            eprintln!("{}", trace_line(&module, phase, &outcome));
        }
        Ok(outcome.changed())
    });
    match result {
        Ok(Ok(changed)) => changed,
        Ok(Err(why)) => {
            eprintln!("rustomp-indirect-calls: {why}");
            std::process::exit(1)
        }
        Err(_) => {
            eprintln!("rustomp-indirect-calls: internal error (see the panic above); compile with RUSTOMP_INDIRECT_CALLS=off to go on without the translation");
            std::process::abort()
        }
    }
}

fn trace_line(module: &ir::Module<'_>, phase: Phase, o: &Outcome) -> String {
    let what = match o.action {
        Action::NotDevice => "not a device module".to_string(),
        Action::LeftToLink => "left to the LTO link".to_string(),
        Action::Disabled => "RUSTOMP_INDIRECT_CALLS=off".to_string(),
        Action::NoEntries => "no declare target indirect entries: unchanged".to_string(),
        Action::Translated => format!(
            "{} indirect calls and {} vtable pointers translated",
            o.calls, o.vtable_pointers
        ),
    };
    format!(
        "rustomp-indirect-calls: {} {} {}: {} entries; {what}",
        phase.name(),
        module.triple(),
        module.identifier(),
        o.entries
    )
}
