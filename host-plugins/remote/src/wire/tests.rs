use super::*;

fn config() -> LaunchConfig {
    LaunchConfig {
        num_teams: 4,
        thread_limit: 64,
        teams_yz: [2, 3],
        threads_yz: [0, 1],
        dyn_shared_bytes: 128,
        tripcount: 1000,
    }
}

/// One request of every kind.
pub(crate) fn every_request() -> Vec<Request> {
    vec![
        Request::Hello { version: 1 },
        Request::Ping,
        Request::Stop,
        Request::StoreImage {
            hash: [7; 16],
            bytes: 12345,
            triple: "x86_64-pc-linux-gnu".into(),
            arch: String::new(),
        },
        Request::Compatibility { hash: [1; 16] },
        Request::OpenDevice {
            device: 1,
            global: 5,
            total: 8,
        },
        Request::Alloc {
            device: 0,
            bytes: 1 << 40,
            kind: AllocKind::Shared,
        },
        Request::Free {
            device: 2,
            ptr: 0xdead_beef,
            kind: AllocKind::Host,
        },
        Request::CopyTo {
            device: 0,
            dst: 0x1000,
            bytes: 64,
        },
        Request::CopyFrom {
            device: 0,
            src: 0x1000,
            bytes: 64,
        },
        Request::CopyWithin {
            device: 3,
            dst: 1,
            src: 2,
            bytes: 3,
        },
        Request::CopyLocal {
            src_device: 0,
            src: 10,
            dst_device: 1,
            dst: 20,
            bytes: 30,
        },
        Request::PeerSend {
            device: 0,
            src: 1,
            bytes: 2,
            peer: 3,
            tag: 4,
        },
        Request::PeerRecv {
            device: 5,
            dst: 6,
            bytes: 7,
            peer: 8,
            tag: 9,
        },
        Request::LoadImage {
            device: 1,
            hash: [9; 16],
        },
        Request::UnloadImage { image: 3 },
        Request::Kernel {
            image: 3,
            name: "__omp_offloading_10302_abc_main_l12".into(),
        },
        Request::Global {
            image: 3,
            name: "counter".into(),
        },
        Request::Launch {
            image: 3,
            kernel: 1,
            config: config(),
            args: vec![1, 2, u64::MAX],
        },
        Request::SetIndirect {
            image: 3,
            pairs: vec![(1, 2), (3, 4)],
        },
        Request::Synchronize { device: 0 },
        Request::Baseline {
            mode: 1,
            bytes: 1 << 20,
            iterations: 10,
        },
        Request::Trace { on: true },
        Request::Clock,
    ]
}

#[test]
fn every_request_survives_the_round_trip() {
    let requests = every_request();
    assert_eq!(requests.len(), KINDS.len(), "one per kind");
    for (i, request) in requests.iter().enumerate() {
        let bytes = request.encode(40 + i as u64);
        let (header, decoded) = Request::decode(&bytes).expect("decodes");
        assert_eq!(&decoded, request);
        assert_eq!(header.id, 40 + i as u64);
        assert_eq!(header.kind, request.kind() as u16);
    }
}

fn hello() -> Reply {
    Reply::Hello(Hello {
        version: 1,
        hostname: "node7".into(),
        pid: 4242,
        gpu_aware: true,
        devices: vec![DeviceInfo {
            plugin: "host".into(),
            index: 0,
            description: "device 0: host plugin device 0".into(),
            properties: vec![("Kind".into(), "CPU".into())],
        }],
        reasons: vec!["cuda: no CUDA driver".into()],
    })
}

/// Every reply shape with the kind it answers.
pub(crate) fn every_reply() -> Vec<(Kind, Result<Reply, Failure>)> {
    vec![
        (Kind::Hello, Ok(hello())),
        (
            Kind::Compatibility,
            Ok(Reply::Compatibility(vec![
                None,
                Some("sm_80 image on sm_90".into()),
            ])),
        ),
        (Kind::Alloc, Ok(Reply::Value(0x7f00_0000_1000))),
        (Kind::LoadImage, Ok(Reply::Value(1))),
        (Kind::Kernel, Ok(Reply::Kernel(Some(2)))),
        (Kind::Kernel, Ok(Reply::Kernel(None))),
        (Kind::Global, Ok(Reply::Global(Some((0x1000, 8))))),
        (Kind::Global, Ok(Reply::Global(None))),
        (Kind::Launch, Ok(Reply::Done)),
        (Kind::Launch, Ok(Reply::Timed(5_000, 7_000))),
        (Kind::CopyFrom, Ok(Reply::Timed(1, 2))),
        (Kind::Clock, Ok(Reply::Value(123_456_789))),
        (
            Kind::CopyTo,
            Err((
                ErrorKind::TransferFailed,
                "device 4 (host plugin): no".into(),
            )),
        ),
    ]
}

