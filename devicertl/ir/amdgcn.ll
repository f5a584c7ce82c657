; What Rust cannot say for amdgcn: team-shared (LDS, addrspace 3) memory, workgroup-scope
; ordering, and the protected visibility of the globals the plugins look up. Linked into the
; runtime bitcode by `cargo xtask devicertl`; see src/arch/amdgcn.rs.
target datalayout = "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

; The team state: one external definition in libompdevice.a (see ir/nvptx.ll for why).
@__rustomp_team_shared = addrspace(3) global [TEAM_SHARED_BYTES x i8] poison, align 16

; Dynamic LDS: the launch's dynamic group segment, after all static LDS.
@__rustomp_dynamic_shared = external addrspace(3) global [0 x i8], align 16

; The globals the plugins look up by name: protected and kept here (see ir/nvptx.ll for how).
; @llvm.used lives in the global address space, as rustc's does: appending globals that link
; must agree on it.
@__omp_rtl_device_environment = external protected addrspace(1) global [48 x i8], align 8
@__omp_offloading_fptr_map_p = external protected addrspace(1) global [8 x i8], align 8
@__omp_offloading_fptr_map_size = external protected addrspace(1) global [8 x i8], align 8
@__rustomp_indirect_call_table = external protected addrspace(1) global [8 x i8], align 8
@llvm.used = appending addrspace(1) global [4 x ptr] [ptr addrspacecast (ptr addrspace(1) @__omp_rtl_device_environment to ptr), ptr addrspacecast (ptr addrspace(1) @__omp_offloading_fptr_map_p to ptr), ptr addrspacecast (ptr addrspace(1) @__omp_offloading_fptr_map_size to ptr), ptr addrspacecast (ptr addrspace(1) @__rustomp_indirect_call_table to ptr)], section "llvm.metadata"

define hidden ptr @__rustomp_team_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_team_shared to ptr)
}

define hidden ptr @__rustomp_dynamic_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_dynamic_shared to ptr)
}

; A code pointer the optimizer must not follow. amdgcn's link-time optimization assumes a
; closed world and turns an indirect call with few candidates of its signature into direct
; calls, which then inline: through `__kmpc_parallel_60`'s call of the region (one call site
; per argument count) that put every outlined region of a program into one function (03's
; reductions: 112k lines of IR, codegen past 15 minutes). No instruction is emitted.
define hidden ptr @__rustomp_opaque_code_ptr(ptr %p) #0 {
  %q = call ptr asm "", "=v,0"(ptr %p)
  ret ptr %q
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

define hidden void @__rustomp_team_fence_release() #1 {
  fence syncscope("workgroup") release
  ret void
}

define hidden void @__rustomp_team_fence_acquire() #1 {
  fence syncscope("workgroup") acquire
  ret void
}

; hsa_kernel_dispatch_packet_t: workgroup_size_x/y/z (u16) at bytes 4/6/8, grid_size_x/y/z
; (u32) at 12/16/20.
define hidden i32 @__rustomp_workgroup_size(i32 %dim) #0 {
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %scaled = shl i32 %dim, 1
  %offset = add i32 %scaled, 4
  %wide_offset = zext i32 %offset to i64
  %field = getelementptr inbounds i8, ptr addrspace(4) %packet, i64 %wide_offset
  %size = load i16, ptr addrspace(4) %field, align 2
  %wide = zext i16 %size to i32
  ret i32 %wide
}

define hidden i32 @__rustomp_grid_size(i32 %dim) #0 {
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %scaled = shl i32 %dim, 2
  %offset = add i32 %scaled, 12
  %wide_offset = zext i32 %offset to i64
  %field = getelementptr inbounds i8, ptr addrspace(4) %packet, i64 %wide_offset
  %size = load i32, ptr addrspace(4) %field, align 4
  ret i32 %size
}

; Marks for the virtual GPU, as ir/nvptx.ll's: assembly comments, no instruction on a GPU.
define hidden void @__rustomp_note_lock_acquired(ptr %lock) #4 {
  call void asm sideeffect "; rustomp-vgpu: lock acquired $0", "v,~{memory}"(ptr %lock)
  ret void
}

define hidden void @__rustomp_note_lock_released(ptr %lock) #4 {
  call void asm sideeffect "; rustomp-vgpu: lock released $0", "v,~{memory}"(ptr %lock)
  ret void
}

define hidden void @__rustomp_note_omp_barrier(i32 %entering) #4 {
  call void asm sideeffect "; rustomp-vgpu: omp barrier $0", "v,~{memory}"(i32 %entering)
  ret void
}

declare void @llvm.amdgcn.s.barrier() #2
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() #3

attributes #0 = { alwaysinline nounwind readnone }
attributes #1 = { alwaysinline convergent nounwind }
attributes #2 = { convergent nounwind willreturn }
attributes #3 = { nounwind readnone speculatable willreturn }
attributes #4 = { alwaysinline nounwind }
