; What Rust cannot say for nvptx64: team-shared (addrspace 3) memory and CTA-scope ordering.
; Linked into the runtime bitcode by `cargo xtask devicertl`; see src/arch/nvptx.rs.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@__rustomp_team_shared = internal addrspace(3) global [TEAM_SHARED_BYTES x i8] undef, align 16

define hidden ptr @__rustomp_team_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_team_shared to ptr)
}

; All threads of the CTA meet; barrier.sync orders their memory accesses at CTA scope. Not the
; .aligned form: in generic mode the threads of a warp may reach the barrier from different
; places (a region on part of the workers), which .aligned leaves undefined (LLVM's DeviceRTL
; uses the non-aligned barrier.sync there too).
define hidden void @__rustomp_team_barrier() #1 {
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

define hidden void @__rustomp_team_fence() #1 {
  fence syncscope("block") seq_cst
  ret void
}

declare void @llvm.nvvm.barrier.cta.sync.all(i32) #2

attributes #0 = { alwaysinline nounwind readnone }
attributes #1 = { alwaysinline convergent nounwind }
attributes #2 = { convergent nounwind }
