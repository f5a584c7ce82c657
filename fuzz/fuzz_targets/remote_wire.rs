//! The remote plugin's message decoder (`rustomp_remote_plugin::wire`) on arbitrary bytes: a
//! request or a reply that is corrupt or truncated is refused with an error and never panics,
//! allocates what it claims before checking it, or is trusted; one that decodes re-encodes to
//! a message that decodes to the same thing (the encoding loses nothing the server uses).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rustomp_remote_plugin::wire::{Header, Kind, Reply, Request};

fuzz_target!(|bytes: &[u8]| {
    // As the proxy reads a request.
    if let Ok((header, request)) = Request::decode(bytes) {
        assert_eq!(
            header.kind,
            request.kind() as u16,
            "header and request agree"
        );
        let again = request.encode(header.id);
        let (header2, request2) = Request::decode(&again).expect("a re-encoded request decodes");
        assert_eq!(header2.id, header.id);
        assert_eq!(request2, request, "request survives a round trip");
    }
    // As the application reads a reply to each kind of request (with the id the header gives,
    // so the payload is reached, and with another id, which must be refused).
    let Ok(header) = Header::decode(bytes) else {
        return;
    };
    for value in 1..=u16::MAX {
        let Some(kind) = Kind::from_u16(value) else {
            break;
        };
        if let Ok(result) = Reply::decode(bytes, kind, header.id) {
            let again = Reply::encode(kind, header.id, &result);
            let decoded =
                Reply::decode(&again, kind, header.id).expect("a re-encoded reply decodes");
            assert_eq!(decoded, result, "reply survives a round trip");
        }
        assert!(
            Reply::decode(bytes, kind, header.id.wrapping_add(1)).is_err(),
            "a reply to another request is refused"
        );
    }
});
