//! Which NVIDIA GPUs can run which images (pure functions, no driver); the formats themselves
//! are read by the generic layer (`rustomp_plugin::image`).
//!
//! The hardware rules LLVM's CUDA plugin applies: a cubin runs on GPUs of the same major compute
//! capability with an equal or higher minor one (SASS is not portable across majors); PTX runs
//! on any GPU at or above its target, which the driver compiles it for; the driver picks a
//! fatbinary's member.

use rustomp_plugin::image::{parse_sm, ImageKind};

/// A compute capability, e.g. 9.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub fn sm(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl std::fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}", self.sm())
    }
}

/// Whether an image of `kind` (with the container's `arch` string, possibly empty) runs on a
/// GPU of capability `cc`; `Err` says why not.
pub fn runs_on(kind: &ImageKind, arch: &str, cc: ComputeCapability) -> Result<(), String> {
    match *kind {
        ImageKind::Cubin { sm } => {
            let (major, minor) = (sm / 10, sm % 10);
            if major == cc.major && minor <= cc.minor {
                Ok(())
            } else {
                Err(format!("a cubin for sm_{sm} runs only on GPUs sm_{major}{minor}..sm_{major}9, this one is {cc}"))
            }
        }
        ImageKind::Ptx { sm } => match sm.or_else(|| parse_sm(arch)) {
            Some(sm) if sm > cc.sm() => Err(format!(
                "PTX for sm_{sm} needs a GPU of at least that capability, this one is {cc}"
            )),
            _ => Ok(()),
        },
        ImageKind::Fatbinary => Ok(()),
        _ => Err(format!("a {} is not an NVIDIA image", kind.label())),
    }
}

/// Whether an image is one of the NVIDIA formats, with a container triple (empty when unknown)
/// that is ours.
pub fn accepts(kind: &ImageKind, triple: &str) -> bool {
    let ours = triple.is_empty() || triple.starts_with("nvptx64");
    ours && matches!(
        kind,
        ImageKind::Cubin { .. } | ImageKind::Ptx { .. } | ImageKind::Fatbinary
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubins_run_within_their_major_ptx_at_or_above_its_target() {
        let h100 = ComputeCapability { major: 9, minor: 0 };
        let a100 = ComputeCapability { major: 8, minor: 0 };
        let rtx4090 = ComputeCapability { major: 8, minor: 9 };
        assert!(runs_on(&ImageKind::Cubin { sm: 90 }, "sm_90", h100).is_ok());
        assert!(runs_on(&ImageKind::Cubin { sm: 80 }, "sm_80", rtx4090).is_ok());
        assert!(
            runs_on(&ImageKind::Cubin { sm: 86 }, "", a100).is_err(),
            "minor too high"
        );
        let why = runs_on(&ImageKind::Cubin { sm: 80 }, "sm_80", h100).unwrap_err();
        assert!(why.contains("sm_80") && why.contains("sm_90"), "{why}");
        assert!(runs_on(&ImageKind::Cubin { sm: 90 }, "", a100).is_err());
        assert!(runs_on(&ImageKind::Ptx { sm: Some(80) }, "", h100).is_ok());
        assert!(runs_on(&ImageKind::Ptx { sm: Some(90) }, "", a100).is_err());
        assert!(
            runs_on(&ImageKind::Ptx { sm: None }, "sm_90", a100).is_err(),
            "container arch used"
        );
        assert!(runs_on(&ImageKind::Fatbinary, "", a100).is_ok());
        assert!(runs_on(&ImageKind::HostElf, "", a100).is_err());
    }

    #[test]
    fn only_nvidia_images_are_accepted() {
        assert!(accepts(&ImageKind::Cubin { sm: 90 }, "nvptx64-nvidia-cuda"));
        assert!(accepts(&ImageKind::Fatbinary, ""));
        assert!(!accepts(&ImageKind::Cubin { sm: 90 }, "amdgcn-amd-amdhsa"));
        assert!(!accepts(&ImageKind::HostElf, ""));
    }
}
