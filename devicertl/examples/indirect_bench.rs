//! Benchmark of the device-side indirect-call lookup (`declare target indirect`), in the host
//! emulation build: lookups per second of `devicertl::indirect::translate` over sorted tables
//! of 16, 1 024 and 1 048 576 entries, for keys in the table and keys between its entries.
//!
//! Run by `cargo xtask bench` (group 5), which alternates the two implementations:
//!
//! ```text
//! indirect_bench translate [quick]   the device runtime's search
//! indirect_bench std [quick]         the reference: `<[T]>::binary_search_by_key` over the same table
//! ```
//!
//! Then calls, what the pass plugin (`compiler/`) makes of a call through a host function
//! pointer, beside the calls it leaves alone:
//!
//! ```text
//! call_direct              a direct call of an out-of-line function
//! call_pointer             a call through a device function pointer, untranslated
//! call_translated_<N>      translate a host pointer with a table of N entries, then call
//! ```
//!
//! (the `std` column translates with the standard library's search; the other two rows are the
//! same code in both columns).
//!
//! Output: one `RESULT <name> <value> lookups/s` (or `calls/s`) line per measurement, the median
//! of several timed batches after a warm-up batch. `BENCH_FILTER=text` keeps the names
//! containing `text`.

use devicertl::indirect::translate;
use rustomp_abi::FptrMapEntry;
use std::hint::black_box;
use std::time::Instant;