#[test]
fn every_reply_survives_the_round_trip() {
    for (kind, reply) in every_reply() {
        let bytes = Reply::encode(kind, 9, &reply);
        assert_eq!(Reply::decode(&bytes, kind, 9), Ok(reply));
    }
}

#[test]
fn a_reply_must_answer_its_request() {
    let bytes = Reply::encode(Kind::Launch, 9, &Ok(Reply::Done));
    let other_id = Reply::decode(&bytes, Kind::Launch, 10).unwrap_err();
    assert!(
        other_id.0.contains("reply to request 9 where 10"),
        "{other_id}"
    );
    let other_kind = Reply::decode(&bytes, Kind::Alloc, 9).unwrap_err();
    assert!(
        other_kind.0.contains("to a allocation request") || other_kind.0.contains("allocation"),
        "{other_kind}"
    );
}

#[test]
fn every_truncation_is_refused() {
    for (i, request) in every_request().iter().enumerate() {
        let bytes = request.encode(i as u64);
        for cut in 0..bytes.len() {
            assert!(
                Request::decode(&bytes[..cut]).is_err(),
                "{:?} cut at {cut} of {}",
                request.kind(),
                bytes.len()
            );
        }
    }
    for (kind, reply) in every_reply() {
        let bytes = Reply::encode(kind, 1, &reply);
        for cut in 0..bytes.len() {
            assert!(
                Reply::decode(&bytes[..cut], kind, 1).is_err(),
                "{kind:?} cut at {cut}"
            );
        }
    }
}

/// A length field that lies is caught by the header check; a payload whose own counts lie is
/// caught before anything is allocated for them.
#[test]
fn counts_are_checked_before_allocation() {
    let mut bytes = Request::Launch {
        image: 1,
        kernel: 1,
        config: config(),
        args: vec![5],
    }
    .encode(1);
    // The argument count sits 8 bytes before the end (one 8-byte argument follows it).
    let at = bytes.len() - 12;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = Request::decode(&bytes).unwrap_err();
    assert!(e.0.contains("cannot fit"), "{e}");

    let mut hello_bytes = Reply::encode(Kind::Hello, 1, &Ok(hello()));
    // The device count follows version, hostname (4 + 5 bytes), pid and the flag.
    let at = HEADER_BYTES + 4 + 4 + 5 + 4 + 1;
    hello_bytes[at..at + 4].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    let e = Reply::decode(&hello_bytes, Kind::Hello, 1).unwrap_err();
    assert!(e.0.contains("cannot fit"), "{e}");
}

#[test]
fn headers_are_checked() {
    let good = Request::Ping.encode(1);
    let mut bad_magic = good.clone();
    bad_magic[0] ^= 0xff;
    assert!(Request::decode(&bad_magic).unwrap_err().0.contains("magic"));
    let mut bad_version = good.clone();
    bad_version[4] = 99;
    assert!(Request::decode(&bad_version)
        .unwrap_err()
        .0
        .contains("version"));
    let mut bad_kind = good.clone();
    bad_kind[6..8].copy_from_slice(&999u16.to_le_bytes());
    assert!(Request::decode(&bad_kind)
        .unwrap_err()
        .0
        .contains("unknown request kind"));
    let mut longer = good.clone();
    longer.push(0);
    assert!(Request::decode(&longer)
        .unwrap_err()
        .0
        .contains("header says 0 payload bytes, 1"));
    let mut trailing = Request::Synchronize { device: 1 }.encode(1);
    trailing.extend_from_slice(&[0, 0, 0, 0]);
    let len = (trailing.len() - HEADER_BYTES) as u32;
    trailing[20..24].copy_from_slice(&len.to_le_bytes());
    assert!(Request::decode(&trailing)
        .unwrap_err()
        .0
        .contains("left over"));
    let mut status = good;
    status[16] = 1;
    assert!(Request::decode(&status).is_err());
}

