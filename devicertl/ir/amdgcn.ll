; What Rust cannot say for amdgcn: team-shared (LDS, addrspace 3) memory and workgroup-scope
; ordering. Linked into the runtime bitcode by `cargo xtask devicertl`; see src/arch/amdgcn.rs.
target datalayout = "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

@__rustomp_team_shared = internal addrspace(3) global [TEAM_SHARED_BYTES x i8] poison, align 16

define hidden ptr @__rustomp_team_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_team_shared to ptr)
}

; s_barrier alone does not order memory: release before, acquire after, at workgroup scope.
define hidden void @__rustomp_team_barrier() #1 {
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}

define hidden void @__rustomp_team_fence() #1 {
  fence syncscope("workgroup") seq_cst
  ret void
}

; hsa_kernel_dispatch_packet_t: workgroup_size_x (u16) at byte 4, grid_size_x (u32) at 12.
define hidden i32 @__rustomp_workgroup_size_x() #0 {
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %field = getelementptr inbounds i8, ptr addrspace(4) %packet, i64 4
  %size = load i16, ptr addrspace(4) %field, align 4
  %wide = zext i16 %size to i32
  ret i32 %wide
}

define hidden i32 @__rustomp_grid_size_x() #0 {
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %field = getelementptr inbounds i8, ptr addrspace(4) %packet, i64 12
  %size = load i32, ptr addrspace(4) %field, align 4
  ret i32 %size
}

declare void @llvm.amdgcn.s.barrier() #2
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() #3

attributes #0 = { alwaysinline nounwind readnone }
attributes #1 = { alwaysinline convergent nounwind }
attributes #2 = { convergent nounwind willreturn }
attributes #3 = { nounwind readnone speculatable willreturn }
