//! The image readers of `rustomp_plugin::image` on arbitrary bytes: `classify`, `validate`,
//! `symbols_with_prefix`, `ptx_target`, and target-id parsing of the input read as text. None
//! may panic; what they return must agree with itself.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rustomp_plugin::image::{
    classify, init_priority, parse_sm, ptx_target, symbols_with_prefix, validate, ImageKind,
    TargetId,
};

fuzz_target!(|bytes: &[u8]| {
    if let Some(kind) = classify(bytes) {
        let validated = validate(bytes);
        if let Ok(again) = &validated {
            assert_eq!(again, &kind, "validate agrees with classify");
        }
        let _ = (kind.triple(), kind.arch(), kind.label());
        for prefix in ["__", "__init_array_object_"] {
            let names = symbols_with_prefix(bytes, &kind, prefix);
            assert!(names.iter().all(|n| n.starts_with(prefix)), "{names:?}");
            assert!(
                names.windows(2).all(|w| w[0] < w[1]),
                "sorted and unique: {names:?}"
            );
            for name in &names {
                let _ = init_priority(name);
            }
        }
        if let ImageKind::Ptx { sm } = kind {
            // PTX is checked for being text up to its terminator, nothing else.
            let text = bytes.split(|&b| b == 0).next().unwrap_or_default();
            assert_eq!(
                validated.is_ok(),
                std::str::from_utf8(text).is_ok(),
                "{validated:?}"
            );
            assert_eq!(sm, ptx_target(bytes));
        }
        if let ImageKind::AmdgpuCodeObject { target } = &kind {
            // The target of a code object reads back from its name, features that are fixed
            // included.
            if let Some(again) = TargetId::parse(&target.to_string()) {
                assert_eq!(again.processor, target.processor);
            }
        }
    }
    if let Some(sm) = ptx_target(bytes) {
        assert!(sm > 0);
    }
    // Target ids and arch names are short (`--offload-arch` values, ISA names): scanning whole
    // images as one would only slow the run down.
    if bytes.len() > 256 {
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    if let Some(sm) = parse_sm(&text) {
        assert!(sm > 0);
    }
    if let Some(id) = TargetId::parse(&text) {
        assert!(id.processor.starts_with("gfx"));
        // What the runtime prints (`gfx90a:sramecc+:xnack-`) parses back to the same target.
        let shown = id.to_string();
        assert_eq!(TargetId::parse(&shown).as_ref(), Some(&id), "{shown:?}");
        assert!(id.runs_on(&id).is_ok(), "{shown} runs on itself");
        if let Some(agent) = TargetId::of_agent(&text) {
            let _ = id.runs_on(&agent);
        }
    }
});
