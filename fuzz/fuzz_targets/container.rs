//! `rustomp_plugin::image::unwrap_container` on arbitrary bytes: it never panics, an image it
//! finds lies within the input, and the image found reads like the rest of the image code
//! expects (`classify`, `validate`, a nested container).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rustomp_abi::OFFLOAD_BINARY_MAGIC;
use rustomp_plugin::image::{classify, unwrap_container, validate};

fuzz_target!(|bytes: &[u8]| {
    let Ok(found) = unwrap_container(bytes) else {
        return;
    };
    let end = found
        .offset
        .checked_add(found.len)
        .expect("offset + len overflows");
    assert!(
        end <= bytes.len(),
        "image [{}, {end}) beyond the {} input bytes",
        found.offset,
        bytes.len()
    );
    let contained = &bytes[found.offset..end];
    if !bytes.starts_with(&OFFLOAD_BINARY_MAGIC) {
        // A bare image is taken whole and described by what it says of itself.
        let kind = classify(bytes).expect("a bare image is accepted only when classified");
        assert_eq!((found.offset, found.len), (0, bytes.len()));
        assert_eq!(found.triple, kind.triple());
        assert_eq!(found.arch, kind.arch());
    }
    // What registration does next with the image found: read its kind, check its headers.
    let kind = classify(contained);
    if let Some(kind) = &kind {
        let _ = (kind.triple(), kind.arch(), kind.label());
    }
    match validate(contained) {
        Ok(validated) => assert_eq!(Some(validated), kind, "validate agrees with classify"),
        Err(why) => assert!(!why.is_empty()),
    }
    // A container inside a container (clang-22 never nests them; the reader must not care).
    if let Ok(inner) = unwrap_container(contained) {
        assert!(inner
            .offset
            .checked_add(inner.len)
            .is_some_and(|e| e <= contained.len()));
    }
});
