; What Rust cannot say for nvptx64: team-shared (addrspace 3) memory, CTA-scope ordering, and
; the protected visibility of the globals the plugins look up.
; Linked into the runtime bitcode by `cargo xtask devicertl`; see src/arch/nvptx.rs.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

; The team state. External, not internal: clang links the runtime into every translation unit
; (-mlink-builtin-bitcode, internalized) and the device link adds libompdevice.a for calls that
; openmp-opt inserts later. The per-TU bitcode only declares this (xtask strips the definition),
; so every copy of the code reads and writes the one definition in libompdevice.a.
@__rustomp_team_shared = addrspace(3) global [TEAM_SHARED_BYTES x i8] undef, align 16

; Dynamic shared memory (the launch's dynamic size, after all static shared memory).
@__rustomp_dynamic_shared = external addrspace(3) global [0 x i8], align 16

; The globals the plugins look up by name in a loaded image: defined (weak, as LLVM's) in
; src/env.rs, made protected and kept here. Linking this module merges visibilities the way a
; linker does (the more restrictive wins), so the definitions become protected; @llvm.used keeps
; them, and their names, through the device link's LTO of libompdevice.a when no code of the
; program refers to them. The per-unit bitcode drops @llvm.used with the definitions
; (`llvm-extract --delete`); `cargo xtask devicertl` checks the linked result.
@__omp_rtl_device_environment = external protected global [48 x i8], align 8
@__omp_offloading_fptr_map_p = external protected global [8 x i8], align 8
@__omp_offloading_fptr_map_size = external protected global [8 x i8], align 8
@__rustomp_indirect_call_table = external protected global [8 x i8], align 8
@llvm.used = appending global [4 x ptr] [ptr @__omp_rtl_device_environment, ptr @__omp_offloading_fptr_map_p, ptr @__omp_offloading_fptr_map_size, ptr @__rustomp_indirect_call_table], section "llvm.metadata"

define hidden ptr @__rustomp_team_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_team_shared to ptr)
}

define hidden ptr @__rustomp_dynamic_shared_ptr() #0 {
  ret ptr addrspacecast (ptr addrspace(3) @__rustomp_dynamic_shared to ptr)
}

; All threads of the CTA meet; barrier.sync orders their memory accesses at CTA scope. Not the
; .aligned form: in generic mode the threads of a warp may reach the barrier from different
; places (a region on part of the workers), which .aligned leaves undefined (LLVM's DeviceRTL
; uses the non-aligned barrier.sync there too).
define hidden void @__rustomp_team_barrier() #1 {
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

; A parallel region on part of the team (`count` threads, a multiple of the warp size): named
; barrier 1, which orders the participants' memory like barrier 0 does for the whole CTA.
define hidden void @__rustomp_region_barrier(i32 %count) #1 {
  call void @llvm.nvvm.barrier.cta.sync.count(i32 1, i32 %count)
  ret void
}

; A barrier for any number of threads of the CTA (a region that is not whole warps): an mbarrier
; object in team-shared memory (sm_80 and later). `barrier.sync id, count` needs whole warps (its
; count is a multiple of the warp size and it waits for every non-exited lane of the caller's
; warp). mbarrier.arrive releases and mbarrier.try_wait (sm_90) or test_wait acquires, at CTA
; scope; racecheck and synccheck know it (cuda::barrier is made of it). Below sm_80 the runtime counts arrivals in
; memory instead: __nvvm_reflect("__CUDA_ARCH") is folded when the program is compiled for its
; --offload-arch, so the mbarrier code is dropped there before instruction selection.
@__rustomp_cuda_arch = private unnamed_addr constant [12 x i8] c"__CUDA_ARCH\00"

define hidden i1 @__rustomp_has_subset_barrier() #1 {
  %arch = call i32 @__nvvm_reflect(ptr @__rustomp_cuda_arch)
  %ok = icmp sge i32 %arch, 800
  ret i1 %ok
}

; Each body tests the arch itself (not through the function above, which llc would not
; inline), so a body left uninlined still compiles for sm_70: the mbarrier block is dead there.
define hidden void @__rustomp_subset_barrier_init(ptr %barrier, i32 %count) #1 {
  %arch = call i32 @__nvvm_reflect(ptr @__rustomp_cuda_arch)
  %ok = icmp sge i32 %arch, 800
  br i1 %ok, label %mbarrier, label %out

mbarrier:
  %b = addrspacecast ptr %barrier to ptr addrspace(3)
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) %b, i32 %count)
  br label %out

out:
  ret void
}