/// splitmix64: a small, fixed pseudo-random sequence (the runs must be comparable).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A sorted table of `len` distinct, even host addresses (so every odd address is absent),
/// spread like function addresses over a 64 MiB text segment.
fn table(len: usize, rng: &mut Rng) -> Vec<FptrMapEntry> {
    let mut hosts: Vec<u64> = Vec::with_capacity(len);
    while hosts.len() < len {
        let want = len - hosts.len();
        hosts.extend((0..want).map(|_| 0x40_0000 + (rng.next() % (1 << 26)) * 2));
        hosts.sort_unstable();
        hosts.dedup();
    }
    hosts
        .into_iter()
        .enumerate()
        .map(|(i, host)| FptrMapEntry {
            host,
            device: 0x7f00_0000_0000 + i as u64 * 64,
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Translate,
    Std,
}

fn std_lookup(table: &[FptrMapEntry], host: u64) -> u64 {
    match table.binary_search_by_key(&host, |e| e.host) {
        Ok(i) => table[i].device,
        Err(_) => host,
    }
}

/// Looks every key up once; returns a value that depends on every result.
fn pass(which: Impl, table: &[FptrMapEntry], keys: &[u64]) -> u64 {
    let mut acc = 0u64;
    match which {
        Impl::Translate => {
            for &k in keys {
                acc = acc.wrapping_add(translate(black_box(table), k));
            }
        }
        Impl::Std => {
            for &k in keys {
                acc = acc.wrapping_add(std_lookup(black_box(table), k));
            }
        }
    }
    acc
}

type Callee = extern "C" fn(u64) -> u64;

/// The "device functions" the calls reach: small, out of line, distinct.
#[inline(never)]
extern "C" fn add1(x: u64) -> u64 {
    x.wrapping_add(1)
}
#[inline(never)]
extern "C" fn mul3(x: u64) -> u64 {
    x.wrapping_mul(3)
}
#[inline(never)]
extern "C" fn xor5(x: u64) -> u64 {
    x ^ 5
}
#[inline(never)]
extern "C" fn rot7(x: u64) -> u64 {
    x.rotate_left(7)
}
const CALLEES: [Callee; 4] = [add1, mul3, xor5, rot7];

#[derive(Clone, Copy, PartialEq)]
enum Call {
    Direct,
    Pointer,
    Translated,
}

/// Makes one call per key, the way each kind of call site runs; returns a value depending on
/// every result.
fn calls(kind: Call, which: Impl, table: &[FptrMapEntry], keys: &[u64]) -> u64 {
    let mut acc = 0u64;
    for &k in keys {
        let f: Callee = match kind {
            Call::Direct => {
                acc = add1(black_box(acc ^ k));
                continue;
            }
            Call::Pointer => CALLEES[(k & 3) as usize],
            Call::Translated => {
                let device = match which {
                    Impl::Translate => translate(black_box(table), k),
                    Impl::Std => std_lookup(black_box(table), k),
                };
                // SAFETY: every key is a host address of the table, whose device addresses
                // are the `CALLEES`' (checked before timing).
                unsafe { std::mem::transmute::<usize, Callee>(device as usize) }
            }
        };
        acc = black_box(f)(acc ^ k);
    }
    acc
}

/// A table of `len` entries whose device addresses are the `CALLEES`, and `count` present keys.
fn call_table(len: usize, count: usize, rng: &mut Rng) -> (Vec<FptrMapEntry>, Vec<u64>) {
    let mut table = table(len, rng);
    for (i, e) in table.iter_mut().enumerate() {
        e.device = CALLEES[i % 4] as usize as u64;
    }
    let keys = (0..count)
        .map(|_| table[(rng.next() % len as u64) as usize].host)
        .collect();
    (table, keys)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = match args.first().map(String::as_str) {
        Some("translate") => Impl::Translate,
        Some("std") => Impl::Std,
        _ => {
            eprintln!("usage: indirect_bench translate|std [quick]");
            std::process::exit(2);
        }
    };
    let quick = args.get(1).is_some_and(|a| a == "quick");
    let filter = std::env::var("BENCH_FILTER").unwrap_or_default();
    let (lookups, batches) = if quick { (1 << 18, 3) } else { (1 << 20, 9) };

    let mut rng = Rng(0x5eed);
    for len in [16usize, 1024, 1 << 20] {
        let table = table(len, &mut rng);
        for present in [true, false] {
            let name = format!(
                "lookup_{len}_{}",
                if present { "present" } else { "absent" }
            );
            if !name.contains(&filter) {
                continue;
            }
            // The largest table misses the caches on every step: fewer lookups keep a batch short.
            let count = if len >= 1 << 20 { lookups / 8 } else { lookups };
            let keys: Vec<u64> = (0..count)
                .map(|_| {
                    let e = &table[(rng.next() % len as u64) as usize];
                    if present {
                        e.host
                    } else {
                        e.host + 1
                    }
                })
                .collect();
            // The two implementations must agree before either is timed.
            for &k in keys.iter().take(4096) {
                assert_eq!(
                    translate(&table, k),
                    std_lookup(&table, k),
                    "{name}: key {k:#x}"
                );
            }
            black_box(pass(which, &table, &keys)); // warm-up
            let rates: Vec<f64> = (0..batches)
                .map(|_| {
                    let t0 = Instant::now();
                    black_box(pass(which, &table, &keys));
                    keys.len() as f64 / t0.elapsed().as_secs_f64()
                })
                .collect();
            println!("RESULT {name} {:.6e} lookups/s", median(rates));
        }
    }

    let runs: [(String, Call, usize); 4] = [
        ("call_direct".into(), Call::Direct, 16),
        ("call_pointer".into(), Call::Pointer, 16),
        ("call_translated_16".into(), Call::Translated, 16),
        ("call_translated_1024".into(), Call::Translated, 1024),
    ];
    for (name, kind, len) in runs {
        if !name.contains(&filter) {
            continue;
        }
        let (table, keys) = call_table(len, lookups, &mut rng);
        for &k in keys.iter().take(4096) {
            let device = translate(&table, k);
            assert!(
                CALLEES.iter().any(|&f| f as usize as u64 == device),
                "{name}: key {k:#x}"
            );
            assert_eq!(device, std_lookup(&table, k), "{name}: key {k:#x}");
        }
        black_box(calls(kind, which, &table, &keys)); // warm-up
        let rates: Vec<f64> = (0..batches)
            .map(|_| {
                let t0 = Instant::now();
                black_box(calls(kind, which, &table, &keys));
                keys.len() as f64 / t0.elapsed().as_secs_f64()
            })
            .collect();
        println!("RESULT {name} {:.6e} calls/s", median(rates));
    }
}