#[test]
fn enumerations_and_strings_are_checked() {
    let mut alloc = Request::Alloc {
        device: 0,
        bytes: 8,
        kind: AllocKind::Device,
    }
    .encode(1);
    let last = alloc.len() - 1;
    alloc[last] = 7;
    assert!(Request::decode(&alloc)
        .unwrap_err()
        .0
        .contains("allocation kind 7"));

    let mut name = Request::Kernel {
        image: 1,
        name: "ab".into(),
    }
    .encode(1);
    let last = name.len() - 1;
    name[last] = 0xff;
    assert!(Request::decode(&name).unwrap_err().0.contains("UTF-8"));
}

#[test]
fn random_corruption_never_panics() {
    // A small deterministic generator: every byte of every message flipped in turn, plus
    // pseudo-random multi-byte damage.
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for request in every_request() {
        let bytes = request.encode(3);
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 1 << (next() % 8);
            let _ = Request::decode(&damaged);
        }
        for _ in 0..200 {
            let mut damaged = bytes.clone();
            for _ in 0..4 {
                let i = (next() as usize) % damaged.len();
                damaged[i] = next() as u8;
            }
            let _ = Request::decode(&damaged);
        }
    }
    for (kind, reply) in every_reply() {
        let bytes = Reply::encode(kind, 3, &reply);
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x80;
            let _ = Reply::decode(&damaged, kind, 3);
        }
    }
}

#[test]
fn large_replies_become_errors_and_strings_are_cut() {
    let long = "x".repeat(MAX_STRING * 2);
    let many = Reply::Compatibility(vec![Some(long.clone()); 100]);
    let bytes = Reply::encode(Kind::Compatibility, 1, &Ok(many));
    assert!(bytes.len() <= MAX_REPLY);
    match Reply::decode(&bytes, Kind::Compatibility, 1).unwrap() {
        Err((ErrorKind::Unsupported, why)) => assert!(why.contains("more than"), "{why}"),
        other => panic!("{other:?}"),
    }
    let one = Reply::Compatibility(vec![Some(long)]);
    let bytes = Reply::encode(Kind::Compatibility, 1, &Ok(one));
    match Reply::decode(&bytes, Kind::Compatibility, 1).unwrap() {
        Ok(Reply::Compatibility(v)) => assert_eq!(v[0].as_ref().unwrap().len(), MAX_STRING),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tags_and_fragments() {
    let slots = tag_slots(32767);
    assert!(slots > 16_000);
    let top = (0..slots).map(|id| data_tag(id, slots)).max().unwrap();
    assert!(top <= 32767);
    assert_ne!(reply_tag(5, slots), REQUEST_TAG);
    assert_eq!(data_tag(5, slots), reply_tag(5, slots) + 1);
    // Open MPI's tag_ub is far larger; the slots stay bounded.
    assert_eq!(tag_slots(i32::MAX), 1 << 20);
    let parts: Vec<_> = fragments(2 * FRAGMENT as u64 + 5).collect();
    assert_eq!(
        parts,
        [
            (0, FRAGMENT),
            (FRAGMENT as u64, FRAGMENT),
            (2 * FRAGMENT as u64, 5)
        ]
    );
    assert_eq!(fragments(0).count(), 0);
}

/// Writes the fuzz target's seeds (`fuzz/corpus/remote_wire/`): one encoded message of every
/// request and reply kind. Run by hand when the format changes:
/// `RUSTOMP_WIRE_SEEDS=fuzz/corpus/remote_wire cargo test -p rustomp-remote-plugin -- --ignored seeds`
#[test]
#[ignore]
fn seeds() {
    let Some(dir) = std::env::var_os("RUSTOMP_WIRE_SEEDS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (i, request) in every_request().iter().enumerate() {
        let name = format!(
            "request-{i:02}-{}",
            request.kind().describe().replace(' ', "-")
        );
        std::fs::write(dir.join(name), request.encode(i as u64 + 1)).unwrap();
    }
    for (i, (kind, result)) in every_reply().iter().enumerate() {
        let name = format!("reply-{i:02}-{}", kind.describe().replace(' ', "-"));
        std::fs::write(dir.join(name), Reply::encode(*kind, i as u64 + 1, result)).unwrap();
    }
}
