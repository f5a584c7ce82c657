//! The part of LLVM 22's C API the pass uses, as safe handles.
//!
//! Every handle is LLVM's pointer tagged with the lifetime `'m` of the module it belongs to. The
//! pass adds instructions and declarations and changes operands, but never deletes anything, so
//! a handle stays valid for as long as its module lives; that is the one invariant every
//! `unsafe` block below relies on ("a live handle").

use llvm_sys::core::*;
use llvm_sys::debuginfo::LLVMInstructionGetDebugLoc;
use llvm_sys::ir_reader::LLVMParseIRInContext2;
use llvm_sys::prelude::*;
use llvm_sys::{
    LLVMAtomicOrdering, LLVMAttributeFunctionIndex, LLVMIntPredicate, LLVMLinkage, LLVMOpcode,
};
use std::ffi::{c_char, CStr, CString};
use std::marker::PhantomData;

/// A module the pass works on (borrowed from LLVM for `'m`).
pub struct Module<'m> {
    raw: LLVMModuleRef,
    _module: PhantomData<&'m mut ()>,
}

/// A value of a module: a global, function, instruction, argument, constant or metadata node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Value<'m> {
    raw: LLVMValueRef,
    _module: PhantomData<&'m ()>,
}

/// A basic block of a function of the module.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Block<'m> {
    raw: LLVMBasicBlockRef,
    _module: PhantomData<&'m ()>,
}

/// A type of a module's context.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Type<'m> {
    raw: LLVMTypeRef,
    _module: PhantomData<&'m ()>,
}

/// Copies an LLVM string of `len` bytes (not NUL-terminated) into a `String`.
///
/// # Safety
/// `ptr` is null or points to `len` readable bytes.
unsafe fn string(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    String::from_utf8_lossy(bytes).into_owned()
}

fn c_string(s: &str) -> CString {
    CString::new(s).expect("names the pass uses have no NUL")
}

impl<'m> Module<'m> {
    /// # Safety
    /// `raw` is a live module that nothing else reads or changes during `'m`.
    pub unsafe fn from_raw(raw: LLVMModuleRef) -> Self {
        Self {
            raw,
            _module: PhantomData,
        }
    }

