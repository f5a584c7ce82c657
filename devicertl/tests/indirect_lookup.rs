//! Indirect-call translation over tables of every interesting size: every present key maps to
//! its device address, and a key in any gap (below the first, between two entries, above the
//! last) comes back unchanged.

use devicertl::indirect::{
    __kmpc_target_translate_fptr, __llvm_omp_indirect_call_lookup, translate,
};
use rustomp_abi::FptrMapEntry;

/// A sorted table whose host keys leave a gap of at least one address around each entry.
/// Spacing varies so the search meets uneven gaps; device addresses are unrelated to keys.
fn table(len: usize) -> Vec<FptrMapEntry> {
    let mut host = 0x1000u64;
    (0..len as u64)
        .map(|i| {
            host += 2 + (i * 7919) % 13;
            FptrMapEntry {
                host,
                device: 0xdead_0000_0000 + i * 16,
            }
        })
        .collect()
}

/// One absent key per gap, plus the extremes.
fn absent_keys(table: &[FptrMapEntry]) -> Vec<u64> {
    let mut keys = vec![0, 1, u64::MAX];
    match (table.first(), table.last()) {
        (Some(first), Some(last)) => {
            keys.push(first.host - 1);
            keys.push(last.host + 1);
        }
        _ => keys.push(0x1234),
    }
    for pair in table.windows(2) {
        keys.push(pair[0].host + 1);
        keys.push(pair[1].host - 1);
    }
    keys
}

fn check_table(len: usize) {
    let table = table(len);
    for entry in &table {
        assert_eq!(
            translate(&table, entry.host),
            entry.device,
            "present key {:#x} of {len}",
            entry.host
        );
    }
    for key in absent_keys(&table) {
        assert!(table.binary_search_by_key(&key, |e| e.host).is_err());
        assert_eq!(
            translate(&table, key),
            key,
            "absent key {key:#x} in a table of {len}"
        );
    }
}

#[test]
fn empty_table() {
    check_table(0);
}

#[test]
fn one_entry() {
    check_table(1);
}

#[test]
fn two_entries() {
    check_table(2);
}

#[test]
fn odd_sizes() {
    for len in [3, 5, 7, 101, 1023] {
        check_table(len);
    }
}

#[test]
fn even_sizes() {
    for len in [4, 8, 100, 1024] {
        check_table(len);
    }
}

#[test]
fn hundred_thousand_entries() {
    check_table(100_000);
}

#[test]
fn duplicate_free_extremes() {
    // Keys at the ends of the address space must not overflow the search.
    let table = [
        FptrMapEntry { host: 0, device: 7 },
        FptrMapEntry {
            host: u64::MAX,
            device: 9,
        },
    ];
    assert_eq!(translate(&table, 0), 7);
    assert_eq!(translate(&table, u64::MAX), 9);
    assert_eq!(translate(&table, 5), 5);
}

#[test]
fn duplicate_keys_give_a_device_address() {
    // Two registrations of one function (two images of a program, or two units): whichever
    // entry the search lands on, the answer is a device address of that key, never the key.
    let table = [
        FptrMapEntry {
            host: 0x10,
            device: 0xd10,
        },
        FptrMapEntry {
            host: 0x20,
            device: 0xd20,
        },
        FptrMapEntry {
            host: 0x20,
            device: 0xd21,
        },
        FptrMapEntry {
            host: 0x20,
            device: 0xd22,
        },
        FptrMapEntry {
            host: 0x30,
            device: 0xd30,
        },
    ];
    for len in 1..=table.len() {
        let t = &table[..len];
        for e in t {
            let got = translate(t, e.host);
            assert!(
                t.iter().any(|d| d.host == e.host && d.device == got),
                "key {:#x} of {len}: {got:#x}",
                e.host
            );
        }
        for key in [0x0f, 0x11, 0x1f, 0x21, 0x2f, 0x31] {
            assert_eq!(translate(t, key), key);
        }
    }
    let same = [FptrMapEntry {
        host: 7,
        device: 70,
    }; 5];
    for len in 1..=same.len() {
        assert_eq!(translate(&same[..len], 7), 70);
        assert_eq!(translate(&same[..len], 6), 6);
        assert_eq!(translate(&same[..len], 8), 8);
    }
}

