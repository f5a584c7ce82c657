// rustomp-indirect-calls: the LLVM pass plugin's registration, the only part in C++.
//
// LLVM's pass plugin interface is C++ (llvmGetPassPluginInfo hands over a callback that takes a
// PassBuilder&, and passes are C++ classes); LLVM's C API has no way to add a pass to clang's
// pipeline. Everything the pass does is Rust over the C API (compiler/src), reached through
// rustomp_translate_indirect_calls with the module.
//
// Where the pass runs (phase numbers as compiler/src/translate.rs reads them):
//   0  end of a translation unit's optimization pipeline, -O0 included (OptimizerLast);
//   1  end of an LTO pre-link compile (-foffload-lto): the Rust side leaves it to the link;
//   2  end of the full LTO link (FullLinkTimeOptimizationLast): clang-nvlink-wrapper, ld.lld.
// `opt -load-pass-plugin=... -passes=rustomp-indirect-calls` runs it as phase 0 (and
// `rustomp-indirect-calls-link` as phase 2).

#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h"

extern "C" bool rustomp_translate_indirect_calls(LLVMModuleRef M, unsigned Phase);

namespace {

struct TranslateIndirectCalls : llvm::PassInfoMixin<TranslateIndirectCalls> {
  unsigned Phase;
  explicit TranslateIndirectCalls(unsigned Phase) : Phase(Phase) {}

  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &) {
    return rustomp_translate_indirect_calls(llvm::wrap(&M), Phase)
               ? llvm::PreservedAnalyses::none()
               : llvm::PreservedAnalyses::all();
  }

  // Also at -O0 and for optnone functions: the translation is needed for correctness.
  static bool isRequired() { return true; }
};

unsigned phaseOf(llvm::ThinOrFullLTOPhase Phase) {
  return Phase == llvm::ThinOrFullLTOPhase::FullLTOPreLink ||
                 Phase == llvm::ThinOrFullLTOPhase::ThinLTOPreLink
             ? 1
             : 0;
}

void registerCallbacks(llvm::PassBuilder &PB) {
  PB.registerOptimizerLastEPCallback(
      [](llvm::ModulePassManager &MPM, llvm::OptimizationLevel,
         llvm::ThinOrFullLTOPhase Phase) {
        MPM.addPass(TranslateIndirectCalls(phaseOf(Phase)));
      });
  PB.registerFullLinkTimeOptimizationLastEPCallback(
      [](llvm::ModulePassManager &MPM, llvm::OptimizationLevel) {
        MPM.addPass(TranslateIndirectCalls(2));
      });
  PB.registerPipelineParsingCallback(
      [](llvm::StringRef Name, llvm::ModulePassManager &MPM,
         llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
        if (Name == "rustomp-indirect-calls") {
          MPM.addPass(TranslateIndirectCalls(0));
          return true;
        }
        if (Name == "rustomp-indirect-calls-link") {
          MPM.addPass(TranslateIndirectCalls(2));
          return true;
        }
        return false;
      });
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo
llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "rustomp-indirect-calls", "0.1.0",
          registerCallbacks};
}