    fn value(&self, raw: LLVMValueRef) -> Option<Value<'m>> {
        (!raw.is_null()).then_some(Value {
            raw,
            _module: PhantomData,
        })
    }

    fn context(&self) -> LLVMContextRef {
        // SAFETY: a live module.
        unsafe { LLVMGetModuleContext(self.raw) }
    }

    pub fn triple(&self) -> String {
        // SAFETY: a live module; the triple is a NUL-terminated string it owns.
        unsafe { CStr::from_ptr(LLVMGetTarget(self.raw)) }
            .to_string_lossy()
            .into_owned()
    }

    pub fn identifier(&self) -> String {
        let mut len = 0;
        // SAFETY: a live module; LLVM returns `len` bytes it owns.
        unsafe { string(LLVMGetModuleIdentifier(self.raw, &mut len), len) }
    }

    /// Whether the module flag `key` is present (`!llvm.module.flags`).
    pub fn has_flag(&self, key: &str) -> bool {
        // SAFETY: a live module; `key` is `key.len()` bytes.
        !unsafe { LLVMGetModuleFlag(self.raw, key.as_ptr().cast(), key.len()) }.is_null()
    }

    /// The operands (metadata nodes) of the named metadata `name`, e.g. `omp_offload.info`.
    pub fn named_metadata(&self, name: &str) -> Vec<Value<'m>> {
        let name = c_string(name);
        // SAFETY: a live module and a NUL-terminated name.
        let count = unsafe { LLVMGetNamedMetadataNumOperands(self.raw, name.as_ptr()) } as usize;
        let mut nodes = vec![std::ptr::null_mut(); count];
        if count > 0 {
            // SAFETY: `nodes` has room for the `count` operands LLVM writes.
            unsafe { LLVMGetNamedMetadataOperands(self.raw, name.as_ptr(), nodes.as_mut_ptr()) };
        }
        nodes
            .into_iter()
            .filter_map(|raw| self.value(raw))
            .collect()
    }

    pub fn globals(&self) -> Vec<Value<'m>> {
        let mut out = Vec::new();
        // SAFETY: a live module; each global is a live handle of it.
        let mut g = unsafe { LLVMGetFirstGlobal(self.raw) };
        while let Some(v) = self.value(g) {
            out.push(v);
            // SAFETY: as above.
            g = unsafe { LLVMGetNextGlobal(g) };
        }
        out
    }

    pub fn functions(&self) -> Vec<Value<'m>> {
        let mut out = Vec::new();
        // SAFETY: a live module; each function is a live handle of it.
        let mut f = unsafe { LLVMGetFirstFunction(self.raw) };
        while let Some(v) = self.value(f) {
            out.push(v);
            // SAFETY: as above.
            f = unsafe { LLVMGetNextFunction(f) };
        }
        out
    }

    pub fn function(&self, name: &str) -> Option<Value<'m>> {
        let name = c_string(name);
        // SAFETY: a live module and a NUL-terminated name.
        self.value(unsafe { LLVMGetNamedFunction(self.raw, name.as_ptr()) })
    }

    /// Declares `name` with type `ty` (a function declaration with external linkage).
    pub fn add_function(&self, name: &str, ty: Type<'m>) -> Value<'m> {
        let name = c_string(name);
        // SAFETY: a live module, a NUL-terminated name and a function type of its context.
        let f = unsafe { LLVMAddFunction(self.raw, name.as_ptr(), ty.raw) };
        self.value(f).expect("LLVMAddFunction returns the function")
    }

    /// The id of the instruction metadata kind `name` (e.g. `tbaa`).
    pub fn metadata_kind(&self, name: &str) -> u32 {
        // SAFETY: a live context; `name` is `name.len()` bytes.
        unsafe { LLVMGetMDKindIDInContext(self.context(), name.as_ptr().cast(), name.len() as u32) }
    }

    /// `ptr addrspace(n)`.
    pub fn pointer_type(&self, address_space: u32) -> Type<'m> {
        Type {
            // SAFETY: a live context.
            raw: unsafe { LLVMPointerTypeInContext(self.context(), address_space) },
            _module: PhantomData,
        }
    }

    /// `ret (params)`.
    pub fn function_type(&self, ret: Type<'m>, params: &[Type<'m>]) -> Type<'m> {
        let mut params: Vec<LLVMTypeRef> = params.iter().map(|t| t.raw).collect();
        // SAFETY: types of this module's context; `params` holds `params.len()` of them.
        let raw = unsafe { LLVMFunctionType(ret.raw, params.as_mut_ptr(), params.len() as u32, 0) };
        Type {
            raw,
            _module: PhantomData,
        }
    }

    /// Adds the attribute `name` (an enum attribute without a value, e.g. `nounwind`) to `f`.
    pub fn add_function_attribute(&self, f: Value<'m>, name: &str) {
        // SAFETY: `name` is `name.len()` bytes; a live context and function.
        unsafe {
            let kind = LLVMGetEnumAttributeKindForName(name.as_ptr().cast(), name.len());
            let attribute = LLVMCreateEnumAttribute(self.context(), kind, 0);
            LLVMAddAttributeAtIndex(f.raw, LLVMAttributeFunctionIndex, attribute);
        }
    }

    pub fn builder(&self) -> Builder<'m> {
        Builder {
            // SAFETY: a live context; the builder is disposed of on drop.
            raw: unsafe { LLVMCreateBuilderInContext(self.context()) },
            _module: PhantomData,
        }
    }
}

impl<'m> Value<'m> {
    fn wrap(raw: LLVMValueRef) -> Option<Self> {
        (!raw.is_null()).then_some(Value {
            raw,
            _module: PhantomData,
        })
    }

    pub fn name(&self) -> String {
        let mut len = 0;
        // SAFETY: a live handle; LLVM returns `len` bytes it owns.
        unsafe { string(LLVMGetValueName2(self.raw, &mut len), len) }
    }