define hidden void @__rustomp_subset_barrier_inval(ptr %barrier) #1 {
  %arch = call i32 @__nvvm_reflect(ptr @__rustomp_cuda_arch)
  %ok = icmp sge i32 %arch, 800
  br i1 %ok, label %mbarrier, label %out

mbarrier:
  %b = addrspacecast ptr %barrier to ptr addrspace(3)
  call void @llvm.nvvm.mbarrier.inval.shared(ptr addrspace(3) %b)
  br label %out

out:
  ret void
}

define hidden void @__rustomp_subset_barrier_wait(ptr %barrier) #1 {
entry:
  %arch = call i32 @__nvvm_reflect(ptr @__rustomp_cuda_arch)
  %ok = icmp sge i32 %arch, 800
  br i1 %ok, label %arrive, label %out

arrive:
  %b = addrspacecast ptr %barrier to ptr addrspace(3)
  %token = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) %b)
  %parks = icmp sge i32 %arch, 900
  br i1 %parks, label %try, label %test

; sm_90 and later: try_wait suspends the thread in hardware until the phase completes or a
; system time limit passes, so the loop does not spin on the barrier's word.
try:
  %ready = call i1 @llvm.nvvm.mbarrier.try.wait.scope.cta.space.cta(ptr addrspace(3) %b, i64 %token)
  br i1 %ready, label %out, label %try

; sm_80 to sm_89 have only test_wait, which returns at once: sleep a little between tests.
test:
  %done = call i1 @llvm.nvvm.mbarrier.test.wait.shared(ptr addrspace(3) %b, i64 %token)
  br i1 %done, label %out, label %sleep

sleep:
  call void @llvm.nvvm.nanosleep(i32 32)
  br label %test

out:
  ret void
}

; One step of a spin-wait: on sm_70 and later the warp sleeps a little (nanosleep), which
; gives the SM to the warps the waiter waits for (and, on the virtual GPU, lets the other
; emulated threads run). Below sm_70 nothing.
define hidden void @__rustomp_pause() #3 {
  %arch = call i32 @__nvvm_reflect(ptr @__rustomp_cuda_arch)
  %ok = icmp sge i32 %arch, 700
  br i1 %ok, label %sleep, label %out

sleep:
  call void @llvm.nvvm.nanosleep(i32 32)
  br label %out

out:
  ret void
}

define hidden void @__rustomp_team_fence() #1 {
  fence syncscope("block") seq_cst
  ret void
}

; One-sided CTA-scope fences: clang-22's NVPTX backend drops the ordering of atomicrmw
; (acq_rel/release become a relaxed atom), so counters pair a relaxed RMW with these.
define hidden void @__rustomp_team_fence_release() #1 {
  fence syncscope("block") release
  ret void
}

define hidden void @__rustomp_team_fence_acquire() #1 {
  fence syncscope("block") acquire
  ret void
}

; Marks for the virtual GPU: PTX comments, no instruction on a GPU (only a compiler barrier).
; Retargeted for the virtual GPU each becomes a call of its hardware (build-tools' vgpu
; retarget), so its racecheck sees the synchronization OpenMP's locks and critical sections
; build from atomics, and its synccheck which threads are in an OpenMP barrier.
define hidden void @__rustomp_note_lock_acquired(ptr %lock) #3 {
  call void asm sideeffect "// rustomp-vgpu: lock acquired $0", "l,~{memory}"(ptr %lock)
  ret void
}

define hidden void @__rustomp_note_lock_released(ptr %lock) #3 {
  call void asm sideeffect "// rustomp-vgpu: lock released $0", "l,~{memory}"(ptr %lock)
  ret void
}

define hidden void @__rustomp_note_omp_barrier(i32 %entering) #3 {
  call void asm sideeffect "// rustomp-vgpu: omp barrier $0", "r,~{memory}"(i32 %entering)
  ret void
}

declare i32 @__nvvm_reflect(ptr)
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32) #2
declare void @llvm.nvvm.mbarrier.inval.shared(ptr addrspace(3)) #2
declare i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3)) #2
declare i1 @llvm.nvvm.mbarrier.test.wait.shared(ptr addrspace(3), i64) #2
declare i1 @llvm.nvvm.mbarrier.try.wait.scope.cta.space.cta(ptr addrspace(3), i64) #2
declare void @llvm.nvvm.barrier.cta.sync.all(i32) #2
declare void @llvm.nvvm.barrier.cta.sync.count(i32, i32) #2
declare void @llvm.nvvm.nanosleep(i32) #4

attributes #0 = { alwaysinline nounwind readnone }
attributes #1 = { alwaysinline convergent nounwind }
attributes #2 = { convergent nounwind }
attributes #3 = { alwaysinline nounwind }
attributes #4 = { nounwind }