/// The exported entry points read the table the host library published, whichever way it did:
/// LLVM 22's libomptarget writes only `__omp_rtl_device_environment` (`DeviceEnvironmentTy`'s
/// `IndirectCallTable` and `IndirectCallTableSize`, a device pointer and an entry count); the
/// original design's host side writes `__omp_offloading_fptr_map_p` / `_size`; ours writes both.
/// Every entry (first, last, all between) gives its device address, everything else itself,
/// null stays null. One test owns the process-wide globals so no other test races with it.
#[test]
fn exported_entry_points_use_the_published_table() {
    use devicertl::env::{
        __omp_offloading_fptr_map_p, __omp_offloading_fptr_map_size, __omp_rtl_device_environment,
        __rustomp_indirect_call_table, DevicePtr,
    };
    use rustomp_abi::DeviceEnvironment;
    let table = table(33);
    let other = vec![
        FptrMapEntry {
            host: 0x10,
            device: 0xbad0
        };
        3
    ];
    let lookup = |ptr: u64| __llvm_omp_indirect_call_lookup(ptr as *mut _) as u64;
    let translate_fptr = |ptr: u64| __kmpc_target_translate_fptr(ptr as *mut _) as u64;
    let check = |how: &str| {
        for entry in &table {
            assert_eq!(
                lookup(entry.host),
                entry.device,
                "{how}: key {:#x}",
                entry.host
            );
            assert_eq!(
                translate_fptr(entry.host),
                entry.device,
                "{how}: key {:#x}",
                entry.host
            );
        }
        for key in absent_keys(&table) {
            assert_eq!(lookup(key), key, "{how}: absent key {key:#x}");
        }
        assert_eq!(lookup(0), 0, "{how}: null");
    };
    let environment = |t: &[FptrMapEntry]| DeviceEnvironment {
        num_devices: 1,
        clock_frequency: 1_000_000_000,
        indirect_call_table: t.as_ptr() as usize,
        indirect_call_table_size: t.len() as u64,
        ..Default::default()
    };
    let publish = |env: DeviceEnvironment, seed: &[FptrMapEntry]| {
        // SAFETY: no emulated kernel runs in this test binary while the globals change.
        unsafe {
            __omp_rtl_device_environment.set(env);
            __omp_offloading_fptr_map_p.set(if seed.is_empty() {
                DevicePtr::null()
            } else {
                DevicePtr(seed.as_ptr() as *mut _)
            });
            __omp_offloading_fptr_map_size.set(seed.len() as u64);
        }
    };

    // Nothing published: every pointer unchanged.
    publish(DeviceEnvironment::default(), &[]);
    assert_eq!(lookup(table[3].host), table[3].host);
    // LLVM 22's host library: the device environment only.
    publish(environment(&table), &[]);
    check("device environment (LLVM 22's libomptarget)");
    // The original design: the two globals only.
    publish(DeviceEnvironment::default(), &table);
    check("__omp_offloading_fptr_map_p/_size");
    // Ours: both, the same table.
    publish(environment(&table), &table);
    check("both");
    // Both, different tables: the device environment wins (it is what LLVM's runtime reads).
    publish(environment(&table), &other);
    check("device environment before the globals");

    // Ours republishes while a kernel may run (another library's image joins the device): the
    // device environment's two fields and seed 000's two globals can be read torn, the old
    // table's pointer with the new, larger size. Here the old table's storage goes on past its
    // 3 entries, so a torn read stays in bounds and misses entries the new table holds. The one
    // pointer to the header-and-entries block is what our plugin's readers use.
    let old_storage: Vec<FptrMapEntry> = other.iter().chain(&table).copied().collect();
    let old_table = &old_storage[..other.len()];
    let torn = DeviceEnvironment {
        indirect_call_table: old_table.as_ptr() as usize,
        indirect_call_table_size: table.len() as u64,
        ..environment(&table)
    };
    let mut block: Vec<FptrMapEntry> = vec![FptrMapEntry {
        host: table.len() as u64,
        device: 0,
    }];
    block.extend_from_slice(&table);
    publish(torn, old_table);
    // SAFETY: as `publish`.
    unsafe {
        __rustomp_indirect_call_table.set(DevicePtr(block.as_mut_ptr().cast()));
    }
    check("one pointer to a block that holds its size, under a torn environment");
    // SAFETY: as `publish`.
    unsafe {
        __rustomp_indirect_call_table.set(DevicePtr::null());
    }
    publish(DeviceEnvironment::default(), &[]);
}