    pub fn type_of(&self) -> Type<'m> {
        Type {
            // SAFETY: a live handle.
            raw: unsafe { LLVMTypeOf(self.raw) },
            _module: PhantomData,
        }
    }

    /// Whether a function has the string attribute `key` (any value).
    pub fn has_string_attribute(&self, key: &str) -> bool {
        // SAFETY: a live function; `key` is `key.len()` bytes.
        !unsafe {
            LLVMGetStringAttributeAtIndex(
                self.raw,
                LLVMAttributeFunctionIndex,
                key.as_ptr().cast(),
                key.len() as u32,
            )
        }
        .is_null()
    }

    /// A global (function or variable) without a body or initializer.
    pub fn is_declaration(&self) -> bool {
        // SAFETY: a live handle to a global (the caller's business; LLVM checks in debug builds).
        unsafe { LLVMIsDeclaration(self.raw) != 0 }
    }

    pub fn is_function(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsAFunction(self.raw) }.is_null()
    }

    pub fn is_global_variable(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsAGlobalVariable(self.raw) }.is_null()
    }

    pub fn is_constant(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsAConstant(self.raw) }.is_null()
    }

    pub fn is_inline_asm(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsAInlineAsm(self.raw) }.is_null()
    }

    /// A `call` or an `invoke` (`callbr` is left out: its callee is inline assembly).
    pub fn is_call_or_invoke(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { !LLVMIsACallInst(self.raw).is_null() || !LLVMIsAInvokeInst(self.raw).is_null() }
    }

    pub fn is_call(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsACallInst(self.raw) }.is_null()
    }

    pub fn is_load(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsALoadInst(self.raw) }.is_null()
    }

    pub fn is_gep(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsAGetElementPtrInst(self.raw) }.is_null()
    }

    /// A cast instruction between pointers (`bitcast`, `addrspacecast`).
    pub fn is_pointer_cast(&self) -> bool {
        // SAFETY: a live handle.
        if unsafe { LLVMIsACastInst(self.raw) }.is_null() {
            return false;
        }
        matches!(
            // SAFETY: a live instruction.
            unsafe { LLVMGetInstructionOpcode(self.raw) },
            LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast
        )
    }

    /// An `inttoptr` instruction.
    pub fn is_int_to_ptr(&self) -> bool {
        // SAFETY: a live handle; the opcode is only read of an instruction.
        !unsafe { LLVMIsACastInst(self.raw) }.is_null()
            && unsafe { LLVMGetInstructionOpcode(self.raw) } == LLVMOpcode::LLVMIntToPtr
    }

    /// An atomic `load` (any ordering).
    pub fn is_atomic_load(&self) -> bool {
        // SAFETY: a live handle; the ordering is only read of a load.
        self.is_load()
            && unsafe { LLVMGetOrdering(self.raw) }
                != LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
    }

    /// Any cast instruction (`inttoptr`, `ptrtoint`, `bitcast`, `addrspacecast`, ...).
    pub fn is_cast(&self) -> bool {
        // SAFETY: a live handle.
        !unsafe { LLVMIsACastInst(self.raw) }.is_null()
    }

    /// A constant expression computing an address from its first operand (`getelementptr`,
    /// `bitcast`, `addrspacecast`).
    pub fn is_constant_address_expr(&self) -> bool {
        // SAFETY: a live handle.
        if unsafe { LLVMIsAConstantExpr(self.raw) }.is_null() {
            return false;
        }
        // SAFETY: a live constant expression.
        let opcode = unsafe { LLVMGetConstOpcode(self.raw) };
        matches!(
            opcode,
            LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast
        )
    }

    /// A constant expression that only changes a pointer's type (`bitcast`, `addrspacecast`).
    pub fn is_constant_pointer_cast(&self) -> bool {
        // SAFETY: a live handle.
        if unsafe { LLVMIsAConstantExpr(self.raw) }.is_null() {
            return false;
        }
        matches!(
            // SAFETY: a live constant expression.
            unsafe { LLVMGetConstOpcode(self.raw) },
            LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast
        )
    }

    pub fn operand_count(&self) -> usize {
        // SAFETY: a live handle.
        unsafe { LLVMGetNumOperands(self.raw) }.max(0) as usize
    }

    pub fn operand(&self, index: usize) -> Option<Value<'m>> {
        if index >= self.operand_count() {
            return None;
        }
        // SAFETY: a live handle; `index` is in range.
        Self::wrap(unsafe { LLVMGetOperand(self.raw, index as u32) })
    }

    /// Sets operand `index` (in range) to `value`, whose type must be the operand's.
    pub fn set_operand(&self, index: usize, value: Value<'m>) {
        assert!(index < self.operand_count(), "operand {index} out of range");
        // SAFETY: live handles; `index` is in range.
        unsafe { LLVMSetOperand(self.raw, index as u32, value.raw) }
    }

    /// The callee operand of a call or invoke: the last operand (`CallBase::getCalledOperand`).
    pub fn callee(&self) -> Value<'m> {
        // SAFETY: a live call or invoke.
        Self::wrap(unsafe { LLVMGetCalledValue(self.raw) }).expect("a call has a callee")
    }

    /// Makes the call or invoke call `callee` (same function type) instead.
    pub fn set_callee(&self, callee: Value<'m>) {
        let last = self.operand_count() - 1;
        debug_assert_eq!(
            self.operand(last),
            Some(self.callee()),
            "the callee is the last operand"
        );
        self.set_operand(last, callee);
    }

    /// For a function: every instruction of its body, block by block.
    pub fn instructions(&self) -> Vec<Value<'m>> {
        let mut out = Vec::new();
        // SAFETY: a live function; blocks and instructions are live handles of it.
        let mut block = unsafe { LLVMGetFirstBasicBlock(self.raw) };
        while !block.is_null() {
            // SAFETY: as above.
            let mut inst = unsafe { LLVMGetFirstInstruction(block) };
            while let Some(v) = Self::wrap(inst) {
                out.push(v);
                // SAFETY: as above.
                inst = unsafe { LLVMGetNextInstruction(inst) };
            }
            // SAFETY: as above.
            block = unsafe { LLVMGetNextBasicBlock(block) };
        }
        out
    }

    pub fn next_instruction(&self) -> Option<Value<'m>> {
        // SAFETY: a live instruction.
        Self::wrap(unsafe { LLVMGetNextInstruction(self.raw) })
    }

    /// The instructions (and other values) that use this value, each once.
    pub fn users(&self) -> Vec<Value<'m>> {
        let mut out: Vec<Value<'m>> = Vec::new();
        // SAFETY: a live handle; each use and its user are live.
        let mut using = unsafe { LLVMGetFirstUse(self.raw) };
        while !using.is_null() {
            // SAFETY: as above.
            if let Some(user) = Self::wrap(unsafe { LLVMGetUser(using) }) {
                if !out.contains(&user) {
                    out.push(user);
                }
            }
            // SAFETY: as above.
            using = unsafe { LLVMGetNextUse(using) };
        }
        out
    }

    /// A global variable's initializer.
    pub fn initializer(&self) -> Option<Value<'m>> {
        // SAFETY: a live global variable.
        Self::wrap(unsafe { LLVMGetInitializer(self.raw) })
    }

    /// The instruction's metadata of kind `kind` (a node), if attached.
    pub fn metadata(&self, kind: u32) -> Option<Value<'m>> {
        // SAFETY: a live instruction.
        Self::wrap(unsafe { LLVMGetMetadata(self.raw, kind) })
    }

    /// The operands of a metadata node (as values; null operands left out).
    pub fn node_operands(&self) -> Vec<Value<'m>> {
        // SAFETY: a live handle.
        if unsafe { LLVMIsAMDNode(self.raw) }.is_null() {
            return Vec::new();
        }
        // SAFETY: a live metadata node.
        let count = unsafe { LLVMGetMDNodeNumOperands(self.raw) } as usize;
        let mut raw = vec![std::ptr::null_mut(); count];
        // SAFETY: `raw` has room for the `count` operands LLVM writes.
        unsafe { LLVMGetMDNodeOperands(self.raw, raw.as_mut_ptr()) };
        raw.into_iter().filter_map(Self::wrap).collect()
    }

    /// The text of a metadata string.
    pub fn node_string(&self) -> Option<String> {
        // SAFETY: a live handle.
        if unsafe { LLVMIsAMDString(self.raw) }.is_null() {
            return None;
        }
        let mut len = 0u32;
        // SAFETY: a live metadata string; LLVM returns `len` bytes it owns.
        Some(unsafe { string(LLVMGetMDString(self.raw, &mut len), len as usize) })
    }

    /// The value of an integer constant.
    pub fn const_int(&self) -> Option<u64> {
        // SAFETY: a live handle.
        if unsafe { LLVMIsAConstantInt(self.raw) }.is_null() {
            return None;
        }
        // SAFETY: a live integer constant.
        Some(unsafe { LLVMConstIntGetZExtValue(self.raw) })
    }

    /// Attaches an empty metadata node of kind `kind` (a mark).
    pub fn set_mark(&self, kind: u32) {
        // SAFETY: a live instruction; the empty node is created in its context.
        unsafe {
            let context = LLVMGetTypeContext(LLVMTypeOf(self.raw));
            let node = LLVMMDNodeInContext2(context, std::ptr::null_mut(), 0);
            LLVMSetMetadata(self.raw, kind, LLVMMetadataAsValue(context, node));
        }
    }

    pub fn set_linkage_extern_weak(&self) {
        // SAFETY: a live global.
        unsafe { LLVMSetLinkage(self.raw, LLVMLinkage::LLVMExternalWeakLinkage) }
    }

    pub fn set_linkage_internal(&self) {
        // SAFETY: a live global.
        unsafe { LLVMSetLinkage(self.raw, LLVMLinkage::LLVMInternalLinkage) }
    }

    /// A function's parameter `index`.
    pub fn param(&self, index: u32) -> Value<'m> {
        // SAFETY: a live function with more than `index` parameters (the caller built it).
        Self::wrap(unsafe { LLVMGetParam(self.raw, index) }).expect("a parameter")
    }
}

/// Inserts instructions (`IRBuilder`).
pub struct Builder<'m> {
    raw: LLVMBuilderRef,
    _module: PhantomData<&'m ()>,
}

impl Drop for Builder<'_> {
    fn drop(&mut self) {
        // SAFETY: created by LLVMCreateBuilderInContext, disposed of once.
        unsafe { LLVMDisposeBuilder(self.raw) }
    }
}

impl<'m> Builder<'m> {
    /// New instructions go right before `inst`.
    pub fn position_before(&self, inst: Value<'m>) {
        // SAFETY: a live builder and instruction.
        unsafe { LLVMPositionBuilderBefore(self.raw, inst.raw) }
    }

    /// New instructions carry the source location of `inst` (none: no location).
    pub fn set_location_of(&self, inst: Option<Value<'m>>) {
        // SAFETY: a live builder; the location (possibly null) is metadata of the same context.
        unsafe {
            let location = inst.map_or(std::ptr::null_mut(), |i| LLVMInstructionGetDebugLoc(i.raw));
            LLVMSetCurrentDebugLocation2(self.raw, location);
        }
    }

    /// Appends a new block named `name` to `function` and positions at its end.
    pub fn append_block(&self, function: Value<'m>, name: &str) -> Block<'m> {
        let name = c_string(name);
        // SAFETY: a live function; the block is created in its context.
        let raw = unsafe {
            let context = LLVMGetTypeContext(LLVMTypeOf(function.raw));
            let block = LLVMAppendBasicBlockInContext(context, function.raw, name.as_ptr());
            LLVMPositionBuilderAtEnd(self.raw, block);
            block
        };
        Block {
            raw,
            _module: PhantomData,
        }
    }

    pub fn position_at_end(&self, block: Block<'m>) {
        // SAFETY: a live builder and block.
        unsafe { LLVMPositionBuilderAtEnd(self.raw, block.raw) }
    }

    pub fn call(&self, ty: Type<'m>, callee: Value<'m>, args: &[Value<'m>]) -> Value<'m> {
        let mut args: Vec<LLVMValueRef> = args.iter().map(|a| a.raw).collect();
        // SAFETY: a positioned builder; `ty` is the callee's function type and `args` match it.
        let raw = unsafe {
            LLVMBuildCall2(
                self.raw,
                ty.raw,
                callee.raw,
                args.as_mut_ptr(),
                args.len() as u32,
                c"".as_ptr(),
            )
        };
        Value::wrap(raw).expect("a call")
    }

    /// `value` as a pointer of type `ty` (bitcast or addrspacecast).
    pub fn pointer_cast(&self, value: Value<'m>, ty: Type<'m>) -> Value<'m> {
        // SAFETY: a positioned builder; `value` is a pointer.
        Value::wrap(unsafe { LLVMBuildPointerCast(self.raw, value.raw, ty.raw, c"".as_ptr()) })
            .expect("a cast")
    }

    /// `icmp ne ptr value, null`.
    pub fn is_not_null(&self, value: Value<'m>) -> Value<'m> {
        // SAFETY: a positioned builder; `value` is a pointer and the null is of its type.
        let raw = unsafe {
            let null = LLVMConstNull(LLVMTypeOf(value.raw));
            LLVMBuildICmp(
                self.raw,
                LLVMIntPredicate::LLVMIntNE,
                value.raw,
                null,
                c"".as_ptr(),
            )
        };
        Value::wrap(raw).expect("a comparison")
    }

    pub fn cond_br(&self, condition: Value<'m>, then: Block<'m>, otherwise: Block<'m>) {
        // SAFETY: a positioned builder, an i1 condition and blocks of the same function.
        unsafe { LLVMBuildCondBr(self.raw, condition.raw, then.raw, otherwise.raw) };
    }

    pub fn ret(&self, value: Value<'m>) {
        // SAFETY: a positioned builder; `value` has the function's return type.
        unsafe { LLVMBuildRet(self.raw, value.raw) };
    }
}

/// A module parsed from text in a context of its own (tests, tools).
pub struct OwnedModule {
    context: LLVMContextRef,
    module: LLVMModuleRef,
}

impl Drop for OwnedModule {
    fn drop(&mut self) {
        // SAFETY: both created by `parse`, disposed of once, the module first.
        unsafe {
            LLVMDisposeModule(self.module);
            LLVMContextDispose(self.context);
        }
    }
}

/// Takes an LLVM message: its text, and frees it.
///
/// # Safety
/// `message` is null or a string LLVM allocated for the caller.
unsafe fn take_message(message: *mut c_char) -> String {
    if message.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above; freed once.
    unsafe { LLVMDisposeMessage(message) };
    text
}

impl OwnedModule {
    /// Parses textual IR.
    pub fn parse(text: &str) -> Result<Self, String> {
        // SAFETY: a fresh context; the buffer copies `text`, the parser only reads it, and it
        // is disposed of once.
        unsafe {
            let context = LLVMContextCreate();
            let buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                text.as_ptr().cast(),
                text.len(),
                c"input.ll".as_ptr(),
            );
            let mut module = std::ptr::null_mut();
            let mut message = std::ptr::null_mut();
            let failed = LLVMParseIRInContext2(context, buffer, &mut module, &mut message) != 0;
            LLVMDisposeMemoryBuffer(buffer);
            if failed {
                let why = take_message(message);
                LLVMContextDispose(context);
                return Err(why);
            }
            Ok(Self { context, module })
        }
    }

    pub fn module(&mut self) -> Module<'_> {
        // SAFETY: owned and alive for the borrow, which is exclusive.
        unsafe { Module::from_raw(self.module) }
    }

    /// The module as text.
    pub fn print(&self) -> String {
        // SAFETY: a live module; LLVM allocates the text for us.
        unsafe { take_message(LLVMPrintModuleToString(self.module)) }
    }

    /// Runs LLVM's verifier; the error is its report.
    pub fn verify(&self) -> Result<(), String> {
        use llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
        let mut message = std::ptr::null_mut();
        // SAFETY: a live module; the message is ours to free.
        let broken = unsafe {
            LLVMVerifyModule(
                self.module,
                LLVMVerifierFailureAction::LLVMReturnStatusAction,
                &mut message,
            )
        };
        // SAFETY: as above.
        let report = unsafe { take_message(message) };
        if broken != 0 {
            Err(report)
        } else {
            Ok(())
        }
    }
}
